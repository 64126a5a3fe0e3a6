"""Recorded programs on the GPU (replay.py): slots move by patched offset words."""

import numpy as np
import pytest

import torchic
from torchic.backends.webgpu import replay
from torchic.compile import Program


def _program(compiled):
    return next(p for p in compiled.programs.values() if isinstance(p, Program))


def test_a_replayed_step_copies_no_argument_in_and_no_output_out(rt):
    """A compiled training step on whole batch tensors issues just the recorded
    dispatches: the arguments and the returned loss are slots, no copy ops."""
    rng = np.random.default_rng(0)
    W = torchic.tensor(rng.standard_normal((12, 5)).astype(np.float32), requires_grad=True)

    @torchic.compile
    def step(x, y):
        loss = ((x @ W).tanh() - y).pow(2.0).mean()
        W.grad = None
        loss.backward()
        with torchic.no_grad():
            W.sub_(0.1 * W.grad)
        return loss
    gpu = rt.backend.gpu
    batches = [(rng.standard_normal((8, 12)).astype(np.float32),
                rng.standard_normal((8, 5)).astype(np.float32)) for _ in range(6)]
    losses = []
    for x, y in batches:
        xt, yt = torchic.tensor(x), torchic.tensor(y)
        before = gpu.stats["dispatches"]
        losses.append(step(xt, yt))
        issued = gpu.stats["dispatches"] - before
    program = _program(step)
    assert program._slotted and program.fresh_outputs == [True]
    assert issued == len(program._packed.calls)
    assert all(s is not None and len(s.positions) for s in program._packed.slots)
    assert all(np.isfinite(l.item()) for l in losses)


def test_a_replay_is_submitted_in_doubling_chunks_and_matches_eager(rt, monkeypatch):
    """The GPU gets the first chunk of a replay before the rest is encoded: chunks of
    the first size, then twice that, ...; the results are the eager ones, in stream order
    behind an eager op issued before the call and ahead of one after it."""
    monkeypatch.setenv(replay.ENV_REPLAY_CHUNK, "2")
    rng = np.random.default_rng(1)
    W = torchic.tensor(rng.standard_normal((6, 6)).astype(np.float32))

    def f(x):
        for _ in range(6):
            x = (x @ W).tanh() * 0.5 + x     # dispatches that each read the last
        return x
    compiled = torchic.compile(f)
    gpu = rt.backend.gpu
    for trial in range(3):
        x = torchic.tensor(rng.standard_normal((4, 6)).astype(np.float32))
        x.add_(1.0)                          # pending before the replay
        rt.sync()
        x.add_(1.0)
        before = gpu.stats["submits"]
        got = compiled(x)
        submits = gpu.stats["submits"] - before
        got = got * 2.0                      # after it, in the same stream
        want = f(x) * 2.0
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    calls = len(_program(compiled)._packed.calls)
    ends, size = [], 2                      # 2, then 4, 8, ...; a shorter rest joins
    while not ends or ends[-1] < calls:
        end = (ends[-1] if ends else 0) + size
        ends.append(calls if calls - end < size else end)
        size *= 2
    assert calls > 9 and submits == len(ends) - 1 >= 2


def test_a_short_replay_is_one_submit(rt, monkeypatch):
    """A rest shorter than the chunk joins it: a program of fewer dispatches than twice the
    first chunk goes in one submit."""
    W = torchic.ones(4, 4) * 0.1

    def f(x):
        for _ in range(3):
            x = (x @ W).tanh() + x.sum()     # (a matmul, a reduction, an elementwise run)
        return x
    compiled = torchic.compile(f)
    gpu = rt.backend.gpu
    for call in range(4):       # (eager, recorded, then replays)
        x = torchic.ones(4, 4)
        if call == 3:
            calls = len(_program(compiled)._packed.calls)
            assert calls >= 3
            monkeypatch.setenv(replay.ENV_REPLAY_CHUNK, str(calls - 1))
        rt.sync()
        before = gpu.stats["submits"]
        got = compiled(x)
    assert gpu.stats["submits"] == before
    np.testing.assert_array_equal(got.numpy(), f(torchic.ones(4, 4)).numpy())


