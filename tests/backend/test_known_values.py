"""Host-known values of integer tensors (known.py, issue 45): `int(i)`, `i.item()`, slice
bounds and index keys of a 0-d integer tensor read no memory when its value is known, and
the known value is never stale: every way a block is written forgets it.

Each staleness test first makes a value known (a read: known on every backend), checks it
is (so the test can fail), writes the storage one way, then checks int(), item(), a slice
bound and an index key see the new value, as PyTorch's do."""

import os

import numpy as np
import pytest
import torch

import torchic as tc
from torchic import dispatcher, raw
from torchic.distributed import borrow

pytestmark = pytest.mark.usefixtures("backend")


def _known(t):
    """The value known.py holds for one-element t, or None."""
    from torchic import known
    return known.value(t)


def _reads():
    """A counter of the runtime's reads (installed until .restore())."""
    rt = dispatcher.runtime()
    real = rt.read
    count = [0]

    def read(view):
        count[0] += 1
        return real(view)
    saved = rt.rebind(read=read)
    return count, lambda: rt.restore(saved)


def _check(t, expected):
    """t (a one-element integer tensor) reads as `expected` every way an index does."""
    data = tc.arange(1000)
    assert int(t) == expected
    assert t.item() == expected
    assert t.__index__() == expected
    assert data[t:t + 2].tolist() == [expected, expected + 1]
    assert data[t].item() == expected
    assert list(range(10, 1010))[t] == 10 + expected


def _make_known(values=(3, 4, 5, 6)):
    """A 1-d int64 tensor and its element 1, its value known (read once)."""
    base = tc.tensor(list(values))
    i = base[1]
    assert int(i) == values[1]
    assert _known(i) == values[1]
    return base, i


# -- reading once ---------------------------------------------------------------------

def test_iteration_reads_a_small_tensor_once(backend):
    ix = tc.randint(0, 900, (32,))
    tc.sync()
    expected = torch.tensor(ix.tolist())
    count, restore = _reads()
    try:
        got = [int(i) for i in ix]
        bounds = [(int(i + 8), int(8 + i), int(i - 1), int(2 * i)) for i in ix]
    finally:
        restore()
    assert got == [int(i) for i in expected]
    assert bounds == [(int(i + 8), int(8 + i), int(i - 1), int(2 * i)) for i in expected]
    assert count[0] <= 1


def test_get_batch_equals_pytorchs(backend):
    values = np.random.default_rng(0).integers(0, 65, 300)
    data, tdata = tc.tensor(values), torch.tensor(values)
    starts = [5, 17, 250, 0, 291]
    ix, tix = tc.tensor(starts), torch.tensor(starts)
    x = tc.stack([data[i:i + 8] for i in ix])
    y = tc.stack([data[i + 1:i + 8 + 1] for i in ix])
    tx = torch.stack([tdata[i:i + 8] for i in tix])
    ty = torch.stack([tdata[i + 1:i + 8 + 1] for i in tix])
    assert x.tolist() == tx.tolist() and y.tolist() == ty.tolist()


def test_element_views_alias_the_base(backend):
    ix = tc.tensor([1, 2, 3])
    i = ix[0]
    assert int(i) == 1
    ix[0] = 5
    _check(i, 5)
    elements = list(ix)
    ix.add_(10)
    assert [int(e) for e in elements] == [15, 12, 13]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_arithmetic_equals_pytorchs(backend, dtype):
    for v, k in ((5, 3), (120, 10), (250, 10), (-7, 4), (100, 2)):
        info = torch.iinfo(getattr(torch, dtype))
        if not info.min <= v <= info.max:
            continue
        a = tc.tensor(v, dtype=getattr(tc, dtype))
        b = torch.tensor(v, dtype=getattr(torch, dtype))
        for f in (lambda x: x + k, lambda x: k + x, lambda x: x - k, lambda x: k - x,
                  lambda x: x * k, lambda x: k * x, lambda x: x + x, lambda x: x * x,
                  lambda x: x - x + k):
            r, e = f(a), f(b)
            assert r.dtype == getattr(tc, str(e.dtype).split(".")[1])
            assert int(r) == int(e) and r.item() == e.item()


