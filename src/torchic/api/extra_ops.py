"""Composite op functions: tril / triu, masked_fill, clamp, all / any, isclose, split /
chunk / roll, histc / histogram, erf.

Each is built from existing primitives through the differentiable op functions (where,
comparisons, arithmetic, views, cat), so it is correct on every backend at once and its
gradient is the composition's. Masks are bool tensors; all / any / isclose / isin return
bool tensors, as PyTorch's.
"""

import builtins
import numbers
from collections.abc import Sequence

import numpy as np

from .. import raw
from ..creation import arange, linspace, tensor
from ..dtypes import default_float
from ..functions import constant
from ..promotion import SCALAR_TYPE_NAMES, can_cast_code, is_floating
from ..shape import normalize_axes, normalize_axis, numel
from ..tensor import Tensor
from .conversion import to_dtype
from .elementwise import UNARY_OPS, logical_not, maximum, minimum, promote, where
from .inplace import copy_
from .reductions import MaxResult, amax, amin
from .shaping import cat, getitem, reshape

_abs, _exp = UNARY_OPS["abs"], UNARY_OPS["exp"]


# -- triangles and masks ---------------------------------------------------------------------
def _triangle_mask(a, diagonal, lower, what):
    if a.ndim < 2:
        raise RuntimeError(f"{what}: input tensor must have at least 2 dimensions")
    if isinstance(diagonal, bool) or not isinstance(diagonal, numbers.Integral):
        raise TypeError(f"{what}(): argument 'diagonal' must be int, not "
                        f"{type(diagonal).__name__}")
    m, n = a.shape[-2:]
    rows = arange(int(diagonal), m + int(diagonal)).reshape(m, 1)   # row + diagonal
    cols = arange(n)
    return cols <= rows if lower else cols >= rows


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (j <= i + diagonal), zeros elsewhere (in
    input's dtype)."""
    return where(_triangle_mask(input, diagonal, True, "tril"), input,
                 constant(0, input._dtype))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (j >= i + diagonal), zeros elsewhere (in
    input's dtype)."""
    return where(_triangle_mask(input, diagonal, False, "triu"), input,
                 constant(0, input._dtype))


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place `tril`: the elements above diagonal `diagonal` set to zero; returns `input`."""
    return copy_(input, tril(input, diagonal))


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place `triu`: the elements below diagonal `diagonal` set to zero; returns `input`."""
    return copy_(input, triu(input, diagonal))


def _fill_value(value, dtype, what):
    """value in the filled tensor's dtype code: a 0-d tensor cast, a number as it is
    (raw.fill_value refuses one the dtype cannot hold: NaN, inf or out of range for an
    integer dtype, as PyTorch refuses it)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{what} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        return to_dtype(value, dtype)
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{what}(): argument 'value' must be a Number or a 0-d Tensor, not "
                        f"{type(value).__name__}")
    return constant(raw.fill_value(dtype, value), dtype)     # (a host write: exact in int64)


def masked_fill(input: Tensor, mask: Tensor, value: Tensor | float) -> Tensor:
    """input with value where the bool tensor `mask` is True (broadcast against input); the
    result keeps input's dtype (an integer input gets the value truncated toward zero)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked_fill(): argument 'mask' must be Tensor, not "
                        f"{type(mask).__name__}")
    if mask._dtype != "b8":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype}")
    return where(mask, _fill_value(value, input._dtype, "masked_fill"), input)


def masked_fill_(input: Tensor, mask: Tensor, value: Tensor | float) -> Tensor:
    """In-place `masked_fill`: `value` written where `mask` is nonzero; returns `input`."""
    out = masked_fill(input, mask, value)
    if out.shape != input.shape:
        raise RuntimeError(f"masked_fill_: mask of shape {list(mask.shape)} is not "
                           f"broadcastable to the tensor's shape {list(input.shape)}")
    return copy_(input, out)


