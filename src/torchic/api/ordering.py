"""Ordering op functions: sort / argsort / topk, and cumsum.

There is no sort primitive. sort reads the input to the host (a sync point: it waits for
every queued op, like .item()), orders each row with NumPy's stable argsort and uploads
the int64 indices; the values are then gathered on the device from the input (one
gather_rows), so their gradient flows back to the picked elements (a scatter-add).
NaN sorts as the largest value, as in PyTorch. Indices are int64, as PyTorch's.

cumsum is a Hillis-Steele scan of shifted adds on the device: log2(n) steps, each adding
the tensor shifted by 1, 2, 4, ... along dim (differentiable through the adds and views);
the adds are in int64 for bool and integer inputs (PyTorch's), so an integer scan is exact
(wrapping as int64 does).
"""

import numbers
from typing import Any

import numpy as np

from ..creation import tensor as _tensor_from_data
from ..shape import inverse_permutation, normalize_axis
from ..tensor import Tensor
from .conversion import to_dtype
from .reductions import MaxResult, accumulate_dtype
from .shaping import cat, contiguous, getitem, permute, reshape
from .std_order import (REPLAY_LIMIT, SORT_THRESHOLD, StdOrder, nan_first_greater,
                        nan_last_less)


def _check(input, what):
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _order(values, descending, stable):
    """Per-row indices (last axis) that sort values: stable, or PyTorch's std::sort order
    where stable=False and a row has ties (api/std_order.py)."""
    order = _stable_order(values, descending)
    n = values.shape[-1]
    if stable or n <= SORT_THRESHOLD or values.size > REPLAY_LIMIT:
        return order        # (up to 16 elements std::sort is an insertion sort: stable)
    rows, orders = values.reshape(-1, n), order.reshape(-1, n)
    less = nan_first_greater if descending else nan_last_less
    for r in range(rows.shape[0]):
        if _has_ties(rows[r, orders[r]]):
            replay = StdOrder(rows[r].tolist(), less)
            replay.sort()
            orders[r] = replay.positions()
    return orders.reshape(order.shape)


def _has_ties(ranked):
    """Whether a sorted row holds equal neighbours (NaNs count as equal)."""
    if ranked.dtype.kind == "f":
        ranked = np.where(np.isnan(ranked), np.inf, ranked)
    return bool(np.any(ranked[1:] == ranked[:-1]))


def _topk_order(values, k, largest, sorted_):
    """Per-row indices of the top k as PyTorch's CPU topk picks and orders them: its
    std::partial_sort (k * 64 <= n) or std::nth_element then std::sort of the first k - 1,
    replayed where the order is not unique (ties, or sorted=False)."""
    n = values.shape[-1]
    order = _stable_order(values, largest)[..., :k]
    if k == 0 or values.size > REPLAY_LIMIT:
        return order
    rows, orders = values.reshape(-1, n), order.reshape(-1, k)
    less = nan_first_greater if largest else nan_last_less
    for r in range(rows.shape[0]):
        if sorted_ and not _has_ties(rows[r, _stable_order(rows[r], largest)]):
            continue
        replay = StdOrder(rows[r].tolist(), less)
        if k * 64 <= n:
            replay.partial_sort(k)
        else:
            replay.nth_element(k - 1)
            if sorted_:
                replay.sort(0, k - 1)
        orders[r] = replay.positions(0, k)
    return orders.reshape(order.shape)


def _stable_order(values, descending):
    """Per-row indices (last axis) that sort values; ties keep their order."""
    if not descending:
        return np.argsort(values, axis=-1, kind="stable")
    if values.dtype.kind in "iub":      # ~x = -x - 1 (bool: not x) reverses the order, no overflow
        return np.argsort(~values, axis=-1, kind="stable")
    # NaN first, then largest first; np.lexsort is stable and sorts by its last key first
    return np.lexsort((-values, ~np.isnan(values)), axis=-1)


