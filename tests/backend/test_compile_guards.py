"""torchic.compile: a program's state is its own (scopes), guards re-record when fn's state
changes, and a compiled module's output carries the recorded backward (nanoGPT's
`model = torch.compile(model)`): compiling changes speed, never results."""

import contextlib
import inspect

import numpy as np
import pytest

import torchic
import torchic.nn as nn
import torchic.nn.functional as F
import torchic.testing
from torchic import dispatcher
from torchic.backend import Backend
from torchic.compile import MAX_LIVE, _Graph
from torchic.recording import Program

VOCAB, T, C = 11, 6, 8


class Attention(nn.Module):
    """A one-block causal transformer with tied embedding / output weights."""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, C), nn.Embedding(T, C)
        self.ln = nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp = nn.Sequential(nn.Linear(C, 2 * C), nn.GELU(), nn.Linear(2 * C, C))
        self.head = nn.Linear(C, VOCAB, bias=False)
        self.head.weight = self.wte.weight      # (two gradients reach it per step)

    def forward(self, idx):
        b = idx.shape[0]
        x = self.wte(idx) + self.wpe(torchic.arange(T))
        q, k, v = self.qkv(self.ln(x)).view(b, T, 3, 2, C // 2).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, T, C))
        return self.head(x + self.mlp(x))


def _model(kind):
    torchic.manual_seed(3)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    return Attention()


def _batches(kind, n, rng):
    if kind == "mlp":
        return [(torchic.tensor(rng.standard_normal((8, 4)).astype(np.float32)),
                 torchic.tensor(rng.integers(0, 3, 8).astype(np.int32))) for _ in range(n)]
    return [(torchic.tensor(rng.integers(0, VOCAB, (4, T)).astype(np.int32)),
             torchic.tensor(rng.integers(0, VOCAB, 4 * T).astype(np.int32)))
            for _ in range(n)]


def _train_module(kind, opt_name, compiled, steps=20, scoped=False):
    """nanoGPT's loop: the module compiled, loss and backward outside it."""
    model = _model(kind)
    opt = (torchic.optim.SGD(model.parameters(), lr=0.1) if opt_name == "sgd" else
           torchic.optim.AdamW(model.parameters(), lr=0.01))
    run = torchic.compile(model) if compiled else model
    losses = []
    for x, y in _batches(kind, steps, np.random.default_rng(5)):
        with torchic.track_tensors() if scoped else contextlib.nullcontext():
            logits = run(x)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses, [p.detach().numpy() for p in model.parameters()], run


@pytest.mark.parametrize("kind", ["mlp", "attention"])
@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_compiled_module_trains_like_eager_bitwise(backend, kind, opt_name):
    eager = _train_module(kind, opt_name, False)
    compiled = _train_module(kind, opt_name, True)
    assert eager[0] == compiled[0]
    for a, b in zip(eager[1], compiled[1]):
        assert np.array_equal(a, b)
    assert [type(p) for p in compiled[2].programs.values()] == [_Graph]   # replayed
    assert eager[0][-1] < eager[0][0]


def test_compiled_step_inside_track_tensors_matches_eager(backend):
    """A scope around each step disposes the step's temporaries, never the program's
    state (argument copies, recorded outputs, staging, grads)."""
    def train(compiled):
        model = _model("mlp")
        opt = torchic.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            loss = F.cross_entropy(F.dropout(model(x), 0.2), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        step = torchic.compile(step) if compiled else step
        torchic.manual_seed(1)
        losses = []
        for x, y in _batches("mlp", 8, np.random.default_rng(2)):
            with torchic.track_tensors():
                losses.append(step(x, y).item())
        return losses, step
    (eager, _), (compiled, step) = train(False), train(True)
    assert eager == compiled
    assert all(type(p) is Program for p in step.programs.values())
    # and a compiled module's graph, scoped per step
    a, b = (_train_module("mlp", "adamw", c, steps=8, scoped=True)[:2] for c in (0, 1))
    assert a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))


