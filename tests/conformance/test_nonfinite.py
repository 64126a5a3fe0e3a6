"""NaN and inf propagate as IEEE 754 says, on every backend, for every op: a table.

Each row feeds special values (NaN, +-inf, +-0, huge, tiny, ordinary) to one op
and compares with NumPy's IEEE float64 result rounded to float32: NaN where
NumPy has NaN, the same infinity where it has one, and finite values close.
No backend may turn a NaN or an infinity into a finite number, or crash.
Binary ops take every pair of special values (a 13 x 13 grid), so inf - inf,
0 * inf, 0 / 0, pow(-1, inf), max(NaN, 1) ... are all in.

Conventions beyond IEEE 754 arithmetic, the same as NumPy's and PyTorch's:
max / min / maximum / minimum propagate NaN (IEEE 754-2019 maximum); argmax
takes the first NaN as the maximum; pow follows C99 pow (pow(x, 0) == 1 and
pow(1, y) == 1 even for NaN, pow(-1, +-inf) == 1); softmax of a row holding
+inf, or of a row of -inf only, is NaN (max-subtraction gives inf - inf).
"""

import numpy as np
import pytest

import torchic
from fuzz_support import close

NAN, INF = float("nan"), float("inf")
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, 1e-30],
                   dtype=np.float32)
A = SPECIAL[:, None]          # every pair: (13, 1) against (13,)
B = SPECIAL[None, :]

ROWS = np.array([
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
TARGETS = np.array([0, 1, 0, 2, 3, 2, 2, 1, 3, 1], dtype=np.int32)


def f64(a):
    return np.asarray(a, np.float64)


def softmax64(x):
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def log_softmax64(x):
    with np.errstate(all="ignore"):
        s = x - x.max(-1, keepdims=True)
        return s - np.log(np.exp(s).sum(-1, keepdims=True))


def lse64(x):
    with np.errstate(all="ignore"):
        m = x.max(-1, keepdims=True)
        return (np.log(np.exp(x - m).sum(-1, keepdims=True)) + m)[..., 0]


def matmul_by_definition(a, b):
    """sum_k a[i, k] * b[k, j] in float64, without BLAS (whose zero handling may differ)."""
    with np.errstate(all="ignore"):
        return (f64(a)[:, :, None] * f64(b)[None, :, :]).sum(1)


T = torchic.tensor

# name: (torchic function of the inputs, float64 reference, inputs)
TABLE = {
    # unary
    "neg": (lambda x: -x, np.negative, [SPECIAL]),
    "exp": (torchic.exp, np.exp, [SPECIAL]),
    "log": (torchic.log, np.log, [SPECIAL]),
    "relu": (torchic.relu, lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)), [SPECIAL]),
    "tanh": (torchic.tanh, np.tanh, [SPECIAL]),
    "sigmoid": (torchic.sigmoid, lambda x: 1 / (1 + np.exp(-x)), [SPECIAL]),
    "sqrt": (torchic.sqrt, np.sqrt, [SPECIAL]),
    "abs": (torchic.abs, np.abs, [SPECIAL]),
    # binary, every pair
    "add": (lambda a, b: a + b, np.add, [A, B]),
    "sub": (lambda a, b: a - b, np.subtract, [A, B]),
    "mul": (lambda a, b: a * b, np.multiply, [A, B]),
    "div": (lambda a, b: a / b, np.divide, [A, B]),
    "pow": (lambda a, b: a ** b, np.power, [A, B]),
    "maximum": (torchic.maximum, np.maximum, [A, B]),
    "minimum": (torchic.minimum, np.minimum, [A, B]),
    "eq": (lambda a, b: a == b, lambda a, b: (a == b) * 1.0, [A, B]),
    "ne": (lambda a, b: a != b, lambda a, b: (a != b) * 1.0, [A, B]),
    "lt": (lambda a, b: a < b, lambda a, b: (a < b) * 1.0, [A, B]),
    "le": (lambda a, b: a <= b, lambda a, b: (a <= b) * 1.0, [A, B]),
    "gt": (lambda a, b: a > b, lambda a, b: (a > b) * 1.0, [A, B]),
    "ge": (lambda a, b: a >= b, lambda a, b: (a >= b) * 1.0, [A, B]),
    "where": (torchic.where, lambda c, a, b: np.where(c != 0, a, b),
              [SPECIAL, SPECIAL[::-1].copy(), np.roll(SPECIAL, 3)]),
    # reductions and row ops
    "sum": (lambda x: x.sum(-1), lambda x: x.sum(-1), [ROWS]),
    "sum_all": (lambda x: x.T.sum(), lambda x: x.sum(), [ROWS[1:4]]),
    "max": (lambda x: x.amax(-1), lambda x: x.max(-1), [ROWS]),
    "min": (lambda x: x.amin(-1), lambda x: x.min(-1), [ROWS]),
    "mean": (lambda x: x.mean(-1), lambda x: x.mean(-1), [ROWS]),
    "argmax": (lambda x: x.argmax(-1), lambda x: np.argmax(x, -1), [ROWS]),
    "softmax": (lambda x: x.softmax(-1), softmax64, [ROWS]),
    "log_softmax": (lambda x: x.log_softmax(-1), log_softmax64, [ROWS]),
    "cross_entropy": (lambda x: torchic.cross_entropy(x, T(TARGETS), reduction="none"),
                      lambda x: lse64(x) - x[np.arange(len(x)), TARGETS], [ROWS]),
    "matmul": (lambda a, b: a @ b, matmul_by_definition,
               [ROWS, np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 0.5], [0.5, 0.0, 1.0],
                                [1.0, 1.0, 0.0]], np.float32)]),
    "matmul_transposed": (lambda a, b: a.T @ b.T, lambda a, b: matmul_by_definition(a.T, b.T),
                          [ROWS[:4], ROWS[4:8]]),
    "gather_rows": (lambda x: x[T([9, 0, 3, 3, 1])], lambda x: x[[9, 0, 3, 3, 1]], [ROWS]),
    "copy": (lambda x: x.T.contiguous(), lambda x: x.T, [ROWS]),
    "fill": (lambda x: torchic.full((2, 3), NAN) + torchic.full((2, 3), -INF),
             lambda x: np.full((2, 3), NAN), [SPECIAL]),
}