def _sorted(input, dim, descending, stable, k=None, what="sort", sorted_=True):
    """(values, indices) along dim, the first k of each row (all when k is None)."""
    _check(input, what)
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        lead = reshape(input, (1,))
        values, indices = _sorted(lead, 0, descending, stable, k, what, sorted_)
        return reshape(values, ()), reshape(indices, ())
    n = input.shape[d]
    if k is not None and not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    perm = [i for i in range(input.ndim) if i != d] + [d]
    moved = permute(input, perm)                     # dim last (a view)
    host = moved.detach().numpy()                    # the sync point
    host = host.astype(np.float64) if host.dtype.kind == "f" else host   # (ints: exact)
    if what == "topk":
        order = _topk_order(host, k, descending, sorted_)
    else:
        order = _order(host, descending, stable)
    rows = np.arange(int(np.prod(order.shape[:-1]))).reshape(order.shape[:-1] + (1,))
    flat_index = rows * n + order                    # into the rows laid end to end
    table = reshape(contiguous(moved), (moved.numel(),))
    values = getitem(table, _tensor_from_data(flat_index.astype(np.int32), dtype="i32"))
    indices = _tensor_from_data(np.ascontiguousarray(order.astype(np.int64)), dtype="i64")
    back = inverse_permutation(perm)
    return permute(values, back), permute(indices, back)


def sort(input: Tensor, dim: int = -1, descending: bool = False, *,
         stable: bool = False) -> MaxResult:
    """(values, indices) sorted along dim; ties keep their input order (stable).

    Reads input to the host (a sync point); values are gathered on the device, so they
    carry gradients to the input."""
    return MaxResult(*_sorted(input, dim, descending, stable))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The int64 indices that sort input along dim (a sync point, as sort)."""
    return _sorted(input, dim, descending, stable, what="argsort")[1]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> MaxResult:
    """(values, indices) of the k largest (largest=False: smallest) along dim, in order.

    Reads input to the host (a sync point); values carry gradients to the picked elements."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"topk(): argument 'k' must be int, not {type(k).__name__}")
    return MaxResult(*_sorted(input, dim, largest, True, int(k), what="topk", sorted_=sorted))


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along dim: in int64 for bool and integer inputs (integer adds, wrapping
    as PyTorch's), in the input's dtype for floats; `dtype` casts the input first (PyTorch's
    rule)."""
    _check(input, "cumsum")
    input = to_dtype(input, accumulate_dtype(input, dtype))
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return input.clone()
    n = input.shape[d]
    out, step = input, 1
    while step < n:
        head = getitem(out, (slice(None),) * d + (slice(0, step),))
        tail = getitem(out, (slice(None),) * d + (slice(step, n),))
        prev = getitem(out, (slice(None),) * d + (slice(0, n - step),))
        out = cat([head, tail + prev], d)
        step *= 2
    return out.clone() if out is input else out


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """The product of the elements over `dim` (every element when None): in int64 for bool
    and integer inputs (integer products, wrapping as PyTorch's), in the input's dtype for
    floats; `dtype` casts the input first. A pairwise tree of multiplies on the device
    (log2(n) steps, differentiable through them).

    Example:
        >>> torchic.tensor([[1, 2], [3, 4]]).prod(1)
        tensor([ 2, 12])
    """
    _check(input, "prod")
    input = to_dtype(input, accumulate_dtype(input, dtype))
    if dim is None:
        return prod(reshape(input, (input.numel(),)), 0)
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return input.clone()
    out, n = input, input.shape[d]
    if n == 0:
        out = input.sum(d, keepdim=True) + 1       # ones, connected to the graph (grad 0)
    while n > 1:
        half = n // 2
        lo = getitem(out, (slice(None),) * d + (slice(0, half),))
        hi = getitem(out, (slice(None),) * d + (slice(half, 2 * half),))
        pair = lo * hi
        out = cat([pair, getitem(out, (slice(None),) * d + (slice(2 * half, n),))], d) \
            if n % 2 else pair
        n = (n + 1) // 2
    if not keepdim:
        out = reshape(out, tuple(s for i, s in enumerate(input.shape) if i != d))
    return out.clone() if out is input else out