def test_replaced_parameters_are_used(backend):
    m = nn.Linear(3, 2)
    f = torchic.compile(lambda x: m(x))
    x = torchic.ones(1, 3)
    for _ in range(3):
        f(x)
    m.weight = nn.Parameter(torchic.zeros(2, 3))
    m.bias = nn.Parameter(torchic.full((2,), 5.0))
    assert f(x).detach().numpy().tolist() == [[5.0, 5.0]]
    assert [f(x).detach().numpy().tolist() for _ in range(3)] == [[[5.0, 5.0]]] * 3

    w = torchic.ones(2)            # a tensor in fn's closure, rebound
    g = torchic.compile(lambda x: x * w)
    for _ in range(3):
        g(torchic.ones(2))
    w = torchic.full((2,), 3.0)    # noqa: F841 (read by g through its cell)
    assert g(torchic.ones(2)).numpy().tolist() == [3.0, 3.0]


def test_train_and_eval_modes_are_part_of_the_recording(backend):
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    f = torchic.compile(model)
    x = torchic.ones(2, 4)
    for _ in range(3):
        f(x)
    model.eval()
    assert np.array_equal(f(x).detach().numpy(), model(x).detach().numpy())


def test_grads_dropped_outside_the_compiled_function(backend):
    """fn runs forward and backward; zero_grad (set_to_none) and step run outside: the
    grads the program wrote are no longer the parameters', so it records again."""
    def train(compiled):
        model = _model("mlp")
        opt = torchic.optim.SGD(model.parameters(), lr=0.1)

        def forward_backward(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        fb = torchic.compile(forward_backward) if compiled else forward_backward
        losses = []
        for x, y in _batches("mlp", 8, np.random.default_rng(4)):
            losses.append(fb(x, y).item())
            opt.step()
            opt.zero_grad()
        return losses, fb
    (eager, _), (compiled, fb) = train(False), train(True)
    assert eager == compiled
    assert list(fb.programs.values()) == ["eager"]    # (recorded twice, never replayed)


def test_calls_that_cannot_replay_run_eagerly(backend):
    """A call while an earlier output awaits its backward (a replay would overwrite its
    activations) runs eagerly; gradients accumulate into .grad (a tied weight gets two
    per call) as in eager mode, bit for bit."""
    def run(compiled):
        model = _model("attention")
        f = torchic.compile(model) if compiled else model
        batches = _batches("attention", 8, np.random.default_rng(6))
        for i in range(0, 8, 2):
            outs = [f(x) for x, _ in batches[i:i + 2]]
            for out, (_, y) in zip(outs, batches[i:i + 2]):
                F.cross_entropy(out.view(-1, VOCAB), y).backward()   # accumulates
        return [p.grad.numpy() for p in model.parameters()], f
    (eager, _), (grads, f) = run(False), run(True)
    assert all(np.array_equal(a, b) for a, b in zip(eager, grads))
    assert [type(p) for p in f.programs.values()] == [_Graph]


class WithLoss(Attention):
    """nanoGPT's GPT.forward: (logits, loss), both with a graph."""

    def forward(self, idx, targets):
        logits = super().forward(idx)
        return logits, F.cross_entropy(logits.view(-1, VOCAB), targets)


def test_a_module_returning_logits_and_loss_trains_like_eager(backend):
    """Each subset of the outputs that have a graph has its backward program: the loss
    alone (nanoGPT), the logits alone, or both in one pass give eager's bits."""
    def run(compiled):
        torchic.manual_seed(3)
        model = WithLoss()
        opt = torchic.optim.AdamW(model.parameters(), lr=0.01)
        f = torchic.compile(model) if compiled else model
        losses = []
        for i, (x, y) in enumerate(_batches("attention", 12, np.random.default_rng(9))):
            logits, loss = f(x, y)
            opt.zero_grad()
            (loss if i < 8 else logits.sum() * 0.01 if i < 10 else
             loss + logits.sum() * 0.01).backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy() for p in model.parameters()], f
    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    assert all(np.array_equal(a, b) for a, b in zip(eager[1], compiled[1]))
    graph, = compiled[2].programs.values()
    assert type(graph) is _Graph and sorted(graph.segments) == [(0,), (0, 1), (1,)]

    many = torchic.compile(lambda x: tuple(x * float(k) for k in range(MAX_LIVE + 1)))
    x = torchic.ones(2, requires_grad=True)
    for _ in range(3):
        many(x)
    assert list(many.programs.values()) == ["eager"]


