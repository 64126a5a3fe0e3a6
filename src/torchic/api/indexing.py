"""Indexing: t[key] and t[key] = value with PyTorch's (NumPy's) rules.

Basic keys (ints, slices, None, ...) are zero-copy views (IndexView). Advanced keys
(integer tensors, lists, ranges, NumPy arrays, boolean masks) pick elements:

* one integer tensor on one axis, slices elsewhere (``C[X]``, ``x[:, idx]``): a row gather
  on the device, no sync;
* integer indices on the leading axes (``probs[torch.arange(n), ys]``): their flat row
  numbers are computed on the host (the index tensors are read: a sync), then one gather;
* anything else (masks, indices after a slice, mixed with ints): the flat positions the key
  selects are ``np.arange(t.numel()).reshape(t.shape)[key]``, so NumPy's broadcasting and
  result-placement rules (which PyTorch follows) decide, then one gather of those positions.

Assignment through an advanced key builds the new contents out of place: a gather from
[t's elements, the value's elements] with the key's positions pointing into the value (where
the key names a position twice the last value wins, as on PyTorch's CPU), written back into
t; when autograd records it, api/inplace.py records it as an in-place op on t (the gradient
of the overwritten elements is 0). A basic key's assignment is a copy into the view.

Index tensors, PyTorch's rules: bool and uint8 tensors (and bool NumPy arrays, lists of
bools) are masks; int64 / int32 / int16 / int8 tensors are indices; a float tensor is
refused with PyTorch's IndexError.
"""

import builtins
from typing import Any
import numbers

import numpy as np

from .. import known, raw
from ..autograd import is_grad_enabled
from ..creation import tensor as _tensor_from_data
from ..dispatcher import INT_CODES
from ..functions import Cast, Cat, GatherRows, IndexView, Permute, Reshape, as_strided, constant
from ..functions.views import mark_view
from ..shape import numel, slice_meta
from ..tensor import Tensor, make


def _is_advanced(k):
    if isinstance(k, (Tensor, range, list)):
        return True
    return isinstance(k, np.ndarray) and k.ndim > 0


def key_tuple(key):
    """The key as a tuple, a 0-d integer tensor in it read as an int (PyTorch's rule: it
    picks like an int, so the result is a view; its value is read once, then known:
    known.py, so `t[ix] += v` reads ix at most once)."""
    key = key if isinstance(key, tuple) else (key,)
    if builtins.any(_is_int_scalar(k) for k in key):
        return tuple(k.item() if _is_int_scalar(k) else k for k in key)
    return key


_INDEX_CODES = ("i8", "i16", "i32", "i64")     # index tensors; bool and uint8 are masks
_MASK_CODES = ("b8", "u8")


def _is_int_scalar(k):
    return isinstance(k, Tensor) and k.ndim == 0 and k._dtype in _INDEX_CODES


def _index_array(k):
    """One advanced index as a NumPy int or bool array (reads a tensor: a sync)."""
    if isinstance(k, Tensor):
        if k._dtype not in _INDEX_CODES and k._dtype not in _MASK_CODES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        values = k.detach().numpy()
        return values if k._dtype in _INDEX_CODES else values != 0
    if isinstance(k, range):
        return np.arange(k.start, k.stop, k.step)
    arr = np.asarray([x.item() if isinstance(x, Tensor) else x for x in k]
                     if isinstance(k, list) else k)
    if arr.dtype.kind not in "biu" and arr.size:
        raise IndexError(f"indices must be integers or booleans, got an index of dtype "
                         f"{arr.dtype}")
    return arr if arr.size else arr.astype(np.int64)


def _numpy_key(key):
    out = []
    for k in key:
        if _is_advanced(k):
            out.append(_index_array(k))
        elif isinstance(k, slice) and k.step is not None and \
                isinstance(k.step, numbers.Integral) and k.step <= 0:
            raise ValueError(f"slice step must be positive, got {k.step}")
        elif isinstance(k, Tensor):
            out.append(k.item())
        else:
            out.append(k)
    return tuple(out)


def _positions(shape, key):
    """The flat element positions `key` selects in a tensor of `shape`, NumPy's rules."""
    grid = np.arange(numel(shape), dtype=np.int32 if numel(shape) < 2 ** 31 else np.int64)
    try:
        return np.asarray(grid.reshape(shape)[_numpy_key(key)])
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None


