"""Scans along one dim: cumprod, cummax / cummin, logcumsumexp, cumulative_trapezoid
(cummax's values are index_ops.take_along_dim's gather, as the order statistics').

Every scan is a composite, built as `cumsum` is (api/ordering.py): a Hillis-Steele scan,
log2(n) steps, each combining the tensor with itself shifted by 1, 2, 4, ... along dim
through slices and one cat. We chose this over a scan primitive because it runs on all
three backends as it is, its gradient comes from the combine's own (the multiplies of
cumprod: exact at zeros, no division; logaddexp's exps), and n log n work is cheap next to
a primitive's three kernels at the sizes these ops see. cummax / cummin scan `maximum` /
`minimum` for the values and then the positions where the running extreme was last attained
(PyTorch's index: the last tie, a NaN once one is met); the values are gathered at those
indices, so their gradient goes to that one element, as PyTorch's does.
"""

import math
from typing import Any, Callable

from ..creation import arange
from ..shape import normalize_axis
from ..tensor import Tensor
from .index_ops import take_along_dim
from .conversion import to_dtype
from .elementwise import exp, isinf, isnan, log, logical_or, maximum, minimum, where
from .reductions import MaxResult, accumulate_dtype
from .shaping import cat, getitem, reshape


def _check(input, what):
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}(): argument 'input' must be Tensor, not {type(input).__name__}")


def scan(input: Tensor, d: int, combine: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """The inclusive scan of `combine` (associative) along dim d: log2(n) shifted steps."""
    n = input.shape[d]
    out, step = input, 1
    lead = (slice(None),) * d
    while step < n:
        head = getitem(out, lead + (slice(0, step),))
        tail = getitem(out, lead + (slice(step, n),))
        prev = getitem(out, lead + (slice(0, n - step),))
        out = cat([head, combine(prev, tail)], d)
        step *= 2
    return out.clone() if out is input else out


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running products along dim: in int64 for bool and integer inputs, in the input's
    dtype for floats; `dtype` casts the input first (PyTorch's rule).

    Example:
        >>> torchic.tensor([1.0, 2.0, 3.0]).cumprod(0)
        tensor([1., 2., 6.])
    """
    _check(input, "cumprod")
    input = to_dtype(input, accumulate_dtype(input, dtype))
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return input.clone()
    return scan(input, d, lambda a, b: a * b)


def _cum_extreme(input, dim, op):
    _check(input, f"cum{op}")
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return MaxResult(input.clone(), reshape(arange(1), ()))
    n = input.shape[d]
    if n == 0:
        return MaxResult(input.clone(), to_dtype(input.detach(), "i64"))
    x = input.detach()
    running = scan(x, d, maximum if op == "max" else minimum)
    at = running == x
    if x.is_floating_point():
        at = logical_or(at, isnan(x))
    shape = [1] * x.ndim
    shape[d] = n
    positions = where(at, reshape(arange(n), tuple(shape)), -1)
    indices = scan(positions, d, maximum)
    return MaxResult(take_along_dim(input, indices, d), indices)


def cummax(input: Tensor, dim: int) -> MaxResult:
    """(values, indices): the running maximum along dim and where it was attained (the
    last position on ties; a NaN, once met, is the maximum from there on, as in PyTorch).

    Example:
        >>> torchic.tensor([1.0, 3.0, 2.0, 3.0]).cummax(0)
        (tensor([1., 3., 3., 3.]), tensor([0, 1, 1, 3]))
    """
    return _cum_extreme(input, dim, "max")


def cummin(input: Tensor, dim: int) -> MaxResult:
    """(values, indices): the running minimum along dim: the mirror of `cummax`."""
    return _cum_extreme(input, dim, "min")


def _logaddexp(a, b):
    """log(exp(a) + exp(b)) computed stably (the larger subtracted; infinities kept)."""
    m = maximum(a, b).detach()
    m = where(isinf(m), 0.0, m)
    return log(exp(a - m) + exp(b - m)) + m


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input), dim)), computed stably (a scan of logaddexp). Integer and bool
    inputs are computed in the default float dtype.

    Example:
        >>> torchic.tensor([0.0, 0.0]).logcumsumexp(0)
        tensor([0.0000, 0.6931])
    """
    _check(input, "logcumsumexp")
    if not input.is_floating_point():
        input = input.float()
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return input.clone()
    return scan(input, d, _logaddexp)


def _spacing(y, x, dx, d, what):
    """The widths between consecutive samples along d: x's differences or the constant dx."""
    if x is not None:
        if dx is not None:
            raise TypeError(f"{what}(): give either x or dx, not both")
        if not isinstance(x, Tensor):
            raise TypeError(f"{what}(): argument 'x' must be Tensor, not {type(x).__name__}")
        xd = normalize_axis(d - y.ndim, x.ndim) if x.ndim != y.ndim else d
        n = x.shape[xd]
        if n != y.shape[d]:
            raise RuntimeError(f"{what}(): x and y must have the same size along dim "
                               f"({n} vs {y.shape[d]})")
        lead = (slice(None),) * xd
        widths = getitem(x, lead + (slice(1, n),)) - getitem(x, lead + (slice(0, n - 1),))
        if x.ndim == 1 and y.ndim > 1:
            shape = [1] * y.ndim
            shape[d] = n - 1
            widths = reshape(widths, tuple(shape))
        return widths
    return 1.0 if dx is None else dx


def _trapezoids(y, x, dx, dim, what):
    _check(y, what)
    if not y.is_floating_point():
        y = y.float() if x is None or not x.is_floating_point() else to_dtype(y, x._dtype)
    d = normalize_axis(dim, y.ndim)
    n = y.shape[d]
    lead = (slice(None),) * d
    widths = _spacing(y, x, dx, d, what)
    mids = getitem(y, lead + (slice(1, n),)) + getitem(y, lead + (slice(0, max(n - 1, 0)),))
    return mids * widths * 0.5, d


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
              dim: int = -1) -> Tensor:
    """The trapezoidal rule along dim: sum of (y[i] + y[i+1]) / 2 * (x[i+1] - x[i]), with
    the samples at `x` (a tensor) or spaced `dx` apart (1 by default).

    Example:
        >>> torchic.trapezoid(torchic.tensor([1.0, 2.0, 3.0]))
        tensor(4.)
    """
    if y.ndim and math.prod(y.shape) == 0 and y.shape[normalize_axis(dim, y.ndim)] == 0:
        return (y.float() if not y.is_floating_point() else y).sum(dim) * 0.0
    parts, d = _trapezoids(y, x, dx, dim, "trapezoid")
    return parts.sum(d)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
          dim: int = -1) -> Tensor:
    """An alias of `trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal rule along dim (one element fewer than y along it)."""
    parts, d = _trapezoids(y, x, dx, dim, "cumulative_trapezoid")
    if parts.shape[d] == 0:
        return parts
    return scan(parts, d, lambda a, b: a + b)
