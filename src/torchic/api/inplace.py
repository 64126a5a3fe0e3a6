"""In-place op functions (x += y, x.fill_(v), x[i] = v, x.copy_(y)).

Host-visible writes go through the stream like any op; each bumps the storage's
version, which autograd checks before it uses a saved tensor.
"""

import sys
from typing import Any

import numpy as np

from .. import raw
from ..creation import tensor as _tensor_from_data
from ..functions import Clone, Expand, IndexView, Permute, Reshape, as_operand
from ..ops import INT_BINARY
from ..shape import broadcast_shapes, broadcast_strides
from ..tensor import Tensor
from .elementwise import add, div, mul, pow, sub
from .indexing import assign, basic_target, graph_alias, is_advanced_key, needs_recording


# an in-place op on a view of a tensor that others still hold is not recorded on that tensor
# (torchic keeps no view -> base links): refused when autograd would need it
_VIEWS = (IndexView, Permute, Expand, Reshape)


def _check_inplace(t, other=None):
    """Raise where PyTorch would; True when autograd must record the write."""
    t._storage.check_usable() if t._storage.block is None else None
    if not needs_recording(t, other):
        return False
    if t.requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation; wrap the update in torchic.no_grad() or use .data")
    # 2: t's own reference and getrefcount's argument: no other tensor sees this storage
    if isinstance(t.grad_fn, _VIEWS) and sys.getrefcount(t._storage) > 2:
        raise RuntimeError("an in-place operation on a view of a tensor in the autograd graph "
                           "(v = x[0]; v += y, or x[key] += y) is not recorded on x by "
                           "torchic; write it out of place: x[key] = x[key] + y")
    return True


def _rebase(t, new):
    """t takes new's values and new's place in the graph (a recorded in-place op)."""
    raw.copy_into(t, new)
    t._storage.version += 1
    t.requires_grad, t.grad_fn = new.requires_grad, new.grad_fn
    return t


def _write_back(t, value):
    raw.copy_into(t, value)
    t._storage.version += 1
    return t


# the out-of-place op each in-place one records; those whose Function saves its input get a
# copy of t's old values (t itself is about to be overwritten)
_RECORDED = {"add": (add, False), "sub": (sub, False), "mul": (mul, True), "div": (div, True),
             "pow": (pow, True)}


def inplace_binary(op, t, other):
    record = _check_inplace(t, other)
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
    if record:
        fn, saves_input = _RECORDED[op]
        old = graph_alias(t)
        return _rebase(t, fn(Clone.apply(old) if saves_input else old, other))
    if t.is_contiguous() and other._storage is not t._storage:
        # one op: the kernel writes its result over its own input (ops.py allows exact aliasing)
        raw.run(op, t, (raw.view_of(t), raw.broadcast_view(other, t.shape)))
        t._storage.version += 1
        return t
    return _write_back(t, raw.binary(op, t, other, t._dtype))


def fill_(t: Tensor, value: Tensor | float) -> Tensor:
    """Fill `t` with `value` (a number or a one-element tensor) in place; returns `t`."""
    if _check_inplace(t):      # every old value overwritten: none gets a gradient
        return _rebase(t, raw.full(t.shape, _number(value, "fill_") if not
                                   isinstance(value, Tensor) else value.item(), t._dtype))
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


def copy_(t: Tensor, src: Tensor) -> Tensor:
    """Copy `src`'s values (broadcast to `t`'s shape, cast to its dtype) into `t` in place;
    returns `t`. Gradients flow to `src`."""
    record = _check_inplace(t, src)
    src = as_operand(src, like=t)
    broadcast_strides(src.shape, src._strides, t.shape) if src.shape != t.shape else None
    if record:     # t's old values get no gradient: all of them are overwritten
        return _rebase(t, Clone.apply(src.expand(t.shape) if src.shape != t.shape else src))
    return _write_back(t, src)


def setitem(t: Tensor, key: Any, value: Any) -> Tensor:
    """t[key] = value (a scalar, or a tensor broadcast to the selected region); through an
    advanced key or under autograd, out of place and written back (indexing.assign)."""
    record = _check_inplace(t, value)
    if not isinstance(key, tuple):
        key = (key,)
    if record:
        return _rebase(t, assign(t, key, value))
    if is_advanced_key(key):
        return _write_back(t, assign(t, key, value))
    target = basic_target(t, key)
    shape = target.shape
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
