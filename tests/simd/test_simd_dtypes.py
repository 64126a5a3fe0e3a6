"""Every dtype code of docs/DTYPES.md on the simd kernels, against NumPy of the same dtype:
copy between any two codes (PyTorch's casts), fill, float64 math within a few ULP of a
float64 (or exact) reference, int64 arithmetic exact and wrapping, compares of every code
into bool, where, reductions, argmax, gather / scatter with int64 indices, the row ops and
matmul in float64; records naming a dtype the op does not take are refused, naming the op."""

import math

import numpy as np
import pytest

from torchic.dispatcher import DTYPES, KernelError

CODES = tuple(DTYPES)
RNG = np.random.default_rng(40)


def _ulps(got, want):
    """|got - want| in units of float64's spacing at want (NaN where both are NaN: 0)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    d = np.abs(got - want) / np.spacing(np.maximum(np.abs(want), 1e-300))
    return np.where(both_nan | (got == want), 0.0, d)


def _values(code, shape):
    x = RNG.standard_normal(shape) * 40
    if code == "bf16":      # the bits of bfloat16 values (dispatcher.DTYPES: uint16 bits)
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(DTYPES[code])


def _as_f64(code, x):
    if code == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def _cast(src, dst, x):
    """PyTorch's cast of NumPy array x (code src) to code dst."""
    if dst == "bf16":
        f = _as_f64(src, x).astype(np.float32) if src != "b8" else x.astype(np.float32)
        b = f.view(np.uint32).astype(np.uint64)
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    if src == "bf16":
        x = _as_f64(src, x).astype(np.float32)
    if DTYPES[src].kind == "f" or src == "bf16":
        if dst == "b8":
            return x != 0
        if dst in ("u8", "i8", "i16"):      # through int64, wrapping
            return np.trunc(x).astype(np.int64).astype(DTYPES[dst])
    return x.astype(DTYPES[dst])


@pytest.mark.parametrize("src", CODES)
@pytest.mark.parametrize("dst", CODES)
def test_copy_casts_between_every_pair_of_codes(h, src, dst):
    x = _values(src, (5, 7))
    v = h.put(x, dtype=src)
    out = h.run("copy", h.empty((5, 7), dst), v)
    assert out.dtype == DTYPES[dst]
    np.testing.assert_array_equal(out, _cast(src, dst, x))
    # a strided out (every other column of a wider block), the input transposed
    t = h.put(np.ascontiguousarray(x.T), dtype=src)
    tv = h.view(t, 0, (5, 7), (1, 5))
    wide = h.empty((5, 14), dst)
    h.run("fill", wide, value=0.0)
    h.run("copy", h.view(wide, 0, (5, 7), (14, 2)), tv)
    np.testing.assert_array_equal(h.rt.read(wide)[:, ::2], _cast(src, dst, x))


@pytest.mark.parametrize("code", CODES)
def test_fill_writes_every_code(h, code):
    out = h.run("fill", h.empty((3, 5), code), value=-2.75)
    want = _cast("f64", code, np.full((3, 5), -2.75))
    np.testing.assert_array_equal(out, want)


UNARY64 = {
    "neg": np.negative, "exp": np.exp, "log": np.log, "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "sqrt": np.sqrt,
    "abs": np.abs, "sin": np.sin, "cos": np.cos,
    "gelu": np.vectorize(lambda x: x * 0.5 * math.erfc(-x / math.sqrt(2))),
    # (x / (1 + exp(-2u)): 0.5 x (1 + tanh(u)) without the cancellation of 1 + tanh(u))
    "gelu_tanh": lambda x: x / (1 + np.exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x))),
}


@pytest.mark.parametrize("op", sorted(UNARY64))
def test_float64_unary_within_a_few_ulp(h, op):
    x = RNG.standard_normal((33, 17)) * 3
    if op in ("log", "sqrt"):
        x = np.abs(x) + 1e-3
    out = h.run(op, h.empty(x.shape, "f64"), h.put(x, dtype="f64"))
    assert out.dtype == np.float64
    assert _ulps(out, UNARY64[op](x)).max() <= 4, op


BINARY64 = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
            "pow": np.power, "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("op", sorted(BINARY64))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_float64_binary(h, op, layout):
    a = RNG.standard_normal((9, 13))
    b = RNG.standard_normal((9, 13))
    if op == "pow":
        a = np.abs(a) + 0.1
    a[0, 0] = np.nan
    out = h.run(op, h.empty(a.shape, "f64"), h.put(a, layout, "f64"), h.put(b, layout, "f64"))
    if op == "pow":     # (the C library's pow against NumPy's: within 1 ULP)
        assert _ulps(out, np.power(a, b)).max() <= 1
    else:
        np.testing.assert_array_equal(out, BINARY64[op](a, b))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