def _flat(a):
    return Reshape.apply(a, shape=(numel(a.shape), 1))


def _gather_positions(a, positions):
    out = GatherRows.apply(_flat(a), _tensor_from_data(positions.astype(np.int32), dtype="i32"))
    return Reshape.apply(out, shape=positions.shape)


def _leading_points(a, key):
    """a[i0, i1, ...]: index arrays on the leading axes only -> a gather of rows."""
    arrays = [_index_array(k) for k in key]
    if builtins.any(x.dtype == bool for x in arrays):
        return None
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {[list(x.shape) for x in arrays]}") from None
    lead = a.shape[:len(arrays)]
    for axis, (arr, size) in enumerate(zip(arrays, lead)):
        if arr.size and (arr.min() < -size or arr.max() >= size):
            raise IndexError(f"index {int(arr[(arr < -size) | (arr >= size)][0])} is out of "
                             f"bounds for dimension {axis} with size {size}")
    flat = np.ravel_multi_index(tuple(np.where(x < 0, x + s, x) for x, s in zip(arrays, lead)),
                                lead) if arrays[0].size else np.zeros(arrays[0].shape, np.int64)
    base = Reshape.apply(a, shape=(numel(lead),) + a.shape[len(arrays):]) \
        if len(arrays) != 1 else a
    return GatherRows.apply(base, _tensor_from_data(flat.astype(np.int32), dtype="i32"))


def _gather_axis(a, key, at):
    """a[..., idx, ...] for one int32 / int64 tensor idx at key position `at`, slices
    elsewhere."""
    idx = key[at]
    basic = key[:at] + (slice(None),) + key[at + 1:]
    n_real = builtins.sum(1 for k in key if k is not Ellipsis)
    axis = at if Ellipsis not in key[:at] else at - 1 + a.ndim - n_real   # ... covers the rest
    if builtins.any(not (isinstance(k, slice) and k == slice(None)) for k in basic
                    if k is not Ellipsis):
        a = IndexView.apply(a, key=basic)
    if a.ndim == 0:
        raise IndexError("cannot index a 0-d tensor with an integer tensor")
    idx = _wrap_negative(idx, a.shape[axis])
    if axis == 0:
        return GatherRows.apply(a, idx)
    order = (axis,) + tuple(d for d in range(a.ndim) if d != axis)
    rows = GatherRows.apply(Permute.apply(a, dims=order), idx)
    k = idx.ndim
    back = tuple(range(k, k + axis)) + tuple(range(k)) + tuple(range(k + axis, rows.ndim))
    return Permute.apply(rows, dims=back)


def _wrap_negative(idx, size):
    """idx with its entries in [-size, 0) moved up by size (PyTorch's rule: -1 is the last),
    on the device (no sync); the others are left as they are, so the gather refuses one out
    of range naming it and the size (an IndexError at the next read)."""
    code = idx._dtype
    inside = raw.where(raw.binary("lt", idx, constant(0, code)),
                       raw.binary("ge", idx, constant(-size, code)), constant(False, "b8"))
    return raw.where(inside, raw.binary("add", idx, constant(size, code)), idx)


def _leading_slice(a, key):
    """(offset, shape, start, stop) of `a[key]` for a key that is one slice of step 1 with
    int / None / one-element integer tensor bounds (`data[i:i + block_size]`, `x[:n]`),
    worked out directly (start and stop clipped as slice.indices does); None for any other
    key (slice_meta's general walk, and its errors)."""
    if key.step is not None or not a.shape:
        return None
    dims = tuple(a.shape)       # (a torchic.Size indexes through Python)
    start, stop = key.start, key.stop
    if start.__class__ is not int:
        start = _bound(start)
    if stop.__class__ is not int:
        stop = _bound(stop)
    if start is _NOT_A_BOUND or stop is _NOT_A_BOUND:
        return None
    n = dims[0]
    if start is None or stop is None or not 0 <= start <= stop <= n:   # (else in range)
        start, stop, _ = slice(start, stop).indices(n)
    length = stop - start if stop > start else 0
    return (a._offset + start * a._strides[0] if length else a._offset,
            (length,) + dims[1:], start, stop)


_NOT_A_BOUND = object()


