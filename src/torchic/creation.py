"""Creating tensors: from data, filled, random (one seeded generator), ranges.

Random numbers are drawn on the host from a NumPy PCG64 generator and
uploaded, so the same seed gives the same values on every backend.
"""

import numbers

import numpy as np

from . import dispatcher, raw
from .allocator import HeapFullError
from .shape import infer_shape, numel as _numel
from .dtypes import dtype_code
from .tensor import Tensor

_DEFAULT_SEED = 0


class Generator:
    """A seeded random source, accepted by randn / rand / randint / multinomial (generator=)."""

    def __init__(self, seed=None):
        self.manual_seed(_DEFAULT_SEED if seed is None else seed)

    def manual_seed(self, seed):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self.seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self.seed))
        return self

    def initial_seed(self):
        return self.seed


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator: the same seed gives the same numbers on every backend."""
    return default_generator.manual_seed(seed)


def _rng(generator):
    if generator is None:
        return default_generator.rng
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a torchic.Generator, got {type(generator).__name__}")
    return generator.rng


_dtype_code = dtype_code     # the one dtype parser (dtypes.py)


def _check_host_size(numel, what):
    """Refuse a tensor larger than the heap cap before its values are built on the host
    (a NumPy array of gigabytes), with HeapFullError naming the sizes."""
    rt = dispatcher.runtime()
    cap = rt.allocator.cap_bytes
    if numel * raw.ITEMSIZE > cap:
        raise HeapFullError(f"heap cap exceeded: requested {numel * raw.ITEMSIZE} bytes for "
                            f"{what}, more than the heap cap of {cap} bytes (raise it with "
                            f"torchic.init(heap_cap=...)); nothing was allocated")


def _shape_args(shape):
    """zeros(3, 4) and zeros([3, 4]) / zeros((3, 4)) both mean shape (3, 4)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"shape dimensions must be ints, got {shape!r}")
        if d < 0:
            raise ValueError(f"negative dimension in shape {tuple(shape)}")
    return tuple(int(d) for d in shape)


def _to_numpy(data, code):
    if isinstance(data, Tensor):
        return data.numpy()
    if isinstance(data, np.ndarray):
        arr = data
    else:
        try:
            arr = np.asarray(data)
        except ValueError as exc:
            raise ValueError(f"cannot make a tensor from ragged nested sequences: {exc}") from None
    kind = arr.dtype.kind
    if kind not in "biuf":
        raise TypeError(f"cannot make a tensor from data of type {arr.dtype} "
                        f"({type(data).__name__}): torchic holds float32 and int32 numbers")
    if code is None:
        code = "i32" if kind in "iu" else "f32"
    if code == "i32":
        if kind == "f":
            if not np.all(np.isfinite(arr)):
                raise ValueError("int32 tensor from non-finite float data (nan or inf)")
            if np.any(arr != np.trunc(arr)):
                raise ValueError("int32 tensor from non-integral float data")
        if arr.size and (arr.min() < -2**31 or arr.max() > 2**31 - 1):
            raise OverflowError("integer data does not fit in int32")
        return np.asarray(arr, dtype=np.int32, order="C"), code
    return np.asarray(arr, dtype=np.float32, order="C"), code


def from_numpy_array(arr, code, requires_grad=False):
    t = raw.new_tensor(arr.shape, code)
    if arr.size:
        raw.write(t, arr.copy() if not arr.flags.owndata else arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _nested_numel(data):
    """The element count of nested lists / tuples, from their first elements (exact unless
    ragged, and then NumPy refuses them anyway)."""
    n = 1
    while isinstance(data, (list, tuple)):
        n *= len(data)
        if not data:
            break
        data = data[0]
    return n


def tensor(data, dtype=None, requires_grad=False, shape=None):
    """A new tensor holding a copy of `data` (nested lists, NumPy array, scalar, tensor)."""
    code = None if dtype is None else _dtype_code(dtype)
    if isinstance(data, (list, tuple)):
        _check_host_size(_nested_numel(data), "a tensor from a list")
    elif isinstance(data, np.ndarray):
        _check_host_size(data.size, f"a tensor from an array of shape {list(data.shape)}")
    arr, code = _to_numpy(data, code)
    if shape is not None:
        shape = infer_shape(_shape_args(shape if isinstance(shape, (list, tuple)) else (shape,)),
                            arr.size)
        arr = arr.reshape(shape)
    return from_numpy_array(arr, code, requires_grad)


def as_tensor(data, dtype=None):
    if isinstance(data, Tensor) and (dtype is None or _dtype_code(dtype) == data._dtype):
        return data
    return tensor(data, dtype=dtype)


def from_numpy(arr):
    return tensor(arr)


def _filled(shape, value, dtype, requires_grad):
    code = _dtype_code(dtype)
    t = raw.full(_shape_args(shape), value, code)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*shape, dtype=None, requires_grad=False):
    return _filled(shape, 0.0, dtype, requires_grad)


def ones(*shape, dtype=None, requires_grad=False):
    return _filled(shape, 1.0, dtype, requires_grad)


