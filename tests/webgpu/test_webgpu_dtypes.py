"""webgpu's dtypes (docs/DTYPES.md, "Per backend" and "webgpu's int64 rule").

Every code but float64 is one 32-bit word per element (bool / uint8 / int8 / int16 / int64
as i32 words, bfloat16 as f32 words holding exact half values, float16 too where the device
lacks shader-f16 or TORCHIC_WEBGPU_F16=0, else 2 bytes: test_webgpu_f16.py): each round-trips
host -> GPU -> host exactly; float64 is refused naming the alternative; an int64 value
outside int32 raises OverflowError at the write, and int64 arithmetic that leaves int32
raises OverflowError naming the op at the next read or sync. The kernels that see other
codes (copy, fill, compare, where, argmax, gather, sum, and past a binding) are checked
against NumPy on primitive Views (no frontend), a few things through the API. Small
problems: lavapipe is slow.
"""

import sys

import numpy as np
import pytest

import torchic
from torchic.backend import KernelError
from torchic.dispatcher import View
from torchic.shape import contiguous_strides as c_strides


# (NumPy warns where a reference overflows a half type: inf is the value wanted)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

CODES = ("b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32")
INTS = ("b8", "u8", "i8", "i16", "i32", "i64")
HOST = {"b8": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
        "i64": np.int64, "f16": np.float16, "bf16": np.uint16, "f32": np.float32}


def bf16_bits(values):
    """float32 values -> bfloat16 bits, nearest even (NaN quiet): PyTorch's rounding."""
    b = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, np.float32))
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_values(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


class Heap:
    """Views of one runtime's heap in any code (4 bytes an element: webgpu's words)."""

    def __init__(self, rt):
        self.rt = rt

    def empty(self, shape, code):
        shape = tuple(shape)
        blk = self.rt.alloc(max(4 * int(np.prod(shape)), 4))
        return View(blk, 0, shape, c_strides(shape), code)

    def put(self, array, code):
        array = np.ascontiguousarray(array, HOST[code])
        v = self.empty(array.shape, code)
        self.rt.write(v, array)
        return v

    def run(self, op, out, ins, **params):
        self.rt.run(op, out, tuple(ins), params)
        return out

    def read(self, view):
        return self.rt.read(view)


@pytest.fixture
def heap(rt):
    return Heap(rt)


def samples(code):
    """Edge values of `code` as its host array."""
    if code == "b8":
        return np.array([True, False, True, True, False])
    if code in ("u8", "i8", "i16", "i32"):
        info = np.iinfo(HOST[code])
        return np.array([info.min, info.min + 1, -1 if info.min else 2, 0, 1, info.max - 1,
                         info.max], HOST[code])
    if code == "i64":
        return np.array([-2 ** 31, -2 ** 31 + 1, -1, 0, 1, 2 ** 31 - 2, 2 ** 31 - 1], np.int64)
    if code == "f16":
        return np.array([0.0, -0.0, 1.0, -2.5, 65504.0, -65504.0, 6e-8, 6.1e-5, 0.1, np.inf,
                         -np.inf, np.nan], np.float16)
    if code == "bf16":   # normals, subnormals, +-0, +-inf, a quiet NaN
        return np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F7F, 0x0001, 0x807F, 0x4049,
                         0x7F80, 0xFF80, 0x7FC0], np.uint16)
    return np.array([0.0, -0.0, 1.5, -3.25, 3.4e38, 1e-45, 1e-30, np.inf, -np.inf, np.nan],
                    np.float32)


