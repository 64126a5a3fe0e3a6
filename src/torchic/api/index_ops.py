"""Gather / scatter along a dim and the index_* family (issue 41): gather, take_along_dim,
take, put, index_select, index_add, index_copy, index_fill, index_put, index_reduce,
scatter, scatter_add, scatter_reduce.

All are composed of the gather_rows / scatter_add_rows primitives over flat positions:

* the positions an op reads or writes are computed on the host from the index tensor (read:
  a sync) and validated there, so an index out of range is PyTorch's error, never a kernel
  fault; index_select alone stays on the device (gather_rows refuses an index outside the
  table: PyTorch's IndexError, at the next read);
* a read is one gather of those positions from the input seen flat (`_gather_positions`);
* an overwrite (scatter, index_copy, put) is one gather from [input's elements, the new
  values] (`write_at`): where several values name one position the last one wins
  (deterministic; PyTorch leaves that case undefined);
* an accumulation (`add_at`) is scatter_add_rows for floats (the values added in index
  order, deterministic), and for integers a sort of the positions plus a running sum
  (exact, wrapping as PyTorch's integers); prod / amax / amin / mean combine in rounds, the
  k-th value of each position in round k (as many rounds as the most repeated position).

Gradients follow from the compositions (gather_rows' is scatter_add_rows and back).
"""

import numpy as np

from ..creation import tensor as _tensor_from_data
from ..dispatcher import FLOAT_CODES, runtime
from ..functions import Cat, GatherRows, Permute, Reshape, ScatterAddRows, constant
from ..shape import contiguous_strides, normalize_axis, numel
from ..tensor import Tensor
from .conversion import to_dtype
from .elementwise import maximum, minimum, where
from .extra_ops import _fill_value
from .indexing import _gather_positions, _positions, assign
from .inplace import copy_
from .ordering import cumsum
from .shaping import expand, reshape

_INDEX = ("i64", "i32", "i16", "i8", "u8")


# -- positions ------------------------------------------------------------------------------
def _index_tensor(x):
    return _tensor_from_data(np.ascontiguousarray(x, np.int64), dtype="i64")


def _read_index(index, what, int64_only=False):
    if not isinstance(index, Tensor):
        raise TypeError(f"{what}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._dtype != "i64" and index.numel() and (int64_only or index._dtype not in ("i32", "i64")):
        raise RuntimeError(f"{what}(): Expected dtype int64 for index" if int64_only else
                           f"{what}(): Expected dtype int32/int64 for index")
    return index.detach().numpy().astype(np.int64)


def _dim_positions(shape, dim, idx, what):
    """Flat positions in a tensor of `shape` of idx's elements read along `dim` (gather /
    scatter's rule: out[i][j][k] is self[i][idx[i][j][k]][k] for dim 1)."""
    if not idx.size:            # an empty index: no checks (PyTorch's rule), no positions
        return np.zeros(idx.shape, np.int64)
    nd = max(len(shape), 1)
    if idx.ndim != nd and not (idx.ndim <= 1 and len(shape) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    shape1 = shape if shape else (1,)
    idx = idx.reshape(idx.shape if idx.ndim else (1,)) if len(shape) <= 1 else idx
    n = shape1[dim]
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        raise RuntimeError(f"index {int(idx[bad][0])} is out of bounds for dimension {dim} "
                           f"with size {n}")
    strides = contiguous_strides(shape1)
    pos = idx * strides[dim]
    for d, n in enumerate(idx.shape):      # + each other coordinate times its stride
        if d != dim:
            pos += (np.arange(n, dtype=np.int64) * strides[d]).reshape(
                (n,) + (1,) * (idx.ndim - d - 1))
    return pos


def _check_sizes(index_shape, shape, dim, other_shape=None, other="src"):
    if not numel(index_shape):
        return
    for d, n in enumerate(index_shape):
        if d != dim and len(shape) > 1 and n > shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index_shape)} to be no larger than self "
                               f"{list(shape)} apart from dimension {dim}")
        if other_shape is not None and len(other_shape) > 1 and n > other_shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index_shape)} to be no larger than {other} "
                               f"{list(other_shape)}")


