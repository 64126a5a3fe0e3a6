"""torch.nn.modules.flatten: Flatten, Unflatten (torchic.nn's classes)."""

from ..layers import (Flatten)  # noqa: F401
from ..misc_layers import Unflatten  # noqa: F401
