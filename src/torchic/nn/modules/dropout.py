"""torch.nn.modules.dropout: the dropout modules (torchic.nn's classes)."""

from ..misc_layers import (AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout)  # noqa: F401
from ..layers import Dropout  # noqa: F401