def test_arguments_and_outputs_in_another_arena_are_copied(rt):
    """A slot moves only within its arena (bind groups name arenas): an argument or a new
    output elsewhere goes through a copy, with the same values."""
    n = rt.allocator.arena_bytes // 4 // 2 + 1024     # two of these don't fit one arena

    def f(x):
        x.add_(1.0)
        return x * 2.0
    compiled = torchic.compile(f)
    xs = {mode: [torchic.full((n,), float(i)) for i in range(4)] for mode in ("e", "c")}
    got = [compiled(x) for x in xs["c"]]
    want = [f(x) for x in xs["e"]]
    program = _program(compiled)
    arena = program._packed.slots[0].arena
    assert any(x._view.block.arena != arena for x in xs["c"][2:])
    for g, w, xc, xe in zip(got, want, xs["c"], xs["e"]):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
        np.testing.assert_array_equal(xc.numpy(), xe.numpy())


class _Prog:
    pass


def test_a_slot_whose_words_change_otherwise_is_not_moved(rt):
    """The diff capture keeps a slot only when its words move as offsets do."""
    prog, bufs, stride = _Prog(), ("arena",), 256
    block = rt.alloc(1024)
    recorded = [(prog, bufs, (7, 100, 3), (1, 1, 1)), (prog, bufs, (9, 50), (2, 1, 1))]
    as_offsets = [(prog, bufs, (7, 100 + replay.SHIFT, 3), (1, 1, 1)),
                  (prog, bufs, (9, 50 + replay.SHIFT // 4), (2, 1, 1))]
    slot = replay._slot(block, recorded, as_offsets, stride)
    assert slot.positions.tolist() == [1, 64 + 1]
    assert slot.steps.tolist() == [replay.SHIFT, replay.SHIFT // 4]
    for changed in ([(prog, bufs, (7, 100 + replay.SHIFT, 4), (1, 1, 1)), as_offsets[1]],
                    [as_offsets[0], (prog, bufs, (9, 50 + replay.SHIFT), (3, 1, 1))],
                    [as_offsets[0], (prog, bufs, (9, 50 + replay.SHIFT // 3), (2, 1, 1))],
                    [as_offsets[0], (_Prog(), bufs, (9, 50), (2, 1, 1))],
                    as_offsets[:1], None):
        assert replay._slot(block, recorded, changed, stride) is None
    rt.free(block)


def _ew_chains(x, y, z):
    """Elementwise runs of every kind: v4 (x, y: (8, 16)), broadcast (z: (16,)), a
    scalar-only op (sin), compare, where, fill, copy and in-place updates."""
    u = (x * y + 1.0).tanh()
    v = torchic.where(u > 0.2, u, z)
    w = (v.sin() - x).exp() * 0.5
    x.mul_(0.5).add_(w)
    t = torchic.zeros_like(u) + 2.0
    return u, w * t, (v * v).clone(), (w[:, 1:] - 1.0).abs()


def test_runs_of_elementwise_ops_fuse_and_match_eager_bitwise(rt):
    rng = np.random.default_rng(4)
    compiled = torchic.compile(_ew_chains)
    for shape in ((8, 16), (5, 7)):
        data = [rng.standard_normal(s).astype(np.float32) for s in (shape, shape, shape[1:])]
        for call in range(4):
            xe, xc = torchic.tensor(data[0] + call), torchic.tensor(data[0] + call)
            y, z = torchic.tensor(data[1]), torchic.tensor(data[2])
            want = _ew_chains(xe, y, z)
            got = compiled(xc, y, z)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
            np.testing.assert_array_equal(xc.numpy(), xe.numpy())
    for program in compiled.programs.values():
        if isinstance(program, Program):
            assert len(program._packed.calls) < len(program.records) - 4


def test_a_run_never_reads_another_element_of_what_it_wrote(rt, heap):
    """fuse.plan keeps ops apart where one invocation would need another's element: a
    read or write of an earlier stage's block through another view, other dtypes or
    shapes; it joins those reading the identical view."""
    from torchic.backends.webgpu import fuse
    from torchic.dispatcher import View
    a, b, c = (heap.put(np.ones((4, 4))) for _ in range(3))
    y, z = heap.empty((4, 4)), heap.empty((4, 4))
    yT = View(y.block, 0, (4, 4), (1, 4), "f32")
    aT = View(a.block, 0, (4, 4), (1, 4), "f32")
    i = heap.put(np.ones((4, 4), np.int32))
    first = ("mul", y, (a, b), None)

    def runs(*then):
        return [len(r) for r in fuse.plan([first, *then])]
    assert runs(("add", z, (y, c), None), ("neg", y, (z,), None)) == [3]
    assert runs(("add", z, (yT, c), None)) == [1, 1]          # another element of y
    assert runs(("add", aT, (c, c), None)) == [1, 1]          # overwrites what was read
    assert runs(("add", a, (y, c), None)) == [2]              # ... the same element: fine
    assert runs(("neg", yT, (c,), None)) == [1, 1]
    assert runs(("add", i, (i, i), None)) == [1, 1]           # int32
    assert runs(("sum", z, (y,), {"naxes": 1})) == [1, 1]     # not elementwise
    assert runs(("add", heap.empty((2, 8)), (c, c), None)) == [1, 1]   # another shape


def test_fusion_asks_the_op_rows_never_the_names(rt, heap, monkeypatch):
    """Which ops join a fused run or take an epilogue is their ops.py row's `fuse`: every
    stage op has its expression, the producers are the rows that say so, and a row that
    says NEVER keeps its op out of a run."""
    from torchic import ops
    from torchic.backends.webgpu import fuse
    assert set(fuse.EXPRESSIONS) == set(ops.STAGES)
    assert set(fuse.PRODUCERS) == {op.name for op in ops.OPS
                                   if op.fuse in (ops.PRODUCER, ops.ROW_PRODUCER)}
    a, b = (heap.put(np.ones((4, 4))) for _ in range(2))
    y, z = heap.empty((4, 4)), heap.empty((4, 4))
    records = [("mul", y, (a, b), None), ("tanh", z, (y,), None)]
    assert [len(r) for r in fuse.plan(records)] == [2]
    monkeypatch.setitem(ops.FUSE, "tanh", ops.NEVER)
    assert [len(r) for r in fuse.plan(records)] == [1, 1]


def test_an_independent_record_is_held_back_so_the_next_stage_joins(rt, heap):
    """nanoGPT's `att * scale`, `bias == 0`, `masked_fill`: the compare of another shape
    between two stages runs first and the stages become one run; a record that touches
    what the run reads or writes is never moved."""
    from torchic.backends.webgpu import fuse
    from torchic.dispatcher import View
    a, b, c = (heap.put(np.ones((4, 4))) for _ in range(3))
    y, z = heap.empty((4, 4)), heap.empty((4, 4))
    mask, small = heap.empty((1, 4)), heap.put(np.ones((1, 4)))
    first = ("mul", y, (a, b), None)
    compare = ("eq", mask, (small, small), None)
    join = ("where", z, (mask, c, y), None)
    assert fuse.plan([first, compare, join]) == [[compare], [first, join]]
    assert fuse.plan([first, compare]) == [[first], [compare]]      # nothing joined: in place
    reads_y = ("eq", mask, (y, y), None)
    assert fuse.plan([first, reads_y, join]) == [[first], [reads_y], [join]]
    writes_a = ("sum", View(a.block, 0, (4,), (1,), "f32"), (c,), {"naxes": 1})
    add = ("add", z, (y, c), None)
    assert fuse.plan([first, writes_a, add]) == [[first], [writes_a], [add]]


# -- runs of adam_update records: one dispatch per run (adam.Tables) ----------------------
SIZES = [(300,), (1,), (0,), (17, 31), (255,), (257,), (2, 3, 5), (1000,)]


def _adam_step(make, sizes, x, dependent=False):
    """Parameters of `sizes`, their optimizer (make) and a step(x) giving each a grad made
    from x and itself (dependent: the third one's grad is the second parameter itself, so
    its update must see the second one's)."""
    rng = np.random.default_rng(11)
    ps = [torchic.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
          for s in sizes]
    opt = make(ps)
    offsets = np.cumsum([0] + [int(np.prod(s)) for s in sizes])

    def step(x):
        for k, p in enumerate(ps):
            p.grad = x[offsets[k]:offsets[k + 1]].reshape(p.shape) * 0.5 + p
        if dependent:
            ps[2].grad = ps[1].detach()
        opt.step()
    return ps, opt, step


def _adam_pipelines(gpu):
    """{id of a pipeline's handle: True for a run kernel, False for the eager one}."""
    return {p.pipeline._internal: len(key) > 1 for key, p in gpu.pipelines.items()
            if key[0] == "adam_update"}


def _check_adam_runs(rt, make, sizes, dependent=False, steps=4):
    """Eager and compiled steps give the same bits -> (the program, per adam_update
    dispatch of its recording: is it a run's?)."""
    gpu = rt.backend.gpu
    n = sum(int(np.prod(s)) for s in sizes)
    rng = np.random.default_rng(12)
    xs = [torchic.tensor(rng.standard_normal(n).astype(np.float32)) for _ in range(steps)]
    (pe, oe, se), (pc, oc, sc) = (_adam_step(make, sizes, xs[0], dependent) for _ in range(2))
    compiled = torchic.compile(sc)
    for k, x in enumerate(xs):
        se(x)
        compiled(x)
        for a, b in zip(pe, pc):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy(),
                                          err_msg=f"step {k + 1}")
            for name in ("exp_avg", "exp_avg_sq"):
                np.testing.assert_array_equal(oc.state[b][name].numpy(),
                                              oe.state[a][name].numpy())
    program = _program(compiled)
    kinds = _adam_pipelines(gpu)
    assert len([r for r in program.records if r[0] == "adam_update"]) == len(sizes)
    return program, [kinds[c[0]] for c in program._packed.calls if c[0] in kinds]


def test_adam_updates_of_a_compiled_step_are_one_dispatch_bit_for_bit(rt):
    """Adam with two parameter groups (the second group's scalars are copied between the
    runs: that copy moves ahead) and AdamW, over sizes not multiples of the workgroup, one
    element and none: one dispatch for all parameters, the eager bits."""
    from torchic import optim
    for make in (lambda ps: optim.Adam([{"params": ps[:3]}, {"params": ps[3:],
                                        "weight_decay": 0.1, "maximize": True}], lr=1e-2),
                 lambda ps: optim.AdamW(ps, lr=1e-2, weight_decay=0.2)):
        _, issued = _check_adam_runs(rt, make, SIZES)
        assert issued == [True]


def test_adam_runs_over_many_arenas_bind_them_and_cut_where_they_run_out(rt):
    """Operands in many small arenas: a dispatch binds up to adam.MAX_BUFFERS of them
    (picked per access), then the run goes on in another dispatch."""
    from torchic import optim
    from torchic.backends.webgpu import adam
    rt.allocator.arena_bytes = 1 << 12            # (before anything is allocated)
    sizes = [(700,), (1,), (900,), (333,), (1024,), (5, 7), (600,), (2,)] * 2
    program, issued = _check_adam_runs(rt, lambda ps: optim.AdamW(ps, lr=1e-2), sizes,
                                       steps=3)
    arenas = {v.block.arena for r in program.records if r[0] == "adam_update"
              for v in (r[1],) + r[2]}
    assert len(arenas) > adam.MAX_BUFFERS
    assert len(issued) >= 2 and all(issued)
    assert len(issued) <= 2 * len(arenas) // adam.MAX_BUFFERS + 1


def test_a_dependent_update_starts_a_new_run(rt):
    """A parameter whose grad is an earlier parameter (updated first in eager order) is
    not in that one's dispatch: two runs, the eager bits."""
    from torchic import optim
    _, issued = _check_adam_runs(rt, lambda ps: optim.Adam(ps, lr=1e-2),
                                 [(300,), (257,), (257,), (1,), (0,)], dependent=True)
    assert issued == [True, True]


def test_adam_runs_are_planned_apart_from_what_they_touch(rt, heap):
    """fuse.plan joins adam_update records that touch no element another writes (spans of
    one block may be disjoint); a dependent record or an update reading what the run wrote
    starts anew; one with an operand on a slot block stays alone."""
    from torchic.backends.webgpu import fuse
    from torchic.dispatcher import View

    def update(p=None, g=None):
        p, g = p or heap.empty((8,)), g or heap.empty((8,))
        return ("adam_update", p, (g, heap.empty((8,)), heap.empty((8,)), s), None)
    s = heap.empty((10,))
    a, b = update(), update()
    flat = heap.empty((16,))
    lo, hi = (View(flat.block, o, (8,), (1,), "f32") for o in (0, 8))
    mid = View(flat.block, 4, (8,), (1,), "f32")
    reads_a = ("mul", heap.empty((8,)), (a[1], a[1]), None)
    assert [len(r) for r in fuse.plan([a, b, update()])] == [3]
    assert [len(r) for r in fuse.plan([update(lo), update(hi)])] == [2]       # disjoint
    assert [len(r) for r in fuse.plan([update(lo), update(mid)])] == [1, 1]   # overlap
    assert [len(r) for r in fuse.plan([a, b, update(g=a[1]), update()])] == [2, 2]
    assert [len(r) for r in fuse.plan([a, b, reads_a, update(g=reads_a[1])])] == [2, 1, 1]
    c = update()
    assert fuse.plan([a, c, b], {id(c[2][0].block)}) == [[c], [a, b]]   # alone, moved ahead


def _dead_chain(x, y):
    t = x * y          # dies inside the run that reads it: its store is skipped
    u = t + 1.0        # ... and so do this one
    return u.exp(), (x - y).abs()     # ... and x - y


def test_a_fused_stage_nothing_reads_is_not_stored(rt):
    """torchic.compile tells the backend when each temporary dies: a fused run skips the
    stores of the stages whose output no record outside the run reads before it is
    freed, and the results stay the eager ones, bit for bit."""
    rng = np.random.default_rng(7)
    compiled = torchic.compile(_dead_chain)
    for call in range(4):
        x = torchic.tensor(rng.standard_normal((6, 33)).astype(np.float32))
        y = torchic.tensor(rng.standard_normal((6, 33)).astype(np.float32))
        for g, w in zip(compiled(x, y), _dead_chain(x, y)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    skipped = [k[-1] for k in rt.backend.gpu.pipelines if k and k[0] == "fused"]
    assert frozenset({0, 1, 3}) in skipped, skipped


def test_a_stage_read_outside_its_run_keeps_its_store(rt, heap):
    from torchic.backends.webgpu import fuse
    a, b = heap.put(np.ones((4, 4))), heap.put(np.ones((4, 4)))
    t, u, z = heap.empty((4, 4)), heap.empty((4, 4)), heap.empty((4,))
    first, second = ("mul", t, (a, b), None), ("add", u, (t, a), None)
    reads_t = ("sum", z, (t,), {"naxes": 1})
    records = [first, second, reads_t]
    runs = fuse.plan(records)
    assert runs == [[first, second], [reads_t]]
    t_id, u_id = id(t.block), id(u.block)
    assert fuse.dead_stores(runs, records, [set(), set(), {t_id}]) == {}      # t read after
    assert fuse.dead_stores(runs, records, [set(), {t_id}, set()]) == {0: frozenset({0})}
    assert fuse.dead_stores(runs, records, [set(), {t_id, u_id}, set()]) == \
        {0: frozenset({0, 1})}
    assert fuse.dead_stores(runs, records, None) == {}


# -- a matmul's epilogue: the elementwise run after it, applied where the tile is stored ---
def _epilogue_chains(qkv, x, w1, b1, w2, h, mask, n_head):
    """nanoGPT's attention (q, k, v: heads of one (B, T, 3C) tensor, so 4-D products),
    a transposed copy of a product, GELU after a Linear, a product times another tensor,
    a product read transposed, one read twice (which stays apart), and a residual
    x + dropout(Linear(x))."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    q, k, v = [t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in qkv.split(C, dim=2)]
    att = (q @ k.transpose(-2, -1)) * 0.25
    att = att.masked_fill(mask[:, :, :T, :T] == 0, float("-inf"))
    p = torchic.nn.functional.softmax(att, dim=-1)
    y = (p @ v).transpose(1, 2).contiguous().view(B, T, C)
    g = torchic.nn.functional.gelu(torchic.nn.functional.linear(x, w1, b1))
    prod = x @ w2
    z = prod * h
    zt = (x @ w2).transpose(1, 2) + 1.0
    s = x @ w2
    twice = s * s.sum(-1, keepdim=True)
    residual = x + torchic.nn.functional.dropout(torchic.nn.functional.linear(x, w1[:C], b1[:C]),
                                                 0.25, training=True)
    return y, g, z, zt, twice, prod, residual


@pytest.mark.parametrize("tile", [None, "64x64x16-8x8-km-p-sb", "64x128x16-sb"])
def test_a_matmul_takes_the_elementwise_run_after_it_as_its_epilogue(rt, monkeypatch, tile):
    """The compiled program stores each product through its run's stages (scale and mask
    after q @ k^T, the transposed copy after p @ v, GELU, a multiply, a dropout and the
    residual add), skips the product's store where it is dead, and gives the eager bits
    (the dropout masks too); edge tiles included (T 13), with the ladder's tiles and with
    the single-buffer ones the H200 table picks for the GPT step."""
    from torchic.backends.webgpu import fuse, matmul
    if tile:
        monkeypatch.setenv(matmul.ENV_TILE, tile)
    rng = np.random.default_rng(21)
    B, T, C, H = 2, 13, 16, 2

    def make(*shape):
        return torchic.tensor(rng.standard_normal(shape).astype(np.float32))
    mask = torchic.tril(torchic.ones(T, T)).view(1, 1, T, T)
    args = [make(B, T, 3 * C), make(B, T, C), make(24, C), make(24), make(C, 20),
            make(B, T, 20), mask]
    planned = []
    real = fuse.epilogues

    def record(runs):
        out = real(runs)
        planned.append([[r[0] for r in run] for run in out])
        return out
    fuse.epilogues = record
    try:
        wqkv = torchic.tensor(rng.standard_normal((C, 3 * C)).astype(np.float32),
                              requires_grad=True)

        def step(inp, *a):      # the outputs, and the gradient through attention's backward
            outs = _epilogue_chains(inp @ wqkv, *a, H)
            (outs[0] * outs[0]).sum().backward()
            grad, wqkv.grad = wqkv.grad, None
            return outs + (grad,)
        compiled = torchic.compile(step)
        for call in range(3):
            inp = make(B, T, C)
            torchic.manual_seed(call)           # the same dropout masks
            want = step(inp, *args[1:])
            torchic.manual_seed(call)
            got = compiled(inp, *args[1:])
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
    finally:
        fuse.epilogues = real
    joined = [run for run in planned[-1] if len(run) > 1 and run[0] in fuse.PRODUCERS]

    def has(*ops):      # (a later run may join too: the backward's first multiply)
        return any(run[:len(ops)] == list(ops) for run in joined)
    assert has("matmul", "mul", "where"), planned[-1]
    assert has("matmul", "copy") and has("matmul_bias", "gelu")
    assert has("matmul", "mul") and has("matmul", "add")          # z, zt
    assert has("softmax_grad", "where", "mul")       # the backward of scale and mask
    assert has("matmul_bias", "dropout", "add")      # the residual
    assert [run for run in planned[-1] if run[0] == "sum"], "s is read by its sum"
    epi = [k[-1] for k in rt.backend.gpu.pipelines if k and k[0] == "matmul"
           and isinstance(k[-1], tuple) and k[-1][0] == "epi"]
    assert any(e[-1] for e in epi), "no product's store was skipped as dead"


def test_epilogue_coordinates_follow_the_products_layout(heap):
    """fuse.coordinates: the run's view of the product must reach each of its elements
    once (any permutation); the other operands' strides are rewritten over (b1, b2, m, n),
    the batch cut in two where it does not merge ((B, H) heads of a (B, T, H, hd) copy),
    a row kernel's rows cut into (batch, m) where they do."""
    from torchic.backends.webgpu import fuse
    from torchic.dispatcher import View
    out = heap.empty((6, 4, 8))                               # a product (B*H, M, N)
    b = out.block
    same = View(b, 0, (2, 3, 4, 8), (96, 32, 8, 1), "f32")
    other = heap.empty((2, 3, 4, 8))
    assert fuse.coordinates(out, same, [other]) == (1, 4, [(32, 0, 8, 1)])
    perm = View(b, 0, (2, 4, 3, 8), (96, 8, 32, 1), "f32")   # (p @ v).transpose(1, 2)
    copy = heap.empty((2, 4, 3, 8))                           # contiguous (B, T, H, hd)
    assert fuse.coordinates(out, perm, [copy]) == (3, 4, [(96, 8, 24, 1)])
    bcast = View(other.block, 0, (2, 4, 3, 8), (0, 0, 0, 1), "f32")
    assert fuse.coordinates(out, perm, [bcast]) == (1, 4, [(0, 0, 0, 1)])
    half = View(b, 0, (6, 4, 4), (32, 8, 1), "f32")           # half the columns: no
    assert fuse.coordinates(out, half, [heap.empty((6, 4, 4))]) is None
    twice = View(b, 0, (6, 4, 8), (32, 0, 1), "f32")          # a row read 4 times: no
    assert fuse.coordinates(out, twice, [heap.empty((6, 4, 8))]) is None
    mixed = View(other.block, 0, (6, 4, 8), (1, 48, 6), "f32")   # strides across m, n: ok
    assert fuse.coordinates(out, View(b, 0, (6, 4, 8), (32, 8, 1), "f32"), [mixed]) == \
        (1, 4, [(1, 0, 48, 6)])
    # a row kernel's (R, C) out (softmax_grad's): its rows cut where the run's operands
    # merge, (B, H, T) rows against a (1, 1, T, T) mask -> batch B*H, M = T
    rows = heap.empty((24, 8))
    run_view = View(rows.block, 0, (2, 3, 4, 8), (96, 32, 8, 1), "f32")
    mask = View(other.block, 0, (2, 3, 4, 8), (0, 0, 8, 1), "f32")
    assert fuse.coordinates(rows, run_view, [other, mask], rows=True) == \
        (1, 4, [(32, 0, 8, 1), (0, 0, 8, 1)])
    assert fuse.coordinates(rows, run_view, [other], rows=True) == (1, 24, [(0, 0, 8, 1)])


def test_an_epilogue_never_writes_what_the_matmul_reads(rt, heap):
    """A stage writing the product's operands (other tiles still read them), or reading
    the product through a second view, keeps its run apart; a long K that splits (the
    epilogue cannot ride the split-K sum) falls back to the separate dispatches."""
    from torchic.backends.webgpu import fuse
    a, b = heap.put(np.ones((1, 8, 8))), heap.put(np.ones((1, 8, 8)))
    c, t = heap.empty((1, 8, 8)), heap.empty((1, 8, 8))
    mm = ("matmul", c, (a, b), None)
    assert fuse.epilogue([mm, ("mul", t, (c, b), None)]) is not None
    assert fuse.epilogue([mm, ("mul", a, (c, b), None)]) is None        # writes A
    from torchic.dispatcher import View
    ct = View(c.block, 0, (1, 8, 8), (64, 1, 8), "f32")
    assert fuse.epilogue([mm, ("mul", t, (c, ct), None)]) is None       # two views
    assert fuse.epilogue([mm, ("mul", c, (c, b), None)]) is not None    # in place: ok
    # a row kernel reads its row's elements before it stores there: a stage may write
    # exactly those of an input (a block the recorder reused), nothing else of it
    y, g, o, f = (heap.put(np.ones((8, 8))) for _ in range(4))
    sg = ("softmax_grad", o, (y, g), None)
    assert fuse.epilogue([sg, ("mul", g, (o, f), None)]) is not None
    gt = View(g.block, 0, (8, 8), (1, 8), "f32")
    assert fuse.epilogue([sg, ("mul", gt, (o, f), None)]) is None       # other elements
    rng = np.random.default_rng(3)
    x = torchic.tensor(rng.standard_normal((4, 4096)).astype(np.float32))
    w = torchic.tensor(rng.standard_normal((4096, 8)).astype(np.float32))
    compiled = torchic.compile(lambda x, w: (x @ w) * 2.0 + 1.0)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x, w).numpy(), ((x @ w) * 2.0 + 1.0).numpy())

    def residual(x, w):     # a dropout in the run: issued alone when not applied (N = 7)
        return x[:, :7] + torchic.nn.functional.dropout(x @ w, 0.5, training=True)
    for n in (7, 4096):
        x = torchic.tensor(rng.standard_normal((4, n)).astype(np.float32))
        w = torchic.tensor(rng.standard_normal((n, 7)).astype(np.float32))
        compiled = torchic.compile(residual)
        for call in range(2):
            torchic.manual_seed(call)
            want = residual(x, w).numpy()
            torchic.manual_seed(call)
            np.testing.assert_array_equal(compiled(x, w).numpy(), want)