def test_int64_overflow_wraps_as_pytorchs(backend):
    if backend == "webgpu":
        pytest.skip("webgpu stores int64 in 32-bit words (its own overflow rule)")
    big = 2 ** 62
    a, b = tc.tensor(big), torch.tensor(big)
    assert int(a * 4) == int(b * 4) and int(a + a) == int(b + b)
    assert int(tc.tensor(2 ** 63 - 1) + 1) == int(torch.tensor(2 ** 63 - 1) + 1)


def test_window_read_at_the_end_of_a_block(backend):
    t = tc.arange(5)
    assert [int(t[k]) for k in (4, 3, 0)] == [4, 3, 0]
    big = tc.arange(10_000)
    assert int(big[9_999]) == 9_999 and int(big[5_000]) == 5_000


# -- every write path forgets ---------------------------------------------------------

def test_inplace_op_through_another_view(backend):
    base, i = _make_known()
    base.add_(100)
    _check(i, 104)
    base[1:3].fill_(7)
    _check(i, 7)
    base.mul_(2)
    _check(i, 14)


def test_inplace_op_on_the_element_itself(backend):
    _, i = _make_known()
    i += 2
    _check(i, 6)
    i.zero_()
    _check(i, 0)


def test_index_assignment(backend):
    base, i = _make_known()
    base[1] = 40
    _check(i, 40)
    base[tc.tensor([0, 1])] = tc.tensor([8, 9])
    _check(i, 9)
    base[base > 5] = 2
    _check(i, 2)
    base[tc.tensor(1)] += 5
    _check(i, 7)


def test_out_keyword(backend):
    base, i = _make_known()
    tc.add(base, 1, out=base)
    _check(i, 5)
    _, j = _make_known()
    tc.mul(tc.tensor(6), 2, out=j)
    _check(j, 12)


def test_copy_(backend):
    base, i = _make_known()
    base.copy_(tc.tensor([0, 21, 0, 0]))
    _check(i, 21)
    i.copy_(tc.tensor(33))
    _check(i, 33)


def test_raw_write_into_an_existing_tensor(backend):
    base, i = _make_known()
    raw.write(base, np.array([1, 55, 1, 1], dtype=np.int64))
    _check(i, 55)
    raw.write(i, np.array(56, dtype=np.int64))
    _check(i, 56)


def test_arithmetic_result_then_written(backend):
    _, i = _make_known()
    j = i + 8
    assert int(j) == 12
    j.add_(1)
    _check(j, 13)


def test_host_alias_is_never_cached(backend):
    base, i = _make_known()
    alias = np.asarray(base, copy=False) if backend != "webgpu" else None
    if alias is None:
        pytest.skip("webgpu has no host alias")
    alias[1] = 77
    _check(i, 77)
    alias[1] = 78      # a second write through the alias, after the value was read again
    _check(i, 78)


def test_dlpack_export_is_never_cached(backend):
    if backend == "webgpu":
        pytest.skip("webgpu exports a copy")
    base, i = _make_known()
    exported = np.from_dlpack(base)
    exported[1] = 61
    _check(i, 61)
    shared = torch.from_dlpack(base)
    shared[1] = 62
    _check(i, 62)


def test_collective_buffer(backend):
    base, i = _make_known()
    buffer, give_back = borrow(base)
    buffer[1] = 90
    give_back()
    _check(i, 90)
    buffer[1] = 91      # (CPU backends: the buffer is the heap itself)
    give_back()
    _check(i, 91)


def test_data_and_set_swap(backend):
    _, i = _make_known()
    i.data = tc.tensor(17)
    _check(i, 17)
    _, j = _make_known()
    j.data = tc.tensor([0, 0, 23])[2]
    _check(j, 23)


def test_dispose_and_scopes(backend):
    _, i = _make_known()
    i.dispose()
    with pytest.raises(RuntimeError, match="disposed"):
        int(i)
    with tc.track_tensors():
        k = tc.tensor(4) + 1
        assert int(k) == 5
    with pytest.raises(RuntimeError, match="disposed"):
        k.item()
    fresh = tc.empty((), dtype=tc.int64)      # (likely the recycled block of k)
    fresh.fill_(8)
    _check(fresh, 8)


