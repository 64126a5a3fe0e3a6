"""What the Functions of every family share: scalar constants, strided aliases, shape helpers.

Backward formulas are ordinary tensor code (``g * b``, ``g.reshape(...)``): they reach the
op functions through the Tensor methods, which methods.py binds once everything is loaded,
so no module here imports the layers above it.
"""

import numpy as np

from .. import raw, scopes
from ..creation import tensor as _tensor_from_data
from ..dispatcher import DTYPES, runtime
from ..dtypes import to_host
from ..promotion import scalar_code
from ..shape import contiguous_strides, reshape_strides
from ..tensor import Tensor, make

_constants = {}
MAX_CONSTANTS = 256


def constant(value, dtype="f32"):
    """A cached 0-d tensor of dtype code `dtype` holding a Python scalar (so `x * 2` costs
    no upload); the value is cast as NumPy casts (an int into a narrow int wraps).

    The cache keeps the MAX_CONSTANTS most recently created values (first in, first
    out), so a value that changes every step (a decaying learning rate) costs one
    small upload per step and no growth.
    """
    rt = runtime()
    # a float keys by its bits: -0.0 == 0.0 (and would share 0.0's tensor), nan != nan
    key = (value.hex() if type(value) is float else value, type(value), dtype)
    t = _constants.get(key)
    if t is None or t._storage.runtime is not rt or t._storage.block is None:
        while len(_constants) >= MAX_CONSTANTS:
            del _constants[next(iter(_constants))]
        with scopes.untracked():   # a cache: never disposed by a scope
            with np.errstate(over="ignore"):
                arr = to_host(np.array(value).astype(DTYPES[dtype] if dtype != "bf16"
                                                     else np.float32), dtype)
            t = raw.write(raw.new_tensor((), dtype), arr)
        _constants[key] = t
    return t


def as_operand(x, code=None):
    """Tensors pass through; a Python / NumPy number becomes a cached constant of dtype code
    `code` (its own weak dtype when None: promotion.scalar_code); lists and arrays become
    tensors of their own dtype (ints int64, floats the default float)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.number, np.bool_)):
        return constant(x.item() if isinstance(x, np.generic) else x,
                        scalar_code(x) if code is None else code)
    if isinstance(x, (list, tuple, np.ndarray)):
        return _tensor_from_data(x)
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
    return make(t._storage, offset, tuple(shape), tuple(strides), t._dtype)


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
    """TypeError unless every tensor is floating (raw computes float16 / bfloat16 in
    float32 and rounds back)."""
    for t in tensors:
        if t._dtype not in ("f32", "f64", "f16", "bf16"):
            raise TypeError(f"{op} expects floating tensors, got {t.dtype} "
                            f"(convert with .float() or .double())")
