"""Statistics built from the reductions: nansum / nanmean, count_nonzero, var_mean /
std_mean, aminmax, logsumexp, trace, diff, cov / corrcoef, softmin.

All composites of sum / amax / where / matmul ... (differentiable through them); none is a
sync point.
"""

from collections.abc import Sequence
from typing import Any

from ..creation import arange
from ..dtypes import dtype_code
from ..promotion import is_floating
from ..shape import normalize_axes, normalize_axis
from ..tensor import Tensor
from .conversion import to_dtype
from .elementwise import exp, isinf, isnan, log, logical_xor, sqrt, where
from .reductions import amax, amin, mean, softmax, sum, var
from .shaping import cat, getitem, matmul, reshape, transpose


def _check(input, what):
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}(): argument 'input' must be Tensor, not {type(input).__name__}")


def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: Any = None) -> Tensor:
    """`sum` treating NaN as zero (integer inputs: `sum`)."""
    _check(input, "nansum")
    if input.is_floating_point():
        input = where(isnan(input), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: Any = None) -> Tensor:
    """`mean` over the non-NaN elements (NaN where there is none)."""
    _check(input, "nanmean")
    code = input._dtype if dtype is None else dtype_code(dtype)
    if not is_floating(code):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {input.dtype}")
    input = to_dtype(input, code)
    count = sum(~isnan(input), dim, keepdim)
    return nansum(input, dim, keepdim) / count


def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The number of nonzero elements over dim (all when None), int64."""
    _check(input, "count_nonzero")
    return sum(input != 0, dim)


def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) over dim, as two tensors (see `var` for the arguments)."""
    _check(input, "var_mean")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) over dim, as two tensors (see `var` for the arguments)."""
    v, m = var_mean(input, dim, unbiased, keepdim, correction=correction)
    return sqrt(v), m


class AminmaxResult(tuple):
    """(min, max), PyTorch's named tuple of aminmax."""

    def __new__(cls, lo, hi):
        return super().__new__(cls, (lo, hi))

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> AminmaxResult:
    """(min, max) of input over dim (every element when None): `amin` and `amax` at once."""
    _check(input, "aminmax")
    if dim is None and input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None and keepdim:
        shape = (1,) * input.ndim
        return AminmaxResult(reshape(amin(input), shape), reshape(amax(input), shape))
    return AminmaxResult(amin(input, dim, keepdim), amax(input, dim, keepdim))


def logsumexp(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """log(sum(exp(input), dim)), computed stably (the max subtracted). Integer inputs are
    computed in the default float dtype.

    Example:
        >>> torchic.logsumexp(torchic.tensor([0.0, 0.0]), 0)
        tensor(0.6931)
    """
    _check(input, "logsumexp")
    if not input.is_floating_point():
        input = input.float()
    axes = normalize_axes(dim if dim != () else None, input.ndim)
    if input.numel() == 0:
        return log(sum(exp(input), axes, keepdim))
    m = amax(input.detach(), axes, keepdim=True)
    m = where(isinf(m), 0.0, m)
    out = log(sum(exp(input - m), axes, keepdim=True)) + m
    if not keepdim:
        out = reshape(out, tuple(s for i, s in enumerate(input.shape) if i not in axes))
    return out


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D input (int64 for integer inputs)."""
    _check(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input._dtype == "b8":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    n = min(input.shape)
    i = arange(n)
    return sum(getitem(input, (i, i)))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along dim (`out[i] = input[i + 1] - input[i]`, n times),
    after `prepend` / `append` are concatenated; bool inputs give `!=` of neighbours."""
    _check(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = normalize_axis(dim, input.ndim)
    if n == 0:
        return input
    parts = [t for t in (prepend, input, append) if t is not None]
    if len(parts) > 1:
        parts = [p if p.ndim == input.ndim else reshape(p, tuple(
            1 if i == d else s for i, s in enumerate(input.shape))).expand(tuple(
                1 if i == d else s for i, s in enumerate(input.shape))) for p in parts]
        input = cat(parts, d)
    lead = (slice(None),) * d
    for _ in range(n):
        m = input.shape[d]
        if m == 0:
            break
        hi, lo = getitem(input, lead + (slice(1, m),)), getitem(input, lead + (slice(0, m - 1),))
        input = logical_xor(hi, lo) if input._dtype == "b8" else hi - lo
    return input


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in input's rows (observations in its
    columns; a 1-D input is one variable), with frequency / observation weights
    (`fweights`, `aweights`) and `correction` subtracted from the count as numpy.cov."""
    _check(input, "cov")
    if input.ndim > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else reshape(input, (1, input.numel()))
    if not x.is_floating_point():
        x = x.float()
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = mean(x, 1, keepdim=True)
        count = n - correction
        centered = x - avg
        c = matmul(centered, transpose(centered, 0, 1)) * (1.0 / count if count > 0 else
                                                            float("inf"))
    else:
        w_sum = sum(w)          # in the weights' own dtype, as PyTorch's
        avg = sum(x * w, 1, keepdim=True) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            # w_sum - correction * sum(w * aweights) / w_sum cancels badly for few, light
            # observations: its value is summed on the host in the weights' dtype in
            # PyTorch's order (a sync point), so a backend's more exact sum does not show
            # amplified; the gradient flows through the tensor expression (+ t - t.detach())
            wh, ah = w.detach().numpy(), aweights.detach().numpy()
            exact = float(wh.sum() - wh.dtype.type(correction) * (wh * ah).sum() / wh.sum())
            norm = w_sum - correction * sum(w * aweights) / w_sum
            norm = (norm - norm.detach()) + exact
        centered = x - avg
        norm = where(norm <= 0, 0.0, norm)
        c = matmul(centered * w, transpose(centered, 0, 1)) / norm
    return reshape(c, ()) if x.shape[0] == 1 else c


def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in input's rows: `cov` over
    the outer product of the standard deviations, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = sqrt(getitem(c, (arange(c.shape[0]), arange(c.shape[0]))))
    c = c / reshape(d, (-1, 1)) / reshape(d, (1, -1))
    return c.clamp(-1, 1)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """`softmax(-input, dim)`: weights in [0, 1] summing to 1 that favour the smallest values.

    Args:
        input: any shape.
        dim: the dimension to normalize along. Default: the last.
        dtype: if given, the input is cast to it first.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.softmin(torch.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900])
    """
    _check(input, "softmin")
    if dtype is not None:
        input = to_dtype(input, dtype_code(dtype))
    if dim is None:      # PyTorch's implicit dim (deprecated): 0 for 0-, 1- and 3-d inputs
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return softmax(-input, dim)

