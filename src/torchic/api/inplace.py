"""In-place op functions (x += y, x.fill_(v), x[i] = v, x.copy_(y)).

Host-visible writes go through the stream like any op; each bumps the storage's
version, which autograd checks before it uses a saved tensor.

Where autograd must record the write (grad mode on, the target or the operand requires
grad) it is recorded as PyTorch records it (`_record`): the new contents are computed out of
place from the old ones, as the graph knows them, and copied in. On a tensor that is not a
view, the tensor's grad_fn is replaced; on a view, its base's grad_fn becomes a
`CopySlices` node (the base's gradient flows to the old base outside the view's region and
to the new contents inside it). Either way, every live view of the base made in grad mode,
the target included, gets a new grad_fn over the base's new one (functions/views.py).
"""

import weakref
from typing import Any

import numpy as np

from .. import raw
from ..creation import tensor as _tensor_from_data
from ..autograd import is_grad_enabled
from ..dtypes import default_float
from ..functions import AsStrided, Clone, CopySlices, as_operand
from ..promotion import SCALAR_TYPE_NAMES, can_cast_code, is_floating
from ..shape import broadcast_shapes, broadcast_strides
from ..tensor import Tensor
from .elementwise import add, cast_to, div, mul, pow, promote, sub
from .indexing import assign, basic_target, getitem, graph_alias, is_advanced_key, \
    key_tuple, needs_recording


def _check_inplace(t, other=None):
    """Raise where PyTorch would; True when autograd must record the write."""
    t._storage.check_usable() if t._storage.block is None else None
    base = t._view_base
    if type(base) is weakref.ref and is_grad_enabled() and (
            needs_recording(t, other) or getattr(base(), "requires_grad", False)):
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. Given that this use case is ambiguous and "
                           "error-prone, it is forbidden. You can clarify your code by moving "
                           "both the view and the inplace either both inside the no_grad "
                           "block (if you don't want the inplace to be tracked) or both "
                           "outside (if you want the inplace to be tracked).")
    if not needs_recording(t, other):
        return False
    owner = t if base is None else base
    if owner.requires_grad and owner.grad_fn is None:
        raise RuntimeError(f"{'a view of ' if base is not None else ''}a leaf Variable that "
                           f"requires grad is being used in an in-place operation; wrap the "
                           f"update in torchic.no_grad() or use .data")
    return True