def _flat(t):
    return Reshape.apply(t, shape=(numel(t.shape), 1))


# -- writes ----------------------------------------------------------------------------------
def write_at(base, positions, values):
    """base with the elements at flat `positions` replaced by `values` (of positions' shape
    or broadcast to it; cast to base's dtype); the last of repeated positions wins."""
    values = to_dtype(values, base._dtype)
    flat = positions.reshape(-1)
    if values.shape != positions.shape:
        values = expand(values, positions.shape)
    n, m = numel(base.shape), flat.size
    select = np.arange(n, dtype=np.int64)
    last, first_from_end = np.unique(flat[::-1], return_index=True)
    select[last] = n + (m - 1 - first_from_end)
    table = Cat.apply(_flat(base), _flat(values), dim=0)
    return Reshape.apply(GatherRows.apply(table, _index_tensor(select)), shape=base.shape)


def _scatter_sum(positions, values, n):
    """(n,) sums of `values` at flat `positions` (zeros elsewhere), in values' dtype."""
    flat = positions.reshape(-1)
    if values._dtype in FLOAT_CODES:
        code = values._dtype if values._dtype in ("f32", "f64") else "f32"
        src = _flat(to_dtype(values, code))
        out = ScatterAddRows.apply(src, _index_tensor(flat), (n, 1))
        return to_dtype(reshape(out, (n,)), values._dtype)
    v = to_dtype(reshape(values, (flat.size,)), "i64")     # integers: exact, wrapping
    order = np.argsort(flat, kind="stable")
    uniq, starts = np.unique(flat[order], return_index=True)
    ends = np.append(starts[1:], flat.size)
    running = cumsum(GatherRows.apply(v, _index_tensor(order)), 0)
    padded = Cat.apply(constant(0, "i64").reshape((1,)), running, dim=0)
    sums = GatherRows.apply(padded, _index_tensor(ends)) - \
        GatherRows.apply(padded, _index_tensor(starts))
    select = np.zeros(n, np.int64)
    select[uniq] = np.arange(1, uniq.size + 1)
    table = Cat.apply(constant(0, "i64").reshape((1,)), sums, dim=0)
    return GatherRows.apply(table, _index_tensor(select))


def add_at(base, positions, values):
    """base with `values` added at flat `positions` (repeated positions add up)."""
    values = to_dtype(values, base._dtype) if base._dtype != "b8" else values
    if values.shape != positions.shape:
        values = expand(values, positions.shape)
    if not positions.size:      # nothing added (values still get their zero gradient)
        return write_at(base, positions, values)
    sums = reshape(_scatter_sum(positions, values, numel(base.shape)), base.shape)
    if base._dtype == "b8":
        return to_dtype(to_dtype(base, "i64") + sums, "b8")
    return base + to_dtype(sums, base._dtype)


def _combine(kind, a, b):
    if kind == "prod":
        return a * b
    return maximum(a, b) if kind == "amax" else minimum(a, b)


