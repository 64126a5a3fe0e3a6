"""Creating tensors: from data, filled, random (PyTorch's generator), ranges.

Random numbers are PyTorch's, bit for bit: `torch.manual_seed(s)` then the same calls
(randn, rand, randint, randperm, multinomial, normal_, uniform_, nn.init, nn.Linear's
init...) give the same float32 / integer values under `import torchic as torch` as under
PyTorch's CPU build, on every backend. The engine (mt19937) and every transform live in
generator.py, whose header spells out each algorithm; here the draws are made on the
host in the order PyTorch makes them (a tensor's memory order) and uploaded (the in-place
fills, normal_, uniform_, exponential_ and random_, in random_fills.py).

Every function takes dtype= of every dtype (docs/DTYPES.md): data without one is bool, int64
or the default float dtype as in PyTorch, a NumPy array keeps its dtype. An integer tensor
holds only what its dtype holds: data, ranges and fill values outside it (or NaN / inf) are
refused where they enter, never wrapped or stored as 0 (`_as_int`).

What is bit-exact, checked against torch 2.13 (tests/unit/test_torch_rng.py): rand,
uniform_, randint (every range), randperm, randn / normal_ / randn_like of any size
(PyTorch's AVX2 kernel, which every x86 CPU with AVX2 runs; a CPU without AVX2 makes
PyTorch itself give other last bits), exponential_, multinomial (with and without
replacement, 1-D and 2-D), the scalar normal's cached second value, get_rng_state /
set_rng_state bytes, in float32 and float64. Integers come back as int64, as PyTorch's.
float16 / bfloat16 random tensors are the float32 numbers rounded (PyTorch draws them with
its half kernels: the same distribution, other last bits).
"""

import math
from typing import Any, Sequence

import numpy as np

from . import dispatcher, known, raw
from .allocator import HeapFullError
from .devices import check_device
from .formats import check_like_kwargs
from .generator import Generator
from .shape import infer_shape, numel as _numel
from .dispatcher import DTYPES, FLOAT_CODES, INT_CODES, INT_LIMITS, ITEMSIZE
from .dtypes import (SCALAR_TYPE_NAMES, code_of_array, dtype_code, dtype_of, host_values,
                     infer_code, to_host)
from .tensor import Tensor

default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (PyTorch's torch.manual_seed: int(seed)); returns it."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Seed the default generator from the OS's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> np.ndarray:
    """The default generator's state: PyTorch's 5056 state bytes, as a NumPy uint8 array
    (torchic tensors hold no uint8)."""
    return default_generator.get_state()


def set_rng_state(new_state: object) -> None:
    """Restore the default generator's state from `get_rng_state()`'s bytes."""
    default_generator.set_state(new_state)


def _gen(generator):
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a torchic.Generator, got {type(generator).__name__}")
    return generator


def _check_host_size(numel, what, code="f32"):
    """Refuse a tensor larger than the heap cap before its values are built on the host
    (a NumPy array of gigabytes), with HeapFullError naming the sizes."""
    rt = dispatcher.runtime()
    cap = rt.allocator.cap_bytes
    if numel * ITEMSIZE[code] > cap:
        raise HeapFullError(f"heap cap exceeded: requested {numel * ITEMSIZE[code]} bytes for "
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
    """(the values of `data` as a NumPy array, code): code None takes PyTorch's
    dtype of the data (a tensor's or NumPy array's own, else dtypes.infer_code)."""
    if isinstance(data, Tensor):
        src = data.detach()     # torch.tensor(t) copies t's values, detached
        arr = host_values(raw.read(src), src._dtype)
        code = code or src._dtype
    else:
        if hasattr(data, "__array__") and callable(getattr(data, "detach", None)):
            data = data.detach()     # a torch tensor that requires grad refuses __array__
        try:
            arr = np.asarray(data)
        except ValueError as exc:
            raise ValueError(f"cannot make a tensor from ragged nested sequences: {exc}") from None
        if arr.dtype.kind == "O" and all(isinstance(v, int) for v in arr.ravel()):
            raise IntegerOverflowError("value cannot be converted to type int64 without "
                                       "overflow (Python ints past int64 in the data)")
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"cannot make a tensor from data of type {arr.dtype} "
                            f"({type(data).__name__}): torchic holds bool, integer and float "
                            f"numbers")
        if code is None:
            code = infer_code(data, arr)
    if code in INT_CODES:
        return _as_int(arr, code, "tensor(data)"), code
    return arr, code        # (from_numpy_array casts it: bf16 rounded to its bits there)


class IntegerOverflowError(OverflowError, RuntimeError):
    """Integer data a dtype cannot hold: PyTorch's RuntimeError ("value cannot be converted
    to type ... without overflow"), and an OverflowError."""


def _as_int(values, code, what):
    """values (a NumPy array) as a C-ordered array of integer code `code`, refused where it
    cannot hold them: NaN / inf as PyTorch refuses them (RuntimeError), values outside its
    range with IntegerOverflowError (never wrapped, but for negative values into uint8 down
    to -255, which wrap as PyTorch's checked conversion lets them). Float values are
    truncated toward zero."""
    name = dtype_of(code).name
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)):
            raise RuntimeError(f"value cannot be converted to type {name} without overflow "
                               f"({what}: nan or inf in the float data)")
        values = np.trunc(values)
    lowest, highest = INT_LIMITS[code]
    low = -highest if lowest == 0 else lowest
    if values.size and (values.min() < low or values.max() > highest):
        raise IntegerOverflowError(f"value cannot be converted to type {name} without "
                                   f"overflow: integer data does not fit in {name} ({what}: "
                                   f"values in [{values.min()}, {values.max()}])")
    if lowest == 0 and values.size and values.min() < 0:
        values = values.astype(np.int64) % (highest + 1)
    return np.asarray(values, dtype=DTYPES[code], order="C")