def _check_no_overlap(t):
    """PyTorch's refusal of an arithmetic or fill in place into an expanded tensor (several
    of its elements are one memory location)."""
    if any(s == 0 and n > 1 for n, s in zip(t.shape, t._strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")


def _record(t, compute):
    """Write compute(t's old contents, as the graph knows them) into t, recorded as PyTorch
    records an in-place op (module doc). compute returns a tensor of t's shape."""
    base = t._view_base
    where = {"offset": t._offset, "shape": t.shape, "strides": t._strides}
    if base is None:
        old = graph_alias(t)
        new = compute(old)
        if old.requires_grad and not new.requires_grad:
            # fill_ / copy_ of constants: t stays in the graph, its old values get zeros
            new = CopySlices.apply(old, new, **where)
        else:
            raw.copy_into(t, new)
        t._storage.version += 1
        _take_graph(t, new)
        regenerate_views(t)
        return t
    old = graph_alias(base)
    new = CopySlices.apply(old, compute(AsStrided.apply(old, **where)), **where)
    base._storage.version += 1
    _take_graph(base, new)
    regenerate_views(base)       # t among them
    return t


def _take_graph(t, new):
    """t stands where `new` stands in the graph (a retain_grad() on t follows it)."""
    old = t.grad_fn
    t.requires_grad, t.grad_fn = new.requires_grad, new.grad_fn
    if old is not None and t.grad_fn is not None and old.retained is not None and \
            old.retained() is t:
        t.grad_fn.retained, old.retained = old.retained, None


def regenerate_views(base):
    """Give every live grad-mode view of `base` a grad_fn over base's current one
    (PyTorch's AsStridedBackward): their elements are base's, whatever changed them."""
    refs = base._views
    if not refs:
        return
    live = []
    for ref in refs:
        v = ref()
        if v is None or v._view_base is not base:
            continue
        live.append(ref)
        _take_graph(v, AsStrided.apply(base, offset=v._offset, shape=v.shape,
                                       strides=v._strides))
    base._views = live


def _write_back(t, value):
    raw.copy_into(t, value)
    t._storage.version += 1
    return t


# the out-of-place op each in-place one records; those whose Function saves its input get a
# copy of t's old values (t itself is about to be overwritten)
_RECORDED = {"add": (add, False), "sub": (sub, False), "mul": (mul, True), "div": (div, True),
             "pow": (pow, True)}


def inplace_binary(op, t, other):
    """`t op= other` (add_, sub_, mul_, div_, pow_): the result dtype is the promotion of t
    and other (div: a float); PyTorch's RuntimeError when t's dtype cannot hold it
    (`int_tensor += 1.5`)."""
    _check_no_overlap(t)
    record = _check_inplace(t, other)
    fn, saves_input = _RECORDED[op]
    (_, other), code = promote(t, other)
    if op in ("div",) and not is_floating(code):
        code = default_float()
    if not can_cast_code(code, t._dtype):
        raise RuntimeError(f"result type {SCALAR_TYPE_NAMES[code]} can't be cast to the "
                           f"desired output type {SCALAR_TYPE_NAMES[t._dtype]}")
    shape = broadcast_shapes(t.shape, other.shape)
    if shape != t.shape:
        raise ValueError(f"{op}_: the result shape {list(shape)} of broadcasting "
                         f"{list(t.shape)} with {list(other.shape)} does not match the "
                         f"in-place target's shape {list(t.shape)}")
    if record:
        return _record(t, lambda old: cast_to(fn(Clone.apply(old) if saves_input else old,
                                                  other), t._dtype))
    if (code == t._dtype == other._dtype and code in _NATIVE and op != "pow"
            and t.is_contiguous() and other._storage is not t._storage):
        # one op: the kernel writes its result over its own input (ops.py allows exact aliasing)
        raw.run(op, t, (raw.view_of(t), raw.broadcast_view(other, t.shape)))
        t._storage.version += 1
        return t
    return _write_back(t, fn(t, other))


_NATIVE = ("f32", "f64", "i32", "i64")    # the codes every arithmetic row takes as they are


def fill_(t: Tensor, value: Tensor | float) -> Tensor:
    """Fill `t` with `value` (a number or a one-element tensor) in place; returns `t`."""
    _check_no_overlap(t)
    if isinstance(value, Tensor) and value.numel() != 1:
        raise ValueError("fill_ takes a number or a one-element tensor")
    if _check_inplace(t, value):     # every old value overwritten: none gets a gradient
        if isinstance(value, Tensor):     # its gradient: the sum of t's
            return _record(t, lambda old: Clone.apply(value.reshape(()).expand(t.shape)))
        number = _number(value, "fill_")
        return _record(t, lambda old: raw.full(t.shape, number, t._dtype))
    if isinstance(value, Tensor):
        return _write_back(t, value.reshape(()))
    raw.fill(t, _number(value, "fill_"))
    t._storage.version += 1
    return t


def _number(value, what):
    """A Python number (bool, int or float; raw.fill converts it to the tensor's dtype)."""
    if not isinstance(value, (int, float, np.number, np.bool_)):
        raise TypeError(f"{what} takes a number, got {type(value).__name__}")
    return value.item() if isinstance(value, np.generic) else value


def copy_(t: Tensor, src: Tensor) -> Tensor:
    """Copy `src`'s values (broadcast to `t`'s shape, cast to its dtype) into `t` in place;
    returns `t`. Gradients flow to `src`."""
    record = _check_inplace(t, src)
    src = as_operand(src, t._dtype)
    broadcast_strides(src.shape, src._strides, t.shape) if src.shape != t.shape else None
    if record:     # t's old values get no gradient: all of them are overwritten
        src = cast_to(src, t._dtype)
        return _record(t, lambda old: Clone.apply(src.expand(t.shape) if src.shape != t.shape
                                                  else src))
    return _write_back(t, src)


def setitem(t: Tensor, key: Any, value: Any) -> Tensor:
    """t[key] = value (a scalar, or a tensor broadcast to the selected region); through an
    advanced key or under autograd, out of place and written back (indexing.assign)."""
    record = _check_inplace(t, value)
    key = key_tuple(key)
    if record and not is_advanced_key(key):      # t[key].copy_(value), as PyTorch does
        copy_(getitem(t, key), value)
        return t
    if record:
        return _record(t, lambda old: assign(old, key, value))
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
