"""torchic.compile: a compiled training step gives the eager step's results bit for bit."""

import gc

import numpy as np
import pytest

import torchic
import torchic.nn.functional as F
from torchic.compile import Program

VOCAB, BLOCK, EMB, HIDDEN = 27, 3, 10, 64


def _data(n=200, seed=1):
    rng = np.random.default_rng(seed)
    X = torchic.tensor(rng.integers(0, VOCAB, size=(n, BLOCK)).astype(np.int32))
    Y = torchic.tensor(rng.integers(0, VOCAB, size=(n,)).astype(np.int32))
    return X, Y


def _makemore(opt_name="sgd", dropout=0.0):
    """The makemore MLP (embedding, tanh MLP, cross_entropy) and a step(X, Y) -> loss."""
    torchic.manual_seed(42)
    C = torchic.randn(VOCAB, EMB, requires_grad=True)
    W1 = (torchic.randn(BLOCK * EMB, HIDDEN) * 0.2).detach().requires_grad_(True)
    b1 = torchic.zeros(HIDDEN, requires_grad=True)
    W2 = (torchic.randn(HIDDEN, VOCAB) * 0.1).detach().requires_grad_(True)
    b2 = torchic.zeros(VOCAB, requires_grad=True)
    params = [C, W1, b1, W2, b2]
    if opt_name == "sgd":
        opt, sched = torchic.optim.SGD(params, lr=0.1), None
    else:
        opt = torchic.optim.Adam(params, lr=0.01)
        sched = torchic.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

    def step(xb, yb):
        emb = C[xb].view(-1, BLOCK * EMB)
        h = torchic.tanh(emb @ W1 + b1)
        if dropout:
            h = F.dropout(h, dropout)
        loss = F.cross_entropy(h @ W2 + b2, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return params, step, sched


def _train(step, sched, X, Y, steps, batch=32):
    losses = []
    for i in range(steps):
        lo = (i * batch) % (X.shape[0] - batch)
        ix = torchic.arange(lo, lo + batch)
        losses.append(step(X[ix], Y[ix]))
        if sched is not None:
            sched.step()
    return np.array([l.item() for l in losses])


@pytest.mark.parametrize("opt_name,dropout", [("sgd", 0.0), ("adam", 0.0), ("sgd", 0.3)])
def test_compiled_training_matches_eager_bitwise(backend, opt_name, dropout):
    X, Y = _data()
    results = []
    for compiled in (False, True):
        params, step, sched = _makemore(opt_name, dropout)
        if compiled:
            step = torchic.compile(step)
        losses = _train(step, sched, X, Y, 100)
        results.append((losses, [p.detach().numpy() for p in params]))
    (le, pe), (lc, pc) = results
    assert np.array_equal(le, lc)
    for a, b in zip(pe, pc):
        assert np.array_equal(a, b)
    assert le[-1] < le[0]


def test_new_batch_shape_records_again(backend):
    X, Y = _data()
    results = []
    for compiled in (False, True):
        params, step, _ = _makemore()
        if compiled:
            step = torchic.compile(step)
        losses = []
        for i, b in enumerate([32, 32, 32, 16, 16, 16, 32, 16]):
            ix = torchic.arange(i, i + b)
            losses.append(step(X[ix], Y[ix]).item())
        results.append((losses, [p.detach().numpy() for p in params]))
        if compiled:
            assert len(step.programs) == 2
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        assert np.array_equal(a, b)


def test_outputs_are_fresh_tensors(backend):
    w = torchic.ones(4)
    calls = []

    @torchic.compile
    def f(x):
        calls.append(1)
        w.add_(x)
        return w * 2.0, x + 1.0

    outs = [f(torchic.full((4,), float(i))) for i in range(5)]
    assert [o[0].numpy().tolist() for o in outs] == \
        [[2.0 * (1 + sum(range(i + 1)))] * 4 for i in range(5)]
    assert [o[1].numpy().tolist() for o in outs] == [[i + 1.0] * 4 for i in range(5)]
    assert len(calls) == 2      # a warm-up and the recorded call; 3 replays
    assert all(isinstance(p, Program) for p in f.programs.values())


def test_random_ops_draw_fresh_values(backend):
    def draw(x):
        return x + torchic.randn(3) + torchic.randint(0, 10, (3,)) + torchic.rand(3)
    f = torchic.compile(draw)
    torchic.manual_seed(7)
    got = [f(torchic.zeros(3)).numpy() for _ in range(5)]
    torchic.manual_seed(7)
    want = [draw(torchic.zeros(3)).numpy() for _ in range(5)]
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert len({tuple(a) for a in got}) == 5


def test_a_read_inside_is_refused_naming_the_line(backend):
    def f(x):
        y = x * 2.0
        if y.sum().item() > 0:   # the line named
            return y
        return -y
    f = torchic.compile(f)
    f(torchic.ones(3))
    with pytest.raises(torchic.CompileError, match=r"test_compile.py:\d+: if y.sum\(\).item"):
        f(torchic.ones(3))
    with pytest.raises(torchic.CompileError, match="numpy"):
        g = torchic.compile(lambda x: torchic.tensor((x * 2.0).numpy()))
        g(torchic.ones(2))
        g(torchic.ones(2))


def test_outside_tensor_replaced_inside_is_refused(backend):
    class State:
        h = torchic.zeros(3)
    s = State()

    def f(x):
        s.h = s.h + x          # rebinds: the old tensor's memory is freed inside
        return s.h
    f = torchic.compile(f)
    f(torchic.ones(3))
    with pytest.raises(torchic.CompileError, match=r"replaced inside.*s\.h = s\.h \+ x"):
        f(torchic.ones(3))


def _flat_memory(step, args, counts):
    """bytes_in_use after each run of counts[i] more calls of step(*args)."""
    used = []
    gc.collect()
    gc.disable()        # earlier tests' garbage cycles are not this program's memory
    try:
        for n in counts:
            for _ in range(n):
                out = step(*args)
            torchic.sync()
            used.append(torchic.memory()["bytes_in_use"])
    finally:
        gc.enable()
    return used, out


def test_memory_is_flat_over_many_compiled_steps(backend):
    """Compiled steps of a small makemore MLP with Adam (state and host values too):
    10,000 on the CPU backends, 1,000 on webgpu (lavapipe runs a dispatch in ~0.3 ms)."""
    X, Y = _data()
    params, step, _ = _makemore("adam")
    step = torchic.compile(step)
    ix = torchic.arange(0, 8)
    counts = (100, 900) if backend == "webgpu" else (100, 900, 9000)
    used, loss = _flat_memory(step, (X[ix], Y[ix]), counts)
    assert len(set(used)) == 1, used
    assert np.isfinite(loss.item())
    mem = torchic.memory()
    assert mem["compiled_programs"] >= 1 and mem["compiled_plan_bytes"] > 0
    step.release()
    del loss
    gc.collect()
    after = torchic.memory()
    assert after["compiled_programs"] <= mem["compiled_programs"] - 1     # (others may go too)
    assert after["bytes_in_use"] <= mem["bytes_in_use"] - mem["compiled_plan_bytes"]


def test_memory_is_flat_over_10000_small_compiled_steps(backend):
    w = torchic.zeros(16)

    @torchic.compile
    def step(x):
        w.mul_(0.5).add_(x)
        return (w * 2.0).sum()

    used, out = _flat_memory(step, (torchic.ones(16),), (100, 900, 9000))
    assert len(set(used)) == 1, used
    assert out.item() == 64.0           # w converged to 2.0 per element


def test_nn_modules_adamw_and_a_changing_lr_match_eager_bitwise(backend):
    """nn modules (Embedding, Linear, LayerNorm, BatchNorm1d with its running stats,
    Dropout), AdamW and a LambdaLR schedule changing lr every step, 30 steps."""
    X, Y = _data()
    results = []
    for compiled in (False, True):
        torchic.manual_seed(3)
        model = torchic.nn.Sequential(
            torchic.nn.Embedding(VOCAB, EMB), torchic.nn.Flatten(),
            torchic.nn.Linear(BLOCK * EMB, HIDDEN), torchic.nn.BatchNorm1d(HIDDEN),
            torchic.nn.Tanh(), torchic.nn.Dropout(0.2), torchic.nn.LayerNorm(HIDDEN),
            torchic.nn.Linear(HIDDEN, VOCAB))
        opt = torchic.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
        sched = torchic.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 / (1 + i))

        def step(xb, yb):
            loss = torchic.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss
        if compiled:
            step = torchic.compile(step)
        losses = _train(step, sched, X, Y, 30)
        results.append((losses, [t.detach().numpy() for t in model.state_dict().values()]))
    (le, pe), (lc, pc) = results
    assert np.array_equal(le, lc)
    assert len(pe) == len(pc) and all(np.array_equal(a, b) for a, b in zip(pe, pc))
    assert le[-1] < le[0]


