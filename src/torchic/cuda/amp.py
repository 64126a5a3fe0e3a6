"""``torch.cuda.amp`` (deprecated in PyTorch, still common in scripts): autocast and
GradScaler for device "cuda". As in PyTorch on a machine without CUDA, the scaler disables
itself with a warning, and autocast computes in float32 (torchic.amp's rule)."""

import functools
from typing import Any

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast
from ..amp import custom_bwd, custom_fwd


class autocast(_autocast):
    """``torch.cuda.amp.autocast(...)``: ``torchic.amp.autocast("cuda", ...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(...)``: ``torchic.amp.GradScaler("cuda", ...)``: without a
    CUDA device it disables itself with a warning, as PyTorch's does."""

    @functools.wraps(_GradScaler.__init__)
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__("cuda", *args, **kwargs)


__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
