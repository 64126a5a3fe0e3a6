"""``torch.amp`` under torchic: autocast and the gradient scaler.

**autocast's rule**: torchic computes every op in its inputs' own dtypes, so
``with torchic.autocast(device_type=..., dtype=...)`` is accepted (as a context manager or a
decorator, on any device type) and changes no dtype: a float32 model computes in float32
inside it. PyTorch's CPU autocast would compute matmuls in bfloat16: torchic's results are the
float32 ones (more precise, not bit-equal to PyTorch's autocast). For bfloat16 compute, cast
the model and inputs (``model.to(torchic.bfloat16)``).

``GradScaler`` is PyTorch's dynamic loss scaler, working as PyTorch's does (scale, unscale_,
step skipping a step whose gradients hold inf / NaN, update growing or backing off the scale,
state_dict); with ``enabled=False``, or for device "cuda" (no CUDA device here, where PyTorch
also disables it with a warning), every call passes through.
"""

import functools
from typing import Any, Callable, TypeVar

from .. import dtypes
from .grad_scaler import GradScaler

_F = TypeVar("_F", bound=Callable[..., Any])
_STATE = {"enabled": {}, "dtype": {}}          # device type -> the innermost block's values
_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16"}


class autocast:
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager and decorator that changes no dtype in torchic (the module docstring's rule).

    Args:
        device_type (str): "cpu", "cuda", "mps", "xpu" ...
        dtype: the dtype PyTorch would compute eligible ops in (recorded, reported by
            ``get_autocast_dtype``, not applied).
        enabled (bool): whether the block is an autocast block.
        cache_enabled: accepted.

    Example:
        >>> import torchic as torch
        >>> with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        ...     y = torch.ones(2, 2) @ torch.ones(2, 2)
        >>> y.dtype
        torchic.float32
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: Any = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device_type = device_type.split(":")[0]
        self.fast_dtype = dtype
        self.enabled = bool(enabled)

    def __enter__(self) -> "autocast":
        self._saved = (_STATE["enabled"].get(self.device_type),
                       _STATE["dtype"].get(self.device_type))
        _STATE["enabled"][self.device_type] = self.enabled
        if self.fast_dtype is not None:
            _STATE["dtype"][self.device_type] = self.fast_dtype
        return self

    def __exit__(self, *exc: Any) -> None:
        enabled, dtype = self._saved
        for key, value in (("enabled", enabled), ("dtype", dtype)):
            if value is None:
                _STATE[key].pop(self.device_type, None)
            else:
                _STATE[key][self.device_type] = value

    def __call__(self, fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled):
                return fn(*args, **kwargs)
        return wrapped  # type: ignore[return-value]


def is_autocast_available(device_type: str) -> bool:
    """True: autocast blocks are accepted on every device type (they change no dtype)."""
    return True


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether the innermost autocast block for `device_type` is enabled."""
    return bool(_STATE["enabled"].get(device_type, False))


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype the innermost block named (PyTorch's default for the device otherwise)."""
    dtype = _STATE["dtype"].get(device_type)
    return dtype if dtype is not None else getattr(dtypes, _DEFAULT_DTYPE.get(device_type,
                                                                             "float16"))


def custom_fwd(fwd: Any = None, *, device_type: str = "cuda", cast_inputs: Any = None) -> Any:
    """``torch.amp.custom_fwd``: returns the forward unchanged (autocast changes no dtype)."""
    if fwd is None:
        return lambda f: f
    return fwd


def custom_bwd(bwd: Any = None, *, device_type: str = "cuda") -> Any:
    """``torch.amp.custom_bwd``: returns the backward unchanged."""
    if bwd is None:
        return lambda f: f
    return bwd


__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "custom_fwd", "custom_bwd"]
