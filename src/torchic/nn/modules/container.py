"""torch.nn.modules.container: the containers (torchic.nn's classes)."""

from ..module import (ModuleDict, ModuleList, Sequential)  # noqa: F401
