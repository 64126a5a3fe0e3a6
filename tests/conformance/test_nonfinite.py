"""NaN and inf propagate as IEEE 754 says, on every backend, for every op: a table.

Each case of torchic.testing.CASES with `special` inputs feeds special values
(NaN, +-inf, +-0, huge, tiny, ordinary) to one op and compares with NumPy's
IEEE float64 result rounded to float32: NaN where NumPy has NaN, the same
infinity where it has one, and finite values close.
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
from torchic.testing import (CASES, INF, NAN, SPECIAL, SPECIAL_ROWS, SPECIAL_TARGETS,
                             np_softmax)

T = torchic.tensor

# every case with special inputs (torchic.testing.CASES[name].special), and every
# case with a float64 derivative (.dfdx) for the backward on SPECIAL
TABLE = {name: c for name, c in CASES.items() if c.special}
GRAD_TABLE = {name: c for name, c in CASES.items() if c.dfdx}


def f64(a):
    return np.asarray(a, np.float64)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_nonfinite_forward(backend, name):
    case = TABLE[name]
    inputs = case.special.inputs
    tc_fn, ref_fn = case.special.fn or case.fn, case.special.ref or case.ref
    got = tc_fn(*[T(x) for x in inputs]).numpy()    # (where: a NaN condition counts as true)
    with np.errstate(all="ignore"):
        ref = np.asarray(ref_fn(*[f64(x) for x in inputs]))
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref)
        return
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32).astype(np.float64)   # float32 rounding (overflow: inf)
    close(got, ref32, atol=1e-6, rtol=1e-5, what=f"{name} on special values", tiny=True)


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
    x = T(SPECIAL_ROWS, requires_grad=True)
    torchic.cross_entropy(x, T(SPECIAL_TARGETS), reduction="sum").backward()
    onehot = np.eye(4)[SPECIAL_TARGETS]
    with np.errstate(all="ignore"):
        ref = (np_softmax(f64(SPECIAL_ROWS)) - onehot).astype(np.float32).astype(np.float64)
    close(x.grad.numpy(), ref, 1e-6, 1e-5, "cross_entropy_grad")


@pytest.mark.parametrize("name", sorted(GRAD_TABLE))
def test_nonfinite_backward(backend, name):
    case = GRAD_TABLE[name]
    x = T(SPECIAL, requires_grad=True)
    case.fn(x).sum().backward()
    with np.errstate(all="ignore"):
        ref = case.dfdx(f64(SPECIAL)).astype(np.float32).astype(np.float64)
    close(x.grad.numpy(), ref, 1e-6, 1e-5, f"d/dx {name}")


def test_nonfinite_cast_to_int_does_not_crash(backend):
    """f32 -> i32 of NaN / inf is undefined in IEEE 754 (an invalid operation): any int32
    is accepted, but the op must run, and finite values must still truncate."""
    got = T(SPECIAL).int().numpy()
    assert got.dtype == np.int32 and got.shape == SPECIAL.shape
    finite = np.isfinite(SPECIAL) & (np.abs(SPECIAL) < 2 ** 31)
    np.testing.assert_array_equal(got[finite], np.trunc(SPECIAL[finite]).astype(np.int32))


def _integer_only_ops():
    """The primitives with no floating signature (bitwise, shifts): exact integer ops,
    checked against NumPy by the int rows of testing/cases.py, outside float fuzzing."""
    from torchic import ops
    return {name for name, sigs in ops.SIGNATURES.items()
            if not any(c in ("f32", "f64") for ins, out in sigs for c in (*ins, out))}


def test_nonfinite_table_covers_every_float_op():
    from torchic import ops
    covered = {op for c in TABLE.values() for op in c.ops} | {"scatter_add_rows",
                                                              "cross_entropy_grad"}
    covered |= _integer_only_ops()
    missing = [op for op in ops.ALL_OPS if op not in covered]
    assert not missing, f"ops without a NaN / inf row: {missing}"
