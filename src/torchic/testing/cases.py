"""The per-op test table: one Case per primitive op and per user-level function.

Every suite derives its parametrization from CASES (no suite keeps its own op list):
  tests/backend/test_ops.py           each case on every backend and layout, values and
                                      gradients against float64; unary shapes, binary
                                      broadcasting and Python scalars by family
  tests/conformance/test_fuzz.py      the elementwise families and the `dims` reductions
  tests/conformance/test_nonfinite.py `special` inputs (NaN, inf, 0, huge) and `dfdx`
  tests/simd/test_kernels.py, test_property.py   the rows with a `kernel`, on raw Views
  tests/simd/test_math.py             the rows with an `accuracy` bound
  tests/webgpu/test_large_tensors.py  the rows with `big` shapes: operands past a storage
                                      binding (cut by windows.py); every primitive has one
  serve/suites/ops_*.py               the page's parity suites
tests/unit/test_ops_table.py fails when a primitive of ops.py has no case, or a case does
not issue the primitives it claims. Adding an elementwise op is one unary()/binary() row.
"""

import dataclasses
import math
from typing import Callable, NamedTuple, Optional

import numpy as np

import torchic
import torchic.nn.functional as _F
from torchic import ops as _ops

from .checks import LAYOUTS, check, check_dtype, check_ints
from .references import (np_erf, np_adam, np_causal_attention, np_cross_entropy,
                         np_cross_entropy_nd, np_cross_entropy_rows, np_dropout_mask,
                         np_gelu, np_gelu_grad, np_gelu_tanh, np_gelu_tanh_grad,
                         np_layer_norm, np_layer_norm_dw, np_layer_norm_dx,
                         np_log_softmax, np_logsumexp_rows, np_matmul_by_definition,
                         np_softmax, np_softmax_dx)


class Domain(NamedTuple):
    """Where an input's values are drawn: continuous, and integer-valued (ties, zeros)."""
    sample: Callable   # (rng, shape) -> float64 array
    ints: Callable     # (rng, shape) -> integer-valued float64 array


def _ints(lo, hi):
    return lambda r, s: r.integers(lo, hi, s).astype(np.float64)


DOMAINS = {
    "real": Domain(lambda r, s: r.uniform(-3, 3, s), _ints(-3, 4)),
    "pos": Domain(lambda r, s: r.uniform(0.2, 3, s), _ints(1, 4)),
    "nonzero": Domain(lambda r, s: r.choice([-1.0, 1.0], s) * r.uniform(0.3, 3, s),
                      lambda r, s: r.choice([-3.0, -2, -1, 1, 2, 3], s)),
    "unit": Domain(lambda r, s: r.uniform(-1, 1, s), _ints(-1, 2)),
    "wide": Domain(lambda r, s: r.uniform(-4, 4, s), _ints(-4, 5)),
    "ties": Domain(_ints(-2, 3), _ints(-2, 3)),                    # comparisons: many ties
    "int32": Domain(_ints(-2 ** 31, 2 ** 31), _ints(-2 ** 31, 2 ** 31)),  # int cases: wraps
    "count": Domain(_ints(-50, 51), _ints(-50, 51)),
    # int inputs whose int64 sums (up to 60 terms) stay inside int32: webgpu's int64 rule
    "int26": Domain(_ints(-2 ** 25, 2 ** 25), _ints(-2 ** 25, 2 ** 25)),
    "mask": Domain(lambda r, s: r.choice([0.0, 1.0, -2.0, 0.5], s),   # where's condition
                   lambda r, s: r.choice([0.0, 1.0], s)),
}

# special values for the non-finite tests: every pair for binary ops (a 13 x 13 grid)
NAN, INF = float("nan"), float("inf")
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, 1e-30],
                   dtype=np.float32)
SPECIAL_PAIRS = (SPECIAL[:, None], SPECIAL[None, :])
# tiny and subnormal values, checked relatively (a formula such as (e^2x - 1) / (e^2x + 1)
# gives tanh(1e-8) = 2.98e-8; a log2 that flushes subnormals gives (1e-45) ** 0.5 = 7.7e-20,
# a log that does, log(1e-45) = -88.0)
TINY = np.array([1e-8, -1e-8, 1e-20, 4e-4, 1e-38, 1e-45, -1e-45], dtype=np.float32)
SPECIAL_TINY = np.concatenate([SPECIAL, TINY])
EXP_SUBNORMAL = np.array([-88.5, -95.0, -100.0, -103.0], np.float32)   # exp: subnormal results
SPECIAL_ROWS = np.array([          # rows for reductions and row ops
    [NAN, 1.0, 2.0, 0.5],
    [INF, 1.0, 2.0, 0.5],
    [-INF, 1.0, 2.0, 0.5],
    [INF, -INF, 0.0, 1.0],
    [-INF, -INF, -INF, -INF],
    [INF, INF, 1.0, 0.0],
    [1e30, 1e30, -1e30, 0.0],
    [0.0, -0.0, 1e-30, -1e-30],
    [1.0, NAN, INF, -INF],
    [-1.0, 2.0, -3.0, 0.25],
], dtype=np.float32)
SPECIAL_TARGETS = np.array([0, 1, 0, 2, 3, 2, 2, 1, 3, 1], dtype=np.int32)


class Special(NamedTuple):
    """The non-finite test of a case: these inputs, through fn / ref (None: the case's own)."""
    inputs: tuple
    fn: Optional[Callable] = None
    ref: Optional[Callable] = None


@dataclasses.dataclass(frozen=True)
class Case:
    """One op or user-level function, and everything the suites need to test it."""
    name: str                # key in CASES (a primitive's own name for its one-op case)
    fn: Callable             # the torchic call on tensors (public API only)
    ref: Callable            # its NumPy float64 reference on arrays
    family: str              # unary | binary | compare | reduce | view | other
    ops: tuple               # the primitives of ops.py it tests (forward, and backward if grad)
    shapes: tuple            # input shapes of the value / gradient check
    domain: tuple = ()       # one DOMAINS key per input ("real" for the missing ones)
    grad: object = True      # gradients vs finite differences: True, False, or input indices
    kinks: bool = False      # not smooth everywhere: no gradient check on integer-valued inputs
    layouts: tuple = LAYOUTS
    tol: dict = dataclasses.field(default_factory=dict)   # check()'s atol / rtol / grad_*
    special: Optional[Special] = None    # the non-finite test (None: this case has none)
    dfdx: Optional[Callable] = None      # float64 derivative: the non-finite backward test
    kernel: Optional[str] = None         # the primitive whose kernel alone computes ref
    dims: Optional[tuple] = None         # (torchic(x, dims, keepdim), numpy(a, axes, keepdims),
                                         #  empty reduction raises): fuzzed over random dims
    accuracy: Optional[tuple] = None     # ("ulp" | "abs", bound, lo, hi): simd math, dense on
                                         # [lo, hi] plus random bit patterns
    big: Optional[tuple] = None          # input shapes of more than 16 KiB an operand: the
                                         # webgpu large-tensor test (a 16 KiB binding), where
                                         # each primitive in `ops` must be cut into parts
    dtypes: tuple = ()                   # the dtype codes besides float32 it runs in
                                         # (check_dtype: against NumPy in that dtype; every
                                         # input in it; docs/DTYPES.md)
    out_dtype: Optional[Callable] = None  # input code -> the output's code (PyTorch's: sums
                                          # of ints are int64, ...); None: the input's

    def domain_of(self, k):
        """The DOMAINS key of input `k` ("real" where the case names none)."""
        return self.domain[k] if k < len(self.domain) else "real"

    def draw(self, rng, shapes=None, ints=False):
        """Float64 inputs of the given shapes (default: the case's), each from its domain."""
        return [getattr(DOMAINS[self.domain_of(k)], "ints" if ints else "sample")(rng, s)
                for k, s in enumerate(self.shapes if shapes is None else shapes)]

    def check(self, layout="contiguous", shapes=None, seed=0, **kw):
        """testing.check() of this case: values and (if grad) gradients vs float64 (an
        int32 case: check_ints, exact)."""
        if self.family == "int":
            rng = np.random.default_rng(seed)
            arrays = [np.asarray(DOMAINS[self.domain_of(k)].sample(rng, s)).astype(np.int32)
                      for k, s in enumerate(self.shapes if shapes is None else shapes)]
            out = check_ints(self.fn, self.ref, arrays, layout)
            return out
        arrays = self.draw(np.random.default_rng(seed), shapes)
        return check(self.fn, self.ref, arrays=arrays, layout=layout, seed=seed,
                     **{"grad": self.grad, **self.tol, **kw})

    def check_dtype(self, code, layout="contiguous", seed=0):
        """checks.check_dtype of this case with every input in dtype `code` (its domain's
        values; integer-valued ones for an integer or bool code): the output in `code`
        (bool for a comparison), float64 gradients too where the case has them."""
        ints = code not in ("f16", "bf16", "f32", "f64")
        arrays = self.draw(np.random.default_rng(seed), ints=ints)
        out_code = self.out_dtype(code) if self.out_dtype else None
        return check_dtype(self.fn, self.ref, arrays, code, layout,
                           out_code="b8" if self.family == "compare" else out_code,
                           grad=self.grad is True and not self.kinks)


