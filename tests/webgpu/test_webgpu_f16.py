"""float16 on webgpu, both ways it is stored (docs/DTYPES.md, "Per backend"): natively, 2
bytes an element bound as `array<f16>`, where the device has WGSL's `shader-f16` (lavapipe
has it), and as float32 words where it does not or TORCHIC_WEBGPU_F16=0. Every test runs
in both modes (the fixture `rt16`): storage bytes, every bit pattern host -> GPU -> host,
casts into float16 (ties to even, overflow to inf, subnormals) against NumPy, and the
kernels that see float16 operands (copy, fill, where, gather_rows; host reads and writes)
on views that start at an odd half or have an odd length, where 4-byte buffer copies and
vec4 paths cannot go; a compiled program whose float16 argument moves (replay.py's slots);
a float16 tensor past a storage binding (windows.py).
"""

import numpy as np
import pytest

import torchic
from torchic.dispatcher import View

from test_webgpu_dtypes import same

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

ALL = np.arange(1 << 16, dtype=np.uint16).view(np.float16)     # every float16 bit pattern


def _init(monkeypatch, mode, **options):
    monkeypatch.setenv("TORCHIC_WEBGPU_F16", "1" if mode == "native" else "0")
    rt = torchic.init("webgpu", **options)
    native = rt.backend.gpu.storage["f16"] == "f16"
    if mode == "native" and not native:
        torchic.shutdown()
        pytest.skip("the adapter has no shader-f16: float16 is stored as float32 words")
    assert native == (mode == "native")
    return rt


@pytest.fixture(params=["native", "words"])
def rt16(request, monkeypatch, webgpu_available):
    rt = _init(monkeypatch, request.param)
    yield rt
    try:
        rt.sync()
    finally:
        torchic.shutdown()