# -- clamp ---------------------------------------------------------------------------------------
def clamp(input: Tensor, min: Tensor | float | None = None,
          max: Tensor | float | None = None) -> Tensor:
    """min(max(input, min), max) with PyTorch's gradient (1 where min <= x <= max, also at
    the bounds; tensor bounds get the rest). min > max gives max everywhere, NaN stays NaN.

    The result dtype is the promotion of input and the bounds (PyTorch's): an integer input
    with int bounds stays integer, clamped in integers; a float bound makes it a float."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    _, code = promote(*(v for v in (input, min, max) if v is not None))
    if not is_floating(code):
        out = input if min is None else maximum(input, min)
        return to_dtype(out if max is None else minimum(out, max), code)
    out = to_dtype(input, code)
    if min is not None:
        out = where(out < min, min, out)
    if max is not None:
        out = where(out > max, max, out)
    return out


clip = clamp


def clamp_(input: Tensor, min: Tensor | float | None = None,
           max: Tensor | float | None = None) -> Tensor:
    """In-place `clamp`: `input` limited to [min, max]; returns `input`. An integer input
    needs int bounds (a float bound's float result is refused, as PyTorch refuses it)."""
    out = clamp(input, min, max)
    if not can_cast_code(out._dtype, input._dtype):
        raise RuntimeError(f"result type {SCALAR_TYPE_NAMES[out._dtype]} can't be cast to the "
                           f"desired output type {SCALAR_TYPE_NAMES[input._dtype]}")
    return copy_(input, out)


clip_ = clamp_


# -- all / any / isclose ---------------------------------------------------------------------
def _count_dims(input, dim, keepdim, truth):
    """(count of truth elements over dim) as an int64 tensor."""
    axes = normalize_axes(dim, input.ndim)
    t = truth.sum(axes) if not keepdim else truth.sum(axes, keepdim=True)
    return t


def all(input: Tensor, dim: int | Sequence[int] | None = None,
        keepdim: bool = False) -> Tensor:
    """True where every element over dim is nonzero (NaN counts as nonzero): a bool tensor."""
    return _count_dims(input, dim, keepdim, input == 0) == 0


def any(input: Tensor, dim: int | Sequence[int] | None = None,
        keepdim: bool = False) -> Tensor:
    """True where some element over dim is nonzero (NaN counts as nonzero): a bool tensor."""
    return _count_dims(input, dim, keepdim, input != 0) > 0


def isin(elements: Tensor | float, test_elements: Tensor | float, *,
         invert: bool = False) -> Tensor:
    """True where an element of `elements` is among `test_elements` (compared in their
    promoted dtype): a bool tensor of elements' shape; `invert` negates it. One comparison
    of every pair (elements.numel() x test_elements.numel() work)."""
    (a, b), code = promote(elements, test_elements)
    if code == "b8":
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    flat = reshape(b, (numel(b.shape),))
    hits = reshape(a, a.shape + (1,)) == flat
    found = any(hits, -1)
    return logical_not(found) if invert else found


def _check_tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"isclose(): argument '{name}' must be Tensor, not {type(x).__name__}")


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| for finite values; infinities are close
    only to themselves, NaN only with equal_nan. A bool tensor. Equal values are compared
    exactly (integers too); the difference is taken in the promoted float dtype (the default
    float for integers), as PyTorch's."""
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"{'rtol' if rtol < 0 else 'atol'} must be greater than or equal "
                           f"to zero, but got {rtol if rtol < 0 else atol}")
    _check_tensor(input, "input"), _check_tensor(other, "other")
    input, other = input.detach(), other.detach()
    close = input == other             # exact for integers too (no float rounding)
    (a, b), code = promote(input, other)
    if not is_floating(code):
        a, b = to_dtype(a, default_float()), to_dtype(b, default_float())
    if equal_nan:
        close = close | ((a != a) & (b != b))
    if rtol == 0 and atol == 0:        # PyTorch's rule: only equality then
        return close
    diff = a - b
    finite = (diff - diff) == 0        # false when either side is inf or NaN
    return close | (finite & (_abs(diff) <= atol + rtol * _abs(b)))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """A Python bool: isclose everywhere (reads the result: a sync point)."""
    return builtins.bool(all(isclose(input, other, rtol, atol, equal_nan)).item())


