"""webgpu's scatter_add_rows (the gradient of gather_rows / embedding lookup): a GPU sort of
the index, then each output row sums its sources in a fixed order (rows.py). Checked on
every path: one chunk, rows crossing chunk boundaries (the combine pass), several pieces
(a lowered loop budget), repeated and out-of-range indices, strided sources, empty shapes,
against NumPy float64's np.add.at; the result is bitwise the same from run to run."""

import numpy as np
import pytest

import torchic
from torchic.backends.webgpu import rows, wgsl
from torchic.dispatcher import KernelError, View


def _run(rt, heap, src, idx, V, src_view=None):
    out = heap.put(np.zeros((V, src.shape[1]), np.float32))
    sv = src_view if src_view is not None else heap.put(src)
    rt.run("scatter_add_rows", out, (sv, heap.put(idx.astype(np.int32))), {})
    return rt.read(out)


def _ref(src, idx, V):
    ref = np.zeros((V, src.shape[1]))
    np.add.at(ref, idx, src.astype(np.float64))
    return ref


@pytest.mark.parametrize("budget", [None, 64, 8])
@pytest.mark.parametrize("V, D, R, dist", [
    (1, 1, 1, "uniform"), (3, 2, 5, "uniform"), (1, 1, 3000, "uniform"),   # one long row
    (27, 10, 2000, "uniform"), (5000, 1, 1500, "uniform"),                 # V > R
    (64, 3, 1000, "runs"),                        # rows of every length, 1 .. hundreds
    (40, 70, 300, "uniform"),                     # D past one workgroup
])
@pytest.mark.parametrize("path", ["sorted", "auto"])
def test_scatter_matches_add_at(rt, heap, budget, V, D, R, dist, path, monkeypatch):
    if budget:    # short chunks and many pieces (wgsl.LOOP_BUDGET cuts both)
        monkeypatch.setattr(wgsl, "LOOP_BUDGET", budget)
    if path == "sorted":
        monkeypatch.setattr(rows, "CHUNKED_WORK", 0)
    rng = np.random.default_rng(V * 1000 + R)
    if dist == "runs":    # row v repeated about v^1.5 times, shuffled
        idx = np.repeat(np.arange(V), (np.arange(V) ** 1.5).astype(int) + 1)[:R]
        idx = rng.permutation(np.resize(idx, R))
    else:
        idx = rng.integers(0, V, R)
    src = rng.standard_normal((R, D)).astype(np.float32)
    got = _run(rt, heap, src, idx, V)
    np.testing.assert_allclose(got, _ref(src, idx, V), rtol=1e-5, atol=1e-4)
    again = _run(rt, heap, src, idx, V)
    np.testing.assert_array_equal(got, again)      # deterministic: the same bits


def test_scatter_strided_source_and_index(rt, heap):
    rng = np.random.default_rng(5)
    R, D, V = 700, 4, 9
    base = rng.standard_normal((R, 3 * D)).astype(np.float32)
    sv = heap.put(base)
    sv = View(sv.block, 1, (R, D), (3 * D, 2), "f32")              # base[:, 1::2][:, :D]
    ibase = rng.integers(0, V, 2 * R).astype(np.int32)
    iv = heap.put(ibase)
    iv = View(iv.block, 1, (R,), (2,), "i32")                      # ibase[1::2]
    out = heap.put(np.zeros((V, D), np.float32))
    rt.run("scatter_add_rows", out, (sv, iv), {})
    src = base[:, 1:1 + 2 * D:2]
    np.testing.assert_allclose(rt.read(out), _ref(src, ibase[1::2], V), rtol=1e-5, atol=1e-4)


def test_scatter_adds_into_out(rt, heap):
    out0 = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = heap.put(out0)
    src = np.ones((4, 2), np.float32)
    idx = np.array([2, 2, 0, 2])
    rt.run("scatter_add_rows", out, (heap.put(src), heap.put(idx.astype(np.int32))), {})
    np.testing.assert_array_equal(rt.read(out), out0 + _ref(src, idx, 3))


@pytest.mark.parametrize("V, D, R", [(0, 3, 4), (4, 0, 4), (4, 3, 0)])
def test_scatter_empty_shapes(rt, heap, V, D, R):
    idx = np.zeros(R, np.int32)
    out = heap.empty((V, D))
    rt.run("scatter_add_rows", out, (heap.empty((R, D)), heap.put(idx)), {})
    if V == 0 and R:   # every index is out of range [0, 0)
        with pytest.raises(KernelError, match="scatter_add_rows"):
            rt.sync()
    else:
        assert rt.read(out).shape == (V, D)