def bits_equal(got, want):
    """The same float16 bits, except that a NaN is any NaN (its payload aside)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


def half_view(rt, n, offset=0, code="f16"):
    """A contiguous View of n elements at element `offset` of a fresh block."""
    blk = rt.alloc(4 * (n + offset) + 4)
    return View(blk, offset, (n,), (1,), code)


# -- storage ------------------------------------------------------------------------------
def test_a_float16_tensor_takes_two_bytes_an_element_natively(rt16):
    native = rt16.backend.gpu.storage["f16"] == "f16"
    assert rt16.backend.describe()["float16"] == ("native" if native else "float32 words")
    assert ("f16" in rt16.backend.storage) != native
    n = 3 << 20
    before = rt16.stats()["bytes_in_use"]
    t = torchic.zeros(n, dtype=torchic.float16)
    used = rt16.stats()["bytes_in_use"] - before
    per = 2 if native else 4
    assert per * n <= used < per * n + 4096, used
    f = torchic.zeros(n, dtype=torchic.float32)
    assert rt16.stats()["bytes_in_use"] - before - used >= 4 * n
    t[-1] = 65504.0
    assert t[-2:].tolist() == [0.0, 65504.0]
    del f


def test_every_float16_bit_pattern_round_trips(rt16):
    t = torchic.tensor(ALL)
    bits_equal(t.numpy(), ALL)
    # widened to float32 exactly (a copy kernel: the vec4 path), narrowed back exactly
    wide = t.float().numpy()
    ok = ~np.isnan(ALL)
    assert np.array_equal(wide[ok].view(np.uint32), ALL[ok].astype(np.float32).view(np.uint32))
    assert np.isnan(wide[~ok]).all()
    bits_equal(torchic.tensor(wide).half().numpy(), ALL)
    bits_equal(t.clone().numpy(), ALL)                  # (float16 -> float16: vec4 too)
    # a float16 -> float16 copy and a read, at an odd half: the scalar paths
    odd = t[1:]
    bits_equal(odd.clone().numpy(), ALL[1:])
    bits_equal(odd.numpy(), ALL[1:])
    # the raw primitives: a host write into a view at an odd half, of an odd length
    v = half_view(rt16, ALL.size - 1, offset=1)
    rt16.write(v, ALL[1:])
    bits_equal(rt16.read(v), ALL[1:])


# -- casts into float16 --------------------------------------------------------------------
def _edges():
    """float32 values at float16's edges: around 65504 / 65520 (the overflow threshold),
    its subnormals and their ties, ties between normals (odd and even), -0, inf, NaN."""
    e = [65504.0, 65519.0, 65519.996, 65520.0, 65520.004, 65536.0, 1e6, 3.4e38,
         2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -26, 3 * 2.0 ** -25,
         5 * 2.0 ** -25, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 2.0 ** -14 - 2.0 ** -24,
         1023.5 * 2.0 ** -24, 1e-45, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
         2049.0, 2051.0, 4097.0, 0.0, 1 / 3, 0.1, np.inf, np.nan]
    x = np.array(e, np.float32)
    return np.concatenate([x, -x])


def test_float32_to_float16_rounds_to_nearest_even_and_overflows_to_inf(rt16):
    x = _edges()
    want = x.astype(np.float16)
    assert np.isinf(want[3]) and want[2] == 65504        # (the reference says it)
    t = torchic.tensor(x)
    bits_equal(t.half().numpy(), want)
    bits_equal(t.to(torchic.float16).numpy(), want)
    bits_equal(t[1:].half().numpy(), want[1:])          # into an odd-half output too
    bits_equal(torchic.tensor(x, dtype=torchic.float16).numpy(), want)    # a host write
    # ints through float32 (PyTorch's rule): exact below 2^11, ties to even past it
    i = np.array([2047, 2049, 2051, 4097, 65504, 65519, 65520, 70000, -65536, -3], np.int32)
    bits_equal(torchic.tensor(i).half().numpy(), i.astype(np.float32).astype(np.float16))
    # fill (rounded on the host), into a view at an odd half
    for value in (65504.0, 2.0 ** -25 * 3, -1e-8, 1 / 3, float("nan"), float("-inf")):
        h = torchic.zeros(5, dtype=torchic.float16)
        h[1:4].fill_(value)
        want = np.zeros(5, np.float16)
        want[1:4] = np.float32(value).astype(np.float16)
        bits_equal(h.numpy(), want)


def test_random_float32_bits_round_like_numpy(rt16):
    rng = np.random.default_rng(16)
    x = rng.integers(0, 2 ** 32, 50000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    small = (rng.standard_normal(20000) * 1e-5).astype(np.float32)   # subnormals of f16
    x = np.concatenate([x, small, small * 1e9])
    bits_equal(torchic.tensor(x).half().numpy(), x.astype(np.float16))


# -- kernels on float16 views at odd halves ------------------------------------------------
def test_gather_where_cat_and_strided_copies_at_odd_halves(rt16):
    rng = np.random.default_rng(7)
    a = rng.choice(ALL[~np.isnan(ALL)], 203)
    t = torchic.tensor(a)
    s = t[1:]                                   # starts at an odd half
    sa = a[1:]
    idx = np.array([5, 0, 199, 3, 3, 1, 77])
    bits_equal(torch_like(torchic.index_select(s, 0, torchic.tensor(idx))), sa[idx])
    bits_equal(torch_like(s[torchic.tensor(idx)]), sa[idx])
    m = s.reshape(2, 101)[:, 1:]                # rows 101 halves apart, each at an odd half
    table = s[:201].reshape(67, 3)               # (V, D) rows at an odd half
    bits_equal(torch_like(torchic.nn.functional.embedding(torchic.tensor([1, 66, 1]), table)),
               sa[:201].reshape(67, 3)[[1, 66, 1]])
    cond = rng.random((2, 100)) < 0.5
    other = torchic.tensor(a[3:203].reshape(2, 100))
    bits_equal(torch_like(torchic.where(torchic.tensor(cond), m, other)),
               np.where(cond, sa.reshape(2, 101)[:, 1:], a[3:203].reshape(2, 100)))
    flat = rng.random(196) < 0.5                # contiguous, 4-aligned: the vec4 path
    bits_equal(torch_like(torchic.where(torchic.tensor(flat), t[:196], t[4:200])),
               np.where(flat, a[:196], a[4:200]))
    bits_equal(torch_like(torchic.cat([s[2:5], t[7:8], s[10:21:3], m[1]])),
               np.concatenate([sa[2:5], a[7:8], sa[10:21:3], sa.reshape(2, 101)[1, 1:]]))
    bits_equal(torch_like(m.t().contiguous()), np.ascontiguousarray(sa.reshape(2, 101)[:, 1:].T))
    bits_equal(torch_like(s[::3]), sa[::3])
    bits_equal(torch_like(s.flip(0)), sa[::-1])
    # writes into views at odd halves leave their neighbours alone
    u = torchic.tensor(a)
    u[3:8] = torchic.tensor(a[100:105])
    u[9:20:2] = torchic.tensor(a[50:56])
    want = a.copy()
    want[3:8] = a[100:105]
    want[9:20:2] = a[50:56]
    bits_equal(u.numpy(), want)
    u[1:4] = 2.5
    want[1:4] = 2.5
    bits_equal(u.numpy(), want)


def torch_like(t):
    assert t.dtype == torchic.float16
    return t.numpy()


def test_host_writes_of_any_length_at_any_half(rt16):
    """Contiguous writes that do not start or end on 4 bytes (a kernel writes them natively)
    and reads of such ranges (widened to 4 bytes, the rest dropped)."""
    base = np.arange(1, 41, dtype=np.float16)
    for offset in (0, 1, 2, 3):
        for n in (1, 2, 3, 5, 8):
            v = half_view(rt16, 40)
            rt16.write(v, base)
            part = View(v.block, offset, (n,), (1,), "f16")
            new = -np.arange(1, n + 1, dtype=np.float16)
            rt16.write(part, new)
            want = base.copy()
            want[offset:offset + n] = new
            same(rt16.read(v), want)
            same(rt16.read(part), new)


def test_a_compiled_program_moves_a_float16_argument(rt16):
    """Slots (replay.py): the recorded offsets of a float16 argument move in halves."""
    def f(x, y):
        return (x.float() * 2 + y).half()
    compiled = torchic.compile(f)
    rng = np.random.default_rng(1)
    for _ in range(4):
        xs = rng.standard_normal(300).astype(np.float16)
        ys = rng.standard_normal(300).astype(np.float32)
        x, y = torchic.tensor(xs), torchic.tensor(ys)
        keep = torchic.zeros(77, dtype=torchic.float16)     # (moves the next blocks)
        want = (xs.astype(np.float32) * 2 + ys).astype(np.float16)
        bits_equal(compiled(x, y).numpy(), want)
        del keep


# -- past a storage binding (windows.py) -----------------------------------------------------
@pytest.mark.parametrize("mode", ["native", "words"])
def test_float16_past_a_binding(monkeypatch, webgpu_available, mode):
    rt = _init(monkeypatch, mode, max_binding=16384)
    try:
        n = 3 * 16384 // 2 + 5                  # three windows' halves (or six of words)
        a = np.resize(ALL[~np.isnan(ALL)], n)
        t = torchic.tensor(a)
        assert rt.backend.gpu.any_big           # (bound through windows)
        bits_equal(t.numpy(), a)
        bits_equal(t[1:].clone().numpy(), a[1:])
        bits_equal(t[1::2].contiguous().numpy(), a[1::2])
        w = t.float()
        bits_equal(w.half()[3:].numpy(), a[3:])
        idx = np.array([999, 0, 17, 500])       # (a gather's table must fit a window)
        bits_equal(t[n - 1001:n - 1][torchic.tensor(idx)].numpy(), a[n - 1001:n - 1][idx])
    finally:
        torchic.shutdown()