# -- split / chunk / roll ------------------------------------------------------------------------
def _narrow(a, d, start, length):
    return getitem(a, (slice(None),) * d + (slice(start, start + length),))


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int],
          dim: int = 0) -> tuple[Tensor, ...]:
    """Views of tensor along dim: pieces of split_size (the last may be smaller) or of the
    listed sizes (which must add up to the dim's size)."""
    d = normalize_axis(dim, tensor.ndim)
    n = tensor.shape[d] if tensor.ndim else 1
    if isinstance(split_size_or_sections, numbers.Integral) and \
            not isinstance(split_size_or_sections, bool):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n != 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={size}" if size < 0 else
                               "split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [builtins.min(size, n - s) for s in range(0, n, size)] if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.any(s < 0 for s in sizes) or builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(_narrow(tensor, d, start, s))
        start += s
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most `chunks` views along dim, each of ceil(size / chunks) (the last smaller)."""
    if isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral):
        raise TypeError(f"chunk(): argument 'chunks' must be int, not {type(chunks).__name__}")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = normalize_axis(dim, input.ndim)
    n = input.shape[d]
    size = -(-n // int(chunks))
    return split(input, size, d) if n else split(input, [0], d)


def _int_tuple(x):
    return (x,) if isinstance(x, numbers.Integral) else tuple(x)


def roll(input: Tensor, shifts: int | Sequence[int],
         dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted along dims, wrapping around (dims None: over the flattened tensor)."""
    shifts = _int_tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        return reshape(roll(reshape(input, (numel(input.shape),)), shifts, 0), input.shape)
    dims = _int_tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    out = input
    for s, dim in zip(shifts, dims):
        d = normalize_axis(dim, input.ndim)
        n = input.shape[d]
        s = int(s) % n if n else 0
        if s:
            out = cat([_narrow(out, d, n - s, s), _narrow(out, d, 0, n - s)], d)
    return out.clone() if out is input else out


# -- histograms ------------------------------------------------------------------------------
def _bin_counts(x, lo, hi, bins, weight=None):
    """Counts (or summed weights) of x's elements in `bins` equal bins over [lo, hi] (lo, hi:
    numbers or 0-d tensors); elements outside (and NaN) are not counted, hi is in the last bin.
    One scatter_add_rows into bins + 1 rows, the last collecting the elements outside."""
    flat = reshape(x.detach(), (numel(x.shape),))
    pos = minimum((flat - lo) * bins / (hi - lo), bins - 1.0)
    inside = (flat >= lo) * (flat <= hi)
    idx = to_dtype(where(inside, pos, float(bins)), "i64")
    src = raw.full((flat.shape[0], 1), 1.0, flat._dtype) if weight is None else \
        raw.contiguous(reshape(weight.detach(), (flat.shape[0], 1)))
    counts = raw.scatter_add_rows(src, raw.contiguous(idx), bins + 1)
    return reshape(counts, (bins + 1,))[:bins]


def _check_bins(bins, what):
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or bins <= 0:
        raise RuntimeError(f"{what}(): bins must be > 0, but got {bins}")
    return int(bins)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Counts of input's elements in `bins` equal bins over [min, max]; min == max uses the
    data's min and max (widened by 1 each way if they are equal). Not differentiable."""
    bins = _check_bins(bins, "histc")
    if not is_floating(input._dtype):
        raise RuntimeError(f'"histogram_cpu" not implemented for '
                           f"'{SCALAR_TYPE_NAMES[input._dtype]}'")
    if min > max:
        raise RuntimeError("max must be larger than min")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = amin(input.detach()), amax(input.detach())
        same = to_dtype(lo == hi, lo._dtype)       # 1 where every value is equal
        lo, hi = lo - same, hi + same
    elif lo == hi:
        lo, hi = lo - 1, hi + 1
    return _bin_counts(input, lo, hi, bins)


