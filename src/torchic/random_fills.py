"""In-place random fills: Tensor.normal_, uniform_, exponential_, random_ (and nn.init's).

PyTorch's numbers, bit for bit, as creation.py's random tensors (same generator, same draw
order: the filled tensor's memory order); the values are drawn on the host and copied in.
"""

import numpy as np

from .creation import _gen, _in_memory_order, _int_arg, _integers, from_numpy_array
from .dispatcher import FLOAT_CODES
from .dtypes import SCALAR_TYPE_NAMES
from .generator import Generator
from .tensor import Tensor

# random_()'s modulus per dtype: 2^mantissa + 1 for floats, max + 1 for ints (PyTorch's)
_RANDOM_BOUND = {"f16": 2 ** 11 + 1, "bf16": 2 ** 8 + 1, "f32": 2 ** 24 + 1,
                 "f64": 2 ** 53 + 1, "b8": 2, "u8": 2 ** 8, "i8": 2 ** 7, "i16": 2 ** 15,
                 "i32": 2 ** 31, "i64": 2 ** 63}


def _fill_random(t, values_of, kernel):
    """Overwrite t with values_of(n, contiguous) drawn in t's memory order."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{kernel} fills a torchic Tensor, got {type(t).__name__}")
    def draw():
        return np.ascontiguousarray(_in_memory_order(t.shape, t._strides, values_of))
    return t.copy_(from_numpy_array(draw(), t._dtype, source=draw))


def _require_float(t, kernel):
    if t._dtype not in FLOAT_CODES:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{SCALAR_TYPE_NAMES[t._dtype]}'")


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill t with N(mean, std^2): PyTorch's Tensor.normal_ numbers."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    _require_float(t, "normal_kernel_cpu")
    return _fill_random(t, lambda n, c: _gen(generator).normal(n, mean, std, c, t._dtype),
                        "normal_")


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, *,
             generator: Generator | None = None) -> Tensor:
    """Fill t with U[a, b): PyTorch's Tensor.uniform_ numbers."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    _require_float(t, "check_uniform_bounds")
    return _fill_random(t, lambda n, c: _gen(generator).uniform(n, a, b, t._dtype), "uniform_")


def exponential_(t: Tensor, lambd: float = 1.0, *,
                 generator: Generator | None = None) -> Tensor:
    """Fill t with Exp(lambd) samples: PyTorch's Tensor.exponential_ numbers."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    if t._dtype not in FLOAT_CODES:
        raise RuntimeError("Exponential distribution is a continuous probability "
                           "distribution. dtype must be a floating point but you specified Int")
    return _fill_random(t, lambda n, c: _gen(generator).exponential_float(n, lambd),
                        "exponential_")


def random_(t: Tensor, from_: int | None = None, to: int | None = None, *,
            generator: Generator | None = None) -> Tensor:
    """Tensor.random_(): random_(to) and random_(from, to) draw integers in [from, to);
    random_() draws in [0, 2^m] for a float dtype of m mantissa bits (float32: 2^24) and in
    [0, max] for an integer one (bool: 0 or 1), from random64() for int64 and float64 and
    random() for the others, as PyTorch does."""
    if from_ is not None and to is None:
        from_, to = 0, from_
    elif from_ is None and to is not None:      # random_(to=n): [0, n)
        from_ = 0
    g = _gen(generator)
    if from_ is None:
        draw = g.random64 if t._dtype in ("i64", "f64") else g.random
        bound = np.uint64(_RANDOM_BOUND[t._dtype])
        values = lambda n, c: (draw(n).astype(np.uint64) % bound).astype(np.int64)
    else:
        low, high = _int_arg("from", from_), _int_arg("to", to)
        if high <= low:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        values = lambda n, c: g.randint(n, low, high)
    return _fill_random(t, lambda n, c: _integers(values(n, c), t._dtype, "random_"),
                        "random_")
