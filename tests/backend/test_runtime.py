"""The runtime on every backend: memory, stream order, errors, scopes, init switching."""

import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import torchic
from torchic import dispatcher


def _train_steps(n, w, b, xs, ys):
    for _ in range(n):
        loss = ((xs @ w + b - ys) ** 2).mean()
        w.grad = None
        b.grad = None
        loss.backward()
        with torchic.no_grad():
            w -= 0.05 * w.grad
            b -= 0.05 * b.grad
        loss.item()


def test_training_memory_is_flat(backend):
    torchic.manual_seed(0)
    xs = torchic.randn(32, 8)
    ys = torchic.randn(32, 1)
    w = torchic.randn(8, 1, requires_grad=True)
    b = torchic.zeros(1, requires_grad=True)
    _train_steps(50, w, b, xs, ys)          # warm-up
    # the cyclic GC off while measuring: garbage cycles an earlier test left on this runtime
    # would otherwise be freed at a random step (the loop's own blocks return by refcount)
    gc.collect()
    gc.disable()
    try:
        before = torchic.memory()
        _train_steps(950, w, b, xs, ys)
        after = torchic.memory()
    finally:
        gc.enable()
    assert after["bytes_in_use"] == before["bytes_in_use"]
    assert after["live_tensors"] == before["live_tensors"]
    assert after["live_blocks"] == before["live_blocks"]
    assert after["heap_capacity"] == before["heap_capacity"]
    assert after["recycled_allocs"] > before["recycled_allocs"]


def test_memory_figures_are_exact(backend):
    before = torchic.memory()
    t = torchic.zeros(1000)      # 4000 bytes -> one 4096-byte block (256-byte classes)
    mid = torchic.memory()
    assert mid["bytes_in_use"] - before["bytes_in_use"] == 4096
    assert mid["live_blocks"] - before["live_blocks"] == 1
    assert mid["live_tensors"] - before["live_tensors"] == 1
    v = t[::2]                   # a view holds no new block
    assert torchic.memory()["live_blocks"] == mid["live_blocks"]
    del t
    assert torchic.memory()["live_blocks"] == mid["live_blocks"]   # the view keeps it alive
    del v
    assert torchic.memory()["bytes_in_use"] == before["bytes_in_use"]


def test_freed_block_is_reused_while_readers_are_queued(backend):
    # hazard: free a block, reuse it at once and overwrite it, while earlier ops that
    # read the old contents may still be queued. Stream order must keep results right.
    rng = np.random.default_rng(0)
    expected, results = [], []
    for i in range(200):
        a_np = rng.standard_normal(64).astype(np.float32)
        a = torchic.tensor(a_np)
        r = (a * 2).exp().sum()        # reads a (queued)
        del a                          # a's block returns to the allocator now
        b = torchic.full((64,), float(i))   # very likely gets a's block back, overwrites it
        results.append((r, b))
        expected.append((np.exp(a_np.astype(np.float64) * 2).sum(), float(i)))
    for (r, b), (er, eb) in zip(results, expected):
        assert np.isclose(r.item(), er, rtol=1e-4)
        assert b.numpy()[0] == eb


def test_host_write_after_queued_reads(backend):
    a = torchic.ones(1000)
    total = a.sum()
    a.fill_(3.0)            # host-visible in-place write after a queued read
    total2 = a.sum()
    a[0] = 10.0
    assert total.item() == 1000 and total2.item() == 3000 and a.sum().item() == 3007


def test_dispose_and_track_tensors(backend):
    before = torchic.memory()["bytes_in_use"]
    t = torchic.ones(10)
    t.dispose()
    assert t.is_disposed
    with pytest.raises(RuntimeError, match="disposed"):
        t + 1
    with pytest.raises(RuntimeError, match="disposed"):
        t.numpy()
    assert "disposed" in repr(t)

    outer = torchic.ones(5)
    kept_holder = []
    with torchic.track_tensors():
        a = outer * 2
        b = a + 1
        kept_holder.append(torchic.keep(b * 3))
        view = outer[1:]            # view of outer storage: must survive
    assert a.is_disposed and b.is_disposed
    assert not kept_holder[0].is_disposed and kept_holder[0].tolist() == [9.0] * 5
    assert view.tolist() == [1.0] * 4 and not outer.is_disposed

    @torchic.track_tensors
    def step(x):
        y = x * 4
        z = y + 1
        return {"out": z}

    res = step(outer)
    assert res["out"].tolist() == [5.0] * 5

    def nested():
        inner_kept = torchic.track_tensors(lambda: torchic.ones(2) + 1)()
        tmp = inner_kept * 2
        return inner_kept, tmp

    x, tmp = torchic.track_tensors(nested)()
    assert x.tolist() == [2.0, 2.0] and tmp.tolist() == [4.0, 4.0]
    del a, b, kept_holder, view, outer, res, x, tmp
    assert torchic.memory()["bytes_in_use"] >= before   # constants may have been cached
    torchic.dispose([torchic.ones(3)], {"k": torchic.ones(2)})