def test_compiled_in_place_update_of_an_argument(backend):
    @tc.compile
    def bump(x):
        x.add_(3)

    base, i = _make_known()
    for n in range(1, 5):        # the record, then replays
        bump(base)
        _check(i, 4 + 3 * n)


def test_compiled_update_of_captured_state(backend):
    counter = tc.tensor([0, 0])

    @tc.compile
    def step(x):
        counter.add_(1)
        return x * 2

    c = counter[0]
    for n in range(1, 5):
        step(tc.ones(2))
        _check(c, n)


def test_compiled_function_cannot_bake_a_known_index(backend):
    data = tc.arange(20)

    @tc.compile
    def window(x, i):
        return x[i:i + 2]

    i = tc.tensor(3)
    assert int(i) == 3
    assert window(data, i).tolist() == [3, 4]      # (the first call runs eagerly)
    with pytest.raises(Exception, match="read of tensor values"):
        window(data, i)     # (recorded: the bound must not be baked into the program)


def test_compiled_outputs_are_fresh_each_replay(backend):
    @tc.compile
    def f(x):
        return x + 1

    for v in range(4):
        y = f(tc.tensor([v, v]))
        _check(y[0], v + 1)


def test_a_write_issued_during_a_read_is_not_hidden(backend):
    """(another thread's write between a read's issue and its return: the read's window
    must not stand for the memory written after it)"""
    base = tc.tensor([1, 2, 3])
    base.add_(0)          # (nothing known of it now)
    assert _known(base[1]) is None
    rt = dispatcher.runtime()
    real = rt.read

    def read_then_another_write(view):
        got = real(view)
        base[1] = 9       # issued after the read: as another thread's write would be
        return got
    saved = rt.rebind(read=read_then_another_write)
    try:
        assert int(base[0]) == 1
    finally:
        rt.restore(saved)
    _check(base[1], 9)


def test_new_small_int_tensors_need_no_read(backend):
    count, restore = _reads()
    try:
        t = tc.tensor([4, 5, 6])
        ix = tc.randint(0, 50, (8,))
        values = [int(v) for v in t] + [int(i + 1) for i in ix]
    finally:
        restore()
    assert values[:3] == [4, 5, 6]
    assert values[3:] == [v + 1 for v in ix.tolist()]
    assert count[0] == 0


_FORK_SCRIPT = """
import json, os, sys
import torchic as tc
tc.init(sys.argv[1], threads=1)
ix = tc.tensor([3, 4, 5])
i = ix[1]
j = i + 10
assert int(i) == 4 and int(j) == 14
pid = os.fork()
if pid == 0:
    before = [int(i), int(j)]
    ix[1] = 40
    j.add_(1)
    print(json.dumps({"child": before + [int(i), int(j), int(ix[1] + 1)]}), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
after = [int(i), int(j)]
ix.add_(100)
print(json.dumps({"parent": after + [int(i), int(j)]}), flush=True)
"""


def test_fork_child_and_parent_each_see_their_own_writes(backend):
    if backend == "webgpu":
        pytest.skip("a forked child cannot use webgpu (test_fork_threads.py)")
    import json
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, backend], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    got = {}
    for line in out.stdout.splitlines():
        got.update(json.loads(line))
    assert got["child"] == [4, 14, 40, 15, 41]
    assert got["parent"] == [4, 14, 104, 14]


# -- results held on the host (tensor.HostScalar): no kernel until the memory is needed --


def _held(t):
    """Whether t's value is held on the host only (no block yet)."""
    return t._storage.pending is not None