@pytest.mark.parametrize("code", ["i32", "i64"])
def test_integer_arithmetic_wraps(h, op, code):
    info = np.iinfo(DTYPES[code])
    a = RNG.integers(info.min, info.max, (6, 11), dtype=DTYPES[code])
    b = RNG.integers(info.min, info.max, (6, 11), dtype=DTYPES[code])
    out = h.run(op, h.empty(a.shape, code), h.put(a, dtype=code), h.put(b, dtype=code))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, BINARY64[op](a, b))


@pytest.mark.parametrize("code", [c for c in CODES if c != "bf16"])
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compares_of_every_code_give_bool(h, code, op):
    a = _values(code, (4, 9))
    b = a.copy()
    b.flat[::2] = _values(code, (18,))
    out = h.run(op, h.empty(a.shape, "b8"), h.put(a, dtype=code), h.put(b, dtype=code))
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, getattr(np, {"eq": "equal", "ne": "not_equal",
                                                    "lt": "less", "le": "less_equal",
                                                    "gt": "greater",
                                                    "ge": "greater_equal"}[op])(a, b))


@pytest.mark.parametrize("code", CODES)
def test_where_of_every_value_code_with_a_bool_condition(h, code):
    cond = RNG.random((5, 6)) < 0.5
    a, b = _values(code, (5, 6)), _values(code, (5, 6))
    out = h.run("where", h.empty(a.shape, code), h.put(cond, dtype="b8"), h.put(a, dtype=code),
                h.put(b, dtype=code))
    np.testing.assert_array_equal(out, np.where(cond, a, b))


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("code", ["f64", "i64", "i32"])
def test_reductions(h, op, code):
    if code == "f64":
        a = RNG.standard_normal((7, 300))
    else:
        info = np.iinfo(DTYPES[code])
        a = RNG.integers(info.min, info.max, (7, 300), dtype=DTYPES[code])
    out = h.run(op, h.empty((7,), code), h.put(a, "transposed", code), naxes=1)
    with np.errstate(over="ignore"):
        want = a.sum(axis=1, dtype=a.dtype) if op == "sum" else getattr(a, op)(axis=1)
    if code == "f64" and op == "sum":
        np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-12)
    else:
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("code", ["f32", "f64", "i32", "i64"])
@pytest.mark.parametrize("out_code", ["i32", "i64"])
def test_argmax_into_int32_or_int64(h, code, out_code):
    a = _values(code, (6, 10))
    a[2, 3] = a[2, 7] = a[2].max() + 1 if DTYPES[code].kind == "i" else 1e9   # first wins
    out = h.run("argmax", h.empty((6,), out_code), h.put(a, dtype=code))
    assert out.dtype == DTYPES[out_code]
    np.testing.assert_array_equal(out, a.argmax(axis=1))


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("icode", ["i32", "i64"])
def test_gather_rows_of_every_code_with_int64_indices(h, code, icode):
    table = _values(code, (9, 5))
    idx = np.array([8, 0, 3, 3, 1], DTYPES[icode])
    out = h.run("gather_rows", h.empty((5, 5), code), h.put(table, "transposed", code),
                h.put(idx, dtype=icode))
    np.testing.assert_array_equal(out, table[idx])


def test_scatter_add_rows_float64(h):
    src = RNG.standard_normal((6, 4))
    idx = np.array([1, 0, 1, 4, 4, 4], np.int64)
    out = h.empty((5, 4), "f64")
    h.run("fill", out, value=0.0)
    got = h.run("scatter_add_rows", out, h.put(src, dtype="f64"), h.put(idx, dtype="i64"))
    want = np.zeros((5, 4))
    np.add.at(want, idx, src)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_row_ops_in_float64(h):
    x = RNG.standard_normal((7, 11)) * 3
    xv = h.put(x, "transposed", "f64")
    close = dict(rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(h.run("softmax", h.empty(x.shape, "f64"), xv), _softmax(x), **close)
    ls = x - x.max(1, keepdims=True) - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True))
    np.testing.assert_allclose(h.run("log_softmax", h.empty(x.shape, "f64"), xv), ls, **close)
    t = np.array([1, 0, 10, 3, -100, 5, 2], np.int64)
    tv = h.put(t, dtype="i64")
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    want = np.where(t == -100, 0.0, lse - x[np.arange(7), np.where(t == -100, 0, t)])
    got = h.run("cross_entropy", h.empty((7,), "f64"), xv, tv, ignore_index=-100)
    np.testing.assert_allclose(got, want, **close)
    g = RNG.standard_normal(7)
    onehot = np.eye(11)[np.where(t == -100, 0, t)]
    gw = np.where((t == -100)[:, None], 0.0, (_softmax(x) - onehot) * g[:, None])
    got = h.run("cross_entropy_grad", h.empty(x.shape, "f64"), xv, tv, h.put(g, dtype="f64"),
                ignore_index=-100)
    np.testing.assert_allclose(got, gw, **close)
    y = _softmax(x)
    gg = RNG.standard_normal(x.shape)
    got = h.run("softmax_grad", h.empty(x.shape, "f64"), h.put(y, dtype="f64"),
                h.put(gg, dtype="f64"))
    np.testing.assert_allclose(got, y * (gg - (gg * y).sum(1, keepdims=True)), **close)
    a = RNG.standard_normal((2, 4, 6))
    got = h.run("causal_softmax", h.empty(a.shape, "f64"), h.put(a, dtype="f64"), diagonal=0)
    mask = np.tril(np.ones((4, 6), bool))
    want = _softmax(np.where(mask, a, -np.inf))
    np.testing.assert_allclose(got, want, **close)