# rows whose inputs are 2-D specials as a matrix (row ops) also run on a transposed layout
GRAD_TABLE = {
    # d/dx sum(f(x)) as torchic computes it (PyTorch's formulas), in float64
    "exp": (torchic.exp, np.exp),
    "log": (torchic.log, lambda x: 1 / x),
    "sqrt": (torchic.sqrt, lambda x: 1 / (2 * np.sqrt(x))),
    "tanh": (torchic.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "sigmoid": (torchic.sigmoid, lambda x: (1 / (1 + np.exp(-x))) * (1 - 1 / (1 + np.exp(-x)))),
    "square": (lambda x: x * x, lambda x: 2 * x),
    "reciprocal": (lambda x: 1 / x, lambda x: -1 / (x * x)),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_nonfinite_forward(backend, name):
    tc_fn, ref_fn, inputs = TABLE[name]
    tensors = [T(x) for x in inputs]
    if name == "where":
        tensors[0] = T(inputs[0])     # the condition: NaN counts as true (NaN != 0)
    got = tc_fn(*tensors).numpy()
    with np.errstate(all="ignore"):
        ref = np.asarray(ref_fn(*[f64(x) for x in inputs]))
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref)
        return
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32).astype(np.float64)   # float32 rounding (overflow: inf)
    close(got, ref32, atol=1e-6, rtol=1e-5, what=f"{name} on special values")


def test_nonfinite_scatter_add(backend):
    """The embedding backward adds gradients of repeated rows: inf + -inf must give NaN."""
    table = torchic.zeros(3, 2, requires_grad=True)
    idx = T([0, 0, 1, 2, 2])
    g = np.array([[INF, 1.0], [-INF, 2.0], [NAN, 3.0], [INF, 1e30], [INF, 1e30]], np.float32)
    table[idx].backward(T(g))
    expect = np.zeros((3, 2))
    with np.errstate(all="ignore"):
        np.add.at(expect, [0, 0, 1, 2, 2], f64(g))
        expect = expect.astype(np.float32).astype(np.float64)
    close(table.grad.numpy(), expect, 1e-6, 1e-5, "scatter_add_rows")


def test_nonfinite_cross_entropy_grad(backend):
    x = T(ROWS, requires_grad=True)
    torchic.cross_entropy(x, T(TARGETS), reduction="sum").backward()
    onehot = np.eye(4)[TARGETS]
    with np.errstate(all="ignore"):
        ref = (softmax64(f64(ROWS)) - onehot).astype(np.float32).astype(np.float64)
    close(x.grad.numpy(), ref, 1e-6, 1e-5, "cross_entropy_grad")


@pytest.mark.parametrize("name", sorted(GRAD_TABLE))
def test_nonfinite_backward(backend, name):
    tc_fn, dfdx = GRAD_TABLE[name]
    x = T(SPECIAL, requires_grad=True)
    tc_fn(x).sum().backward()
    with np.errstate(all="ignore"):
        ref = dfdx(f64(SPECIAL)).astype(np.float32).astype(np.float64)
    close(x.grad.numpy(), ref, 1e-6, 1e-5, f"d/dx {name}")


def test_nonfinite_cast_to_int_does_not_crash(backend):
    """f32 -> i32 of NaN / inf is undefined in IEEE 754 (an invalid operation): any int32
    is accepted, but the op must run, and finite values must still truncate."""
    got = T(SPECIAL).long().numpy()
    assert got.dtype == np.int32 and got.shape == SPECIAL.shape
    finite = np.isfinite(SPECIAL) & (np.abs(SPECIAL) < 2 ** 31)
    np.testing.assert_array_equal(got[finite], np.trunc(SPECIAL[finite]).astype(np.int32))


def test_nonfinite_table_covers_every_float_op():
    from torchic import ops
    covered = set(TABLE) | {"scatter_add_rows", "cross_entropy_grad"}
    floats = [op for op in ops.ALL_OPS if op not in ("sum", "max", "min")] + ["sum", "max", "min"]
    missing = [op for op in floats if op not in covered]
    assert not missing, f"ops without a NaN / inf row: {missing}"