def test_known_arithmetic_issues_no_kernel(backend):
    from torchic.testing.checks import issued_ops
    data = tc.arange(100)
    ix = tc.tensor([3, 50, 91])
    out = []
    ops = issued_ops(lambda: out.extend((i + 8, 1 + i, i - 2, i * 3, (i + 1) + (i + 8))
                                        for i in ix))
    assert ops == []
    for i, (a, b, c, d, e) in zip((3, 50, 91), out):
        assert _held(a) and (a.dtype, a.shape) == (tc.int64, ())
        assert [int(a), int(b), int(c), int(d), int(e)] == [i + 8, 1 + i, i - 2, i * 3, 2 * i + 9]
        assert data[i:a].tolist() == list(range(i, i + 8))
    assert issued_ops(lambda: int(out[0][0]) + out[0][0].item()) == []
    assert _held(out[0][0])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_held_result_in_a_kernel_equals_pytorchs(backend, dtype):
    tdt, cdt = getattr(torch, dtype), getattr(tc, dtype)
    j, e = tc.tensor(5, dtype=cdt) + 7, torch.tensor(5, dtype=tdt) + 7
    assert _held(j)
    v = torch.arange(4, dtype=tdt)
    for f in (lambda x, a, lib: a + x, lambda x, a, lib: x * a,
              lambda x, a, lib: x.reshape(1).expand(3), lambda x, a, lib: lib.stack([x, x + 1]),
              lambda x, a, lib: a[x % 4]):
        got = f(j, tc.arange(4, dtype=cdt), tc)
        want = f(e, v, torch)
        assert got.dtype == cdt and got.tolist() == want.tolist()
    assert not _held(j)   # (materialized: its block holds the value and knows it)
    assert int(j) == 12 and j.item() == 12 and _known(j) == 12


def test_held_result_written_in_place(backend):
    j = tc.tensor(4) + 1
    j += 2
    _check(j, 7)
    k = tc.tensor(4) * 2
    k.copy_(tc.tensor(30))
    _check(k, 30)
    m = tc.tensor(1) - 1
    tc.add(tc.tensor(6), 4, out=m)
    _check(m, 10)
    n = tc.tensor(2) + 2
    raw.write(n, np.array(41, dtype=np.int64))
    _check(n, 41)


def test_held_result_host_alias(backend):
    if backend == "webgpu":
        pytest.skip("webgpu tensors have no host alias")
    j = tc.tensor(4) + 5
    alias = np.asarray(j, copy=False)
    assert int(alias) == 9
    alias[()] = 60
    _check(j, 60)


def test_held_result_disposed_scoped_and_closed(backend):
    j = tc.tensor(1) + 1
    assert not j.is_disposed
    j.dispose()
    assert j.is_disposed
    with pytest.raises(RuntimeError, match="disposed"):
        int(j)
    with pytest.raises(RuntimeError, match="disposed"):
        tc.ones(2, dtype=tc.int64) + j
    made = []

    @tc.track_tensors
    def scoped():
        made.append(tc.tensor(4) + 1)
        assert _held(made[0])
        return tc.tensor(4) + 2     # (a result: kept)
    result = scoped()
    assert made[0].is_disposed and not result.is_disposed and int(result) == 6
    old = tc.tensor(3) + 4
    tc.init(backend)
    with pytest.raises(RuntimeError, match="closed|init"):
        tc.ones(2, dtype=tc.int64) + old


def test_held_result_captured_by_a_compiled_function(backend):
    offset = tc.tensor(10) + 5      # made outside, held on the host
    calls = []

    @tc.compile
    def shift(x):
        calls.append(1)
        return x + offset

    assert _held(offset)
    for v in range(5):                # eager, recorded (materialized there), replays
        assert shift(tc.tensor([v, 2 * v])).tolist() == [v + 15, 2 * v + 15]
    assert len(calls) == 2            # (the replays ran no Python)
    assert not _held(offset) and int(offset) == 15


def test_threads_materialize_one_block(backend):
    import threading
    for _ in range(20):
        j = tc.tensor(20) + 2
        results, barrier = [], threading.Barrier(4)

        def use():
            barrier.wait()
            results.append((tc.arange(3) + j).tolist())
        threads = [threading.Thread(target=use) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [[22, 23, 24]] * 4
        _check(j, 22)


def test_held_result_frees_its_block_when_it_dies(backend):
    import gc
    gc.collect()
    before = tc.memory()["bytes_in_use"]
    never = [tc.tensor(20) + k for k in range(50)]   # never materialized: no block at all
    assert all(_held(t) for t in never)
    assert tc.memory()["bytes_in_use"] == before
    row = tc.zeros(1, dtype=tc.int64)
    used = [(row + t).tolist() for t in never]       # each materialized by a kernel reading it
    assert used == [[20 + k] for k in range(50)]
    assert not any(_held(t) for t in never)
    assert tc.memory()["bytes_in_use"] > before
    del never, row
    gc.collect()
    assert tc.memory()["bytes_in_use"] == before