def test_backward_after_a_later_replay_is_refused_not_wrong(backend):
    m = nn.Linear(3, 2)
    f = torchic.compile(m)
    x = torchic.ones(1, 3)
    for _ in range(3):
        f(x).sum().backward()
    out = f(x)
    out.grad_fn.hub.graph.stamp += 1      # as a replay that ran anyway would leave it
    with pytest.raises(RuntimeError, match="overwritten"):
        out.sum().backward()


def test_parameter_changed_in_place_before_backward_raises_like_eager(backend):
    for compiled in (False, True):
        m = _model("mlp")
        f = torchic.compile(m) if compiled else m
        x = torchic.ones(2, 4)
        for _ in range(3):
            f(x).sum().backward()
        out = f(x)
        with torchic.no_grad():
            m[2].weight.add_(1.0)       # saved: the hidden layer's gradient reads it
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_arguments_that_require_grad_get_their_gradient(backend):
    """A compiled module between eager ones: the gradient flows through it to the
    argument's graph (and to a leaf argument's .grad), bit for bit."""
    def run(compiled):
        torchic.manual_seed(4)
        first, second = nn.Linear(4, 8), nn.Sequential(nn.Tanh(), nn.Linear(8, 3))
        f = torchic.compile(second) if compiled else second
        params = list(first.parameters()) + list(second.parameters())
        opt = torchic.optim.SGD(params, lr=0.1)
        x = torchic.ones(8, 4, requires_grad=True)
        for x_, y in _batches("mlp", 6, np.random.default_rng(8)):
            opt.zero_grad()
            F.cross_entropy(f(first(x_ * x)), y).backward()
            opt.step()
        return [p.detach().numpy() for p in params] + [x.grad.numpy()], f
    (eager, _), (got, f) = run(False), run(True)
    assert all(np.array_equal(a, b) for a, b in zip(eager, got))
    assert [type(p) for p in f.programs.values()] == [_Graph]


def test_a_backend_without_a_replay_replays_record_by_record(backend, monkeypatch):
    """Backend's replay part is optional: the base class's pack gives None, and programs
    replay through run, one record at a time, with the same results."""
    kind = type(dispatcher.runtime().backend)
    monkeypatch.setattr(kind, "pack", Backend.pack)
    monkeypatch.setattr(kind, "program_slots", False)
    eager, compiled = (_train_module("mlp", "adamw", c, steps=6) for c in (False, True))
    assert eager[0] == compiled[0]
    assert all(np.array_equal(a, b) for a, b in zip(eager[1], compiled[1]))
    graph, = compiled[2].programs.values()
    assert all(p._packed is None for p in graph.programs)


def test_every_backend_replays_through_the_one_interface():
    """Backend's replay part has one signature, which every backend keeps."""
    for name in dispatcher.backend_names():
        kind = dispatcher.backend_class(name)
        for method in ("pack", "push_packed", "slot_fits", "release_packed"):
            assert (list(inspect.signature(getattr(kind, method)).parameters)[1:] ==
                    list(inspect.signature(getattr(Backend, method)).parameters)[1:]), \
                (name, method)
        assert isinstance(kind.program_slots, bool)


def test_entry_points_are_rebound_in_nested_order(backend):
    """Runtime.rebind / restore: a recording inside issued_ops sees the ops, and both
    leave the runtime's own entry points behind."""
    rt = dispatcher.runtime()
    before = {n: rt.__dict__.get(n) for n in ("alloc", "free", "run", "write", "read")}
    f = torchic.compile(lambda x: x * 2.0 + 1.0)
    ops = torchic.testing.issued_ops(lambda: [f(torchic.ones(3)) for _ in range(3)])
    assert ops.count("mul") == 2          # the warm-up and the recording; then replays
    assert {n: rt.__dict__.get(n) for n in before} == before


