"""torch.nn.modules.batchnorm: BatchNorm1d/2d/3d (torchic.nn's classes)."""

from ..normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d)  # noqa: F401