@pytest.mark.parametrize("budget", [None, 8])
def test_scatter_bad_index_in_any_piece_is_reported(rt, heap, monkeypatch, budget):
    if budget:
        monkeypatch.setattr(wgsl, "LOOP_BUDGET", budget)
    idx = np.zeros(500, np.int64)
    idx[-1] = 9                      # in the last piece, far from slice 0
    src = np.ones((500, 2), np.float32)
    out = heap.put(np.zeros((4, 2), np.float32))
    rt.run("scatter_add_rows", out, (heap.put(src), heap.put(idx.astype(np.int32))), {})
    with pytest.raises(KernelError, match=r"scatter_add_rows.*9 is out of range \[0, 4\)"):
        rt.sync()
    np.testing.assert_array_equal(rt.read(out)[0], [499, 499])    # the good rows still add


def test_two_index_gather_backward_is_the_bigram_gradient(rt):
    """probs[arange(n), ys] (makemore's bigram loss): its backward scatters into a table of
    n * 27 rows; it was V x R work (quadratic in n) and is now a sort of the n indices."""
    rng = np.random.default_rng(0)
    n = 3000
    x_np = rng.standard_normal((n, 27)).astype(np.float32)
    ys = rng.integers(0, 27, n)
    x = torchic.tensor(x_np, requires_grad=True)
    probs = x.softmax(dim=1)
    loss = -probs[torchic.arange(n), torchic.tensor(ys)].log().mean()
    loss.backward()
    x64 = x_np.astype(np.float64)
    p = np.exp(x64 - x64.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    g = p / n
    g[np.arange(n), ys] -= 1.0 / n
    np.testing.assert_allclose(loss.item(), -np.log(p[np.arange(n), ys]).mean(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize("V, D, R", [(27, 10, 96), (5, 3, 256), (1, 1, 1), (300, 7, 40)])
def test_direct_path_gives_the_sorted_paths_bits(rt, heap, monkeypatch, V, D, R):
    """A short index into a small table (makemore's embedding gradient) is one dispatch
    instead of the sort's; its sums are the sorted path's bit for bit (same order), rows
    with no source are left as they were (-0.0 stays), and a bad index is still reported."""
    rng = np.random.default_rng(V + R)
    idx = rng.integers(0, V, R)
    src = rng.standard_normal((R, D)).astype(np.float32)
    gpu = rt.backend.gpu
    got = _run(rt, heap, src, idx, V)
    assert ("scatter-direct", False) in gpu.pipelines
    np.testing.assert_allclose(got, _ref(src, idx, V), rtol=1e-5, atol=1e-4)
    monkeypatch.setattr(rows, "CHUNKED_WORK", 0)             # the sorted path
    np.testing.assert_array_equal(_run(rt, heap, src, idx, V), got)
    monkeypatch.undo()
    out = heap.put(np.full((V, D), -0.0, np.float32))
    rt.run("scatter_add_rows", out, (heap.put(src[:1]), heap.put(np.array([V - 1], np.int32))),
           {})
    assert np.signbit(rt.read(out)[:V - 1]).all()
    bad = idx.astype(np.int32)
    bad[-1] = -2
    rt.run("scatter_add_rows", heap.put(np.zeros((V, D), np.float32)),
           (heap.put(src), heap.put(bad)), {})
    with pytest.raises(KernelError, match=r"scatter_add_rows.*-2 is out of range"):
        rt.sync()


@pytest.mark.parametrize("V, D, R", [(27, 10, 3000), (5, 3, 257), (300, 7, 1000)])
def test_direct_path_in_chunks(rt, heap, monkeypatch, V, D, R):
    """A longer index into a small table (a GPT's tokens into its vocabulary): chunks of the
    index summed by chunk, the partials added in chunk order, as the sorted path does
    (not bit for bit: other chunk boundaries); rows no source hits keep their bits
    (-0.0 stays), and a bad index in any chunk is reported."""
    rng = np.random.default_rng(V + R)
    idx = rng.integers(0, V - 1, R)            # (row V - 1: never hit)
    src = rng.standard_normal((R, D)).astype(np.float32)
    gpu = rt.backend.gpu
    out = heap.put(np.full((V, D), -0.0, np.float32))
    rt.run("scatter_add_rows", out, (heap.put(src), heap.put(idx.astype(np.int32))), {})
    got = rt.read(out)
    assert ("scatter-direct", True) in gpu.pipelines
    np.testing.assert_allclose(got, _ref(src, idx, V), rtol=1e-5, atol=1e-4)
    assert np.signbit(got[V - 1]).all()
    np.testing.assert_array_equal(_run(rt, heap, src, idx, V), _run(rt, heap, src, idx, V))
    bad = idx.astype(np.int32)
    bad[R - 2] = V + 3                          # in the last chunk
    with pytest.raises(KernelError, match="out of range"):
        _run(rt, heap, src, bad, V)