CASES = {}


def case(name, fn, ref, family, ops, shapes, **kw):
    """Add a `Case` to CASES (the keyword arguments are Case's fields); the other row
    helpers (`unary`, `binary`, ...) fill in a family's defaults and call this."""
    if name in CASES:
        raise ValueError(f"duplicate case {name!r}")
    CASES[name] = Case(name, fn, ref, family, tuple(ops), tuple(shapes), **kw)
    return CASES[name]


def family(name):
    """The cases of one family, in table order."""
    return [c for c in CASES.values() if c.family == name]


# Case.dtypes of the row helpers: the codes besides float32 (docs/DTYPES.md)
FLOAT_DTYPES = ("f64", "f16", "bf16")
INT_DTYPES = ("i64", "i32", "i16", "i8", "u8")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("b8",)

BIG = (60, 100)     # 24000 bytes: past a 16 KiB binding (the large-tensor test's `big`)


def _primitive(name):
    """A case named after a primitive tests that primitive's kernel alone."""
    return name if name in _ops.BY_NAME else None


def unary(name, fn, ref, domain="real", ops=None, **kw):
    """A unary elementwise op's row: one (3, 5) input of `domain`, the non-finite inputs,
    the one-kernel check of primitive `name`."""
    kw.setdefault("special", Special((SPECIAL,)))
    kw.setdefault("big", (BIG,) if _primitive(name) else None)
    kw.setdefault("dtypes", FLOAT_DTYPES)
    case(name, fn, ref, "unary", ops or (name,), [(3, 5)], domain=(domain,),
         kernel=_primitive(name), **kw)


def binary(name, fn, ref, domain=("real", "real"), ops=None, **kw):
    """A binary elementwise op's row: two (4, 3) inputs, the non-finite pairs."""
    kw.setdefault("special", Special(SPECIAL_PAIRS))
    kw.setdefault("big", (BIG, BIG) if _primitive(name) else None)
    kw.setdefault("dtypes", FLOAT_DTYPES + (INT_DTYPES if name in _ops.INT_BINARY else ()))
    case(name, fn, ref, "binary", ops or (name,), [(4, 3), (4, 3)], domain=domain,
         kernel=_primitive(name), **kw)


def comparison(name, fn, ref):
    """A comparison's row: broadcast inputs with ties, a 0/1 result, no gradient."""
    case(name, fn, lambda a, b: ref(a, b).astype(np.float64), "compare", (name,),
         [(4, 5), (5,)], domain=("ties", "ties"), grad=False, kernel=name,
         special=Special(SPECIAL_PAIRS), big=(BIG, BIG[1:]), dtypes=ALL_DTYPES)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


# -- elementwise: one row per op ----------------------------------------------------------
unary("neg", lambda a: -a, np.negative)
unary("exp", torchic.exp, np.exp, dfdx=np.exp, accuracy=("ulp", 3, -104.5, 89.0),
      special=Special((np.concatenate([SPECIAL, EXP_SUBNORMAL]),)))
unary("log", torchic.log, np.log, "pos", dfdx=lambda x: 1 / x, accuracy=("ulp", 3, 0.5, 2.0),
      special=Special((SPECIAL_TINY,)))
unary("relu", torchic.relu, lambda a: np.maximum(a, 0), kinks=True)
unary("tanh", torchic.tanh, np.tanh, dfdx=lambda x: 1 - np.tanh(x) ** 2,
      accuracy=("abs", 1e-6, -30.0, 30.0), special=Special((SPECIAL_TINY,)))
unary("sigmoid", torchic.sigmoid, _sigmoid, dfdx=lambda x: _sigmoid(x) * (1 - _sigmoid(x)),
      accuracy=("abs", 1e-6, -30.0, 30.0))
unary("sqrt", torchic.sqrt, np.sqrt, "pos", dfdx=lambda x: 1 / (2 * np.sqrt(x)),
      special=Special((SPECIAL_TINY,)))
unary("abs", torchic.abs, np.abs, kinks=True)
unary("sin", torchic.sin, np.sin, dfdx=np.cos, accuracy=("ulp", 2, -1e5, 1e5))
unary("cos", torchic.cos, np.cos, dfdx=lambda x: -np.sin(x), accuracy=("ulp", 2, -1e5, 1e5))
unary("log10", torchic.log10, np.log10, "pos", ops=("log", "mul"))
unary("log2", lambda a: a.log2(), np.log2, "pos", ops=("log", "mul"))
unary("square", lambda a: a * a, lambda a: a * a, ops=("mul",), dfdx=lambda x: 2 * x)
unary("reciprocal", lambda a: 1 / a, lambda a: 1 / a, "nonzero", ops=("div",),
      dfdx=lambda x: -1 / (x * x))

binary("add", lambda a, b: a + b, np.add)
binary("sub", lambda a, b: a - b, np.subtract)
binary("mul", lambda a, b: a * b, np.multiply)
binary("div", lambda a, b: a / b, np.divide, ("real", "nonzero"))
binary("pow", lambda a, b: a ** b, np.power, ("pos", "unit"),
       special=Special((SPECIAL_TINY[:, None], SPECIAL_TINY[None, :])))
binary("maximum", torchic.maximum, np.maximum, kinks=True)
binary("minimum", torchic.minimum, np.minimum, kinks=True)

comparison("eq", lambda a, b: a == b, np.equal)
comparison("ne", lambda a, b: a != b, np.not_equal)
comparison("lt", lambda a, b: a < b, np.less)
comparison("le", lambda a, b: a <= b, np.less_equal)
comparison("gt", lambda a, b: a > b, np.greater)
comparison("ge", lambda a, b: a >= b, np.greater_equal)

# elementwise math: the atan2 primitive and the composites on it
binary("atan2", torchic.atan2, np.arctan2, ("real", "pos"))   # (no branch cut)
unary("atan", torchic.atan, np.arctan, ops=("atan2",), dfdx=lambda x: 1 / (1 + x * x))
unary("asin", torchic.asin, np.arcsin, "unit", ops=("atan2", "sqrt"), kinks=True,
      dfdx=lambda x: 1 / np.sqrt(1 - x * x))
unary("acos", torchic.acos, np.arccos, "unit", ops=("atan2", "sqrt"), kinks=True,
      dfdx=lambda x: -1 / np.sqrt(1 - x * x))
unary("log1p", torchic.log1p, np.log1p, "pos", ops=("add", "log", "div"),
      dfdx=lambda x: 1 / (1 + x))
unary("expm1", torchic.expm1, np.expm1, ops=("exp", "log", "mul"), dfdx=np.exp)
unary("sinh", torchic.sinh, np.sinh, ops=("exp",), dfdx=np.cosh)
unary("cosh", torchic.cosh, np.cosh, ops=("exp",), dfdx=np.sinh)
unary("asinh", torchic.asinh, np.arcsinh, ops=("sqrt", "log"),
      dfdx=lambda x: 1 / np.sqrt(x * x + 1))
def _lgamma_ref(a):
    def one(v):
        try:
            return math.lgamma(v)
        except ValueError:      # (the poles)
            return math.inf
    return np.vectorize(one, otypes=[float])(a)