def same(got, want):
    """Exactly equal: dtype, shape, values (NaN where NaN, the sign of zero)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        ok = ~np.isnan(want)
        assert np.array_equal(got[ok], want[ok]) and \
            np.array_equal(np.signbit(got[ok]), np.signbit(want[ok])), (got, want)
    else:
        assert np.array_equal(got, want), (got, want)


# -- storage --------------------------------------------------------------------------------
def test_every_code_round_trips_exactly(heap):
    views = {code: heap.put(samples(code), code) for code in CODES}
    for code, v in views.items():
        same(heap.read(v), samples(code))
    # a strided view: written through the staged upload, read through the gather
    for code in ("i64", "f16", "b8", "bf16"):
        a = np.resize(samples(code), 12).reshape(3, 4)
        base = heap.empty((4, 3), code)
        t = View(base.block, 0, (3, 4), (1, 3), code)       # the transposed layout
        heap.rt.write(t, a)
        same(heap.read(t), a)
        same(heap.read(base), np.ascontiguousarray(a.T))


def test_the_backend_declares_its_storage(rt):
    be = rt.backend
    assert set(be.dtypes) == set(CODES) and "f64" not in be.dtypes
    native = "shader-f16" in be.gpu.features       # (and TORCHIC_WEBGPU_F16 not 0)
    assert be.storage == {"b8": "i32", "u8": "i32", "i8": "i32", "i16": "i32", "i64": "i32",
                          "bf16": "f32", **({} if native else {"f16": "f32"})}
    assert "float32" in be.refusals["f64"] and "workers / simd" in be.refusals["f64"]


def test_float64_is_refused_naming_the_backend_and_the_alternative(rt):
    for make in (lambda: torchic.zeros(3, dtype=torchic.float64),
                 lambda: torchic.tensor([1.0, 2.0]).double(),
                 lambda: torchic.tensor(np.ones(2))):        # a float64 NumPy array
        with pytest.raises(TypeError, match=r"(?s)webgpu.*64-bit floats.*float32.*workers"):
            make()


def test_half_values_are_what_the_half_types_hold(rt):
    """float16 / bfloat16 made from float32 values hold the nearest half value (even on a
    tie), as NumPy's and PyTorch's rounding give; they read back as the half dtype."""
    x = np.array([0.1, 1 / 3, 65519.0, 65520.0, 1e-8, 3e-8, 2.9802322e-08, 1.0009766,
                  1.00048828125, 1.00146484375, -7.3e-5, np.nan, np.inf], np.float32)
    h = torchic.tensor(x).half()
    assert h.dtype == torchic.float16
    same(h.numpy(), x.astype(np.float16))
    b = torchic.tensor(x).bfloat16()
    assert b.dtype == torchic.bfloat16
    same(b.float().numpy(), bf16_values(bf16_bits(x)))


# -- the int64 rule ---------------------------------------------------------------------
def test_an_int64_write_outside_int32_raises_at_the_write(heap):
    with pytest.raises(OverflowError, match=r"webgpu.*\[-2\^31, 2\^31 - 1\]"):
        heap.put(np.array([1, 2 ** 31]), "i64")
    with pytest.raises(OverflowError, match="webgpu"):
        heap.put(np.array([-2 ** 31 - 1]), "i64")
    with pytest.raises(OverflowError, match="webgpu"):
        torchic.tensor([3, 2 ** 40])          # (int64, the default integer dtype)
    same(heap.read(heap.put(np.array([-2 ** 31, 2 ** 31 - 1]), "i64")),
         np.array([-2 ** 31, 2 ** 31 - 1], np.int64))


@pytest.mark.parametrize("op, a, b", [
    ("add", [2 ** 30, 1, -5], [2 ** 30, 2, 7]),
    ("add", [-2 ** 31, 0, 0], [-1, 0, 0]),
    ("sub", [-2 ** 31, 3, 0], [1, 4, 0]),
    ("sub", [0, 1, 1], [-2 ** 31, 1, 1]),
    ("mul", [65536, 3, -2], [32768, 5, 7]),
    ("mul", [-1, 1, 1], [-2 ** 31, 1, 1]),
    ("mul", [46341, 1, 1], [46341, 1, 1]),
])
def test_int64_arithmetic_past_int32_raises_naming_the_op(heap, op, a, b):
    av, bv = heap.put(np.array(a), "i64"), heap.put(np.array(b), "i64")
    out = heap.run(op, heap.empty((3,), "i64"), (av, bv))
    with pytest.raises(OverflowError, match=rf"(?s)op '{op}'.*webgpu.*int64.*int32") as err:
        heap.read(out)
    assert isinstance(err.value, KernelError)
    heap.run(op, out, (bv, bv) if op == "sub" else (heap.put(np.array([1, 2, 3]), "i64"),
                                                     heap.put(np.array([4, 5, 6]), "i64")))
    heap.rt.sync()          # (the flag was taken by the read: the next op is clean)


def test_int64_arithmetic_at_int32s_edges_is_exact(heap):
    a = np.array([2 ** 31 - 2, -2 ** 31 + 1, 46340, -65536, -2 ** 31, 2 ** 31 - 1])
    b = np.array([1, -1, 46340, 32768, 1, -1])
    av, bv = heap.put(a, "i64"), heap.put(b, "i64")
    same(heap.read(heap.run("add", heap.empty((6,), "i64"), (av, bv)))[:2], (a + b)[:2])
    same(heap.read(heap.run("mul", heap.empty((6,), "i64"), (av, bv))), a * b)
    same(heap.read(heap.run("sub", heap.empty((6,), "i64"), (bv, bv))), b - b)
    same(heap.read(heap.run("maximum", heap.empty((6,), "i64"), (av, bv))), np.maximum(a, b))
    same(heap.read(heap.run("minimum", heap.empty((6,), "i64"), (av, bv))), np.minimum(a, b))


def test_an_int64_sum_past_int32_raises_at_the_sync(heap):
    big = heap.put(np.full((3, 5), 2 ** 29), "i64")
    heap.run("sum", heap.empty((3,), "i64"), (big,), naxes=1)
    with pytest.raises(OverflowError, match=r"op 'sum'.*int64"):
        heap.rt.sync()
    ok = np.arange(-300, 300).reshape(2, 300) * 7000       # partial sums cross zero
    same(heap.read(heap.run("sum", heap.empty((2,), "i64"), (heap.put(ok, "i64"),), naxes=1)),
         ok.sum(axis=1))
    # a long row (the split path: partials, then their sum) and a columns reduction
    n = 70000
    long = heap.put(np.full((1, n), 40000), "i64")       # 2.8e9: past int32
    heap.run("sum", heap.empty((1,), "i64"), (long,), naxes=1)
    with pytest.raises(OverflowError, match="op 'sum'"):
        heap.rt.sync()
    cols = np.full((40, 64), 2 ** 26)
    cv = heap.put(cols, "i64")
    t = View(cv.block, 0, (64, 40), (1, 64), "i64")      # rows 64 apart: the columns layout
    heap.run("sum", heap.empty((64,), "i64"), (t,), naxes=1)
    with pytest.raises(OverflowError, match="op 'sum'"):
        heap.rt.sync()


def test_int64_overflow_through_the_api(rt):
    a = torchic.tensor([2 ** 31 - 1, 5])
    one = torchic.tensor([1, 1])
    assert a.dtype == one.dtype == torchic.int64
    s = a + one
    assert s.dtype == torchic.int64
    with pytest.raises(OverflowError, match="op 'add'"):
        s.numpy()
    with pytest.raises(OverflowError, match="op 'mul'"):
        (a * a).numpy()
    assert (a - one).tolist() == [2 ** 31 - 2, 4]


# -- kernels per code -------------------------------------------------------------------
def cast_ref(x, src, dst):
    """NumPy's (and PyTorch's) copy from a `src` host array into `dst` (ops.py's copy row)."""
    v = (bf16_values(x) if src == "bf16" else x).reshape(-1)
    return _cast_ref(v, dst).reshape(np.shape(x))


def _cast_ref(v, dst):
    if dst == "bf16":
        return bf16_bits(v.astype(np.float32))
    if dst == "b8":
        return v != 0
    if dst in ("f16", "f32"):
        return (v if v.dtype.kind == "f" else v.astype(np.float32)).astype(HOST[dst])
    if v.dtype.kind == "f":             # truncate; saturate (i32: int32, else int64); NaN -> 0
        lo, hi = (-2 ** 31, 2 ** 31 - 1) if dst == "i32" else (-2 ** 63, 2 ** 63 - 1)
        ints = [0 if np.isnan(y) else hi if y > 0 and np.isinf(y) else lo if np.isinf(y)
                else min(hi, max(lo, int(np.trunc(y)))) for y in v.astype(np.float64)]
        return np.array(ints, np.int64).astype(HOST[dst])
    return v.astype(np.int64).astype(HOST[dst])


def cast_sources(code):
    if code in ("f32", "f16"):
        x = np.array([0.0, -0.0, 0.4, -0.6, 1.5, -1.5, 2.5, 127.9, -128.9, 255.5, 300.7,
                      -300.7, 40000.5, 65519.0, 65520.0, 1e-7, 3e-8, 16777217.0, 2.1e9,
                      -2.1e9, 3e9, -3e9, 1e19, -1e19, np.nan, np.inf, -np.inf], np.float32)
        return x.astype(np.float16) if code == "f16" else x
    if code == "bf16":
        return bf16_bits(np.array([0.0, -0.0, 1.5, -2.5, 300.0, -129.0, 3e9, np.nan,
                                   np.inf], np.float32))
    return samples(code)


@pytest.mark.parametrize("src", CODES)
def test_copy_casts_between_every_pair_of_codes(heap, src):
    x = cast_sources(src)
    xv = heap.put(x, src)
    outs = {}
    for dst in CODES:
        if dst == "i64" and src in ("f32", "f16", "bf16"):
            keep = np.abs(np.nan_to_num(x.astype(np.float32) if src != "bf16"
                                        else bf16_values(x))) < 2 ** 31
            keep &= ~np.isinf(x.astype(np.float32) if src != "bf16" else bf16_values(x))
            part = x[keep]
            outs[dst] = (part, heap.run("copy", heap.empty(part.shape, dst),
                                        (heap.put(part, src),)))
            continue
        outs[dst] = (x, heap.run("copy", heap.empty(x.shape, dst), (xv,)))
    for dst, (inp, out) in outs.items():
        got, want = heap.read(out), cast_ref(inp, src, dst)
        if dst == "bf16":
            got, want = bf16_values(got), bf16_values(want)
        same(got, want)


def test_a_float_into_int64_past_int32_raises(heap):
    xv = heap.put(np.array([1.5, 3e9, -2.0], np.float32), "f32")
    out = heap.run("copy", heap.empty((3,), "i64"), (xv,))
    with pytest.raises(OverflowError, match="op 'copy'"):
        heap.read(out)
    nan = heap.run("copy", heap.empty((2,), "i64"), (heap.put(np.array([np.nan, -7.9]), "f32"),))
    same(heap.read(nan), np.array([0, -7], np.int64))


FILLS = {"b8": [0, 1, 2], "u8": [0, 255, 300, -1], "i8": [-128, 127, 200], "i16": [-32768, 40000],
         "i32": [-2 ** 31, 2 ** 31 - 1, 7], "i64": [-2 ** 31, 2 ** 31 - 1],
         "f16": [0.1, 65520.0, -1e-8, float("nan")], "bf16": [0.1, 3.0e38, -1 / 3],
         "f32": [0.1, float("-inf"), -0.0]}


@pytest.mark.parametrize("code", CODES)
def test_fill_writes_every_code(heap, code):
    for value in FILLS[code]:
        out = heap.run("fill", heap.empty((2, 3), code), (), value=value)
        if code == "bf16":
            want = np.full((2, 3), bf16_bits(np.array([value], np.float32))[0], np.uint16)
        elif code in ("f16", "f32"):
            want = np.full((2, 3), np.float32(value)).astype(HOST[code])
        elif code == "b8":
            want = np.full((2, 3), value != 0)
        else:
            want = np.full((2, 3), value, np.int64).astype(HOST[code])
        same(heap.read(out), want)
    if code == "i64":
        with pytest.raises(OverflowError, match="webgpu"):
            heap.run("fill", heap.empty((2,), code), (), value=2 ** 31)


COMPARES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("code", ("b8", "i32", "i64", "f32"))
def test_compares_give_bool(heap, code):
    a = samples(code)
    b = np.roll(a, 1)
    av, bv = heap.put(a, code), heap.put(b, code)
    outs = {op: heap.run(op, heap.empty(a.shape, "b8"), (av, bv)) for op in COMPARES}
    with np.errstate(invalid="ignore"):
        for op, out in outs.items():
            same(heap.read(out), COMPARES[op](a, b))


@pytest.mark.parametrize("code", CODES)
def test_where_on_a_bool_condition_for_every_code(heap, code):
    a = samples(code)
    b = np.roll(a, 2)
    cond = np.arange(a.size) % 3 != 1
    out = heap.run("where", heap.empty(a.shape, code),
                   (heap.put(cond, "b8"), heap.put(a, code), heap.put(b, code)))
    same(heap.read(out), np.where(cond, a, b))
    # a broadcast condition (stride 0)
    c = heap.put(np.array([True]), "b8")
    cb = View(c.block, 0, a.shape, (0,), "b8")
    same(heap.read(heap.run("where", heap.empty(a.shape, code),
                            (cb, heap.put(a, code), heap.put(b, code)))), a)


@pytest.mark.parametrize("code, out_code", [("f32", "i64"), ("i32", "i32"), ("i64", "i64"),
                                            ("i64", "i32")])
def test_argmax_of_every_computed_code(heap, code, out_code):
    a = np.array([[1, 5, 5, -2], [-7, -7, -9, -8], [2 ** 31 - 1, 0, 2 ** 31 - 1, -2 ** 31]],
                 np.int64)
    if code == "f32":
        a = np.array([[1, 5, 5, -2], [-7, np.nan, -9, np.nan], [3.4e38, 0, 3.4e38, -np.inf]],
                     np.float32)
    out = heap.run("argmax", heap.empty((3,), out_code), (heap.put(a, code),))
    want = np.array([1, 1 if code == "f32" else 0, 0])
    same(heap.read(out), want.astype(HOST[out_code]))
    # a long row: the split path (chunk candidates, then theirs)
    n = 70000
    row = np.arange(n) % 1000 - 500
    row[54321] = 2 ** 30
    out = heap.run("argmax", heap.empty((1,), out_code), (heap.put(row[None], code),))
    same(heap.read(out), np.array([54321], HOST[out_code]))


@pytest.mark.parametrize("code", ("b8", "f16", "i64", "bf16"))
def test_gather_takes_any_table_and_an_int64_index(heap, code):
    table = np.resize(samples(code), 12).reshape(4, 3)
    idx = np.array([3, 0, 0, 2])
    out = heap.run("gather_rows", heap.empty((4, 3), code),
                   (heap.put(table, code), heap.put(idx, "i64")))
    same(heap.read(out), table[idx])
    heap.run("gather_rows", heap.empty((1, 3), code),
             (heap.put(table, code), heap.put(np.array([4]), "i64")))
    with pytest.raises(IndexError, match="gather_rows"):
        heap.rt.sync()


def test_cross_entropy_takes_an_int64_target(heap):
    x = np.array([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]], np.float32)
    t = np.array([1, 2])
    out = heap.run("cross_entropy", heap.empty((2,), "f32"),
                   (heap.put(x, "f32"), heap.put(t, "i64")), ignore_index=None)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(heap.read(out), np.log(np.exp(x64).sum(1)) - x64[[0, 1], t],
                               rtol=1e-6)
    heap.run("cross_entropy", heap.empty((2,), "f32"),
             (heap.put(x, "f32"), heap.put(np.array([1, 3]), "i64")), ignore_index=None)
    with pytest.raises(IndexError, match="cross_entropy"):
        heap.rt.sync()