def _bound(v):
    """A slice bound other than an int as an int (a one-element integer tensor's value), or
    None, or _NOT_A_BOUND for anything else (the general walk decides)."""
    if v is None:
        return None
    if v.__class__ is not Tensor:
        return _NOT_A_BOUND
    if not v.shape and v._dtype in INT_CODES:    # (__index__'s test and first step)
        k = known.value(v)
        if k is not None:
            return k
    try:
        return v.__index__()
    except TypeError:
        return _NOT_A_BOUND


# the node mark_view is given for a view made without a record (it reads needs_grad only):
# getitem's leading slice and unbind's views
UNRECORDED_NODE = IndexView()
UNRECORDED_NODE.needs_grad = ()


def getitem(a: Tensor, key: Any) -> Tensor:
    if key.__class__ is slice:     # the commonest key, without the general parse
        meta = _leading_slice(a, key)
        if meta is not None:
            offset, shape, start, stop = meta
            if a.requires_grad:
                return IndexView.apply(a, key=(slice(start, stop),),
                                       meta=(offset, shape, a._strides))
            # nothing to record: IndexView.forward's view, without apply's node and frames
            return mark_view(UNRECORDED_NODE, a,
                             make(a._storage, offset, shape, a._strides, a._dtype))
    key = key_tuple(key)
    advanced = [i for i, k in enumerate(key) if _is_advanced(k)]
    if not advanced:
        return IndexView.apply(a, key=key)
    if len(advanced) == 1:
        at = advanced[0]
        k = key[at]
        if isinstance(k, Tensor) and k._dtype in ("i32", "i64") and builtins.all(
                isinstance(x, slice) or x is Ellipsis for i, x in enumerate(key) if i != at):
            return _gather_axis(a, key, at)
    if advanced == list(range(len(key))) and len(key) <= a.ndim:
        out = _leading_points(a, key)
        if out is not None:
            return out
    return _gather_positions(a, _positions(a.shape, key))


def _value_tensor(value, dtype):
    if isinstance(value, Tensor):
        if value._dtype == dtype:
            return value
        return Cast.apply(value, dtype=dtype) if value.requires_grad else raw.cast(value, dtype)
    if isinstance(value, (bool, int, float, np.number)):
        return raw.full((), value, dtype)
    return _tensor_from_data(value, dtype=dtype)


def assign(t, key, value):
    """t[key] = value through an advanced key: out of place (module doc). Returns the new
    contents, computed from t (when autograd records, t is the old contents' graph alias;
    api/inplace.py writes them into the target)."""
    positions = _positions(t.shape, key)
    v = _value_tensor(value, t._dtype)
    try:
        np.broadcast_shapes(v.shape, positions.shape)
        if len(v.shape) > len(positions.shape) and numel(v.shape[:len(v.shape) -
                                                           len(positions.shape)]) != 1:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be "
                           f"broadcast to indexing result of shape "
                           f"{list(positions.shape)}") from None
    if v.shape != positions.shape:
        v = v.reshape(v.shape[len(v.shape) - len(positions.shape):]) \
            if len(v.shape) > len(positions.shape) else v
        v = v.expand(positions.shape)
    n, flat = numel(t.shape), positions.reshape(-1)
    m = flat.size
    select = np.arange(n, dtype=np.int64)
    if m:
        last, first_from_end = np.unique(flat[::-1], return_index=True)
        select[last] = n + (m - 1 - first_from_end)     # the last value written wins
    table = Cat.apply(_flat(t), Reshape.apply(v, shape=(m, 1)), dim=0)
    new = GatherRows.apply(table, _tensor_from_data(select.astype(np.int32), dtype="i32"))
    return Reshape.apply(new, shape=t.shape)


def graph_alias(t):
    """A new tensor object over t's elements that stands where t stood in the graph (what a
    recorded in-place op computes from before t is overwritten)."""
    old = as_strided(t, t._offset, t.shape, t._strides)
    old.requires_grad, old.grad_fn = t.requires_grad, t.grad_fn
    return old


def needs_recording(t, value):
    return is_grad_enabled() and (t.requires_grad or
                                  (isinstance(value, Tensor) and value.requires_grad))


def basic_target(t, key):
    offset, shape, strides = slice_meta(t._offset, t.shape, t._strides, key)
    return as_strided(t, offset, shape, strides)


def is_advanced_key(key):
    return builtins.any(_is_advanced(k) for k in key_tuple(key))