unary("lgamma", torchic.lgamma, _lgamma_ref, "pos",
      ops=("log", "sin"))
unary("floor", torchic.floor, np.floor, ops=("copy", "where"), kinks=True)
unary("round", torchic.round, np.round, ops=("copy", "where"), kinks=True)

# -- int32 tensors: exact, wrapping around as NumPy's int32 (family "int": check_ints) ---------
def integer(name, fn, ref, ops, shapes=((4, 3), (4, 3)), domain=None, **kw):
    """An int32 op's row: int32 inputs, no gradient."""
    case(name, fn, ref, "int", ops, shapes, domain=domain or ("int32",) * len(shapes),
         grad=False, **kw)


integer("add_int", lambda a, b: a + b, np.add, ("add",))
integer("sub_int", lambda a, b: a - b, np.subtract, ("sub",))
integer("mul_int", lambda a, b: a * b, np.multiply, ("mul",))
integer("maximum_int", torchic.maximum, np.maximum, ("maximum",))
integer("minimum_int", torchic.minimum, np.minimum, ("minimum",))
# elementwise math: the bitwise primitives (shifts by 0..40: past int32's width too)
integer("bitwise_and", torchic.bitwise_and, np.bitwise_and, ("bitwise_and",), domain=("int32", "int32"))
integer("bitwise_or", torchic.bitwise_or, np.bitwise_or, ("bitwise_or",), domain=("int32", "int32"))
integer("bitwise_xor", torchic.bitwise_xor, np.bitwise_xor, ("bitwise_xor",), domain=("int32", "int32"))
integer("shift_left", lambda a, b: a << (b.abs() % 40),
        lambda a, b: np.where(np.abs(b) % 40 < 32, np.left_shift(a, np.abs(b) % 40 % 32), 0),
        ("shift_left", "sub", "maximum", "copy", "div", "mul"), domain=("int32", "count"))
integer("shift_right", lambda a, b: a >> (b.abs() % 40),
        lambda a, b: np.right_shift(a, np.minimum(np.abs(b) % 40, 31)),
        ("shift_right", "sub", "maximum", "copy", "div", "mul"), domain=("int32", "count"))
# the bitwise primitives past a webgpu binding (the large-tensor test runs float32 inputs:
# integer-valued ones, cast to int32 and back, exactly)
case("bitwise_big", lambda a, b: ((a.int() & b.int()) | (a.int() ^ (b.int() << 2))
                                  | (a.int() >> 1)).float(),
     lambda a, b: ((a.astype(np.int32) & b.astype(np.int32))
                   | (a.astype(np.int32) ^ (b.astype(np.int32) << 2))
                   | (a.astype(np.int32) >> 1)).astype(np.float64),
     "int", ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right", "copy"),
     ((4, 3), (4, 3)), domain=("count", "count"), grad=False, big=(BIG, BIG))
integer("add_int_broadcast", lambda a, b: a + b, np.add, ("add",), shapes=((4, 1, 3), (5, 3)))
integer("add_int_scalar", lambda a: 3 + a * 2 - 1, lambda a: 3 + a * np.int32(2) - np.int32(1),
        ("add", "mul", "sub"), shapes=((4, 3),))
integer("neg_int", lambda a: -a, np.negative, ("sub",), shapes=((4, 3),))
integer("abs_int", torchic.abs, np.abs, ("sub", "maximum"), shapes=((4, 3),))
integer("int_times_float", lambda a: a * 0.5, lambda a: a * 0.5, ("copy", "mul"),
        shapes=((4, 3),), domain=("count",))
integer("int_div_int", lambda a, b: a / b, np.divide, ("copy", "div"), domain=("count", "count"))
# sums of integers are int64, as PyTorch's (past int32: tests/backend/test_int_exact.py)
integer("sum_int_all", lambda a: a.sum(), lambda a: a.sum(dtype=np.int64), ("copy", "sum"),
        shapes=((3, 4, 5),), domain=("int26",))
integer("sum_int_dim1_keepdim", lambda a: a.sum(1, keepdim=True),
        lambda a: a.sum(1, keepdims=True, dtype=np.int64), ("copy", "sum"), shapes=((3, 4, 5),),
        domain=("int26",))
integer("sum_int_dims", lambda a: torchic.sum(a, (0, 2)), lambda a: a.sum((0, 2), dtype=np.int64),
        ("copy", "sum"), shapes=((3, 4, 5),), domain=("int26",))
integer("sum_int_dtype_int32", lambda a: a.sum(1, dtype=torchic.int32),
        lambda a: a.sum(1, dtype=np.int32), ("sum",), shapes=((3, 4, 5),), domain=("int32",))
integer("max_int_all", lambda a: a.max(), lambda a: a.max(), ("max",), shapes=((3, 4, 5),),
        domain=("int32",))
integer("min_int_dims", lambda a: a.amin((1, 2)), lambda a: a.min((1, 2)), ("min",),
        shapes=((3, 4, 5),), domain=("int32",))

case("where", lambda c, a, b: torchic.where(c != 0, a, b),
     lambda c, a, b: np.where(c != 0, a, b), "other", ("ne", "where"), [(3, 4), (3, 4), (4,)], domain=("mask",), grad=(1, 2), kernel="where",
     special=Special((SPECIAL, SPECIAL[::-1].copy(), np.roll(SPECIAL, 3))),
     big=(BIG, BIG, BIG[1:]))


# -- reductions and row ops (input (3, 4, 5)); `special` rows run on SPECIAL_ROWS ---------------
def reduction(name, fn, ref, ops, **kw):
    """A reduction's row: one (3, 4, 5) input."""
    case(name, fn, ref, "reduce", ops, [(3, 4, 5)], **kw)


_ROWS = Special((SPECIAL_ROWS,))
def _accumulated(code):
    """PyTorch's sum / cumsum dtype: int64 for bool and integers, the input's for floats."""
    return code if code in FLOAT_DTYPES else "i64"


def _bool_out(code):
    return "b8"


reduction("sum_all", lambda a: a.sum(), lambda a: a.sum(), ("sum",),
          dims=(lambda x, d, k: x.sum(d, keepdim=k), lambda a, ax, k: a.sum(ax, keepdims=k), False),
          special=Special((SPECIAL_ROWS[1:4],), lambda x: x.T.sum()), dtypes=ALL_DTYPES,
          out_dtype=_accumulated)
reduction("sum_dim0", lambda a: a.sum(0), lambda a: a.sum(0), ("sum",), big=((30, 20, 10),),
          dtypes=ALL_DTYPES, out_dtype=_accumulated)
reduction("sum_dim-1_keepdim", lambda a: a.sum(dim=-1, keepdim=True),
          lambda a: a.sum(-1, keepdims=True), ("sum",), special=_ROWS)
reduction("sum_axis_tuple", lambda a: a.sum(axis=(0, 2)), lambda a: a.sum((0, 2)), ("sum",))
reduction("mean_all", lambda a: a.mean(), lambda a: a.mean(), ("sum", "mul"),
          dims=(lambda x, d, k: x.mean(d, keepdim=k), lambda a, ax, k: a.mean(ax, keepdims=k),
                False))
reduction("mean_dim1", lambda a: a.mean(1), lambda a: a.mean(1), ("sum",), special=_ROWS)
reduction("max_all", lambda a: a.max(), lambda a: a.max(), ("max",), big=((30, 20, 10),))
reduction("min_all", lambda a: a.min(), lambda a: a.min(), ("min",), big=((30, 20, 10),))
reduction("max_dim_values", lambda a: a.max(dim=1).values, lambda a: a.max(1), ("max",))
reduction("min_dim_keepdim", lambda a: a.min(2, keepdim=True)[0],
          lambda a: a.min(2, keepdims=True), ("min",))
reduction("amax_tuple", lambda a: a.amax((0, 1)), lambda a: a.max((0, 1)), ("max",))
reduction("amax_last", lambda a: a.amax(-1), lambda a: a.max(-1), ("max",), kinks=True,
          special=_ROWS,
          dims=(lambda x, d, k: x.amax(d, keepdim=k), lambda a, ax, k: a.max(ax, keepdims=k), True))
