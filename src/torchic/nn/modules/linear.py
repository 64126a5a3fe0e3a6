"""torch.nn.modules.linear: Identity, Linear, Bilinear (torchic.nn's classes)."""

from ..layers import (Identity, Linear)  # noqa: F401
from ..misc_layers import Bilinear  # noqa: F401
