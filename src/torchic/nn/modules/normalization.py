"""torch.nn.modules.normalization: GroupNorm, LayerNorm, RMSNorm, LocalResponseNorm (torchic.nn's classes)."""

from ..normalization import (GroupNorm, LocalResponseNorm, RMSNorm)  # noqa: F401
from ..layers import LayerNorm  # noqa: F401
