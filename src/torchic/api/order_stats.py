"""Order statistics: median / nanmedian, mode, kthvalue, quantile / nanquantile, msort,
unique / unique_consecutive, bincount, searchsorted / bucketize.

Like sort (api/ordering.py) there is no primitive: each reads its input to the host (a
sync point: it waits for every queued op, like .item()), decides the *positions* there with
NumPy (stable orders, so ties resolve as PyTorch's do where it documents them) and then
gathers the values on the device from the input (`take_along_dim`), so the gradient flows
to the picked elements. quantile interpolates between two gathered neighbours with tensor
arithmetic (differentiable in both). The results that are not differentiable in PyTorch
(indices, unique, bincount, searchsorted) are made from the host arrays directly.
"""

import numbers
import operator
from typing import Any

import numpy as np

from ..creation import tensor as _tensor_from_data
from ..shape import normalize_axis
from ..tensor import Tensor
from .ordering import sort
from .reductions import MaxResult
from .index_ops import take_along_dim
from .shaping import reshape, squeeze
from .std_order import REPLAY_LIMIT, SORT_THRESHOLD, StdOrder


def _check(input, what):
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _host(input):
    """The input's values on the host (float64 for floats: exact; ints as they are)."""
    a = input.detach().numpy()
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _i64(a):
    return _tensor_from_data(np.array(a, dtype=np.int64, order="C"), dtype="i64")


def _pick(input, d, rows_index, keepdim):
    """(values, indices) at the per-row positions rows_index (shape: input's with dim d
    dropped, as host int64), gathered along d; keepdim keeps d with size 1."""
    idx = np.expand_dims(rows_index, d)
    indices = _i64(idx)
    values = take_along_dim(input, indices, d)
    if not keepdim:
        values, indices = squeeze(values, d), squeeze(indices, d)
    return MaxResult(values, indices)


