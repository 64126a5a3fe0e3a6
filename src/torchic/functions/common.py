"""What the Functions of every family share: scalar constants, strided aliases, shape helpers.

Backward formulas are ordinary tensor code (``g * b``, ``g.reshape(...)``): they reach the
op functions through the Tensor methods, which methods.py binds once everything is loaded,
so no module here imports the layers above it.
"""

import numpy as np

from .. import raw, scopes
from ..creation import tensor as _tensor_from_data
from ..dispatcher import runtime
from ..shape import contiguous_strides, reshape_strides
from ..tensor import Tensor

_constants = {}
MAX_CONSTANTS = 256


def constant(value, dtype="f32"):
    """A cached 0-d tensor holding a Python scalar (so `x * 2` costs no upload).

    The cache keeps the MAX_CONSTANTS most recently created values (first in, first
    out), so a value that changes every step (a decaying learning rate) costs one
    small upload per step and no growth.
    """
    rt = runtime()
    key = (value, dtype)
    t = _constants.get(key)
    if t is None or t._storage.runtime is not rt or t._storage.block is None:
        while len(_constants) >= MAX_CONSTANTS:
            del _constants[next(iter(_constants))]
        active, scopes.active = scopes.active, 0   # never disposed by a scope
        try:
            arr = np.array(value, dtype=np.float32 if dtype == "f32" else np.int32)
            t = raw.write(raw.new_tensor((), dtype), arr)
        finally:
            scopes.active = active
        _constants[key] = t
    return t


def as_operand(x, like=None):
    """Tensors pass through; Python / NumPy numbers become cached constants."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.number)):
        if like is not None and like._dtype == "i32" and isinstance(x, (int, np.integer)) \
                and not isinstance(x, bool):
            return constant(int(x), "i32")
        return constant(float(x))
    if isinstance(x, (list, tuple, np.ndarray)):
        # `x + [1, 2]` means float data, unless the other operand holds integers
        return _tensor_from_data(x, dtype=None if like is not None and like._dtype == "i32"
                                 else "f32")
    raise TypeError(f"unsupported operand type {type(x).__name__}; expected a Tensor or a number")


def sum_to_shape(g, shape):
    """Reduce a broadcast gradient back to the shape of the input it came from."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
    if axes:
        g = g.sum(dim=axes)
    return g.reshape(shape)


def as_strided(t, offset, shape, strides):
    """A tensor sharing t's storage, read with another offset / shape / strides."""
    return Tensor._make(t._storage, offset, tuple(shape), tuple(strides), t._dtype)


def reshape_raw(t, shape):
    """t reshaped without recording: a view when the strides allow it, else a copy."""
    strides = reshape_strides(t.shape, t._strides, shape)
    if strides is None:
        t = raw.contiguous(t)
        strides = contiguous_strides(shape)
    return as_strided(t, t._offset, shape, strides)


def keepdim_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def require_float(*tensors, op):
    for t in tensors:
        if t._dtype != "f32":
            raise TypeError(f"{op} expects float32 tensors, got an int32 tensor "
                            f"(convert with .float())")