reduction("amin_last", lambda a: a.amin(-1), lambda a: a.min(-1), ("min",), kinks=True,
          special=_ROWS,
          dims=(lambda x, d, k: x.amin(d, keepdim=k), lambda a, ax, k: a.min(ax, keepdims=k), True))
reduction("softmax_last", lambda a: a.softmax(-1), np_softmax, ("softmax", "softmax_grad"),
          special=_ROWS, big=((30, 20, 10),))
reduction("softmax_dim0", lambda a: torchic.softmax(a, dim=0), lambda a: np_softmax(a, 0),
          ("softmax", "softmax_grad"))
reduction("softmax_mid", lambda a: a.softmax(axis=1), lambda a: np_softmax(a, 1), ("softmax",))
reduction("log_softmax_last", lambda a: a.log_softmax(-1), np_log_softmax, ("log_softmax",),
          special=_ROWS, big=((30, 20, 10),))
reduction("log_softmax_dim0", lambda a: torchic.log_softmax(a, 0),
          lambda a: np_log_softmax(a, 0), ("log_softmax",))
reduction("var_dim1", lambda a: a.var(1), lambda a: a.var(1, ddof=1), ("sum",),
          dims=(lambda x, d, k: x.var(d, keepdim=k),
                lambda a, ax, k: a.var(ax, ddof=1, keepdims=k), False))
reduction("std_dim0_keepdims", lambda a: a.std(0, keepdims=True),
          lambda a: a.std(0, ddof=1, keepdims=True), ("sum", "sqrt"))
reduction("sum_keepdims_alias", lambda a: a.sum(1, keepdims=True),
          lambda a: a.sum(1, keepdims=True), ("sum",))

case("argmax", lambda a: a.argmax(-1), lambda a: np.argmax(a, -1), "other", ("argmax",),
     [(4, 6)], grad=False, special=_ROWS, big=(BIG,), dtypes=FLOAT_DTYPES + INT_DTYPES,
     out_dtype=lambda code: "i64")

_TARGET = np.array([0, 3, 2, 4, 4, 1])
case("cross_entropy", lambda x: torchic.cross_entropy(x, torchic.tensor(_TARGET)),
     lambda x: np_cross_entropy(x, _TARGET), "other", ("cross_entropy", "cross_entropy_grad"),
     [(6, 5)], domain=("wide",), big=((6, 1000),),
     special=Special((SPECIAL_ROWS,),
                     lambda x: torchic.cross_entropy(x, torchic.tensor(SPECIAL_TARGETS),
                                                     reduction="none"),
                     lambda x: np_logsumexp_rows(x) - x[np.arange(len(x)), SPECIAL_TARGETS]))
case("mse_loss", torchic.mse_loss, lambda a, b: ((a - b) ** 2).mean(), "other",
     ("sub", "mul", "sum"), [(4, 3), (4, 3)])

# -- matmul (MATMUL_SHAPES: the shapes the matmul case also runs on) ---------------------------
MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((1, 7), (7, 1)), ((2, 0), (0, 3)),
    ((0, 3), (3, 2)), ((33, 17), (17, 65)),
]
case("matmul", torchic.matmul, np.matmul, "other", ("matmul",), [(6, 5), (5, 7)],
     tol={"atol": 1e-4}, big=((300, 30), (30, 20)),
     special=Special((SPECIAL_ROWS, np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 0.5], [0.5, 0.0, 1.0],
                                              [1.0, 1.0, 0.0]], np.float32)),
                     ref=np_matmul_by_definition))
case("matmul_transposed", lambda a, b: a.T @ b.T, lambda a, b: a.T @ b.T, "other", ("matmul",),
     [(5, 6), (7, 5)], tol={"atol": 1e-4},
     special=Special((SPECIAL_ROWS[:4], SPECIAL_ROWS[4:8]),
                     ref=lambda a, b: np_matmul_by_definition(a.T, b.T)))

# F.linear with a bias: one matmul_bias (the bias added where the product is stored); odd
# sizes leave partial tiles on webgpu
case("matmul_bias", torchic.nn.functional.linear, lambda x, w, b: x @ w.T + b, "other",
     ("matmul_bias",), [(2, 4, 6), (5, 6), (5,)], tol={"atol": 1e-4},
     special=Special((SPECIAL_ROWS, np.array([[1.0, 0.0, -1.0, 0.5], [0.0, 2.0, 0.5, 1.0],
                                              [0.5, 0.0, 1.0, 0.0]], np.float32),
                      np.array([0.0, INF, NAN], np.float32)),
                     ref=lambda x, w, b: np_matmul_by_definition(x, w.T) + b))
case("linear_odd", torchic.nn.functional.linear, lambda x, w, b: x @ w.T + b, "other",
     ("matmul_bias",), [(33, 17), (65, 17), (65,)], tol={"atol": 1e-4},
     big=((300, 17), (65, 17), (65,)))

# attention's heads: (B, T, nh * hd) viewed as (B, nh, T, hd), whose two batch dims do not
# flatten into one (the kernel takes both batch strides), q @ k^T and its gradients
case("matmul_heads",
     lambda a, b: a.reshape(2, 5, 2, 3).transpose(1, 2) @
     b.reshape(2, 5, 2, 3).transpose(1, 2).transpose(-2, -1),
     lambda a, b: a.reshape(2, 5, 2, 3).swapaxes(1, 2) @
     b.reshape(2, 5, 2, 3).swapaxes(1, 2).swapaxes(-2, -1),
     "other", ("matmul",), [(2, 5, 6), (2, 5, 6)], tol={"atol": 1e-4})

# -- views, indexing, copies (input (2, 3, 4)) ---------------------------------------------------
def view(name, fn, ref, ops=(), shapes=((2, 3, 4),), **kw):
    """A view / shape op's row: one (2, 3, 4) input by default."""
    case(name, fn, ref, "view", ops, shapes, **kw)


view("reshape", lambda a: a.reshape(4, 6), lambda a: a.reshape(4, 6))
view("reshape_-1", lambda a: a.reshape([-1, 3]), lambda a: a.reshape(-1, 3))
view("view", lambda a: a.contiguous().view(-1, 12), lambda a: a.reshape(-1, 12))
view("transpose", lambda a: a.transpose(0, 2), lambda a: a.swapaxes(0, 2))
view("permute", lambda a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1))
view("T_2d", lambda a: a[0].T, lambda a: a[0].T)
view("expand", lambda a: a[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4)))
view("expand_new_dim", lambda a: a.expand(5, 2, 3, 4), lambda a: np.broadcast_to(a, (5, 2, 3, 4)))
view("squeeze", lambda a: a[:, :1].squeeze(), lambda a: a[:, :1].squeeze())
view("squeeze_dim", lambda a: a[:, 1:2].squeeze(1), lambda a: a[:, 1])
view("unsqueeze", lambda a: a.unsqueeze(-1), lambda a: a[..., None])
view("flatten", lambda a: a.flatten(), lambda a: a.reshape(-1))
view("flatten_1", lambda a: a.flatten(1), lambda a: a.reshape(2, -1))
view("index_int", lambda a: a[1], lambda a: a[1])
view("index_neg", lambda a: a[-1, -2], lambda a: a[-1, -2])
view("slice_step", lambda a: a[:, ::2, 1:], lambda a: a[:, ::2, 1:])
view("none_ellipsis", lambda a: a[None, ..., 2], lambda a: a[None, ..., 2])
view("slice_method", lambda a: a.slice([(0, 1), None, (1, 4, 2)]), lambda a: a[0:1, :, 1:4:2])
view("contiguous", lambda a: a.transpose(1, 2).contiguous(), lambda a: a.swapaxes(1, 2),
     ops=("copy",), special=Special((SPECIAL_ROWS,), lambda x: x.T.contiguous(), lambda x: x.T),
     big=((20, 30, 10),))
view("clone", lambda a: a.clone(), lambda a: a.copy(), ops=("copy",))
view("unbind", lambda a: a.unbind(1)[2], lambda a: a[:, 2])
view("reshape_of_transposed", lambda a: a.transpose(0, 1).reshape(3, 8),
     lambda a: a.swapaxes(0, 1).reshape(3, 8), ops=("copy",))