def test_unhashable_argument_is_a_clear_type_error(backend):
    f = torchic.compile(lambda x, scale: x * scale[0])
    with pytest.raises(TypeError, match="argument of type list is not hashable"):
        f(torchic.ones(2), [2.0])
    assert f(torchic.ones(2), (2.0,)).numpy().tolist() == [2.0, 2.0]


def test_in_place_update_of_an_argument_reaches_the_caller(backend):
    """fn(x) doing x.add_(...) changes the caller's x at every call, as in eager mode."""
    def f(x, y):
        x.mul_(2.0).add_(y)
        return x.sum()
    compiled = torchic.compile(f)
    xe, xc, y = torchic.ones(3), torchic.ones(3), torchic.full((3,), 0.5)
    for _ in range(5):
        eager_sum, compiled_sum = f(xe, y).item(), compiled(xc, y).item()
        assert eager_sum == compiled_sum
        assert xc.numpy().tolist() == xe.numpy().tolist()
    assert xc.numpy().tolist() == [2.0 ** 5 + 0.5 * (2.0 ** 5 - 1)] * 3
    assert y.numpy().tolist() == [0.5] * 3            # an argument only read is left alone


def test_arguments_of_any_layout_give_the_eager_results(backend):
    """simd runs a program on the caller's argument blocks where their strides are the
    recorded ones (zero-copy slots), copying otherwise: slices at an offset, a transposed
    argument, one tensor passed twice and in-place updates of a view argument all give
    what eager mode gives, call after call."""
    def f(x, y):
        x.mul_(2.0)
        return (x * y + y).sum(0)
    compiled = torchic.compile(f)
    rng = np.random.default_rng(5)
    base = rng.standard_normal((6, 4)).astype(np.float32)
    for call in range(6):
        xe, xc = torchic.tensor(base), torchic.tensor(base)
        ye = torchic.tensor(base * 0.5 + call)
        # calls 0-2: contiguous rows at an offset; 3: a transposed x (other strides);
        # 4: x and y one tensor; 5: contiguous again after the others
        if call == 3:
            args_e = (xe.T[:, 1:5], ye.T[:, 1:5])
            args_c = (xc.T[:, 1:5], ye.T[:, 1:5])
        elif call == 4:
            args_e, args_c = (xe[1:5], xe[1:5]), (xc[1:5], xc[1:5])
        else:
            args_e, args_c = (xe[call % 2 + 1:call % 2 + 5], ye[1:5]), \
                (xc[call % 2 + 1:call % 2 + 5], ye[1:5])
        want = f(*args_e).numpy()
        got = compiled(*args_c).numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(xc.numpy(), xe.numpy())     # the in-place update
        assert xc._storage.version > 0     # (autograd sees the write)


