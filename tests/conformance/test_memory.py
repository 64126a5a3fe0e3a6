"""Memory on every backend: flat over 10,000 training steps, every block back at dispose,
track_tensors scopes release every temporary.

Flat means *exactly* flat, with Python's cyclic garbage collector switched off:
after a warm-up, bytes in use, live blocks, live tensors, heap capacity, arenas
and the peak are identical at every checkpoint. Blocks must come back by
reference counting the moment the last tensor dies (no reference cycles),
which is what keeps a GPU heap from filling up between collections.

TORCHIC_MEMORY_STEPS sets the step count (default 10,000 on every backend; a
step is a forward + backward + SGD update of a small MLP, the loss read every
10 steps).
"""

import asyncio
import contextlib
import gc
import os
import threading

import numpy as np
import pytest

import torchic
from torchic import dispatcher
from torchic.functions import common as functions   # the scalar-constant cache

STEPS = int(os.environ.get("TORCHIC_MEMORY_STEPS", "10000"))
WARMUP = 50
CHECK_EVERY = 1000
KEYS = ("bytes_in_use", "live_blocks", "live_tensors", "heap_capacity", "arenas", "peak_bytes")


@contextlib.contextmanager
def no_cyclic_gc():
    """Python's cyclic GC off (blocks must come back by reference counting alone); cached
    constants of earlier runtimes are dropped first so that live-tensor counts settle."""
    rt = dispatcher.runtime()
    for key, t in list(functions._constants.items()):
        if t._storage.runtime is not rt:
            del functions._constants[key]
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def snapshot():
    m = torchic.memory()
    return {k: m[k] for k in KEYS}


def _constants_on(rt):
    return [t for t in functions._constants.values()
            if t._storage.runtime is rt and t._storage.block is not None]


def without_constants():
    """Heap figures minus the scalar-constant cache (functions.constant: Python numbers
    used as operands are uploaded once and cached, at most ~1024 of them)."""
    m = torchic.memory()
    consts = _constants_on(dispatcher.runtime())
    return {"bytes_in_use": m["bytes_in_use"] - sum(t._storage.block.size for t in consts),
            "live_blocks": m["live_blocks"] - len(consts),
            "live_tensors": m["live_tensors"] - len(consts),
            "heap_capacity": m["heap_capacity"], "arenas": m["arenas"]}


class MLP:
    """A tiny MLP on plain tensors (so only the core is under test here)."""

    def __init__(self, seed=0):
        g = torchic.Generator(seed)
        self.X = torchic.randn(16, 4, generator=g)
        self.Y = torchic.randn(16, 1, generator=g)
        self.params = [(torchic.randn(4, 8, generator=g) * 0.5).requires_grad_(),
                       torchic.zeros(8, requires_grad=True),
                       (torchic.randn(8, 1, generator=g) * 0.5).requires_grad_(),
                       torchic.zeros(1, requires_grad=True)]

    def loss(self):
        w1, b1, w2, b2 = self.params
        return torchic.mse_loss((self.X @ w1 + b1).tanh() @ w2 + b2, self.Y)

    def step(self, read=True):
        loss = self.loss()
        loss.backward()
        with torchic.no_grad():
            for p in self.params:
                p -= 0.05 * p.grad
                p.grad = None
        return loss.item() if read else loss


def test_training_memory_flat_over_many_steps(backend):
    model = MLP()
    with no_cyclic_gc():
        for _ in range(WARMUP):
            model.step()
        ref = snapshot()
        first_loss = model.step()
        for i in range(1, STEPS + 1):
            model.step(read=i % 10 == 0)
            if i % CHECK_EVERY == 0 or i == STEPS:
                now = snapshot()
                assert now == ref, f"memory changed by step {i}: {ref} -> {now}"
        last_loss = model.step()
    assert last_loss < first_loss


