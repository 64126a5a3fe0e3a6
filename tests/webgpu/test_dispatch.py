"""Batching, caches, staging reuse, stream order, index errors and arena growth."""

import numpy as np
import pytest

import torchic
from torchic.dispatcher import KernelError, View


def _mlp_step_factory(seed=0, batch=16, vocab=11, emb=4, ctx=3, hidden=24):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, vocab, (200, ctx)).astype(np.int32)
    Y = rng.integers(0, vocab, 200).astype(np.int32)
    ws = [rng.standard_normal(s).astype(np.float32) * 0.3
          for s in ((vocab, emb), (ctx * emb, hidden), (hidden,), (hidden, vocab), (vocab,))]
    params = [torchic.tensor(w, requires_grad=True) for w in ws]
    C, W1, b1, W2, b2 = params

    def step():
        ix = rng.integers(0, len(Y), batch)
        xb, yb = torchic.tensor(X[ix]), torchic.tensor(Y[ix])
        h = torchic.tanh(C[xb].view(batch, -1) @ W1 + b1)
        loss = torchic.cross_entropy(h @ W2 + b2, yb)
        for p in params:
            p.grad = None
        loss.backward()
        with torchic.no_grad():
            for p in params:
                p -= 0.1 * p.grad
        return loss.item()
    return step