view("cat_dim1", lambda a, b: torchic.cat([a, b], dim=1), lambda a, b: np.concatenate([a, b], 1),
     ("copy",), [(2, 3), (2, 5)])
view("cat_dim0", lambda a, b: torchic.cat((a, b)), lambda a, b: np.concatenate([a, b]),
     ("copy",), [(1, 3), (4, 3)])
view("stack_last", lambda a, b: torchic.stack([a, b], dim=-1), lambda a, b: np.stack([a, b], -1),
     ("copy",), [(2, 3), (2, 3)])

_IDX = np.array([[1, 2, 6], [0, 1, 1]])      # repeated rows: the backward adds them up
_PICK = [9, 0, 3, 3, 1]
view("gather_rows", lambda c: c[torchic.tensor(_IDX)], lambda c: c[_IDX],
     ("gather_rows", "scatter_add_rows", "fill"), [(7, 3)],
     special=Special((SPECIAL_ROWS,), lambda x: x[torchic.tensor(_PICK)], lambda x: x[_PICK]))
view("index_list", lambda c: c[[4, 4, 0]], lambda c: c[[4, 4, 0]], ("gather_rows",), [(7, 3)])


def _spread(n):     # 1000 row numbers through a table of n rows (repeats: the backward adds)
    return np.arange(1000) * 7 % n


view("index_many_rows", lambda c: c[torchic.tensor(_spread(c.shape[0]))],
     lambda c: c[_spread(len(c))], ("gather_rows", "scatter_add_rows"), [(7, 3)],
     big=((20, 10),))
_ROWS_I, _COLS_I = np.array([0, 1, 2]), np.array([2, 0, 1])
view("index_points", lambda c: c[torchic.tensor(_ROWS_I), torchic.tensor(_COLS_I)],
     lambda c: c[_ROWS_I, _COLS_I], ("gather_rows",), [(7, 3)])

_I3 = [2, 0, 2]
view("index_axis1", lambda a: a[:, torchic.tensor(_I3)], lambda a: a[:, _I3],
     ("gather_rows", "copy"))
view("index_ellipsis_last", lambda a: a[..., torchic.tensor(_I3)], lambda a: a[..., _I3],
     ("gather_rows", "copy"))
view("index_list_last", lambda a: a[:, [-1]], lambda a: a[:, [-1]], ("gather_rows",))
view("index_range_pairs", lambda a: a[range(2), [1, 2]], lambda a: a[range(2), [1, 2]],
     ("gather_rows",))
view("index_int_and_list", lambda a: a[0, :, [1, 3]], lambda a: a[0, :, [1, 3]],
     ("gather_rows",))
view("index_nonadjacent", lambda a: a[[0, 1], :, 0], lambda a: a[[0, 1], :, 0], ("gather_rows",))
view("index_broadcast", lambda a: a[torchic.tensor([[0], [1]]), torchic.tensor([0, 2])],
     lambda a: a[[[0], [1]], [0, 2]], ("gather_rows",))
view("index_mask", lambda a: a[a > 0], lambda a: a[a > 0], ("gt", "gather_rows"))


def _put(key):
    def fn(a, b):
        c = a * 1.0
        c[key] = b
        return c

    def ref(a, b):
        c = a.copy()
        c[key] = b
        return c
    return fn, ref


view("setitem_points", *_put((range(3), [1, 0, 1])), ("mul", "copy", "gather_rows"),
     [(3, 4), (3,)])
view("setitem_slice_grad", *_put((slice(1, 3), 2)), ("mul", "copy"),   # a copy into the view
     [(3, 4), (2,)])
view("setitem_repeated_last_wins", *_put((slice(None), [0, 0])), ("mul", "copy", "gather_rows"),
     [(3, 4), (2,)])

case("full", lambda a: a * torchic.full(tuple(a.shape), -1.5), lambda a: a * -1.5, "other",
     ("fill",), [(3, 4)], big=(BIG,),
     special=Special((SPECIAL,), lambda x: torchic.full((2, 3), NAN) + torchic.full((2, 3), -INF),
                     lambda x: np.full((2, 3), NAN)))

# -- composites (api/extra_ops.py, api/ordering.py, nn.functional): built from the primitives



def _tril_mask_ref(a, k=0):
    return np.where(np.tri(a.shape[-2], a.shape[-1], k, bool), a, 0.0)


unary("erf", torchic.erf, np_erf, ops=("abs", "lt", "where", "mul", "add", "exp"),
      dfdx=lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x))
# -- the fused transformer primitives (functions/fused.py) behind F.gelu / layer_norm / sdpa
unary("gelu", _F.gelu, np_gelu)
unary("gelu_tanh", lambda a: _F.gelu(a, approximate="tanh"), np_gelu_tanh)


def _gelu_vjp(approximate):
    def fn(x, g):    # x's gradient of sum(gelu(x) * g): the gelu(_tanh)_grad kernel alone
        x = x.detach().requires_grad_()
        _F.gelu(x, approximate=approximate).backward(g)
        return x.grad
    return fn


def _layer_norm_vjp(x, w, g):
    x = x.detach().requires_grad_()
    _F.layer_norm(x, (x.shape[-1],), w).backward(g)
    return x.grad


def _layer_norm_dw(x, w, g):   # the weight's gradient: layer_norm_grad's g * xhat plane, summed
    w = w.detach().requires_grad_()
    _F.layer_norm(x, (x.shape[-1],), w).backward(g)
    return w.grad


_NO_TANH_OVERFLOW = SPECIAL[np.abs(SPECIAL) != 1e30]    # (f32's x^3 overflows there)
_LN_ROWS = np.delete(SPECIAL_ROWS, 6, 0)                # (f32's variance overflows there)
_LN_W = (np.array([1.0, -2.0, 0.5, 3.0], np.float32), np.array([0.0, 1.0, -1.0, 2.0], np.float32))
case("gelu_grad", _gelu_vjp("none"), np_gelu_grad, "other", ("gelu_grad",), [(3, 5), (3, 5)],
     domain=("wide",), grad=False, special=Special((SPECIAL, SPECIAL[::-1].copy())),
     big=(BIG, BIG))
case("gelu_tanh_grad", _gelu_vjp("tanh"), np_gelu_tanh_grad, "other", ("gelu_tanh_grad",),
     [(3, 5), (3, 5)], domain=("wide",), grad=False, big=(BIG, BIG),
     special=Special((_NO_TANH_OVERFLOW, _NO_TANH_OVERFLOW[::-1].copy())))
case("layer_norm", lambda x, w, b: _F.layer_norm(x, (5,), w, b), np_layer_norm, "other",
     ("layer_norm", "layer_norm_grad", "sum"), [(4, 5), (5,), (5,)], tol={"atol": 2e-5},
     special=Special((_LN_ROWS, *_LN_W), lambda x, w, b: _F.layer_norm(x, (4,), w, b)),
     big=((1500, 5), (5,), (5,)))
case("layer_norm_grad", _layer_norm_vjp, np_layer_norm_dx, "other", ("layer_norm_grad",),
     [(4, 6), (6,), (4, 6)], grad=False, tol={"atol": 2e-5}, big=((300, 20), (20,), (300, 20)),
     special=Special((_LN_ROWS, _LN_W[0], _LN_ROWS[::-1].copy())))
case("layer_norm_weight_grad", _layer_norm_dw, np_layer_norm_dw, "other",
     ("layer_norm", "layer_norm_grad", "sum"), [(4, 6), (6,), (4, 6)], grad=False,
     tol={"atol": 2e-5}, special=Special((_LN_ROWS, _LN_W[0], _LN_ROWS[::-1].copy())))
case("layer_norm_2dims_no_affine", lambda x: _F.layer_norm(x, [3, 4], eps=1e-3),
     lambda x: np_layer_norm(x, k=2, eps=1e-3), "other", ("layer_norm", "layer_norm_grad"),
     [(2, 3, 4)], tol={"atol": 2e-5})


