"""Each kernel of the simd backend against a NumPy float64 reference.

The elementwise kernels, their references and input domains are the rows of
torchic.testing.CASES that test one kernel (`kernel_cases`)."""

import numpy as np
import pytest

from torchic import ops
from torchic.testing import kernel_cases

LAYOUTS = ("contiguous", "transposed", "strided")
RNG = np.random.default_rng(7)


def rand(*shape, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def f64(x):
    return np.asarray(x, np.float64)


UNARY = kernel_cases("unary")
BINARY = kernel_cases("binary")
COMPARE = kernel_cases("compare")


def draw(case, k, *shape):
    """float32 values of input k from the case's domain."""
    return case.draw(RNG, [shape] * (k + 1))[k].astype(np.float32)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(h, op, layout):
    x = draw(UNARY[op], 0, 37, 45)
    got = h.run(op, h.empty(x.shape), h.put(x, layout))
    np.testing.assert_allclose(got, UNARY[op].ref(f64(x)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(h, op, layout):
    a, b = draw(BINARY[op], 0, 29, 67), draw(BINARY[op], 1, 29, 67)
    got = h.run(op, h.empty(a.shape), h.put(a, layout), h.put(b, "contiguous"))
    np.testing.assert_allclose(got, BINARY[op].ref(f64(a), f64(b)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["add", "mul", "maximum", "div"])
def test_binary_broadcast_fast_paths(h, op):
    a = rand(33, 70)
    row, col, one = rand(70, low=0.5), rand(33, low=0.5), rand(1, low=0.5)
    ref = BINARY[op].ref
    # (70,) row broadcast over 33 rows; (33, 1) column; scalar; and scalar on the left
    cases = [
        (h.put(a), h.view(h.put(row), 0, (33, 70), (0, 1)), ref(f64(a), f64(row)[None, :])),
        (h.put(a), h.view(h.put(col), 0, (33, 70), (1, 0)), ref(f64(a), f64(col)[:, None])),
        (h.put(a), h.view(h.put(one), 0, (33, 70), (0, 0)), ref(f64(a), f64(one)[0])),
        (h.view(h.put(one), 0, (33, 70), (0, 0)), h.put(a), ref(f64(one)[0], f64(a))),
    ]
    for x, y, want in cases:
        np.testing.assert_allclose(h.run(op, h.empty((33, 70)), x, y), want, rtol=2e-6)


def test_nan_propagation(h):
    a = np.float32([np.nan, 1, 2, np.nan, -np.inf, 0, 5, 3, 1, 1])
    b = np.float32([1, np.nan, 2, np.nan, 1, -0.0, 4, np.inf, np.nan, 0])
    for op in ("maximum", "minimum"):
        got = h.run(op, h.empty(a.shape), h.put(a), h.put(b))
        np.testing.assert_array_equal(got, BINARY[op].ref(f64(a), f64(b)).astype(np.float32))
    got = h.run("relu", h.empty(a.shape), h.put(a))
    np.testing.assert_array_equal(got, np.maximum(a, 0))


@pytest.mark.parametrize("op", sorted(COMPARE))
def test_compare_f32_and_i32(h, op):
    a = RNG.integers(-3, 3, (17, 19)).astype(np.float32)
    b = RNG.integers(-3, 3, (17, 19)).astype(np.float32)
    a[0, :3] = np.nan
    want = COMPARE[op].ref(a, b).astype(np.float32)
    np.testing.assert_array_equal(h.run(op, h.empty(a.shape), h.put(a), h.put(b, "transposed")), want)
    ai, bi = a[1:].astype(np.int32) + (1 << 24), b[1:].astype(np.int32) + (1 << 24)
    want = COMPARE[op].ref(ai, bi).astype(np.float32)
    np.testing.assert_array_equal(h.run(op, h.empty(ai.shape), h.put(ai), h.put(bi)), want)


def test_where(h):
    c = (RNG.uniform(size=(23, 31)) > 0.5).astype(np.float32)
    c[0, 0] = np.nan  # nan != 0 picks a
    a, b = rand(23, 31), rand(23, 31)
    got = h.run("where", h.empty(a.shape), h.put(c, "transposed"), h.put(a, "strided"), h.put(b))
    np.testing.assert_array_equal(got, np.where(c != 0, a, b))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", ops.REDUCE)
@pytest.mark.parametrize("naxes", [0, 1, 2, 3])
def test_reduce(h, op, naxes, layout):
    x = rand(5, 12, 33)
    axes = tuple(range(3 - naxes, 3))
    ref = getattr(np, op)(f64(x), axis=axes)      # np.sum / np.max / np.min
    got = h.run(op, h.empty(ref.shape), h.put(x, layout), naxes=naxes)
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-5)


def test_reduce_empty_and_columns(h):
    e = h.put(np.zeros((4, 0), np.float32))
    for op, want in (("sum", 0.0), ("max", -np.inf), ("min", np.inf)):
        np.testing.assert_array_equal(h.run(op, h.empty((4,)), e, naxes=1), np.full(4, want, np.float32))
    # bias-gradient shape: reduce over the batch = a transposed view's trailing dim
    x = rand(300, 77)
    t = h.put(x)
    tv = h.view(t, 0, (77, 300), (1, 77))
    np.testing.assert_allclose(h.run("sum", h.empty((77,)), tv, naxes=1), f64(x).sum(0), rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(h.run("max", h.empty((77,)), tv, naxes=1), x.max(0))
    x[5, 3] = np.nan
    np.testing.assert_array_equal(h.run("min", h.empty((77,)), h.view(h.put(x), 0, (77, 300), (1, 77)), naxes=1), x.min(0))


@pytest.mark.parametrize("rows, cols", [(300, 77), (257, 4100), (600, 8200), (5, 16)])
def test_column_reductions_of_contiguous_rows(h, rows, cols):
    # (rows, cols) reduced over its rows (a bias gradient): panels of up to 4096 columns
    # (several, with a partial vector at the end), sums flushed every 256 rows, column
    # parts over the pool's two threads from 8192 columns; a NaN in max / min
    x = rand(rows, cols)
    x[rows // 2, cols - 1] = np.nan
    tv = h.view(h.put(x), 0, (cols, rows), (1, cols))
    for op in ("max", "min"):
        np.testing.assert_array_equal(h.run(op, h.empty((cols,)), tv, naxes=1),
                                      getattr(x, op)(0))
    x[rows // 2, cols - 1] = 0.0
    got = h.run("sum", h.empty((cols,)), h.view(h.put(x), 0, (cols, rows), (1, cols)), naxes=1)
    np.testing.assert_allclose(got, f64(x).sum(0), rtol=1e-6, atol=1e-4)


def test_sum_10m_uniform(h):
    x = np.random.default_rng(3).uniform(0, 1, 10_000_000).astype(np.float32)
    got = h.run("sum", h.empty(()), h.put(x), naxes=1)
    want = f64(x).sum()
    assert abs(float(got) - want) / want <= 1e-6


def test_argmax(h):
    x = rand(40, 53)
    x[3, 10] = x[3, 20] = 100.0   # ties: first index
    x[5, 7] = np.nan               # NaN wins, like NumPy
    x[6, :] = -np.inf
    for layout in LAYOUTS:
        got = h.run("argmax", h.empty((40,), "i32"), h.put(x, layout))
        np.testing.assert_array_equal(got, np.argmax(x, axis=-1))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (64, 1000), (3, 4097)])
def test_softmax_family(h, shape, layout):
    x = rand(*shape, low=-20, high=20)
    x64 = f64(x)
    m = x64.max(1, keepdims=True)
    lse = m + np.log(np.exp(x64 - m).sum(1, keepdims=True))
    np.testing.assert_allclose(h.run("softmax", h.empty(shape), h.put(x, layout)), np.exp(x64 - lse),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h.run("log_softmax", h.empty(shape), h.put(x, layout)), x64 - lse,
                               rtol=1e-5, atol=1e-5)
    t = RNG.integers(0, shape[1], shape[0]).astype(np.int32)
    g = rand(shape[0])
    rows = np.arange(shape[0])
    np.testing.assert_allclose(h.run("cross_entropy", h.empty(shape[:1]), h.put(x, layout), h.put(t)),
                               lse[:, 0] - x64[rows, t], rtol=1e-5, atol=1e-5)
    want = np.exp(x64 - lse)
    want[rows, t] -= 1
    want *= f64(g)[:, None]
    got = h.run("cross_entropy_grad", h.empty(shape), h.put(x, layout), h.put(t), h.put(g))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_softmax_extremes(h):
    x = np.float32([[1e30, -1e30, 0, 88], [-np.inf, 0, -np.inf, 1], [np.nan, 1, 2, 3]])
    got = h.run("softmax", h.empty(x.shape), h.put(x))
    np.testing.assert_allclose(got[:2], [[1, 0, 0, 0], [0, 1 / (1 + np.e), 0, np.e / (1 + np.e)]], rtol=1e-6)
    assert np.isnan(got[2]).all()


MATMUL_SIZES = [(1, 1, 1, 1), (1, 3, 5, 7), (2, 13, 37, 29), (1, 70, 33, 300), (3, 64, 64, 64),
                (1, 129, 257, 65), (1, 200, 17, 50), (2, 1, 300, 1), (1, 5, 0, 4), (1, 0, 3, 2)]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("b,m,k,n", MATMUL_SIZES)
def test_matmul(h, b, m, k, n, ta, tb):
    a, w = rand(b, m, k), rand(b, k, n)
    va = h.put(a, "transposed") if ta else h.put(a)
    vb = h.put(w, "transposed") if tb else h.put(w)
    got = h.run("matmul", h.empty((b, m, n)), va, vb)
    np.testing.assert_allclose(got, f64(a) @ f64(w), rtol=1e-5, atol=1e-4 * max(k, 1) ** 0.5)


def test_matmul_big_and_broadcast_batch(h):
    a, w = rand(1, 300, 520), rand(1, 520, 270)
    got = h.run("matmul", h.empty((1, 300, 270)), h.put(a), h.put(w))
    np.testing.assert_allclose(got, f64(a) @ f64(w), rtol=1e-4, atol=1e-3)
    # a weight shared by every batch item: batch stride 0
    x = rand(4, 9, 11)
    vw = h.put(w[0, :11, :13])
    shared = h.view(vw, 0, (4, 11, 13), (0,) + vw.strides)
    got = h.run("matmul", h.empty((4, 9, 13)), h.put(x, "strided"), shared)
    np.testing.assert_allclose(got, f64(x) @ f64(w[0, :11, :13]), rtol=1e-5, atol=1e-4)


def test_gather_scatter(h):
    table = rand(50, 24)
    idx = RNG.integers(0, 50, 97).astype(np.int32)
    for layout in LAYOUTS:
        got = h.run("gather_rows", h.empty((97, 24)), h.put(table, layout), h.put(idx))
        np.testing.assert_array_equal(got, table[idx])
    src = rand(97, 24)
    out = h.empty((50, 24))
    h.rt.run("fill", out, (), {"value": 0.5})
    got = h.run("scatter_add_rows", out, h.put(src, "transposed"), h.put(idx))
    want = np.full((50, 24), 0.5)
    np.add.at(want, idx, f64(src))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_copy_casts_and_fill_strided(h):
    x = np.float32([[1.7, -1.7, 2.5], [-0.2, 1e9, -3.99]])
    got = h.run("copy", h.empty(x.shape, "i32"), h.put(x, "transposed"))
    np.testing.assert_array_equal(got, x.astype(np.int32))
    i = np.int32([[1, -2, 3], [1 << 24, 5, -7]])
    np.testing.assert_array_equal(h.run("copy", h.empty(i.shape), h.put(i)), i.astype(np.float32))
    # fill and copy into a strided out: every other column of a (4, 10) buffer
    base = h.put(np.zeros((4, 10), np.float32))
    cols = h.view(base, 1, (4, 5), (10, 2))
    h.rt.run("fill", cols, (), {"value": 2.0})
    want = np.zeros((4, 10), np.float32)
    want[:, 1::2] = 2.0
    np.testing.assert_array_equal(h.rt.read(base), want)
    src = rand(5, 4)
    h.rt.run("copy", cols, (h.view(h.put(src), 0, (4, 5), (1, 4)),), {})
    want[:, 1::2] = src.T
    np.testing.assert_array_equal(h.rt.read(base), want)
    ib = h.empty((3, 3), "i32")
    np.testing.assert_array_equal(h.run("fill", ib, value=-7.9), np.full((3, 3), -7, np.int32))


def test_write_is_ordered_and_strided(h):
    base = h.put(np.zeros((6, 8), np.float32))
    out = h.empty((6, 8))
    for k in range(20):   # each write lands before the op that reads it
        h.rt.write(h.view(base, 0, (6, 4), (8, 2)), np.full((6, 4), k, np.float32))
        h.rt.run("add", out, (base, base), {})
    got = h.rt.read(out)
    assert (got[:, ::2] == 38).all() and (got[:, 1::2] == 0).all()


def test_gather_rows_of_int32_is_bit_exact(h):
    table = np.int32([[1, 2, 3], [4, 5, 6], [7, 8, 2**30 + 1], [-1, 2**31 - 1, -2**31]])
    idx = np.int32([3, 2, 0, 2])
    for layout in LAYOUTS:
        got = h.run("gather_rows", h.empty((4, 3), "i32"), h.put(table, layout), h.put(idx))
        np.testing.assert_array_equal(got, table[idx])