def test_training_step_is_a_few_submits_and_compiles_nothing_after_warmup(rt):
    gpu = rt.backend.gpu
    step = _mlp_step_factory()
    step()
    step()
    before = dict(gpu.stats)
    losses = [step() for _ in range(3)]
    after = gpu.stats
    assert all(np.isfinite(losses))
    assert after["compiles"] == before["compiles"], "a pipeline was compiled after warm-up"
    assert after["bind_groups"] == before["bind_groups"], "bind groups were not reused"
    # a handful: one per submit_ops dispatches and one for the read
    per_step = (after["dispatches"] - before["dispatches"]) // 3
    assert after["submits"] - before["submits"] <= 3 * (per_step // gpu.submit_ops + 1)
    assert after["dispatches"] - before["dispatches"] >= 3 * 20


def _doublings(rt, n):
    """A 16-float view of ones doubled in place by n adds: (view, submits during the adds)."""
    gpu = rt.backend.gpu
    a = View(rt.alloc(4 * 64), 0, (16,), (1,), "f32")
    rt.write(a, np.ones(16, np.float32))
    s0 = gpu.stats["submits"]
    for _ in range(n):
        rt.run("add", a, (a, a), {})
    return a, gpu.stats["submits"] - s0


def test_batch_is_submitted_every_batch_ops(webgpu_available):
    rt = torchic.init("webgpu", batch_ops=8)
    try:
        a, submits = _doublings(rt, 20)
        assert submits == 2          # ops 9 and 17 started new batches
        np.testing.assert_array_equal(rt.read(a), np.full(16, 2.0 ** 20, np.float32))
    finally:
        torchic.shutdown()


@pytest.mark.parametrize("every,submits", [("5", 2), ("0", 0)])
def test_eager_ops_are_submitted_every_submit_ops(webgpu_available, monkeypatch, every,
                                                   submits):
    """The GPU starts on a long step's ops while Python encodes the rest: a submit every
    TORCHIC_WEBGPU_SUBMIT_OPS dispatches (0: only when a result is needed), stream order
    kept; a timed section stays one pass."""
    monkeypatch.setenv("TORCHIC_WEBGPU_SUBMIT_OPS", every)
    rt = torchic.init("webgpu")
    try:
        gpu = rt.backend.gpu
        a, got = _doublings(rt, 12)
        assert got == submits     # after ops 5 and 10
        np.testing.assert_array_equal(rt.read(a), np.full(16, 2.0 ** 12, np.float32))
        gpu.timed(lambda: [rt.run("add", a, (a, a), {}) for _ in range(12)])
        assert gpu.submit_ops == int(every)
        np.testing.assert_array_equal(rt.read(a), np.full(16, 2.0 ** 24, np.float32))
    finally:
        torchic.shutdown()


def test_a_bad_submit_count_is_a_clear_error(webgpu_available, monkeypatch):
    monkeypatch.setenv("TORCHIC_WEBGPU_SUBMIT_OPS", "-3")
    with pytest.raises(ValueError, match="TORCHIC_WEBGPU_SUBMIT_OPS"):
        torchic.init("webgpu")
    torchic.shutdown()


def test_staging_buffer_is_reused(rt, heap):
    gpu = rt.backend.gpu
    v = heap.put(np.arange(1000, dtype=np.float32))
    rt.read(v)
    staging = gpu.staging
    grows = gpu.stats["staging_grows"]
    for _ in range(5):
        np.testing.assert_array_equal(rt.read(v), np.arange(1000, dtype=np.float32))
    assert gpu.staging is staging and gpu.stats["staging_grows"] == grows
    big = heap.put(np.ones(1 << 16, np.float32))      # bigger than the staging buffer
    assert rt.read(big).sum() == 1 << 16
    assert gpu.stats["staging_grows"] == grows + 1


def test_host_write_into_pending_batch_keeps_stream_order(rt, heap):
    gpu = rt.backend.gpu
    a = heap.put(np.full(64, 1.0))
    b = heap.empty((64,))
    rt.run("neg", b, (a,), {})                         # reads a (not yet submitted)
    rt.write(a, np.full(64, 5.0, np.float32))          # must land after that read
    c = heap.empty((64,))
    rt.run("neg", c, (a,), {})
    assert gpu.stats["uploads_in_batch"] >= 1
    np.testing.assert_array_equal(rt.read(b), np.full(64, -1.0, np.float32))
    np.testing.assert_array_equal(rt.read(c), np.full(64, -5.0, np.float32))


def test_strided_read_and_write(rt, heap):
    base = np.arange(60, dtype=np.float32).reshape(5, 12)
    v = heap.put(base)
    col = View(v.block, 3, (5, 4), (12, 2), "f32")    # base[:, 3:11:2]
    np.testing.assert_array_equal(rt.read(col), base[:, 3:11:2])
    rt.run("add", heap.empty((1,)), (heap.put([1.0]), heap.put([2.0])), {})   # pending work
    rt.write(col, np.full((5, 4), -1.0, np.float32))
    want = base.copy()
    want[:, 3:11:2] = -1
    np.testing.assert_array_equal(rt.read(v), want)


@pytest.mark.parametrize("case", ["gather", "scatter", "cross_entropy", "cross_entropy_grad"])
def test_index_errors_surface_at_next_read_naming_the_op(rt, heap, case):
    table = heap.put(np.ones((4, 3)))
    bad = heap.put(np.array([0, 7, 1], np.int32))
    if case == "gather":
        op, out, ins = "gather_rows", heap.empty((3, 3)), (table, bad)
    elif case == "scatter":
        op, out, ins = "scatter_add_rows", heap.put(np.zeros((4, 3))), (heap.put(np.ones((3, 3))), bad)
    elif case == "cross_entropy":
        op, out, ins = "cross_entropy", heap.empty((3,)), (heap.put(np.ones((3, 4))), bad)
    else:
        op, out, ins = ("cross_entropy_grad", heap.empty((3, 4)),
                        (heap.put(np.ones((3, 4))), bad, heap.put(np.ones(3))))
    ok = heap.put(np.array([1.0, 2.0]))
    after = heap.empty((2,))
    rt.run(op, out, ins, {})
    rt.run("neg", after, (ok,), {})                     # later ops still run
    with pytest.raises(KernelError, match=rf"{op}.*7 is out of range \[0, 4\)"):
        rt.read(after)
    np.testing.assert_array_equal(rt.read(after), [-1.0, -2.0])   # the error is reported once
    rt.sync()


def test_negative_index_is_an_error_too(rt, heap):
    out = heap.empty((1, 2))
    rt.run("gather_rows", out, (heap.put(np.ones((3, 2))), heap.put(np.array([-1], np.int32))), {})
    with pytest.raises(KernelError, match="gather_rows.*-1"):
        rt.sync()


def test_arena_growth_and_ops_across_arenas(rt, heap):
    be = rt.backend
    assert be.max_arena_bytes <= be.gpu.max_buffer     # (larger than a binding: windows.py)
    assert rt.allocator.arena_bytes <= be.gpu.max_binding
    assert be.max_arena_bytes % be.alignment == 0
    n = rt.allocator.arena_bytes // 4 // 2 + 1024        # two of these don't fit one arena
    a = heap.put(np.ones(n, np.float32))
    b = heap.put(np.full(n, 2.0, np.float32))
    assert a.block.arena != b.block.arena
    c = heap.empty((n,))
    rt.run("add", c, (a, b), {})
    got = rt.read(c)
    assert got.shape == (n,) and np.all(got == 3.0)
    assert rt.allocator.stats()["arenas"] >= 2


def test_allocation_above_the_binding_limit_is_refused(rt):
    with pytest.raises(torchic.HeapFullError, match="largest buffer"):
        rt.alloc(rt.backend.max_arena_bytes + 256)


def test_describe_and_timestamps(rt, heap):
    d = rt.backend.describe()
    assert d["backend"] == "webgpu" and d["max_arena_bytes"] > 0
    if not rt.backend.gpu.has_timestamps():
        pytest.skip("adapter without timestamp-query")
    a = heap.put(np.ones(1024))
    ns = rt.backend.timed(lambda: rt.run("exp", a, (a,), {}))
    assert ns >= 0


def test_many_dim_views_elementwise_and_reduce(rt, heap):
    # 8 dims that do not collapse: elementwise peels dims on the host, reduce copies first
    base = np.arange(2 * 3 * 2 * 3 * 2 * 3 * 2 * 3 * 2, dtype=np.float32)
    x = base.reshape(2, 3, 2, 3, 2, 3, 2, 3, 2)[..., 0]
    v = heap.put(base)
    strides = tuple(s // 4 for s in base.reshape(2, 3, 2, 3, 2, 3, 2, 3, 2).strides[:-1])
    xv = View(v.block, 0, x.shape, strides, "f32")
    y = heap.empty(x.shape)
    rt.run("neg", y, (xv,), {})
    np.testing.assert_array_equal(rt.read(y), -x)
    s = heap.empty(x.shape[:1])
    rt.run("sum", s, (xv,), {"naxes": 7})
    np.testing.assert_allclose(rt.read(s), x.reshape(2, -1).sum(1), rtol=1e-6)


def test_every_failed_op_is_reported_even_past_the_tag_space(rt, heap):
    from torchic.backends.webgpu import gpu as gpu_mod
    table = heap.put(np.ones((4, 2)))
    good = heap.put(np.array([1, 2], np.int32))
    bad_a = heap.put(np.array([5], np.int32))
    bad_b = heap.put(np.array([-3], np.int32))
    out2, out1 = heap.empty((2, 2)), heap.empty((1, 2))
    rt.run("gather_rows", out1, (table, bad_a), {})
    for _ in range(gpu_mod.MAX_TAGS + 5):            # forces a status harvest midway
        rt.run("gather_rows", out2, (table, good), {})
    rt.run("cross_entropy", heap.empty((1,)), (table.__class__(table.block, 0, (1, 2), (2, 1), "f32"),
                                               bad_b), {})
    with pytest.raises(KernelError) as info:
        rt.read(out2)
    text = str(info.value)
    assert "gather_rows" in text and "5 is out of range" in text
    assert "cross_entropy" in text and "-3" in text
    np.testing.assert_array_equal(rt.read(out2), np.ones((2, 2), np.float32))


def test_profiled_times_each_dispatch_and_gives_its_buffers_back(rt, heap):
    gpu = rt.backend.gpu
    if not gpu.has_timestamps():
        pytest.skip("the adapter has no timestamp queries")
    x = heap.put(np.arange(4096, dtype=np.float32) / 4096)
    y = heap.empty((4096,))
    kept = len(gpu._keep)

    def work():
        rt.run("neg", y, (x,), {})
        rt.run("exp", y, (y,), {})
        rt.run("sum", heap.empty(()), (y,), {"naxes": 1})
    for _ in range(3):
        before = gpu.stats["dispatches"]
        times = rt.backend.profiled(work)
        assert len(times) == gpu.stats["dispatches"] - before >= 3    # one row a dispatch
        assert all(isinstance(k, tuple) and ns >= 0 for k, ns in times)
        assert [k[0] for k, _ in times][:2] == ["ew", "ew"]
    assert len(gpu._keep) == kept        # no query resolve buffer left behind
    np.testing.assert_allclose(rt.read(y), np.exp(-np.arange(4096, dtype=np.float32) / 4096),
                               rtol=1e-5)
