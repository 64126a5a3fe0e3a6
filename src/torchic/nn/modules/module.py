"""torch.nn.modules.module: the Module base class (torchic.nn's classes)."""

from ..module import (Module)  # noqa: F401