# -- past a storage binding ----------------------------------------------------------------
WINDOW = 16384      # bytes of a binding: 4096 words


@pytest.fixture
def small(webgpu_available):
    rt = torchic.init("webgpu", max_binding=WINDOW)
    yield Heap(rt)
    torchic.shutdown()


def test_new_codes_are_cut_past_a_binding(small):
    """Copies, compares, where, an int64 sum (its partials combined, checked) and argmax on
    tensors of 3 windows' elements, in the new codes: cut as float32 / int32 ones are."""
    heap = small
    n, c = 96, 128                       # 12288 elements: three windows
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((n, c)) * 300).astype(np.float32)
    xv = heap.put(x, "f32")
    for dst in ("f16", "bf16", "i16", "b8", "i64"):
        got = heap.read(heap.run("copy", heap.empty((n, c), dst), (xv,)))
        want = cast_ref(x, "f32", dst)
        same(bf16_values(got) if dst == "bf16" else got,
             bf16_values(want) if dst == "bf16" else want)
    xt = View(xv.block, 0, (c, n), (1, c), "f32")     # transposed: strided parts
    same(heap.read(heap.run("copy", heap.empty((c, n), "f16"), (xt,))),
         np.ascontiguousarray(x.T).astype(np.float16))
    iv = heap.put(x.astype(np.int64), "i64")
    mask = heap.run("lt", heap.empty((n, c), "b8"), (iv, heap.put(np.zeros((n, c)), "i64")))
    same(heap.read(mask), x.astype(np.int64) < 0)
    w = heap.run("where", heap.empty((n, c), "i64"),
                 (mask, heap.put(-x.astype(np.int64), "i64"), iv))
    same(heap.read(w), np.abs(x.astype(np.int64)))
    flat = View(iv.block, 0, (n * c,), (1,), "i64")
    same(heap.read(heap.run("sum", heap.empty((), "i64"), (flat,), naxes=1)),
         np.array(x.astype(np.int64).sum()))
    same(heap.read(heap.run("argmax", heap.empty((n,), "i64"), (iv,))),
         np.argmax(x.astype(np.int64), axis=1))
    big = heap.put(np.full((n, c), 2 ** 20), "i64")      # 1.3e10 in all: past int32
    heap.run("sum", heap.empty((), "i64"), (View(big.block, 0, (n * c,), (1,), "i64"),),
             naxes=1)
    with pytest.raises(OverflowError):
        heap.rt.sync()


