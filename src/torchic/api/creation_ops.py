"""Creation in another tensor's image: zeros_like / ones_like / full_like / empty_like /
randint_like, Tensor.new_zeros / new_ones / new_full / new_empty / new_tensor,
scalar_tensor, and equal.

The *_like functions take `t`'s shape and dtype (unless dtype= is given); the new_*
methods take only `self`'s dtype (the shape is theirs), as PyTorch's. PyTorch's layout= /
memory_format= / pin_memory= keywords are accepted where they change no value
(formats.check_like_kwargs).
"""

from typing import Any, Sequence

import numpy as np

from ..creation import _shape_args, empty, full, ones, randint, tensor, zeros
from ..devices import check_device
from ..dispatcher import INT_CODES
from ..dtypes import dtype_code
from ..formats import check_like_kwargs
from ..tensor import Tensor
from .elementwise import eq
from .extra_ops import all


def zeros_like(input: Tensor, dtype: Any = None, requires_grad: bool = False,
               device: Any = None, **fmt: Any) -> Tensor:
    """Zeros of `input`'s shape (and dtype, unless `dtype` is given)."""
    check_device(device, "zeros_like(): ")
    check_like_kwargs(fmt, "zeros_like")
    return zeros(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def ones_like(input: Tensor, dtype: Any = None, requires_grad: bool = False,
              device: Any = None, **fmt: Any) -> Tensor:
    """Ones of `input`'s shape (and dtype, unless `dtype` is given)."""
    check_device(device, "ones_like(): ")
    check_like_kwargs(fmt, "ones_like")
    return ones(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def full_like(input: Tensor, fill_value: float, dtype: Any = None,
              requires_grad: bool = False, device: Any = None, **fmt: Any) -> Tensor:
    """`fill_value` in `input`'s shape (and dtype, unless `dtype` is given)."""
    check_device(device, "full_like(): ")
    check_like_kwargs(fmt, "full_like")
    return full(input.shape, fill_value, dtype=dtype or input.dtype,
                requires_grad=requires_grad)


def empty_like(input: Tensor, dtype: Any = None, requires_grad: bool = False,
               device: Any = None, **fmt: Any) -> Tensor:
    """An uninitialized tensor of `input`'s shape (and dtype, unless `dtype` is given)."""
    check_device(device, "empty_like(): ")
    check_like_kwargs(fmt, "empty_like")
    return empty(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,
                 generator: Any = None, dtype: Any = None, requires_grad: bool = False,
                 device: Any = None, **fmt: Any) -> Tensor:
    """Integers uniform in [low, high) in `input`'s shape and dtype (randint_like(t, high)
    or randint_like(t, low, high)); PyTorch's numbers for the same seed."""
    check_like_kwargs(fmt, "randint_like")
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), generator=generator,
                   dtype=dtype or input.dtype, requires_grad=requires_grad, device=device)


def _new(name, make):
    def method(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, **fmt: Any) -> Tensor:
        check_device(device, f"{name}(): ")
        check_like_kwargs(fmt, name)
        return make(self, size, dtype or self.dtype, requires_grad)
    method.__name__ = method.__qualname__ = name
    return method


new_zeros = _new("new_zeros", lambda t, size, d, rg: zeros(*size, dtype=d, requires_grad=rg))
new_zeros.__doc__ = "Zeros of the given size in `self`'s dtype (unless dtype= is given)."
new_ones = _new("new_ones", lambda t, size, d, rg: ones(*size, dtype=d, requires_grad=rg))
new_ones.__doc__ = "Ones of the given size in `self`'s dtype (unless dtype= is given)."
new_empty = _new("new_empty", lambda t, size, d, rg: empty(*size, dtype=d, requires_grad=rg))
new_empty.__doc__ = "An uninitialized tensor of the given size in `self`'s dtype."


def new_full(self: Tensor, size: Sequence[int], fill_value: float, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, **fmt: Any) -> Tensor:
    """`fill_value` in a tensor of `size`, in `self`'s dtype (unless dtype= is given)."""
    check_device(device, "new_full(): ")
    check_like_kwargs(fmt, "new_full")
    return full(_shape_args((size,)), fill_value, dtype=dtype or self.dtype,
                requires_grad=requires_grad)


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, **fmt: Any) -> Tensor:
    """A new tensor of `data` (copied, detached) in `self`'s dtype unless dtype= is given."""
    check_device(device, "new_tensor(): ")
    check_like_kwargs(fmt, "new_tensor")
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def scalar_tensor(s: float, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False, **fmt: Any) -> Tensor:
    """A 0-d tensor holding `s`, in the default float dtype unless dtype= is given (an int or
    a bool becomes a float too, as PyTorch's)."""
    check_device(device, "scalar_tensor(): ")
    check_like_kwargs(fmt, "scalar_tensor")
    return full((), s, dtype=dtype_code(dtype), requires_grad=requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             requires_grad: bool = False, device: Any = None, **fmt: Any) -> Tensor:
    """`steps` values base ** e for e evenly spaced from `start` to `end` (both included),
    in the default float dtype unless dtype= is given. As PyTorch computes it: an integer
    dtype truncates start and end first and the values last; each half of the exponents
    is stepped from its own end. `start` / `end` may be 0-d tensors."""
    check_device(device, "logspace(): ")
    check_like_kwargs(fmt, "logspace")
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise TypeError(f"logspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    code = dtype_code(dtype)
    integral = code in INT_CODES
    if integral:
        start, end = int(start), int(end)
    i = np.arange(steps)
    step = (end - start) / max(steps - 1, 1)
    exps = np.where((i < steps // 2) | (steps == 1), start + step * i,
                    end - step * (steps - 1 - i))
    with np.errstate(all="ignore"):
        values = np.power(float(base), exps)
    if integral:
        values = np.trunc(values)
    return tensor(values, dtype=code, requires_grad=requires_grad)


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and the same values (no broadcast; the
    dtypes promoted as == promotes; NaN is never equal)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"equal(): arguments must be Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(all(eq(input, other)).item())


__all__ = ["zeros_like", "ones_like", "full_like", "empty_like", "randint_like",
           "scalar_tensor", "equal", "logspace"]