def test_a_compiled_module_inside_a_compiled_step_is_part_of_its_recording(backend):
    """The inner function replays on its own first; called inside the outer recording it
    runs its Python, so its ops are the outer program's (a replay there would bypass the
    recorder: the outer replays would skip the forward)."""
    def run(compiled):
        model = _model("mlp")
        opt = torchic.optim.SGD(model.parameters(), lr=0.1)
        f = torchic.compile(model) if compiled else model
        batches = _batches("mlp", 10, np.random.default_rng(11))
        for x, _ in batches[:3]:
            f(x)                       # the inner one records and replays alone

        def step(x, y):
            loss = F.cross_entropy(f(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        step = torchic.compile(step) if compiled else step
        return [step(x, y).item() for x, y in batches]
    assert run(False) == run(True)


def test_a_backward_replayed_inside_another_recording_is_refused(backend):
    m = nn.Linear(3, 2)
    f = torchic.compile(m)
    x = torchic.ones(1, 3)
    for _ in range(3):
        f(x).sum().backward()
    out = f(x)
    step = torchic.compile(lambda: out.sum().backward())
    step()                             # (the warm-up runs it eagerly)
    out = f(x)
    with pytest.raises(torchic.CompileError, match="another compiled function's recording"):
        step()


class Sliced(nn.Module):
    """A parameter whose (overlapping) slices get gradients: eager mode writes them into
    one buffer, or into a copy of .grad when it has one."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torchic.randn(4, 6))

    def forward(self, x):
        return ((x @ self.w[:, :4]).tanh().sum(1) + (x @ self.w[:, 2:]).sum(1) +
                self.w[1:3, :].sum())


@pytest.mark.parametrize("accumulate", [1, 2])
def test_sliced_parameters_and_accumulated_grads_match_eager(backend, accumulate):
    def run(compiled):
        torchic.manual_seed(0)
        model = Sliced()
        f = torchic.compile(model) if compiled else model
        opt = torchic.optim.SGD(model.parameters(), lr=0.1)
        rng = np.random.default_rng(0)
        for i in range(8):
            if i % accumulate == 0:
                opt.zero_grad()
            f(torchic.tensor(rng.standard_normal((5, 4)).astype(np.float32))).sum().backward()
            if i % accumulate == accumulate - 1:
                opt.step()
        return model.w.detach().numpy(), model.w.grad.numpy(), f
    (we, ge, _), (wc, gc, f) = run(False), run(True)
    assert np.array_equal(we, wc) and np.array_equal(ge, gc)
    assert [type(p) for p in f.programs.values()] == [_Graph]


def test_freezing_a_layer_records_again(backend):
    """requires_grad_(False) on a layer's parameters (fine-tuning): eager mode gives them
    no gradient from then on, nor does the compiled module."""
    def run(compiled):
        model = _model("mlp")
        f = torchic.compile(model) if compiled else model
        opt = torchic.optim.SGD(model.parameters(), lr=0.1)
        for i, (x, y) in enumerate(_batches("mlp", 8, np.random.default_rng(12))):
            if i == 4:
                for p in model[0].parameters():
                    p.requires_grad_(False)
            opt.zero_grad()
            F.cross_entropy(f(x), y).backward()
            opt.step()
        return [p.detach().numpy() for p in model.parameters()] + [model[0].weight.grad]
    eager, compiled = run(False), run(True)
    assert eager[-1] is None and compiled[-1] is None
    assert all(np.array_equal(a, b) for a, b in zip(eager[:-1], compiled[:-1]))


def test_post_accumulate_grad_hooks_see_each_whole_gradient(backend):
    """The hub hands a leaf its gradients on its edges, so a hook runs once per backward,
    after the last (the tied weight gets two), with eager mode's .grad."""
    def run(compiled):
        model = _model("attention")
        f = torchic.compile(model) if compiled else model
        seen = []
        for name, p in model.named_parameters():
            p.register_post_accumulate_grad_hook(
                lambda p, name=name: seen.append((name, p.grad.numpy().copy())))
        for x, y in _batches("attention", 4, np.random.default_rng(13)):
            model.zero_grad()
            F.cross_entropy(f(x).view(-1, VOCAB), y).backward()
        return seen
    eager, compiled = run(False), run(True)
    assert [n for n, _ in eager] == [n for n, _ in compiled]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(eager, compiled))