def _softmax_vjp(x, g):    # x's gradient of sum(softmax(x) * g): softmax, then softmax_grad
    x = x.detach().requires_grad_()
    x.softmax(-1).backward(g)
    return x.grad


case("softmax_grad", _softmax_vjp, np_softmax_dx, "other", ("softmax", "softmax_grad"),
     [(5, 37), (5, 37)], grad=False, special=Special((SPECIAL_ROWS, SPECIAL_ROWS[::-1].copy())))
case("causal_attention", lambda q, k, v: _F.scaled_dot_product_attention(q, k, v, is_causal=True),
     np_causal_attention, "other", ("matmul", "causal_softmax", "softmax_grad"),
     [(2, 4, 3), (2, 4, 3), (2, 4, 3)], big=((1, 200, 8),) * 3,
     tol={"atol": 2e-5},     # (the special rows through the masked softmax alone: no matmul)
     special=Special((SPECIAL_ROWS,),
                     lambda a: torchic.functions.CausalSoftmax.apply(a[None], diagonal=2)[0],
                     lambda a: np_softmax(np.where(np.tri(10, 4, 2, bool), a, -np.inf))))
case("causal_attention_fewer_queries",
     lambda q, k, v: _F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7),
     lambda q, k, v: np_causal_attention(q * 0.7 * math.sqrt(3), k, v), "other",
     ("matmul", "causal_softmax"), [(2, 3, 3), (2, 5, 3), (2, 5, 2)], tol={"atol": 2e-5})


# -- dropout's masks: Threefry-2x32 with 20 rounds (ops.py's dropout), written here
# once more as plain Python integers (checked against the published known answers in
# tests/backend/test_dropout.py), independent of every backend's kernel


def _seeded_key(seed):
    return torchic.Generator().manual_seed(seed).random(2)


def _dropout_case(name, seed, p, shape, **kw):
    """F.dropout with a seeded generator: x times the mask; its derivative is the mask."""
    def mask(a):
        return np_dropout_mask(_seeded_key(seed), np.shape(a), p)
    case(name, lambda a: _F.dropout(a, p, generator=torchic.Generator().manual_seed(seed)),
         lambda a: a * mask(a), "other", ("dropout",), [shape], kernel="dropout",
         dfdx=mask, **kw)


_dropout_case("dropout", 11, 0.3, (6, 7), special=Special((SPECIAL,)),   # (NaN / inf x 0: NaN)
              big=(BIG,))
_dropout_case("dropout_3d_high_p", 5, 0.9, (2, 3, 4))


# -- the fused optimizer update (ops.py's adam_update) through torchic.optim: three steps


def _adam_steps(make, steps=3):
    def fn(p, g):
        opt = make([p])
        for _ in range(steps):
            p.grad = g
            opt.step()
        return p
    return fn


# parameters and gradients with NaN, +-inf and signed zeros, each meeting ordinary values
# (a NaN or an infinite gradient makes the parameter NaN, as in PyTorch; an infinite
# parameter stays infinite under AdamW's decay and becomes NaN through Adam's L2 term)
ADAM_SPECIAL = Special((np.array([[1.0, NAN, 2.0, -3.0, INF], [0.0, -INF, 0.5, -0.0, 4.0]],
                                 np.float32),
                        np.array([[NAN, 1.0, INF, -INF, 0.5], [0.0, 1.0, -0.0, 2.0, NAN]],
                                 np.float32)))
case("adam_update", _adam_steps(lambda ps: torchic.optim.Adam(ps, lr=0.1, weight_decay=0.3,
                                                             maximize=True)),
     lambda p, g: np_adam(p, g, weight_decay=0.3, maximize=True), "other", ("adam_update",),
     [(4, 5), (4, 5)], grad=False, special=ADAM_SPECIAL, big=(BIG, BIG))
case("adamw_update", _adam_steps(lambda ps: torchic.optim.AdamW(ps, lr=0.1, betas=(0.8, 0.9),
                                                               eps=1e-6, weight_decay=0.5)),
     lambda p, g: np_adam(p, g, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.5, decoupled=True),
     "other", ("adam_update",), [(3, 2, 4), (3, 2, 4)], grad=False, special=ADAM_SPECIAL)
unary("silu", _F.silu, lambda a: a * _sigmoid(a), ops=("sigmoid", "mul"))
unary("leaky_relu", lambda a: _F.leaky_relu(a, 0.2), lambda a: np.where(a > 0, a, 0.2 * a),
      ops=("gt", "where", "mul"), kinks=True)
unary("elu", lambda a: _F.elu(a, 0.5), lambda a: np.where(a > 0, a, 0.5 * (np.exp(a) - 1)),
      ops=("gt", "where", "exp"), kinks=True,
      special=Special((SPECIAL,), ref=lambda a: np.where(
          a > 0, a, 0.5 * (np.exp(np.minimum(a, 0)) - 1))))
unary("clamp", lambda a: a.clamp(-1.0, 1.5), lambda a: np.clip(a, -1.0, 1.5),
      ops=("lt", "gt", "where"), kinks=True)
unary("clamp_min_only", lambda a: torchic.clamp(a, min=0.5), lambda a: np.maximum(a, 0.5),
      ops=("lt", "where"), kinks=True)
unary("clip_max_only", lambda a: a.clip(max=-0.5), lambda a: np.minimum(a, -0.5),
      ops=("gt", "where"), kinks=True)
case("clamp_tensor_bounds", lambda a, lo, hi: torchic.clamp(a, lo, hi),
     lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi), "other", ("lt", "gt", "where"),
     [(3, 4), (4,), (3, 1)], domain=("real", "unit", "pos"), kinks=True)

case("tril", torchic.tril, _tril_mask_ref, "other", ("le", "where"), [(4, 5)])
case("tril_batched_diag", lambda a: a.tril(-1), lambda a: _tril_mask_ref(a, -1), "other",
     ("le", "where"), [(2, 3, 4)])
case("triu_diag", lambda a: torchic.triu(a, diagonal=1),
     lambda a: np.where(~np.tri(a.shape[-2], a.shape[-1], 0, bool), a, 0.0), "other",
     ("ge", "where"), [(5, 4)])
case("masked_fill", lambda a, m: a.masked_fill(m != 0, -1.5),
     lambda a, m: np.where(m != 0, -1.5, a), "other", ("ne", "where"), [(3, 4), (4,)], domain=("real", "mask"), grad=(0,))
case("masked_fill_causal_softmax",       # the GPT lecture's attention mask
     lambda a: a.masked_fill(torchic.tril(torchic.ones(4, 4))[:4, :4] == 0,
                             float("-inf")).softmax(dim=-1),
     lambda a: np_softmax(np.where(np.tri(4, 4, 0, bool), a, -np.inf)), "other",
     ("eq", "where", "softmax"), [(2, 4, 4)])
reduction("softmax_4d_dim1", lambda a: _F.softmax(a.reshape(3, 2, 2, 5), dim=1),
          lambda a: np_softmax(a.reshape(3, 2, 2, 5), 1), ("softmax",))
reduction("softmax_4d_dim2", lambda a: a.reshape(3, 2, 2, 5).softmax(2),
          lambda a: np_softmax(a.reshape(3, 2, 2, 5), 2), ("softmax",))
reduction("log_softmax_4d_last", lambda a: _F.log_softmax(a.reshape(3, 2, 2, 5), dim=-1),
          lambda a: np_log_softmax(a.reshape(3, 2, 2, 5), -1), ("log_softmax",))
reduction("var_correction0", lambda a: a.var(dim=(0, 2), correction=0),
          lambda a: a.var((0, 2)), ("sum",))
reduction("std_unbiased_positional", lambda a: a.std(1, False, True),
          lambda a: a.std(1, keepdims=True), ("sum", "sqrt"))
reduction("cumsum_last", lambda a: a.cumsum(-1), lambda a: np.cumsum(a, -1), ("add", "copy"),
          dtypes=ALL_DTYPES, out_dtype=_accumulated)
reduction("cumsum_dim0", lambda a: torchic.cumsum(a, dim=0), lambda a: np.cumsum(a, 0),
          ("add", "copy"))
reduction("all_dim", lambda a: a.all(1).float(), lambda a: np.all(a != 0, 1).astype(float),
          ("eq", "sum"), domain=("ties",), grad=False)