def test_calls_on_arguments_all_over_the_heap_read_after_the_last(backend):
    """Arguments in other blocks, at offsets of whole 256-byte steps and not, updated in
    place or only read, in calls issued back to back with no read between them (simd and
    webgpu move the program's slots between calls: each call must see its own): every
    result and every argument equals eager mode's."""
    def f(x, y):
        x.mul_(2.0).add_(y)
        return x * y + 1.0, (y - x).sum(0)
    compiled = torchic.compile(f)
    rng = np.random.default_rng(3)
    base = rng.standard_normal((8 * 64 + 16, 4)).astype(np.float32)
    ys = rng.standard_normal((6, 16, 4)).astype(np.float32)
    pools = {mode: torchic.tensor(base) for mode in ("eager", "compiled")}
    # rows at offsets of 64 rows (1 KiB), 1 row (16 bytes), then whole tensors of their own
    starts = [0, 64, 128, 1, 64 * 7 + 16, 256]
    args = {mode: [(pool[r:r + 16], torchic.tensor(y)) for r, y in zip(starts, ys)]
            for mode, pool in pools.items()}
    alone = {mode: (torchic.tensor(base[:16]), torchic.tensor(ys[0])) for mode in pools}
    results = {}
    for mode, fn in (("eager", f), ("compiled", compiled)):
        calls = [alone[mode]] * 3 + args[mode] + [alone[mode]]
        results[mode] = [fn(x, y) for x, y in calls]       # (no read between the calls)
    for (pe, se), (pc, sc) in zip(results["eager"], results["compiled"]):
        np.testing.assert_array_equal(pc.numpy(), pe.numpy())
        np.testing.assert_array_equal(sc.numpy(), se.numpy())
    np.testing.assert_array_equal(pools["compiled"].numpy(), pools["eager"].numpy())
    np.testing.assert_array_equal(alone["compiled"][0].numpy(), alone["eager"][0].numpy())


