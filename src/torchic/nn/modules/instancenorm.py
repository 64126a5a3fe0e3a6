"""torch.nn.modules.instancenorm: InstanceNorm1d/2d/3d (torchic.nn's classes)."""

from ..normalization import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d)  # noqa: F401
