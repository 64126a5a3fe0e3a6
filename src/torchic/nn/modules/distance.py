"""torch.nn.modules.distance: CosineSimilarity, PairwiseDistance (torchic.nn's classes)."""

from ..misc_layers import (CosineSimilarity, PairwiseDistance)  # noqa: F401
