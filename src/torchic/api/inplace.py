"""In-place op functions (x += y, x.fill_(v), x[i] = v, x.copy_(y)).

Host-visible writes go through the stream like any op; each bumps the storage's
version, which autograd checks before it uses a saved tensor.
"""

import builtins

import numpy as np

from .. import raw
from ..autograd import is_grad_enabled
from ..creation import tensor as _tensor_from_data
from ..functions import as_operand, as_strided, require_float
from ..ops import INT_BINARY
from ..shape import broadcast_shapes, broadcast_strides, slice_meta
from ..tensor import Tensor
from .shaping import is_index_tensor


def _check_inplace(t, other=None):
    t._storage.check_usable() if t._storage.block is None else None
    if is_grad_enabled():
        if t.requires_grad and t.grad_fn is None:
            raise RuntimeError("a leaf tensor that requires grad is being used in an in-place "
                               "operation; wrap the update in torchic.no_grad() or use .data")
        if t.requires_grad or (isinstance(other, Tensor) and other.requires_grad):
            raise RuntimeError("in-place operations on tensors that are part of the autograd "
                               "graph are not differentiable in torchic; use the out-of-place op "
                               "(e.g. x = x + y) or torchic.no_grad()")


def _write_back(t, value):
    raw.copy_into(t, value)
    t._storage.version += 1
    return t


def inplace_binary(op, t, other):
    _check_inplace(t, other)
    other = as_operand(other, like=t)
    if t._dtype == "i32":
        if other._dtype != "i32" or op not in INT_BINARY:
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"Int: {op}_ of an int32 tensor needs an int operand and an "
                               f"integer op (convert the tensor with .float() first)")
    elif other._dtype == "i32":
        other = raw.cast(other, "f32")       # float += int: the int is promoted
    shape = broadcast_shapes(t.shape, other.shape)
    if shape != t.shape:
        raise ValueError(f"{op}_: the result shape {list(shape)} of broadcasting "
                         f"{list(t.shape)} with {list(other.shape)} does not match the "
                         f"in-place target's shape {list(t.shape)}")
    if t.is_contiguous() and other._storage is not t._storage:
        # one op: the kernel writes its result over its own input (ops.py allows exact aliasing)
        raw.run(op, t, (raw.view_of(t), raw.broadcast_view(other, t.shape)))
        t._storage.version += 1
        return t
    return _write_back(t, raw.binary(op, t, other, t._dtype))


def fill_(t, value):
    _check_inplace(t)
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError("fill_ takes a number or a one-element tensor")
        return _write_back(t, value.reshape(()))
    raw.fill(t, _number(value, "fill_"))
    t._storage.version += 1
    return t


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{what} takes a number, got {type(value).__name__}")
    return float(value)


def copy_(t, src):
    _check_inplace(t, src)
    src = as_operand(src, like=t)
    broadcast_strides(src.shape, src._strides, t.shape) if src.shape != t.shape else None
    return _write_back(t, src)


def setitem(t, key, value):
    """t[key] = value (scalar, or a tensor broadcast to the selected region)."""
    _check_inplace(t, value)
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(is_index_tensor(k) for k in key):
        raise IndexError("assignment through integer-tensor indices is not supported; "
                         "use slices / ints, or build the tensor with where()")
    offset, shape, strides = slice_meta(t._offset, t.shape, t._strides, key)
    target = as_strided(t, offset, shape, strides)
    if isinstance(value, Tensor):
        if value.shape != shape:
            broadcast_strides(value.shape, value._strides, shape)  # clear error if impossible
        raw.copy_into(target, value)
    elif isinstance(value, (list, tuple, np.ndarray)):
        raw.copy_into(target, _tensor_from_data(value, dtype=t._dtype))
    else:
        raw.fill(target, _number(value, "assignment"))
    t._storage.version += 1
    return t