def from_numpy_array(arr, code, requires_grad=False, source=None):
    """A new `code` tensor holding arr's values (cast as NumPy casts; bf16 rounded to
    nearest even). source: a function drawing the array again (random tensors: see
    raw.write)."""
    if code == "bf16" or arr.dtype != DTYPES[code]:
        arr = to_host(arr, code)
    t = raw.new_tensor(arr.shape, code)
    if arr.size:
        raw.write(t, arr.copy() if not arr.flags.owndata else arr, source)
        if code in INT_CODES:     # (known.py: a small integer tensor's values kept)
            known.written(t, arr)
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


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False,
           shape: int | Sequence[int] | None = None, device: Any = None,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, NumPy array, scalar, tensor)."""
    check_device(device, "tensor(): ")
    code = None if dtype is None else dtype_code(dtype)
    if isinstance(data, (list, tuple)):
        _check_host_size(_nested_numel(data), "a tensor from a list")
    elif isinstance(data, np.ndarray):
        _check_host_size(data.size, f"a tensor from an array of shape {list(data.shape)}")
    arr, code = _to_numpy(data, code)
    if shape is not None:
        shape = infer_shape(_shape_args(shape if isinstance(shape, (list, tuple)) else (shape,)),
                            arr.size)
        arr = arr.reshape(shape)
    if requires_grad and code not in FLOAT_CODES:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    return from_numpy_array(arr, code, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`data` itself when it is a tensor of that dtype, else `tensor(data, dtype=dtype)`."""
    check_device(device, "as_tensor(): ")
    if isinstance(data, Tensor) and (dtype is None or dtype_code(dtype) == data._dtype):
        return data
    return tensor(data, dtype=dtype)


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor holding a copy of a NumPy array's values, in its dtype (torchic's heap is
    its own); an array of a dtype torchic does not hold is a TypeError."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    code_of_array(arr)
    return tensor(arr)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor from a DLPack producer on the CPU (a NumPy array, a torch tensor, ...).

    The values are copied into torchic's heap: the heap is the allocator's own arenas, so
    foreign memory cannot join it without a copy. (Export, ``np.from_dlpack(t)`` /
    ``torch.from_dlpack(t)``, is zero-copy on the CPU backends.) A torchic tensor comes
    back detached, sharing its memory; as in PyTorch, one that requires grad is refused.
    """
    if isinstance(ext_tensor, Tensor):
        if ext_tensor.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use "
                               "tensor.detach()")
        return ext_tensor.detach()
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack() takes an object with __dlpack__ (a DLPack producer), "
                        f"got {type(ext_tensor).__name__}")
    if str(getattr(ext_tensor, "dtype", "")) == "torch.bfloat16":     # NumPy has none
        return tensor(np.from_dlpack(ext_tensor.float()), dtype="bf16")   # (exact)
    return tensor(np.from_dlpack(ext_tensor))


def _filled(shape, value, dtype, requires_grad):
    code = dtype_code(dtype)
    t = raw.full(_shape_args(shape), value, code)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    """A tensor of zeros. `shape`: ints or one tuple / list (`zeros(2, 3)`, `zeros((2, 3))`);
    dtype the default float dtype (float32) by default; `requires_grad=True` makes a leaf
    that records gradients;
    `device` may only be "cpu" (see `torchic.device`).

    Example:
        >>> torchic.zeros(2, 3, dtype=torchic.int32).shape
        (2, 3)
    """
    check_device(device, "zeros(): ")
    return _filled(shape, 0.0, dtype, requires_grad)


def ones(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    """A tensor of ones (arguments as `zeros`)."""
    check_device(device, "ones(): ")
    return _filled(shape, 1.0, dtype, requires_grad)


def full(shape: int | Sequence[int], fill_value: float, dtype: Any = None,
         requires_grad: bool = False, device: Any = None) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (without dtype=, PyTorch's: bool for a
    bool, int64 for an int, the default float dtype for a float)."""
    check_device(device, "full(): ")
    if isinstance(shape, int):
        shape = (shape,)
    if dtype is None and isinstance(fill_value, (bool, int, np.integer, np.bool_)):
        dtype = "b8" if isinstance(fill_value, (bool, np.bool_)) else "i64"
    return _filled((shape,), fill_value, dtype, requires_grad)