def test_a_function_issuing_no_op_returns_each_calls_argument(backend):
    """fn(x) -> x records no op: a replay has no program to run its slots, so the
    argument is copied in (simd once returned the recorded call's value)."""
    compiled = torchic.compile(lambda x: x)
    got = [compiled(torchic.full((3,), float(i))) for i in range(4)]
    assert [g.numpy().tolist() for g in got] == [[float(i)] * 3 for i in range(4)]


def test_outputs_of_every_kind_keep_the_eager_values(backend):
    """simd writes an output made inside fn straight into the tensor the caller gets (a new
    block per call, no copy out); outputs it cannot do so for are copied. Either way every
    returned tensor keeps its own call's values, a tensor fn also keeps for itself sees the
    latest call's, and outputs sharing memory or returned as views come back right."""
    kept = {}

    def f(x):
        y = x * 2.0                      # fresh: written in place of a copy
        z = x + 1.0
        kept["z"] = z                    # also held by fn's state: copied, the state updated
        w = x - 3.0
        long = torchic.cat([x, x])       # the first half: the whole block is not returned
        return y, z, w.T, w[1:], (x * x).exp(), long[:2]

    compiled = torchic.compile(f)
    base = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    returned = []
    for call in range(5):
        x = torchic.tensor(base + call)
        returned.append((base + call, compiled(x)))
        np.testing.assert_array_equal(kept["z"].numpy(), base + call + 1.0)
    for xs, (y, z, wt, w1, e, half) in returned:   # read after all calls: none overwritten
        np.testing.assert_array_equal(y.numpy(), xs * 2.0)
        np.testing.assert_array_equal(z.numpy(), xs + 1.0)
        np.testing.assert_array_equal(wt.numpy(), (xs - 3.0).T)
        np.testing.assert_array_equal(w1.numpy(), (xs - 3.0)[1:])
        np.testing.assert_allclose(e.numpy(), np.exp(xs * xs), rtol=1e-6)
        np.testing.assert_array_equal(half.numpy(), xs)
    program = next(p for p in compiled.programs.values() if isinstance(p, Program))
    if program._slotted:
        assert program.fresh_outputs == [True, False, False, False, True, False]


def test_large_elementwise_runs_match_eager_bitwise(backend):
    """simd runs a compiled program's runs of elementwise ops over large tensors tile by
    tile (kernels/src/fuse.rs): the values must be eager mode's bit for bit, also where
    a run is cut (an intermediate read transposed, an argument written in place) and
    when a call's arguments lie in other blocks than the recorded ones."""
    n = 640       # (640, 640) floats: 1.6 MB a view, runs of several MB
    rng = np.random.default_rng(7)

    def f(x, b, g, acc):
        y = x + b                        # a broadcast bias row
        t = torchic.tanh(y)
        d = g * (1 - t * t)              # tanh's gradient: a run of three
        e = torchic.exp(d.T * 0.5)       # reads d transposed: the run is cut before it
        acc.add_(e)                      # an argument written in place
        acc.mul_(0.5)
        return t * 2, d, acc.sum()

    def args():
        return (torchic.tensor(rng.standard_normal((n, n)).astype(np.float32)),
                torchic.tensor(rng.standard_normal(n).astype(np.float32)),
                torchic.tensor(rng.standard_normal((n, n)).astype(np.float32)),
                torchic.tensor(rng.standard_normal((n, n)).astype(np.float32)))

    compiled = torchic.compile(f)
    for _ in range(4):       # eager call, the recording, then replays on fresh blocks
        xs = args()
        xe = [a.clone() for a in xs]
        want = [r.numpy() for r in f(*xe)]
        got = [r.numpy() for r in compiled(*xs)]
        for w, c in zip(want, got):
            assert np.array_equal(w, c)
        assert np.array_equal(xs[3].numpy(), xe[3].numpy())