def full(shape, fill_value, dtype=None, requires_grad=False):
    if isinstance(shape, int):
        shape = (shape,)
    if dtype is None and isinstance(fill_value, int) and not isinstance(fill_value, bool):
        dtype = "i32"
    return _filled((shape,), fill_value, dtype, requires_grad)


def empty(*shape, dtype=None, requires_grad=False):
    t = raw.new_tensor(_shape_args(shape), _dtype_code(dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros_like(t, dtype=None, requires_grad=False):
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False):
    return full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad)


def empty_like(t, dtype=None, requires_grad=False):
    return empty(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def randn(*shape, generator=None, dtype=None, requires_grad=False):
    """Standard normal float32 samples."""
    shape = _shape_args(shape)
    _check_host_size(_numel(shape), f"randn of shape {list(shape)}")
    arr = _rng(generator).standard_normal(shape, dtype=np.float32)
    return from_numpy_array(arr, _dtype_code(dtype), requires_grad)


def rand(*shape, generator=None, dtype=None, requires_grad=False):
    """Uniform [0, 1) float32 samples."""
    shape = _shape_args(shape)
    _check_host_size(_numel(shape), f"rand of shape {list(shape)}")
    arr = _rng(generator).random(shape, dtype=np.float32)
    return from_numpy_array(arr, _dtype_code(dtype), requires_grad)


def randn_like(t, generator=None):
    return randn(t.shape, generator=generator)


def rand_like(t, generator=None):
    return rand(t.shape, generator=generator)


def randint(low, high=None, size=None, *, generator=None, dtype=None):
    """Integers uniform in [low, high); randint(high, size) and randint(low, high, size)."""
    if high is None or (size is None and isinstance(high, (tuple, list))):
        if size is None and isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            low, high = 0, low
    if size is None:
        raise TypeError("randint needs a size, e.g. randint(0, 10, (32,))")
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"randint {name} must be an int, got {v!r}")
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    shape = _shape_args(size if isinstance(size, (tuple, list)) else (size,))
    _check_host_size(_numel(shape), f"randint of shape {list(shape)}")
    arr = _rng(generator).integers(low, high, shape, dtype=np.int64)
    code = _dtype_code(dtype, "i32")
    return from_numpy_array(arr.astype(np.int32 if code == "i32" else np.float32), code)


def randperm(n, generator=None):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    _check_host_size(int(n), f"randperm({n})")
    return from_numpy_array(_rng(generator).permutation(n).astype(np.int32), "i32")


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    values = (start, end, step)
    all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)
    if step == 0:
        raise ValueError("arange step must be nonzero")
    if not all(np.isfinite(float(v)) for v in values):
        raise ValueError(f"arange needs finite start, end and step, got {start}, {end}, {step}")
    code = _dtype_code(dtype, "i32" if all_int else "f32")
    _check_host_size(max(0, int(np.ceil((float(end) - float(start)) / float(step)))),
                     f"arange({start}, {end}, {step})")
    arr = np.arange(start, end, step, dtype=np.float64)
    return from_numpy_array(arr.astype(np.int32 if code == "i32" else np.float32), code,
                            requires_grad)


def linspace(start, end, steps, requires_grad=False):
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"linspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    _check_host_size(int(steps), f"linspace of {steps} steps")
    return from_numpy_array(np.linspace(start, end, steps, dtype=np.float32), "f32",
                            requires_grad)


def multinomial(probs, num_samples, replacement=False, *, generator=None):
    """Sample category indices from (rows of) non-negative weights."""
    if not isinstance(probs, Tensor):
        raise TypeError("multinomial takes a tensor of weights")
    if probs.ndim not in (1, 2):
        raise ValueError(f"multinomial expects 1-D or 2-D weights, got shape {list(probs.shape)}")
    if probs._dtype != "f32":
        raise TypeError("multinomial expects float32 weights, got an int32 tensor "
                        "(convert with .float())")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
    if probs.shape[-1] == 0:
        raise ValueError(f"multinomial needs at least one category, got weights of shape "
                         f"{list(probs.shape)}")
    w = probs.numpy().astype(np.float64)
    rows = w.reshape(-1, w.shape[-1])
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ValueError("multinomial weights must be finite and non-negative")
    rng = _rng(generator)
    _check_host_size(rows.shape[0] * num_samples, f"{num_samples} multinomial samples")
    out = np.empty((rows.shape[0], num_samples), dtype=np.int32)
    for r, row in enumerate(rows):
        total = row.sum()
        if total <= 0:
            raise ValueError("multinomial weights of a row sum to zero")
        if not replacement and num_samples > np.count_nonzero(row):
            raise ValueError(f"cannot draw {num_samples} samples without replacement from "
                             f"{np.count_nonzero(row)} categories with non-zero weight")
        out[r] = rng.choice(row.size, size=num_samples, replace=replacement, p=row / total)
    if probs.ndim == 1:
        out = out[0]
    return from_numpy_array(np.ascontiguousarray(out), "i32")