reduction("any_dims_keepdim", lambda a: torchic.any(a, (0, 2), keepdim=True),
          lambda a: np.any(a != 0, (0, 2), keepdims=True).astype(float), ("ne", "sum"),
          domain=("mask",), grad=False)
case("isclose", lambda a, b: torchic.isclose(a, b, rtol=0.1, atol=0.3),
     lambda a, b: np.isclose(a, b, rtol=0.1, atol=0.3).astype(float), "other",
     ("sub", "eq", "le"), [(4, 5), (5,)], domain=("unit", "unit"), grad=False,
     special=Special(SPECIAL_PAIRS))
case("isclose_equal_nan", lambda a, b: a.isclose(b, equal_nan=True),
     lambda a, b: np.isclose(a, b, equal_nan=True).astype(float), "other",
     ("sub", "eq", "ne"), [(4, 5), (4, 5)], domain=("ties", "ties"), grad=False,
     special=Special(SPECIAL_PAIRS))
# bool results of every dtype (PyTorch's logical ops and float classes)
case("logical_and", torchic.logical_and, lambda a, b: (a != 0) & (b != 0), "other", ("ne", "where"),
     [(4, 5), (5,)], domain=("ties", "ties"), grad=False, dtypes=ALL_DTYPES, out_dtype=_bool_out)
case("logical_or", lambda a, b: a.logical_or(b), lambda a, b: (a != 0) | (b != 0), "other",
     ("ne", "where"), [(4, 5), (4, 5)], domain=("ties", "ties"), grad=False,
     dtypes=ALL_DTYPES, out_dtype=_bool_out)
case("logical_xor", torchic.logical_xor, lambda a, b: (a != 0) ^ (b != 0), "other", ("ne",),
     [(4, 5), (4, 5)], domain=("ties", "ties"), grad=False, dtypes=ALL_DTYPES,
     out_dtype=_bool_out)
case("logical_not", torchic.logical_not, lambda a: a == 0, "other", ("ne", "eq"), [(3, 5)],
     domain=("ties",), grad=False, dtypes=ALL_DTYPES, out_dtype=_bool_out)
case("isnan", torchic.isnan, np.isnan, "other", ("ne",), [(3, 5)], grad=False,
     special=Special((SPECIAL,)), dtypes=ALL_DTYPES, out_dtype=_bool_out)
case("isinf", lambda a: a.isinf(), np.isinf, "other", ("abs", "eq"), [(3, 5)], grad=False,
     special=Special((SPECIAL,)), dtypes=ALL_DTYPES, out_dtype=_bool_out)
case("isfinite", torchic.isfinite, np.isfinite, "other", ("sub", "eq"), [(3, 5)], grad=False,
     special=Special((SPECIAL,)), dtypes=ALL_DTYPES, out_dtype=_bool_out)
case("isin", torchic.isin, lambda a, b: np.isin(a, b), "other", ("eq", "ne", "sum", "gt"),
     [(3, 4), (5,)], domain=("ties", "ties"), grad=False, dtypes=FLOAT_DTYPES + INT_DTYPES,
     out_dtype=_bool_out)
case("histc", lambda a: torchic.histc(a, bins=4, min=-2, max=2),
     lambda a: np.histogram(a, 4, (-2, 2))[0].astype(float), "other", ("scatter_add_rows",),
     [(5, 7)], grad=False)
case("histc_data_range", lambda a: a.histc(bins=5),
     lambda a: np.histogram(a, 5)[0].astype(float), "other", ("scatter_add_rows", "min", "max"),
     [(6, 4)], grad=False)

view("split_sizes", lambda a: a.split([1, 3], dim=-1)[1], lambda a: a[..., 1:])
view("split_int", lambda a: torchic.split(a, 2, 1)[-1], lambda a: a[:, 2:])
view("chunk", lambda a: a.chunk(2, dim=2)[1], lambda a: a[:, :, 2:])
view("roll", lambda a: a.roll(1, 1), lambda a: np.roll(a, 1, 1), ("copy",))
view("roll_dims_tuple", lambda a: torchic.roll(a, (-1, 3), (0, 2)),
     lambda a: np.roll(a, (-1, 3), (0, 2)), ("copy",))
view("roll_flat", lambda a: a.roll(5), lambda a: np.roll(a, 5), ("copy",))
view("sort_values", lambda a: a.sort(dim=1).values, lambda a: np.sort(a, 1),
     ("gather_rows", "scatter_add_rows"))
view("sort_descending", lambda a: torchic.sort(a, descending=True)[0],
     lambda a: -np.sort(-a, -1), ("gather_rows", "scatter_add_rows"))
view("argsort_stable_ties", lambda a: a.argsort(dim=0, stable=True).float(),
     lambda a: np.argsort(a, 0, kind="stable").astype(float), domain=("ties",), grad=False)
view("topk_values", lambda a: a.topk(2).values, lambda a: -np.sort(-a, -1)[..., :2],
     ("gather_rows", "scatter_add_rows"))
view("topk_smallest_dim0", lambda a: torchic.topk(a, 1, dim=0, largest=False)[0],
     lambda a: np.sort(a, 0)[:1], ("gather_rows", "scatter_add_rows"))
view("topk_indices", lambda a: a.topk(3, dim=-1)[1].float(),
     lambda a: np.argsort(-a, -1, kind="stable")[..., :3].astype(float), grad=False)

_CE_TARGET = np.array([[0, 4, -100], [2, 1, 3]])
case("cross_entropy_nd_ignore", lambda x: _F.cross_entropy(x, torchic.tensor(_CE_TARGET)),
     lambda x: np_cross_entropy_nd(x, _CE_TARGET), "other",
     ("cross_entropy", "cross_entropy_grad", "copy"), [(2, 5, 3)], domain=("wide",))
case("cross_entropy_ignore_smoothing",
     lambda x: _F.cross_entropy(x, torchic.tensor(_TARGET), ignore_index=4, label_smoothing=0.2),
     lambda x: np_cross_entropy_nd(x, _TARGET, 4, 0.2), "other",
     ("cross_entropy", "log_softmax"), [(6, 5)], domain=("wide",))


# ignore_index in the fused kernels: -1 (makemore's padding) per row ('none') plus its mean
# (a count of 4), and the default -100's mean
_IGNORE_M1 = np.array([0, -1, 2, -1, 4, 1])
_IGNORE_DEFAULT = np.array([-100, 3, -100, -100, 0, 4])
case("cross_entropy_ignore_index",
     lambda x: (_F.cross_entropy(x, torchic.tensor(_IGNORE_M1), ignore_index=-1, reduction="none")
                + _F.cross_entropy(x, torchic.tensor(_IGNORE_M1), ignore_index=-1)
                + _F.cross_entropy(x, torchic.tensor(_IGNORE_DEFAULT))),
     lambda x: (np_cross_entropy_rows(x, _IGNORE_M1, -1)
                + np_cross_entropy_rows(x, _IGNORE_M1, -1).sum() / 4
                + np_cross_entropy_rows(x, _IGNORE_DEFAULT).sum() / 3), "other",
     ("cross_entropy", "cross_entropy_grad"), [(6, 5)], domain=("wide",))

# shaping and indexing (issue 41): the names op_db has no entry for (the others: OpInfo walk)
view("swapaxes", lambda a: torchic.swapaxes(a, 0, 2), lambda a: a.swapaxes(0, 2))
view("swapdims", lambda a: a.swapdims(-1, 1), lambda a: a.swapaxes(-1, 1))

# convolution / pooling (issue 42): max pooling's window search (max_pool_index), its values
# (a max over the windows) and its gradient scattered back to each window's maximum
def _np_pool_arg(vals):
    """PyTorch's max pooling winner along the last axis: the last NaN where there is one,
    else the first maximum (np.argmax's first NaN is not it)."""
    nan = np.isnan(vals)
    last = vals.shape[-1] - 1 - np.argmax(nan[..., ::-1], -1)
    return np.where(nan.any(-1), last, np.argmax(vals, -1))


