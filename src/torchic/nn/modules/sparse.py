"""torch.nn.modules.sparse: Embedding, EmbeddingBag (torchic.nn's classes)."""

from ..layers import (Embedding)  # noqa: F401
from ..misc_layers import EmbeddingBag  # noqa: F401