def test_layer_norm_in_float64(h):
    x = RNG.standard_normal((5, 9)) * 2 + 1
    w, b = RNG.standard_normal(9), RNG.standard_normal(9)
    eps = 1e-5
    mean, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    xhat = (x - mean) / np.sqrt(var + eps)
    got = h.run("layer_norm", h.empty(x.shape, "f64"), h.put(x, dtype="f64"),
                h.put(w, dtype="f64"), h.put(b, dtype="f64"), eps=eps)
    np.testing.assert_allclose(got, xhat * w + b, rtol=1e-13, atol=1e-14)
    g = RNG.standard_normal(x.shape)
    gw = g * w
    rstd = 1 / np.sqrt(var + eps)
    dx = rstd * (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True))
    got = h.run("layer_norm_grad", h.empty((2, 5, 9), "f64"), h.put(x, dtype="f64"),
                h.put(w, dtype="f64"), h.put(g, dtype="f64"), eps=eps)
    np.testing.assert_allclose(got[0], dx, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got[1], g * xhat, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("shape", [(1, 5, 3, 4), (2, 37, 29, 300), (1, 130, 70, 260)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_matmul_float64(h, shape, layout):
    nb, m, n, k = shape
    a, b = RNG.standard_normal((nb, m, k)), RNG.standard_normal((nb, k, n))
    out = h.run("matmul", h.empty((nb, m, n), "f64"), h.put(a, layout, "f64"),
                h.put(b, layout, "f64"))
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12 * k)
    bias = RNG.standard_normal(n)
    out = h.run("matmul_bias", h.empty((nb, m, n), "f64"), h.put(a, dtype="f64"),
                h.put(b, dtype="f64"), h.put(bias, dtype="f64"))
    np.testing.assert_allclose(out, a @ b + bias, rtol=1e-12, atol=1e-12 * k)


def test_adam_update_float64(h):
    p, g = RNG.standard_normal(50), RNG.standard_normal(50)
    m, v = RNG.standard_normal(50) * 0.1, RNG.random(50) * 0.1
    s = np.array([0.9, 0.1, 0.999, 0.001, 1e-8, 1 / np.sqrt(1 - 0.999**3),
                  -1e-3 / (1 - 0.9**3), 1.0, 0.0, 0.0])
    pv, gv, mv, vv = (h.put(x, dtype="f64") for x in (p, g, m, v))
    h.run("adam_update", pv, gv, mv, vv, h.put(s, dtype="f64"))
    m2 = 0.9 * m + g * 0.1
    v2 = 0.999 * v + (g * g) * 0.001
    np.testing.assert_allclose(h.rt.read(mv), m2, rtol=1e-15)
    np.testing.assert_allclose(h.rt.read(pv), p + m2 / (np.sqrt(v2) * s[5] + s[4]) * s[6],
                               rtol=1e-14)


@pytest.mark.parametrize("op, codes", [
    ("exp", ("i64", "i64")),            # float op on integers
    ("add", ("f64", "f32", "f64")),     # mixed operand dtypes
    ("add", ("b8", "b8", "b8")),        # no bool arithmetic in the kernels
    ("sum", ("f16", "f16")),            # halves compute in f32 (the frontend's)
    ("softmax", ("i32", "i32")),
    ("matmul", ("f64", "f32", "f32")),
    ("argmax", ("f32", "f32")),         # argmax gives an integer index
])
def test_records_with_a_dtype_the_op_does_not_take_are_refused(h, op, codes):
    shape = (2, 3, 3) if op == "matmul" else (3, 3)
    out_shape = (3,) if op in ("sum", "argmax") else shape
    out = h.empty(out_shape, codes[0])
    h.run("fill", out, value=7.0)
    inputs = [h.put(np.ones(shape), dtype=c) for c in codes[1:]]
    params = {"naxes": 1} if op == "sum" else {}
    h.rt.run(op, out, tuple(inputs), params)
    with pytest.raises(KernelError, match=f"{op}.*ValueError.*dtype"):
        h.rt.sync()
    # never run: out keeps its fill; the runtime stays usable
    np.testing.assert_array_equal(h.rt.read(out), np.full(out_shape, 7, DTYPES[codes[0]]))