def test_training_with_nn_and_adam_memory_flat(backend):
    nn = pytest.importorskip("torchic.nn")
    optim = pytest.importorskip("torchic.optim")
    torchic.manual_seed(0)
    model = nn.Sequential(nn.Embedding(12, 4), nn.Flatten(), nn.Linear(12, 16), nn.Tanh(),
                          nn.Linear(16, 12))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    X = torchic.randint(0, 12, (20, 3))
    Y = torchic.randint(0, 12, (20,))

    def step():
        loss = torchic.cross_entropy(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    # Adam's bias corrections are new Python floats every step, so every step caches
    # two new scalar constants (bounded: the cache is cleared past 1024 entries);
    # everything else must be exactly flat
    steps = max(STEPS // 10, 100)
    with no_cyclic_gc():
        for _ in range(WARMUP):
            step()
        torchic.sync()
        ref = without_constants()
        for i in range(steps):
            loss = step()
        loss.item()
        del loss          # its graph may hold a constant the cache has dropped since
        assert without_constants() == ref
        assert len(functions._constants) <= 1025


def test_forward_without_backward_frees_without_gc(backend):
    """Evaluating with grad enabled and never calling backward must not leak until a
    garbage collection (saved outputs must not form reference cycles)."""
    model = MLP()
    with no_cyclic_gc():
        model.loss().item()
        ref = without_constants()
        for _ in range(200):
            loss = model.loss()
            loss = (loss.exp().softmax(0).amax(0, keepdim=True) + loss.sigmoid()).sum()
            loss.item()
        del loss
        assert without_constants() == ref


def test_dispose_everything_returns_every_block(backend):
    rt = torchic.init(backend)
    base = torchic.memory()
    assert base["bytes_in_use"] == 0 and base["live_blocks"] == 0
    live0 = base["live_tensors"]
    with no_cyclic_gc():
        torchic.manual_seed(0)
        table = torchic.randn(10, 4, requires_grad=True)
        w = torchic.randn(12, 10, requires_grad=True)
        big = torchic.randn(600, 700)              # a large block (coalescing path)
        idx = torchic.randint(0, 10, (8, 3))
        tgt = torchic.randint(0, 10, (8,))
        kept = []
        for i in range(30):
            x = table[idx].reshape(8, 12)
            logits = torchic.cat([x, x.T.T], 0)[:8] @ w
            loss = torchic.cross_entropy(logits.log_softmax(-1), tgt) + \
                (big[:4, :5] * 0.0).sum() + logits.softmax(-1).amax()
            loss.backward()
            with torchic.no_grad():
                table -= 0.1 * table.grad
                w.sub_(w.grad * 0.1)
                w[0, :2] = 0.5
            table.grad, w.grad = None, None
            if i % 10 == 0:
                kept.append(loss.detach())
        torchic.sync()
        assert torchic.memory()["bytes_in_use"] > 0
        torchic.dispose(table, w, big, idx, tgt, kept)
        del table, w, big, idx, tgt, kept, x, logits, loss
        consts = _constants_on(rt)
        m = torchic.memory()
        held = sum(t._storage.block.size for t in consts)
        assert m["bytes_in_use"] == held, (m, f"{len(consts)} cached constants hold {held}")
        assert m["live_blocks"] == len(consts)
        assert m["live_tensors"] <= live0 + len(consts)
        torchic.dispose(consts)
        del consts
        m = torchic.memory()
        assert m["bytes_in_use"] == 0 and m["live_blocks"] == 0, m
    # and the allocator's books balance: every arena is one free range again
    rt.allocator.stats()          # takes freed blocks back
    with rt.allocator.lock:
        rt.allocator._flush_buckets()
    ranges = sorted(rt.allocator.free_ranges())
    sizes = rt.allocator.arena_sizes
    assert ranges == [(a, 0, size) for a, size in enumerate(sizes)], ranges


def _scoped_step(model):
    with torchic.track_tensors():
        loss = model.loss()
        loss.backward()
        with torchic.no_grad():
            for p in model.params:
                p -= 0.05 * p.grad
                p.grad = None
        return loss.item()


def test_track_tensors_releases_every_temporary(backend):
    model = MLP()
    with no_cyclic_gc():
        # Constants get cached on the first step, some after its peak (the SGD step's 0.05):
        # the second step is the first whose peak has every constant live.
        _scoped_step(model)
        _scoped_step(model)
        before = snapshot()
        for _ in range(300):
            _scoped_step(model)
            assert torchic.memory()["bytes_in_use"] == before["bytes_in_use"]
        assert snapshot() == before


def test_track_tensors_nested_keep_return_and_exception(backend):
    x = torchic.ones(64)
    x.sum().item()
    base = without_constants()["bytes_in_use"]

    @torchic.track_tensors
    def inner(t):
        a = t * 2
        b = torchic.keep(a + 1)         # kept past every enclosing scope
        c = a * 3                       # returned: handed to the enclosing scope
        return c, b

    with torchic.track_tensors():
        c, b = inner(x)
        d = c + b                       # a temporary of the outer scope
        assert (d.sum().item(), c.sum().item()) == (64 * 9, 64 * 6)
    assert c.is_disposed and d.is_disposed and not b.is_disposed
    assert b.sum().item() == 64 * 3
    b.dispose()
    assert without_constants()["bytes_in_use"] == base

    with pytest.raises(ZeroDivisionError):
        with torchic.track_tensors():
            y = (x * 5).exp()
            1 / 0  # noqa: B018  (raises inside the scope)
    assert y.is_disposed
    assert without_constants()["bytes_in_use"] == base


def test_track_tensors_in_concurrent_asyncio_tasks_and_threads(backend):
    x = torchic.ones(32)
    x.sum().item()
    base = without_constants()["bytes_in_use"]

    async def task(k):
        total = 0.0
        for i in range(5):
            with torchic.track_tensors():
                y = (x * float(k) + float(i)).tanh()
                await asyncio.sleep(0)            # interleave with the other task
                total += await y.sum().item_async()
        return total

    async def main():
        return await asyncio.gather(task(1), task(2))

    got = asyncio.run(main())
    assert np.allclose(got, [sum(32 * np.tanh(k + i) for i in range(5)) for k in (1, 2)],
                       rtol=1e-5)
    assert without_constants()["bytes_in_use"] == base

    errors = []

    def worker(k):
        try:
            for i in range(20):
                with torchic.track_tensors():
                    (x * float(k) - i).relu().sum().item()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert without_constants()["bytes_in_use"] == base


def test_heap_full_leaves_no_partial_allocation(backend):
    rt = torchic.init(backend, heap_cap=1 << 20)
    try:
        a = torchic.ones(1000)
        before = torchic.memory()
        for _ in range(5):
            with pytest.raises(torchic.HeapFullError):
                torchic.ones(300, 1000)
            with pytest.raises(torchic.HeapFullError):
                a.expand(300, 1000).contiguous()
        assert torchic.memory()["bytes_in_use"] == before["bytes_in_use"]
        assert torchic.memory()["live_blocks"] == before["live_blocks"]
        assert a.sum().item() == 1000
    finally:
        del rt
        torchic.init(backend)


_ = dispatcher


def test_a_constant_evicted_while_an_op_reads_it(backend):
    """A kernel View holds a block, not the tensor: a cached constant the op reads must stay
    alive until the op is enqueued, even when fetching the next constant evicts it from the
    cache (it once was freed and reused by the next constant: layer_norm without affine
    read weight 1.0 as 0.0 and returned zeros). Here 1.0 is the oldest of a full cache and
    0.0 is absent, the state a long run reaches; then every case runs with a cache of one
    entry, where every new constant evicts the one before."""
    functions._constants.clear()
    functions.constant(1.0, "f32")
    for i in range(functions.MAX_CONSTANTS - 1):
        functions.constant(1000.0 + i, "f32")
    x = torchic.tensor([1.0, 2.0, 3.0, 5.0], requires_grad=True)
    y = torchic.nn.functional.layer_norm(x, (4,))
    ref = (np.array([1.0, 2, 3, 5]) - 2.75) / np.sqrt(2.1875 + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-5)
    functions._constants.clear()
    functions.constant(1.0, "f32")
    for i in range(functions.MAX_CONSTANTS - 1):
        functions.constant(1000.0 + i, "f32")
    (y * torchic.tensor([1.0, -2.0, 0.5, 3.0])).sum().backward()
    assert np.isfinite(x.grad.numpy()).all() and np.abs(x.grad.numpy()).max() > 0.1

    from torchic.testing import CASES
    saved = functions.MAX_CONSTANTS
    functions.MAX_CONSTANTS = 1
    try:
        for name in CASES:
            CASES[name].check(layout="contiguous")
    finally:
        functions.MAX_CONSTANTS = saved


def test_a_cache_filled_by_another_thread_leaves_this_scope_whole(backend):
    """A cache allocation (a new scalar constant) leaves the scopes only of its own context:
    it once zeroed the global count of open scopes, so a tensor the main thread created
    inside track_tensors meanwhile escaped its scope (seen once in the full suite)."""
    stop = threading.Event()

    def fill_constants():
        k = 0
        while not stop.is_set():
            functions.constant(5000.0 + k % 1000, "f32")
            k += 1

    filler = threading.Thread(target=fill_constants)
    filler.start()
    try:
        outer = torchic.ones(5)
        for _ in range(200):
            with torchic.track_tensors():
                made = [outer * 2 for _ in range(5)]
            assert all(t.is_disposed for t in made)
    finally:
        stop.set()
        filler.join()