def _np_max_pool2d(a, k, s, p, d=(1, 1), indices=False):
    """max_pool2d of a (N, C, H, W) in float64: -inf padding, PyTorch's output size (no
    ceil_mode); with indices, each maximum's flat index in its (H, W) plane instead."""
    n, c, h, w = a.shape
    ho = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.empty((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            rows = [i * s[0] - p[0] + ki * d[0] for ki in range(k[0])]
            cols = [j * s[1] - p[1] + kj * d[1] for kj in range(k[1])]
            cells = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
            vals = np.stack([a[:, :, r, q] for r, q in cells], -1)
            best = _np_pool_arg(vals)
            out[:, :, i, j] = (np.array([r * w + q for r, q in cells])[best] if indices
                               else np.take_along_axis(vals, best[..., None], -1)[..., 0])
    return out


case("max_pool2d", lambda a: _F.max_pool2d(a, 3, stride=2, padding=1),
     lambda a: _np_max_pool2d(a, (3, 3), (2, 2), (1, 1)), "other",
     ("max_pool_index", "max", "scatter_add_rows"), [(2, 3, 7, 6)], kinks=True,
     dtypes=("f64",), special=Special((np.resize(SPECIAL, (2, 3, 7, 6)),)))
case("max_pool2d_dilated_indices",
     lambda a: _F.max_pool2d(a, (2, 3), (1, 2), dilation=(2, 1), return_indices=True)[1].float(),
     lambda a: _np_max_pool2d(a, (2, 3), (1, 2), (0, 0), (2, 1), indices=True), "other",
     ("max_pool_index",), [(1, 2, 6, 7)], grad=False, big=((2, 4, 24, 30),))


# max pooling's NaN and tie rule (PyTorch: the last NaN of a window, else its first maximum),
# on every path: the searched windows, webgpu's non-overlapping ones, the composite of the
# dtypes without a max_pool_index row, adaptive pooling's gathered windows
def _np_adaptive_max_index(a, o):
    """adaptive_max_pool2d's indices of a (N, C, H, W) in float64 (PyTorch's windows)."""
    n, c, h, w = a.shape
    out = np.empty((n, c) + o)
    for i in range(o[0]):
        for j in range(o[1]):
            rows = range(i * h // o[0], -(-(i + 1) * h // o[0]))
            cols = range(j * w // o[1], -(-(j + 1) * w // o[1]))
            cells = np.array([r * w + q for r in rows for q in cols])
            out[:, :, i, j] = cells[_np_pool_arg(a.reshape(n, c, h * w)[..., cells])]
    return out


# windows of several NaNs, of NaN with +-inf, ties of equal maxima (+-0 too) and of -inf only
_POOL_NAN = np.array([[NAN, 1.0, NAN, NAN, 3.0, 3.0],
                      [2.0, NAN, 3.0, NAN, 3.0, 3.0],
                      [INF, NAN, -INF, -INF, 0.0, -0.0],
                      [NAN, INF, -INF, -INF, -0.0, 0.0]], np.float32)
case("max_pool2d_nan_ties_indices",
     lambda a: _F.max_pool2d(a, 2, return_indices=True)[1].float(),
     lambda a: _np_max_pool2d(a, (2, 2), (2, 2), (0, 0), indices=True), "other",
     ("max_pool_index",), [(2, 3, 4, 6)], grad=False, dtypes=("f64", "f16", "i32"),
     out_dtype=lambda code: "f32",
     special=Special((np.stack([_POOL_NAN, _POOL_NAN[::-1], _POOL_NAN[:, ::-1]])[None],)))
case("adaptive_max_pool2d_nan_ties_indices",
     lambda a: _F.adaptive_max_pool2d(a, (3, 2), return_indices=True)[1].float(),
     lambda a: _np_adaptive_max_index(a, (3, 2)), "other", ("max_pool_index",),
     [(2, 3, 4, 6)], grad=False, dtypes=("f64", "f16"), out_dtype=lambda code: "f32",
     special=Special((np.stack([_POOL_NAN, _POOL_NAN[::-1], _POOL_NAN[:, ::-1]])[None],)))


def _np_conv2d(x, w, pad):
    """conv2d of x (N, C, H, W) by w (Co, C, kh, kw), stride 1, zero padding, in float64."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    co, _, kh, kw = w.shape
    ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.zeros((x.shape[0], co, ho, wo))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, i:i + ho, j:j + wo], w[:, :, i, j])
    return out


case("conv2d_input_grad", lambda x, w: _F.conv2d(x, w, padding=1),
     lambda x, w: _np_conv2d(x, w, 1), "other", ("col2im", "matmul", "copy"),
     [(2, 3, 6, 5), (4, 3, 3, 2)], dtypes=("f64",), tol={"atol": 1e-4, "rtol": 1e-4},
     big=((4, 8, 12, 12), (4, 8, 3, 2)),
     special=Special((np.resize(SPECIAL[:10], (2, 3, 6, 5)),
                      np.linspace(-1.0, 1.0, 72, dtype=np.float32).reshape(4, 3, 3, 2))),
     grad=True)


# lstm cell (issue 42): an LSTM layer-direction's recurrence (nn/lstm_recurrence.py), its
# steps the recurrent product and lstm_cell, its backward lstm_cell_grad and the product
def _np_lstm(xp, h0, c0, w_hh, reverse=False):
    """[h0, h_1 .. h_T, c_T] (reverse: [h_0 .. h_{T-1}, h0, c_0]) of xp (T, N, 4H) in
    float64 (PyTorch's gate order i, f, g, o)."""
    steps, hs = xp.shape[0], h0.shape[1]
    ys = np.zeros((steps + 2,) + h0.shape)
    h, c = h0, c0
    ys[steps if reverse else 0] = h0
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        z = xp[t] + h @ w_hh.T
        i, f, o = (_sigmoid(z[:, k * hs:(k + 1) * hs]) for k in (0, 1, 3))
        c = f * c + i * np.tanh(z[:, 2 * hs:3 * hs])
        h = o * np.tanh(c)
        ys[t if reverse else t + 1] = h
    ys[steps + 1] = c
    return ys


def _lstm(reverse):
    from torchic.nn.lstm_recurrence import LSTMRecurrence
    return lambda xp, h0, c0, w: LSTMRecurrence.apply(xp, h0, c0, w, reverse=reverse)


case("lstm_recurrence", _lstm(False), _np_lstm, "other", ("lstm_cell", "lstm_cell_grad", "matmul"),
     [(3, 2, 12), (2, 3), (2, 3), (12, 3)], dtypes=("f64", "f16"),
     big=((2, 20, 256), (20, 64), (20, 64), (256, 64)),
     # NaN / inf / huge gate pre-activations: saturated gates, and NaN carried on through
     # the cell and the recurrent product (the first step's h0, c0 and w_hh ordinary)
     special=Special((np.resize(SPECIAL, (3, 2, 12)),
                      np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3),
                      np.linspace(0.5, -0.5, 6, dtype=np.float32).reshape(2, 3),
                      np.linspace(-0.3, 0.3, 36, dtype=np.float32).reshape(12, 3))))
case("lstm_recurrence_reverse", _lstm(True), lambda *a: _np_lstm(*a, reverse=True), "other",
     ("lstm_cell", "lstm_cell_grad", "matmul"), [(4, 3, 20), (3, 5), (3, 5), (20, 5)],
     dtypes=("f64",), big=((3, 24, 128), (24, 32), (24, 32), (128, 32)))


# shapes the binary cases also run on (broadcasting)
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 1, 4), (5, 4)), ((4,), (2, 3, 4)), ((2, 1), (1, 3)),
                    ((), (3,)), ((0, 4), (1, 4))]
# the shapes every unary case also runs on
UNARY_SHAPES = [(), (0,), (1,), (7,), (2, 3, 4)]


def kernel_cases(*families):
    """{primitive: its case} for the cases that test one kernel alone (the simd suites)."""
    return {c.kernel: c for c in CASES.values() if c.kernel and c.family in families}


def untested_ops():
    """Primitives of ops.py that no case claims to test (tests/unit/test_ops_table.py)."""
    claimed = {op for c in CASES.values() for op in c.ops}
    return [op for op in _ops.ALL_OPS if op not in claimed]