def histogram(input: Tensor, bins: int = 100, *, range: Sequence[float] | None = None,
              weight: Tensor | None = None, density: bool = False) -> MaxResult:
    """(hist, bin_edges) over `bins` equal bins of range (default: the data's min and max,
    read: a sync point), or over the bins between the increasing edges of a 1-D tensor
    `bins` (counted on the host: a sync point; the last bin includes its right edge)."""
    if isinstance(bins, Tensor):
        return _histogram_edges(input, bins, weight, density)
    bins = _check_bins(bins, "histogram")
    if range is None:
        x = input.detach()
        lo, hi = (amin(x).item(), amax(x).item()) if input.numel() else (0.0, 1.0)
    else:
        lo, hi = (float(v) for v in range)
        if lo > hi:
            raise ValueError(f"histogram: min should not exceed max, got min {lo} max {hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    hist = _bin_counts(input, lo, hi, bins, weight)
    edges = linspace(lo, hi, bins + 1, dtype=input.dtype)
    if density:
        hist = hist / (hist.sum() * ((hi - lo) / bins))
    return MaxResult(hist, edges)


def _histogram_edges(input, bins, weight, density):
    """histogram over the given edges, as NumPy's (searchsorted into the edges)."""
    if bins.ndim != 1 or bins.shape[0] < 1:
        raise RuntimeError("histogram(): bins tensor should have one dimension and at least "
                           "1 element")
    values = input.detach().numpy().reshape(-1)
    edges = bins.detach().numpy()
    w = None if weight is None else weight.detach().numpy().reshape(-1)
    hist, _ = np.histogram(values, bins=edges, weights=w, density=density)
    return MaxResult(tensor(hist.astype(values.dtype), dtype=input._dtype),
                     tensor(edges.copy(), dtype=input._dtype))


# -- erf ----------------------------------------------------------------------------------------
# |x| < 1: erf(x) = x * P(x^2), a least-squares fit of degree 6 (abs error 1.3e-9 in float64).
_ERF_SMALL = (1.128379166593153, -0.37612629877675857, 0.11283625725084565,
              -0.02685539945204656, 0.00519121837735405, -0.0008034846649790632,
              7.933493886160136e-05)
# |x| >= 1: erfc(z) = t * exp(-z^2 + Q(t)), t = 1 / (1 + z/2), Q of degree 7 fitted on
# z in [1, 10] (relative error 3.2e-8 in float64); z is clamped to 10, where erf is 1 in float32.
_ERFC_LARGE = (-1.2654044933908775, 0.9974338996528904, 0.40061533222316553,
               -0.05564783621995245, 0.35658684856348594, -0.9635199390407063,
               0.6875268956684347, -0.15663473834534816)


def _horner(x, coefficients):
    out = x * coefficients[-1] + coefficients[-2]
    for c in reversed(coefficients[:-2]):
        out = out * x + c
    return out


def erf(input: Tensor) -> Tensor:
    """The error function, from exp and arithmetic: within 2e-7 of math.erf for float32.

    Each branch runs on inputs clamped into its own range (where picks one), so the branch
    not taken never sees a value that would overflow (no inf * 0 in the gradient)."""
    x = input if is_floating(input._dtype) else to_dtype(input, default_float())
    ax = _abs(x)
    small_mask = ax < 1
    xs = where(small_mask, x, 0.0)
    small = xs * _horner(xs * xs, _ERF_SMALL)
    z = clamp(ax, 1.0, 10.0)
    t = 1 / (1 + 0.5 * z)
    big = 1 - t * _exp(_horner(t, _ERFC_LARGE) - z * z)
    return where(small_mask, small, where(x < 0, -big, big))