def reduce_into(base, positions, values, kind, include_self=True):
    """base with `values` combined into flat `positions` by `kind` (sum, prod, mean, amax,
    amin); include_self=False leaves base's value out where a position is written."""
    values = to_dtype(values, base._dtype)
    if values.shape != positions.shape:
        values = expand(values, positions.shape)
    flat = positions.reshape(-1)
    n = numel(base.shape)
    counts = np.bincount(flat, minlength=n) if flat.size else np.zeros(n, np.int64)
    vflat = reshape(values, (flat.size,))
    if not include_self:      # written positions start from zero (sum / mean) or their 1st
        if kind in ("sum", "mean"):
            base = write_at(base, np.nonzero(counts)[0], constant(0, base._dtype))
    if kind in ("sum", "mean"):
        out = add_at(base, positions, values)
        if kind == "mean":
            div = counts + (1 if include_self else 0)
            div = _tensor_from_data(np.maximum(div, 1).reshape(base.shape), dtype="i64")
            out = out / div if base._dtype in FLOAT_CODES else \
                to_dtype(_floor_div(to_dtype(out, "i64"), div), base._dtype)
        return out
    order = np.argsort(flat, kind="stable")
    sorted_pos = flat[order]
    starts = np.searchsorted(sorted_pos, sorted_pos, side="left")
    rank = np.arange(flat.size) - starts          # k: the k-th value of its position
    out = base
    for k in range(int(rank.max()) + 1 if flat.size else 0):
        pick = order[rank == k]
        pos = flat[pick]
        vals = GatherRows.apply(vflat, _index_tensor(pick))
        if k == 0 and not include_self:
            out = write_at(out, pos, vals)
            continue
        current = GatherRows.apply(reshape(out, (n,)), _index_tensor(pos))
        out = write_at(out, pos, _combine(kind, current, vals))
    return out


def _floor_div(a, b):
    """a // b for int64 tensors (b > 0): a float quotient (float64 where the backend holds
    it), then corrected by one either way: exact while the float estimate is within one."""
    code = "f64" if "f64" in getattr(runtime().backend, "dtypes", ()) else "f32"
    q = to_dtype(to_dtype(a, code) / to_dtype(b, code), "i64")
    q = where(q * b > a, q - 1, q)
    return where((q + 1) * b <= a, q + 1, q)