def empty(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    """A tensor whose values are whatever its heap block held (arguments as `zeros`)."""
    check_device(device, "empty(): ")
    t = raw.new_tensor(_shape_args(shape), dtype_code(dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float_code(dtype, kernel):
    code = dtype_code(dtype)
    if code not in FLOAT_CODES:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{SCALAR_TYPE_NAMES[code]}' (random floats need a floating "
                                  f"dtype)")
    return code


def _memory_order(shape, strides):
    """The dims outermost-first in memory: the order PyTorch's TensorIterator fills a
    tensor in (the logical order for a contiguous one)."""
    return sorted(range(len(shape)), key=lambda d: -strides[d])


def _in_memory_order(shape, strides, values_of):
    """values_of(n, contiguous) drawn in the memory order of a (shape, strides) layout,
    returned laid out logically (C order) as an array of `shape`."""
    n = _numel(shape)
    order = _memory_order(shape, strides)
    moved = [d for d in order if shape[d] != 1]
    contiguous = moved == sorted(moved)
    values = values_of(n, contiguous)
    if contiguous:
        return values.reshape(shape)
    return values.reshape([shape[d] for d in order]).transpose(np.argsort(order))


def _random_tensor(shape, dtype, requires_grad, device, what, values_of, kernel):
    check_device(device, f"{what}(): ")
    shape = _shape_args(shape)
    code = _float_code(dtype, kernel)
    _check_host_size(_numel(shape), f"{what} of shape {list(shape)}", code)
    def draw():
        return values_of(_numel(shape), True, code).reshape(shape)
    return from_numpy_array(draw(), code, requires_grad, draw)


def randn(*shape: int | Sequence[int], generator: Generator | None = None, dtype: Any = None,
          requires_grad: bool = False, device: Any = None) -> Tensor:
    """Standard normal samples (PyTorch's numbers for the same seed)."""
    return _random_tensor(shape, dtype, requires_grad, device, "randn",
                          lambda n, c, code: _gen(generator).normal(n, 0.0, 1.0, c, code),
                          "normal_kernel_cpu")


def rand(*shape: int | Sequence[int], generator: Generator | None = None, dtype: Any = None,
         requires_grad: bool = False, device: Any = None) -> Tensor:
    """Uniform [0, 1) samples (PyTorch's numbers for the same seed)."""
    return _random_tensor(shape, dtype, requires_grad, device, "rand",
                          lambda n, c, code: _gen(generator).uniform(n, 0.0, 1.0, code),
                          "check_uniform_bounds")


def _like(t, dtype, requires_grad, device, what, values_of, kernel, fmt):
    """randn_like / rand_like: PyTorch fills a new tensor laid out like t (empty_like
    keeps t's dim order), so a transposed t gets its values in t's memory order.
    `fmt`: layout= / memory_format= / pin_memory=, which change no value."""
    check_device(device, f"{what}(): ")
    check_like_kwargs(fmt, what)
    code = _float_code(dtype or t.dtype, kernel)
    _check_host_size(t.numel(), f"{what} of shape {list(t.shape)}", code)
    def draw():
        return np.ascontiguousarray(_in_memory_order(t.shape, t._strides, lambda n, c:
                                                     values_of(n, c, code))).reshape(t.shape)
    return from_numpy_array(draw(), code, requires_grad, draw)


def randn_like(t: Tensor, generator: Generator | None = None, dtype: Any = None,
               requires_grad: bool = False, device: Any = None, **fmt: Any) -> Tensor:
    """Standard normal samples in `t`'s shape, drawn in its memory order (as PyTorch)."""
    return _like(t, dtype, requires_grad, device, "randn_like",
                 lambda n, c, code: _gen(generator).normal(n, 0.0, 1.0, c, code),
                 "normal_kernel_cpu", fmt)


def rand_like(t: Tensor, generator: Generator | None = None, dtype: Any = None,
              requires_grad: bool = False, device: Any = None, **fmt: Any) -> Tensor:
    """Uniform [0, 1) samples in `t`'s shape, drawn in its memory order (as PyTorch)."""
    return _like(t, dtype, requires_grad, device, "rand_like",
                 lambda n, c, code: _gen(generator).uniform(n, 0.0, 1.0, code),
                 "check_uniform_bounds", fmt)


def _int_arg(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"randint {name} must be an int, got {v!r}")
    return int(v)


def _integers(values, code, what):
    """int64 draws, checked to fit integer code `code` (from_numpy_array casts them)."""
    if code in INT_CODES:
        lowest, highest = INT_LIMITS[code]
        if values.size and (values.min() < lowest or values.max() > highest):
            raise RuntimeError(f"{what}: values outside {dtype_of(code).name}; use a wider "
                               f"dtype or a range within it")
    return values


def randint(low: int, high: int | Sequence[int] | None = None,
            size: int | Sequence[int] | None = None, *, generator: Generator | None = None,
            dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Integers uniform in [low, high); randint(high, size) and randint(low, high, size)."""
    if high is None or (size is None and isinstance(high, (tuple, list))):
        if size is None and isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            low, high = 0, low
    if size is None:
        raise TypeError("randint needs a size, e.g. randint(0, 10, (32,))")
    low, high = _int_arg("low", low), _int_arg("high", high)
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    check_device(device, "randint(): ")
    shape = _shape_args(size if isinstance(size, (tuple, list)) else (size,))
    code = dtype_code(dtype, "i64")
    if code in INT_CODES and not (INT_LIMITS[code][0] <= low and high - 1 <= INT_LIMITS[code][1]):
        raise RuntimeError(f"randint: [{low}, {high}) does not fit {dtype_of(code).name}")
    _check_host_size(_numel(shape), f"randint of shape {list(shape)}", code)
    # (the draws lie in [low, high), checked above to fit the dtype: no scan of them)
    def draw():
        return _gen(generator).randint(_numel(shape), low, high).reshape(shape)
    return from_numpy_array(draw(), code, requires_grad, draw)


def randperm(n: int, generator: Generator | None = None, dtype: Any = None,
             requires_grad: bool = False, device: Any = None) -> Tensor:
    """A random permutation of 0 .. n-1 (int64; PyTorch's numbers for the same seed)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    check_device(device, "randperm(): ")
    code = dtype_code(dtype, "i64")
    _check_host_size(int(n), f"randperm({n})", code)
    perm = _gen(generator).randperm(int(n))
    return from_numpy_array(_integers(perm, code, "randperm"), code, requires_grad)


def arange(start: float, end: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False, device: Any = None) -> Tensor:
    """The values `start, start + step, ...` below `end` (`arange(n)`: 0 .. n-1); int64
    when every argument is an int, else the default float dtype. Integer values the dtype
    cannot hold are refused (OverflowError), never wrapped.

    Example:
        >>> torchic.arange(1, 2, 0.25)
        tensor([1.0000, 1.2500, 1.5000, 1.7500])
    """
    check_device(device, "arange(): ")
    if end is None:
        start, end = 0, start
    values = (start, end, step)
    all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)
    if step == 0:
        raise ValueError("arange step must be nonzero")
    if not all(math.isfinite(float(v)) for v in values):
        raise ValueError(f"arange needs finite start, end and step, got {start}, {end}, {step}")
    code = dtype_code(dtype, "i64" if all_int else None)
    _check_host_size(max(0, math.ceil((float(end) - float(start)) / float(step))),
                     f"arange({start}, {end}, {step})", code)
    if all_int:     # exact integers (float64 rounds past 2^53)
        arr = np.arange(int(start), int(end), int(step), dtype=np.int64)
    elif code in INT_CODES:     # PyTorch: start + i * step in ints (each truncated); the
        a, e, st = int(start), int(end), int(step)      # size from the ints for int64,
        if st == 0:                                     # else from the floats
            raise RuntimeError("step must be nonzero")
        n = -(-(e - a) // st) if code == "i64" else int(np.ceil((end - start) / step))
        arr = a + st * np.arange(max(n, 0), dtype=np.int64)
    else:
        arr = np.arange(start, end, step, dtype=np.float64)
    if code in INT_CODES and not (all_int and code == "i64"):   # (int64 holds those exactly)
        return from_numpy_array(_as_int(arr, code, f"arange({start}, {end}, {step})"), code,
                                requires_grad)
    return from_numpy_array(arr, code, requires_grad)


def linspace(start: float, end: float, steps: int, requires_grad: bool = False,
             dtype: Any = None, device: Any = None) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included (the default float
    dtype unless `dtype` is given; an integer dtype truncates)."""
    check_device(device, "linspace(): ")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"linspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    code = dtype_code(dtype)
    _check_host_size(int(steps), f"linspace of {steps} steps", code)
    if code in INT_CODES:   # PyTorch: the ends truncated, a float step, each half stepped
        start, end = (int(v) for v in _as_int(np.array([start, end], np.float64), code,
                                              f"linspace({start}, {end}, {steps})"))
        i = np.arange(steps)
        step = (end - start) / max(steps - 1, 1)
        values = np.where((i < steps // 2) | (steps == 1), start + step * i,
                          end - step * (steps - 1 - i))
    else:
        values = np.linspace(start, end, steps)
    return from_numpy_array(_as_int(values, code, f"linspace({start}, {end}, {steps})")
                            if code in INT_CODES else values, code, requires_grad)


def eye(n: int, m: int | None = None, dtype: Any = None, requires_grad: bool = False,
        device: Any = None) -> Tensor:
    """The n x m (m defaults to n) identity matrix: ones on the diagonal, in `dtype` (the
    default float dtype unless given)."""
    check_device(device, "eye(): ")
    n, m = (_shape_args((n,) if m is None else (n, m)) * 2)[:2]
    code = dtype_code(dtype)
    _check_host_size(n * m, f"eye({n}, {m})", code)
    return from_numpy_array(np.eye(n, m), code, requires_grad)


def multinomial(probs: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Sample category indices from (rows of) non-negative weights."""
    if not isinstance(probs, Tensor):
        raise TypeError("multinomial takes a tensor of weights")
    if probs.ndim not in (1, 2):
        raise ValueError(f"multinomial expects 1-D or 2-D weights, got shape {list(probs.shape)}")
    if probs._dtype not in FLOAT_CODES:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{probs.dtype}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
    if probs.shape[-1] == 0:
        raise ValueError(f"multinomial needs at least one category, got weights of shape "
                         f"{list(probs.shape)}")
    w = probs.detach()._read().astype(np.float64)
    rows = w.reshape(-1, w.shape[-1])
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ValueError("multinomial weights must be finite and non-negative")
    _check_host_size(rows.shape[0] * num_samples, f"{num_samples} multinomial samples", "i64")
    for row in rows:
        if row.sum() <= 0:
            raise ValueError("multinomial weights of a row sum to zero")
        if not replacement and num_samples > np.count_nonzero(row):
            raise ValueError(f"cannot draw {num_samples} samples without replacement from "
                             f"{np.count_nonzero(row)} categories with non-zero weight")
    out = _gen(generator).multinomial(rows.astype(np.float32), num_samples, replacement)
    if probs.ndim == 1:
        out = out[0]
    return from_numpy_array(np.ascontiguousarray(out, dtype=np.int64), "i64")

