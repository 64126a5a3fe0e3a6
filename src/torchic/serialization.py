"""``torchic.serialization``: PyTorch's ``torch.serialization`` names (save, load, and the
allow-list of ``load(weights_only=True)``), from torchic.checkpoint."""

from .checkpoint import (add_safe_globals, clear_safe_globals, get_safe_globals, load,
                         safe_globals, save)

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]