def _one_dim(input, dim, what):
    """The dim (normalized) of a dim-wise order statistic; a 0-d input is read as (1,)."""
    _check(input, what)
    d = normalize_axis(dim, max(input.ndim, 1))
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{what}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _median(input, dim, keepdim, ignore_nan, what):
    if dim is None:
        _check(input, what)
        if input.numel() == 0:
            return reshape(input.float() * 0, ()) * float("nan")
        flat = reshape(input, (input.numel(),))
        return _median(flat, 0, False, ignore_nan, what).values
    d = _one_dim(input, dim, what)
    if input.ndim == 0:
        return MaxResult(input.clone(), _i64(0))
    host = np.moveaxis(_host(input), d, -1)
    order = np.argsort(host, axis=-1, kind="stable")            # NaN last, in input order
    nan = np.isnan(host) if host.dtype.kind == "f" else np.zeros(host.shape, bool)
    n = host.shape[-1]
    if ignore_nan:
        count = n - nan.sum(-1)
        k = np.where(count > 0, (count - 1) // 2, 0)
    else:
        k = np.where(nan.any(-1), n - nan.sum(-1), (n - 1) // 2)   # the first NaN, if any
    pos = np.take_along_axis(order, k[..., None], -1)[..., 0]
    return _pick(input, d, pos, keepdim)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The median: the lower of the two middle values for an even count. Without `dim`, a
    0-d tensor over every element; with `dim`, `(values, indices)` along it. NaN, if any
    is present, is the median (as PyTorch's). A sync point (see the module docstring).

    Example:
        >>> torchic.tensor([[1.0, 3.0, 2.0], [4.0, 6.0, 5.0]]).median(1).values
        tensor([2., 5.])
    """
    return _median(input, dim, keepdim, False, "median")


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """`median` ignoring NaN values (NaN only where a row holds nothing else)."""
    return _median(input, dim, keepdim, True, "nanmedian")


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> MaxResult:
    """(values, indices) of the k-th smallest element along dim (k counts from 1).

    Example:
        >>> torchic.tensor([3.0, 1.0, 2.0]).kthvalue(2)
        (tensor(2.), tensor(2))
    """
    d = _one_dim(input, dim, "kthvalue")
    n = input.shape[d] if input.ndim else 1
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"kthvalue(): argument 'k' must be int, not {type(k).__name__}")
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.ndim == 0:
        return MaxResult(input.clone(), _i64(0))
    host = np.moveaxis(_host(input), d, -1)
    rows = host.reshape(-1, n)
    if rows.size > REPLAY_LIMIT:        # (ties then in the stable order: see std_order.py)
        picked = np.argsort(rows, axis=-1, kind="stable")[:, k - 1]
    else:
        picked = np.array([_quick_select(list(row), k - 1) for row in rows], dtype=np.int64)
    return _pick(input, d, picked.reshape(host.shape[:-1]), keepdim)


def _gt_or_nan(x, y):
    return (x != x and y == y) or x > y


def _quick_select(values, k):
    """The input position of the k-th smallest of `values` (0-based) as PyTorch's CPU
    kthvalue finds it: its quickselect (median-of-three pivot, NaN largest) over (value,
    position) pairs, so ties resolve to the same position as PyTorch's."""
    pos = list(range(len(values)))

    def swap(i, j):
        values[i], values[j] = values[j], values[i]
        pos[i], pos[j] = pos[j], pos[i]
    lo, hi = 0, len(values) - 1
    while hi > lo:
        if hi == lo + 1:
            if _gt_or_nan(values[lo], values[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if _gt_or_nan(values[lo + 1], values[hi]):
            swap(lo + 1, hi)
        if _gt_or_nan(values[lo], values[hi]):
            swap(lo, hi)
        if _gt_or_nan(values[lo + 1], values[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, values[lo]
        while True:
            i += 1
            while _gt_or_nan(pivot, values[i]):
                i += 1
            j -= 1
            while _gt_or_nan(values[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return pos[k]


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> MaxResult:
    """(values, indices): the most frequent value along dim (the smallest among equally
    frequent ones) and the position PyTorch's gives (the last of its run in PyTorch's
    std::sort order: see api/ordering.py).

    Example:
        >>> torchic.tensor([1, 3, 3, 1, 2]).mode()
        (tensor(1), tensor(3))
    """
    d = _one_dim(input, dim, "mode")
    if input.ndim == 0:
        return MaxResult(input.clone(), _i64(0))
    host = np.moveaxis(_host(input), d, -1)
    n = host.shape[-1]
    rows = host.reshape(-1, n)
    order = np.argsort(rows, axis=-1, kind="stable")
    picked = np.empty(rows.shape[0], np.int64)
    for r in range(rows.shape[0]):
        if n > SORT_THRESHOLD and rows.size <= REPLAY_LIMIT:   # PyTorch's std::sort order
            replay = StdOrder(rows[r].tolist(), operator.lt)
            replay.sort()
            order[r] = replay.positions()
        s = rows[r, order[r]]
        new_run = np.concatenate(([True], s[1:] != s[:-1]))   # NaN != NaN: runs of one
        starts = np.flatnonzero(new_run)
        lengths = np.diff(np.append(starts, n))
        best = int(np.argmax(lengths))                        # the first longest: smallest
        picked[r] = order[r, starts[best] + lengths[best] - 1]   # its last position
    return _pick(input, d, picked.reshape(host.shape[:-1]), keepdim)


def msort(input: Tensor) -> Tensor:
    """input sorted along its first dim: `torchic.sort(input, dim=0).values`."""
    _check(input, "msort")
    return sort(input, 0).values


# -- quantiles ----------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, what):
    _check(input, what)
    if not input.is_floating_point():
        raise RuntimeError(f"{what}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{what}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. "
                         f"Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    qs = np.asarray([q] if scalar_q else _host(q), dtype=np.float64)
    if not scalar_q and (q.ndim > 1 or q._dtype != input._dtype):
        raise RuntimeError(f"{what}() q must be a scalar or 1D tensor of the input's dtype")
    if qs.size and (np.any(qs < 0) or np.any(qs > 1)):
        raise RuntimeError(f"{what}() q values must be in the range [0, 1]")
    if dim is None:
        x, d = reshape(input, (input.numel(),)), 0
    else:
        x, d = (reshape(input, (1,)) if input.ndim == 0 else input), normalize_axis(dim, max(
            input.ndim, 1))
    if x.shape[d] == 0:
        raise IndexError(f"{what}() input tensor must be non-empty")
    host = np.moveaxis(_host(x), d, -1)
    order = np.argsort(host, axis=-1, kind="stable")
    nan = np.isnan(host)
    n = host.shape[-1]
    count = (n - nan.sum(-1)) if ignore_nan else np.full(host.shape[:-1], n)
    rank = qs.reshape((-1,) + (1,) * (host.ndim - 1)) * (count - 1)   # (Q, *rows)
    if interpolation == "lower":
        rank = np.floor(rank)
    elif interpolation == "higher":
        rank = np.ceil(rank)
    elif interpolation == "nearest":
        rank = np.round(rank)                       # half to even, as PyTorch's round
    lo = np.clip(np.floor(rank), 0, n - 1).astype(np.int64)
    hi = np.clip(np.ceil(rank), 0, n - 1).astype(np.int64)
    frac = rank - np.floor(rank)
    if interpolation == "midpoint":
        frac = np.where(hi > lo, 0.5, 0.0)
    all_nan = (count == 0) if ignore_nan else nan.any(-1)
    moved_in = np.moveaxis(order, -1, 0)            # (n, *rows)

    def at(pos):            # (Q, *rows) positions into each row's sorted order -> values
        positions = np.take_along_axis(moved_in[None], pos[:, None], 1)[:, 0]   # (Q, *rows)
        idx = np.moveaxis(positions, 0, -1)         # (*rows, Q)
        return take_along_dim(x, _i64(np.moveaxis(idx, -1, d)), d)    # Q along d
    low, high = at(lo), at(hi)
    def laid_out(a):        # (Q, *rows) -> x's layout with Q along d
        return np.ascontiguousarray(np.moveaxis(np.moveaxis(a, 0, -1), -1, d))
    w = _tensor_from_data(laid_out(frac), dtype=x._dtype)
    if not scalar_q and interpolation == "linear" and q.requires_grad:
        # weights = q * (count - 1) - floor(rank): differentiable in q, as PyTorch's
        q_shape = [1] * x.ndim
        q_shape[d] = qs.size
        scale = np.broadcast_to((count - 1)[None].astype(np.float64), frac.shape)
        w = reshape(q, tuple(q_shape)) * _tensor_from_data(laid_out(scale), dtype=x._dtype) \
            - _tensor_from_data(laid_out(np.floor(rank) + 0 * frac), dtype=x._dtype)
    out = low + (high - low) * w
    if all_nan.any():
        mask = np.broadcast_to(all_nan[None], frac.shape)
        nan_at = _tensor_from_data(np.moveaxis(np.moveaxis(mask, 0, -1), -1, d), dtype="b8")
        out = out.masked_fill(nan_at, float("nan"))
    # out has the Q values along d; PyTorch puts q's dim first, the reduced dim dropped/kept
    out = _move_first(out, d)
    if input.ndim == 0:
        out = reshape(out, (out.shape[0],))
    elif keepdim:
        if dim is None:
            out = reshape(out, (out.shape[0],) + (1,) * input.ndim)
        else:
            shape = list(out.shape)
            shape.insert(d + 1, 1)
            out = reshape(out, tuple(shape))
    elif dim is None:
        out = reshape(out, (out.shape[0],))
    return squeeze(out, 0) if scalar_q else out


def _move_first(t, d):
    perm = [d] + [i for i in range(t.ndim) if i != d]
    return t.permute(perm)


def quantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False,
             *, interpolation: str = "linear") -> Tensor:
    """The q-th quantiles of input along dim (every element when None): `q` a float or a
    1-D tensor in [0, 1] (its dim comes first in the result). Between two data points the
    value is interpolated: "linear", "lower", "higher", "midpoint" or "nearest". NaN in a
    row makes its quantiles NaN. A sync point; differentiable.

    Example:
        >>> torchic.quantile(torchic.tensor([0.0, 1.0, 2.0, 3.0]), 0.5)
        tensor(1.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input: Tensor, q: float | Tensor, dim: int | None = None,
                keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """`quantile` ignoring NaN values (NaN only where a row holds nothing else)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


# -- unique and counting ------------------------------------------------------------------

def _from_host(a, dtype):
    return _tensor_from_data(np.array(a, order="C"), dtype=dtype)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct values of input (sorted), flattened, or the distinct slices along
    `dim`; with `return_inverse` each element's index into them and with `return_counts`
    how often each occurs (int64). Not differentiable. A sync point.

    Example:
        >>> torchic.unique(torchic.tensor([3, 1, 1]), return_counts=True)
        (tensor([1, 3]), tensor([2, 1]))
    """
    _check(input, "unique")
    host = input.detach().numpy()
    if dim is None:
        values, inverse, counts = np.unique(host.reshape(-1), return_inverse=True,
                                            return_counts=True)
        inverse = inverse.reshape(host.shape)
    else:
        d = normalize_axis(dim, max(input.ndim, 1))
        values, inverse, counts = np.unique(host, return_inverse=True, return_counts=True,
                                            axis=d)
        inverse = inverse.reshape(-1)
    return _unique_result(values, inverse, counts, input._dtype, return_inverse, return_counts)


def _unique_result(values, inverse, counts, code, return_inverse, return_counts):
    out = [_from_host(values, code)]
    if return_inverse:
        out.append(_i64(inverse))
    if return_counts:
        out.append(_i64(counts))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False, dim: int | None = None) -> Any:
    """input with each run of equal consecutive values (or slices along `dim`) kept once;
    the inverse and counts as `unique`'s. Not differentiable. A sync point."""
    _check(input, "unique_consecutive")
    host = input.detach().numpy()
    if dim is None:
        flat = host.reshape(-1)
        new = np.concatenate(([True], flat[1:] != flat[:-1])) if flat.size else np.zeros(0, bool)
        values = flat[new]
        inverse = (np.cumsum(new) - 1).reshape(host.shape)
    else:
        d = normalize_axis(dim, max(input.ndim, 1))
        moved = np.moveaxis(host, d, 0).reshape(host.shape[d], int(np.prod(
            [s for i, s in enumerate(host.shape) if i != d])))
        differs = np.any(moved[1:] != moved[:-1], axis=1) if moved.shape[0] else moved[:0, 0]
        new = np.concatenate(([True], differs)) if moved.shape[0] else np.zeros(0, bool)
        values = np.take(host, np.flatnonzero(new), axis=d)
        inverse = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, new.size))
    return _unique_result(values, inverse, counts, input._dtype, return_inverse, return_counts)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... max(input) occurs in the 1-D non-negative integer
    input (at least `minlength` bins); with `weights`, the sum of the weights per value
    (float32 weights give float32, others float64). A sync point.

    Example:
        >>> torchic.bincount(torchic.tensor([1, 1, 3]))
        tensor([0, 2, 0, 1])
    """
    _check(input, "bincount")
    if input.is_floating_point() or input._dtype == "b8":
        raise RuntimeError(f'"bincount_cpu" not implemented for '
                           f"'{str(input.dtype).split('.')[-1].capitalize()}'")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if isinstance(minlength, bool) or not isinstance(minlength, numbers.Integral) or \
            minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    host = input.detach().numpy().astype(np.int64)
    if host.size and host.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _i64(np.bincount(host, minlength=int(minlength)))
    if weights.ndim != 1 or weights.shape[0] != host.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    w = weights.detach().numpy().astype(np.float64)
    code = "f32" if weights._dtype == "f32" else "f64"
    return _from_host(np.bincount(host, weights=w, minlength=int(minlength)), code)


def searchsorted(sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """For each value of input, the index at which it would be inserted into the (last
    dim of the) sorted sequence to keep it sorted: the first such index, or the last with
    `right=True` / `side="right"`. int64 (int32 with out_int32). A sync point.

    Example:
        >>> torchic.searchsorted(torchic.tensor([1, 3, 5]), torchic.tensor([3, 6]))
        tensor([1, 3])
    """
    _check(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites")
        right = side == "right"
    seq = _host(sorted_sequence)
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter.detach().numpy().astype(np.int64), -1)
    scalar = not isinstance(input, Tensor)
    values = np.asarray(input, dtype=np.float64) if scalar else _host(input)
    how = "right" if right else "left"
    if seq.ndim <= 1:
        out = np.searchsorted(seq.reshape(-1), values, side=how)
    else:
        if scalar or values.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension "
                               "or the first N-1 dimensions of boundaries tensor and input "
                               "value tensor must match")
        rows = int(np.prod(seq.shape[:-1]))
        rows_s = seq.reshape(rows, seq.shape[-1])
        rows_v = values.reshape(rows, values.shape[-1])
        out = np.zeros(values.shape, np.int64)
        out.reshape(rows, values.shape[-1])[...] = [
            np.searchsorted(s, v, side=how) for s, v in zip(rows_s, rows_v)] if rows else 0
    return _from_host(np.asarray(out), "i32" if out_int32 else "i64")


def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The index of the bucket of each value of input given the 1-D sorted `boundaries`:
    `searchsorted(boundaries, input, right=right)`."""
    _check(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)