def test_a_compiled_programs_int64_overflow_raises_naming_the_op(rt):
    """A recorded program's overflow checks share one fixed tag per op name (300 checked
    adds take one of the 256 a program may hold), and a replay's overflow raises as an
    eager one does."""
    def f(a, b):
        x = a
        for _ in range(300):
            x = x + b
        return x
    compiled = torchic.compile(f)
    a, b = torchic.tensor([0, 5]), torchic.tensor([1, -1])
    for _ in range(3):
        assert compiled(a, b).tolist() == [300, -295]
    with pytest.raises(OverflowError, match="op 'add'"):
        compiled(torchic.tensor([2 ** 31 - 100, 0]), b).numpy()
    assert compiled(a, b).tolist() == [300, -295]


def test_half_rounding_of_random_bits_and_ties(heap):
    """f32 -> f16 / bf16 in the copy kernel against NumPy's float16 cast and PyTorch's
    bfloat16 one (where torch is already imported; else the same rule in NumPy) on random bit
    patterns over the whole float32 range and on the exact ties between half values."""
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    h = np.arange(0, 0x7C00, 7, dtype=np.uint16)               # f16 values, then the ties
    lo, hi = h.view(np.float16).astype(np.float32), (h + 1).view(np.float16).astype(np.float32)
    ties16 = ((lo.astype(np.float64) + hi) / 2).astype(np.float32)
    b = np.arange(0, 0x7F80, 5, dtype=np.uint32)
    ties_bf = ((b << 16) | 0x8000).view(np.float32)
    x = np.concatenate([bits.view(np.float32), ties16, -ties16, ties_bf, -ties_bf])
    xv = heap.put(x, "f32")
    f16 = heap.run("copy", heap.empty(x.shape, "f16"), (xv,))
    bf = heap.run("copy", heap.empty(x.shape, "bf16"), (xv,))
    same(heap.read(f16), x.astype(np.float16))
    torch = sys.modules.get("torch")        # (not imported for this alone: seconds)
    want = (torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            if torch is not None else bf16_bits(x))
    got = heap.read(bf)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(bf16_values(got[nan])).all()