def test_kernel_error_surfaces_at_next_read_and_runtime_survives(backend):
    table = torchic.randn(5, 3)
    bad = torchic.tensor([0, 7])                # 7 is out of range for 5 rows
    rows = table[bad]                           # queued: the kernel fails later
    with pytest.raises(torchic.KernelError, match="gather_rows"):
        rows.numpy()
    ok = (table * 2).sum()                      # the stream still runs
    assert np.isclose(ok.item(), table.numpy().sum() * 2, rtol=1e-5)
    with pytest.raises(torchic.KernelError, match="cross_entropy"):
        torchic.cross_entropy(torchic.randn(2, 3), torchic.tensor([0, 3])).item()
    assert torchic.ones(2).sum().item() == 2


def test_heap_cap(backend):
    torchic.init(backend, heap_cap=1 << 20)
    try:
        small = torchic.zeros(1000)
        with pytest.raises(torchic.HeapFullError, match=r"requested \d+ bytes.*cap of 1048576"):
            torchic.zeros(1 << 20)
        assert small.sum().item() == 0          # still usable
    finally:
        torchic.init(backend)


def test_init_switch_invalidates_old_tensors(backend):
    old = torchic.ones(3)
    torchic.init(backend)
    with pytest.raises(RuntimeError, match="previous runtime"):
        old + 1
    with pytest.raises(RuntimeError, match="previous runtime"):
        old.numpy()
    assert torchic.ones(3).sum().item() == 3


def test_threads_option(backend_name):
    rt = torchic.init(backend_name, threads=1)
    assert rt.backend.threads == 1
    a = np.random.default_rng(0).standard_normal((500, 300)).astype(np.float32)
    np.testing.assert_allclose(torchic.tensor(a).tanh().numpy(), np.tanh(a), atol=1e-6)
    torchic.init(backend_name)


def test_bad_init_arguments():
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        torchic.init("cuda")
    with pytest.raises(ValueError, match="threads"):
        torchic.init("workers", threads=0)
    with pytest.raises(ValueError, match="heap_cap"):
        torchic.init("workers", heap_cap=-5)


def test_two_threads_train_separate_models(backend):
    import threading

    def train(seed, out):
        gen = torchic.Generator(seed)
        xs = torchic.randn(16, 4, generator=gen)
        ys = torchic.randn(16, 1, generator=gen)
        w = torchic.randn(4, 1, generator=gen).requires_grad_()
        b = torchic.zeros(1, requires_grad=True)
        _train_steps(100, w, b, xs, ys)
        out[seed] = w.detach().numpy().copy()

    alone, together = {}, {}
    for s in (1, 2):
        train(s, alone)
    threads = [threading.Thread(target=train, args=(s, together)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in (1, 2):
        np.testing.assert_array_equal(alone[s], together[s])


def test_exit_with_queued_work_is_clean(backend_name):
    code = textwrap.dedent(f"""
        import torchic
        torchic.init({backend_name!r})
        a = torchic.randn(256, 256)
        for _ in range(300):
            a = (a @ a).tanh()
        print("queued")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "queued" in proc.stdout


def test_current_runtime_reports_backend(backend):
    assert torchic.get_backend() == backend
    assert dispatcher.runtime().backend.describe()["backend"] == backend


# what describe_platform reports per backend (`python -m torchic info`, bench, serve)
PLATFORM_KEYS = {"workers": {"kernels", "split_min_elements"},
                 "simd": {"kernels", "isa", "force"},
                 "webgpu": {"kernels", "adapters", "choose"}}


def test_describe_platform_of_every_backend(backend_name):
    import json
    info = dispatcher.backend_class(backend_name).describe_platform()
    json.dumps(info)                                    # JSON-able: the bench's results file
    assert PLATFORM_KEYS.get(backend_name, {"kernels"}) <= set(info), info
    assert isinstance(info["kernels"], str) and info["kernels"] != "?"


def test_describe_platform_default_and_info_command():
    class Bare(dispatcher.Backend):
        name = "bare"
    assert Bare.describe_platform() == {"kernels": "?"}
    proc = subprocess.run([sys.executable, "-m", "torchic", "info", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json
    report = json.loads(proc.stdout)["backends"]
    for name, entry in report.items():
        if entry["available"]:
            assert PLATFORM_KEYS.get(name, {"kernels"}) <= set(entry), (name, entry)


def test_init_after_the_runtime_was_closed_directly(backend_name):
    """A runtime closed by its own close() (not torchic.shutdown) is replaced by the next
    init: init has nothing of it to wait for (it used to sync it and raise its closed error)."""
    rt = dispatcher.init(backend_name)
    rt.close()
    fresh = dispatcher.init(backend_name)
    assert fresh is not rt and not fresh.closed
    assert torchic.ones(3).sum().item() == 3.0