# -- gather / scatter along a dim -------------------------------------------------------------
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values of `input` picked along `dim` by an int64 `index` of the same number of dims:
    `out[i][j][k] = input[i][index[i][j][k]][k]` for dim 1 (index's sizes at most input's
    elsewhere). The result has index's shape; the gradient adds up at repeated indices.

    Example:
        >>> torchic.tensor([[1, 2], [3, 4]]).gather(1, torchic.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]])
    """
    d = normalize_axis(dim, input.ndim)
    idx = _read_index(index, "gather")
    _check_sizes(idx.shape, input.shape, d)
    pos = _dim_positions(input.shape, d, idx, "gather").reshape(idx.shape)
    return _gather_positions(input, pos)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """`gather` along `dim` with input and indices broadcast against each other elsewhere;
    dim None: indices into the flattened input."""
    if dim is None:
        return gather(reshape(input, (numel(input.shape),)), 0,
                      reshape(indices, (numel(indices.shape),)))
    d = normalize_axis(dim, input.ndim)
    if indices.ndim != input.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[d] = shape_ix[d] = 1
    try:
        common = list(np.broadcast_shapes(tuple(shape_in), tuple(shape_ix)))
    except ValueError:
        raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{list(input.shape)} and {list(indices.shape)}") from None
    a_shape, i_shape = list(common), list(common)
    a_shape[d], i_shape[d] = input.shape[d], indices.shape[d]
    n = input.shape[d]
    indices = where(indices < 0, indices + n, indices)      # -1 is the last, as PyTorch's
    return gather(expand(input, tuple(a_shape)), d, expand(indices, tuple(i_shape)))


def _wrap_flat(idx, n, what):
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(idx[bad][0])} on a tensor "
                         f"of {n} elements.")
    return np.where(idx < 0, idx + n, idx)


def take(input: Tensor, index: Tensor) -> Tensor:
    """`input` seen flat (row-major), read at `index` (negative: from the end); the result
    has index's shape."""
    idx = _read_index(index, "take", int64_only=True)
    return _gather_positions(input, _wrap_flat(idx, numel(input.shape), "take"))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with `source`'s values written at flat positions `index` (negative:
    from the end); accumulate=True adds them instead."""
    idx = _read_index(index, "put", int64_only=True).reshape(-1)
    if numel(source.shape) != idx.size:
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {numel(source.shape)}, "
                           f"index.numel() = {idx.size}")
    pos = _wrap_flat(idx, numel(input.shape), "put")
    values = reshape(source, (idx.size,))
    return add_at(input, pos, values) if accumulate else \
        write_at(input, pos, values)


def _scatter_args(input, dim, index, src, what):
    d = normalize_axis(dim, input.ndim)
    idx = _read_index(index, what)
    if isinstance(src, Tensor) and idx.ndim != src.ndim and not (idx.ndim <= 1 and
                                                                 src.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src "
                           "tensor")
    _check_sizes(idx.shape, input.shape, d, src.shape if isinstance(src, Tensor) else None)
    pos = _dim_positions(input.shape, d, idx, what).reshape(idx.shape)
    if isinstance(src, Tensor):
        if src.ndim:
            src = src[tuple(slice(0, n) for n in idx.shape)]
        values = reshape(src, idx.shape)
    else:
        values = _fill_value(src, input._dtype, what)
    return pos, values


def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | float | None = None, *,
            value: float | None = None, reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src`'s values (or the number `value`) written along `dim` at
    `index`: `out[i][index[i][j][k]][k] = src[i][j][k]` for dim 1. Where index names one
    position twice PyTorch leaves the result undefined; torchic's last value wins.
    reduce="add" / "multiply" combines instead of writing."""
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter(): needs src (a tensor) or value (a number)")
    pos, values = _scatter_args(input, dim, index, src, "scatter")
    if reduce is None:
        return write_at(input, pos, values)
    kinds = {"add": "sum", "multiply": "prod"}
    if reduce not in kinds:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    return reduce_into(input, pos, values, kinds[reduce])


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src`'s values added along `dim` at `index` (repeated indices
    add up): `out[i][index[i][j][k]][k] += src[i][j][k]` for dim 1."""
    pos, values = _scatter_args(input, dim, index, src, "scatter_add")
    return add_at(input, pos, values)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of `input` with `src`'s values combined along `dim` at `index` by `reduce`
    ("sum", "prod", "mean", "amax", "amin"); include_self=False leaves input's own value
    out where some value lands (integer means round down, as PyTorch's)."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    pos, values = _scatter_args(input, dim, index, src, "scatter_reduce")
    return reduce_into(input, pos, values, reduce, include_self)


# -- the index_* family -----------------------------------------------------------------------
def _index_1d(index, what):
    if not isinstance(index, Tensor):
        raise TypeError(f"{what}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector")
    if index._dtype not in ("i32", "i64"):
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index")
    return index


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of `input` along `dim` at the 1-D `index` (in index's order; an index out
    of range is an IndexError at the next read). Stays on the device."""
    index = _index_1d(index, "index_select")
    d = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return reshape(GatherRows.apply(reshape(input, (1,)), reshape(index, (-1,))), ())
    idx = reshape(index, (numel(index.shape),))
    if d == 0:
        return GatherRows.apply(input, idx)
    order = (d,) + tuple(k for k in range(input.ndim) if k != d)
    rows = GatherRows.apply(Permute.apply(input, dims=order), idx)
    back = tuple(range(1, d + 1)) + (0,) + tuple(range(d + 1, input.ndim))
    return Permute.apply(rows, dims=back)


def _index_positions(input, dim, index, source_shape, what):
    """Flat positions in input of a source's elements, its slice j along dim going to
    index[j] (index_add / index_copy / index_reduce); validated."""
    index = _index_1d(index, what)
    d = normalize_axis(dim, input.ndim)
    idx = index.detach().numpy().astype(np.int64).reshape(-1)
    shape = input.shape if input.ndim else (1,)
    n = shape[d]
    bad = (idx < -n) | (idx >= n) if what == "index_fill" else (idx < 0) | (idx >= n)
    if bad.any():
        raise IndexError(f"{what}(): index {int(idx[bad][0])} is out of bounds for dimension "
                         f"{d} with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    if source_shape is not None:
        want = shape[:d] + (idx.size,) + shape[d + 1:]
        if tuple(source_shape if source_shape else (1,)) != want and \
                numel(source_shape) != numel(want):
            raise RuntimeError(f"{what}(): source of shape {list(source_shape)} does not match "
                               f"the self slices {list(want)}")
    grid = np.arange(numel(shape), dtype=np.int64).reshape(shape)
    return np.take(grid, idx, axis=d), d


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: float = 1) -> Tensor:
    """A copy of `input` with `alpha * source`'s slices along `dim` added at slices
    `index` (repeated indices add up)."""
    pos, _ = _index_positions(input, dim, index, source.shape, "index_add")
    values = reshape(source, pos.shape)
    return add_at(input, pos, values if alpha == 1 else values * alpha)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with `source`'s slices along `dim` written at slices `index`."""
    pos, _ = _index_positions(input, dim, index, source.shape, "index_copy")
    return write_at(input, pos, reshape(source, pos.shape))


def index_fill(input: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """A copy of `input` with the slices `index` along `dim` set to `value` (a number or a
    0-d tensor; negative indices count from the end)."""
    pos, _ = _index_positions(input, dim, index, None, "index_fill")
    mask = np.zeros(numel(input.shape), bool)
    mask[pos.reshape(-1)] = True
    cond = _tensor_from_data(mask.reshape(input.shape), dtype="b8")
    return where(cond, _fill_value(value, input._dtype, "index_fill"), input)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of `input` with `source`'s slices along `dim` combined into slices `index` by
    `reduce` ("prod", "mean", "amax", "amin"); include_self=False leaves input's own value
    out where some slice lands."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    pos, _ = _index_positions(input, dim, index, source.shape, "index_reduce")
    return reduce_into(input, pos, reshape(source, pos.shape), reduce, include_self)


def index_put(input: Tensor, indices: tuple[Tensor, ...], values: Tensor,
              accumulate: bool = False) -> Tensor:
    """A copy of `input` with `values` written at `input[indices]` (a tuple of index or
    mask tensors, PyTorch's advanced indexing); accumulate=True adds them instead."""
    key = tuple(indices)
    if not accumulate:
        return assign(input, key, values)
    pos = _positions(input.shape, key)
    return add_at(input, pos, values)


def _write_result(self, out, what):
    if out.shape != self.shape:
        raise RuntimeError(f"{what}: the result's shape {list(out.shape)} differs from the "
                           f"tensor's {list(self.shape)}")
    return copy_(self, out)


def scatter_(input: Tensor, dim: int, index: Tensor, src: Tensor | float | None = None, *,
             value: float | None = None, reduce: str | None = None) -> Tensor:
    """In-place `scatter`; returns `input`."""
    return _write_result(input, scatter(input, dim, index, src, value=value, reduce=reduce),
                         "scatter_")


def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place `scatter_add`; returns `input`."""
    return _write_result(input, scatter_add(input, dim, index, src), "scatter_add_")


def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place `scatter_reduce`; returns `input`."""
    out = scatter_reduce(input, dim, index, src, reduce, include_self=include_self)
    return _write_result(input, out, "scatter_reduce_")


def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
               alpha: float = 1) -> Tensor:
    """In-place `index_add`; returns `input`."""
    return _write_result(input, index_add(input, dim, index, source, alpha=alpha),
                         "index_add_")


def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place `index_copy`; returns `input`."""
    return _write_result(input, index_copy(input, dim, index, source), "index_copy_")


def index_fill_(input: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """In-place `index_fill`; returns `input`."""
    return _write_result(input, index_fill(input, dim, index, value), "index_fill_")


def index_reduce_(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place `index_reduce`; returns `input`."""
    out = index_reduce(input, dim, index, source, reduce, include_self=include_self)
    return _write_result(input, out, "index_reduce_")


def index_put_(input: Tensor, indices: tuple[Tensor, ...], values: Tensor,
               accumulate: bool = False) -> Tensor:
    """In-place `index_put`; returns `input`."""
    return _write_result(input, index_put(input, indices, values, accumulate), "index_put_")


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place `put`; returns `input`."""
    return _write_result(input, put(input, index, source, accumulate), "put_")
