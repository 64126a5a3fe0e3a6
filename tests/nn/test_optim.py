"""Optimizers and schedulers, step by step against NumPy float64 versions of the published rules.

Each test feeds the same sequence of gradients to a torchic optimizer (by setting
p.grad) and to a NumPy reference written from the paper / PyTorch documentation,
and compares the parameters after every step.
"""

import contextlib
import math

import numpy as np
import pytest

import torchic
import torchic.nn as nn
from torchic import optim, testing
from torchic.optim import lr_scheduler

STEPS = 12
SHAPES = [(3, 4), (5,)]


def T(a, requires_grad=False):
    return torchic.tensor(np.asarray(a, dtype=np.float32), requires_grad=requires_grad)


def grad_sequence(seed=7):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s) * (1 + 0.5 * k) for s in SHAPES] for k in range(STEPS)]


def initial_params(seed=3):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES]


# ---------------------------------------------------------------------------------------
# NumPy float64 references (the update rules as published)
# ---------------------------------------------------------------------------------------
class RefSGD:
    """Sutskever et al. 2013 momentum as PyTorch documents it (torch.optim.SGD)."""

    def __init__(self, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        self.__dict__.update(lr=lr, momentum=momentum, dampening=dampening,
                             weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
        self.buf = {}

    def step(self, i, p, g):
        if self.maximize:
            g = -g
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.momentum:
            if i not in self.buf:
                self.buf[i] = g.copy()
            else:
                self.buf[i] = self.momentum * self.buf[i] + (1 - self.dampening) * g
            g = g + self.momentum * self.buf[i] if self.nesterov else self.buf[i]
        return p - self.lr * g


class RefAdam:
    """Kingma & Ba 2015, Algorithm 1 (eps outside the square root), with PyTorch's L2
    weight decay (Adam), decoupled decay (AdamW, Loshchilov & Hutter 2019) and AMSGrad
    (Reddi et al. 2018: the running max of v, bias-corrected at the current step)."""

    def __init__(self, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 decoupled=False, maximize=False):
        self.__dict__.update(lr=lr, b1=betas[0], b2=betas[1], eps=eps, wd=weight_decay,
                             amsgrad=amsgrad, decoupled=decoupled, maximize=maximize)
        self.m, self.v, self.vmax, self.t = {}, {}, {}, {}

    def step(self, i, p, g):
        if self.maximize:
            g = -g
        t = self.t[i] = self.t.get(i, 0) + 1
        if self.wd:
            if self.decoupled:
                p = p * (1 - self.lr * self.wd)
            else:
                g = g + self.wd * p
        m = self.m[i] = self.b1 * self.m.get(i, 0.0) + (1 - self.b1) * g
        v = self.v[i] = self.b2 * self.v.get(i, 0.0) + (1 - self.b2) * g * g
        if self.amsgrad:
            v = self.vmax[i] = np.maximum(self.vmax.get(i, 0.0), v)
        m_hat = m / (1 - self.b1 ** t)
        v_hat = v / (1 - self.b2 ** t)
        return p - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def run_both(make_opt, ref, rtol=2e-5, atol=2e-6, lr_changes=None, scoped=False):
    params = [T(p, requires_grad=True) for p in initial_params()]
    opt = make_opt(params)
    ref_params = [p.astype(np.float32).astype(np.float64) for p in initial_params()]
    for k, grads in enumerate(grad_sequence()):
        if lr_changes and k in lr_changes:
            for group in opt.param_groups:
                group["lr"] = lr_changes[k]
            ref.lr = lr_changes[k]
        with torchic.track_tensors() if scoped else contextlib.nullcontext():
            for p, g in zip(params, grads):
                p.grad = T(g)
            opt.step()
        ref_params = [ref.step(i, p, g.astype(np.float32).astype(np.float64))
                      for i, (p, g) in enumerate(zip(ref_params, grads))]
        for p, r in zip(params, ref_params):
            np.testing.assert_allclose(p.detach().numpy(), r, rtol=rtol, atol=atol,
                                       err_msg=f"after step {k + 1}")
    return opt, params


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.1, weight_decay=0.01),
    dict(lr=0.05, momentum=0.8, weight_decay=0.1, nesterov=True),
    dict(lr=0.1, momentum=0.5, maximize=True),
]


@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_sgd_matches_reference(backend, kw):
    run_both(lambda ps: optim.SGD(ps, **kw), RefSGD(**kw))


ADAM_CASES = [
    dict(lr=1e-2),
    dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=1e-2, weight_decay=0.1),
    dict(lr=1e-2, amsgrad=True),
    dict(lr=1e-2, maximize=True),
]


@pytest.mark.parametrize("kw", ADAM_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_adam_matches_reference(backend, kw):
    run_both(lambda ps: optim.Adam(ps, **kw), RefAdam(**kw))


@pytest.mark.parametrize("kw", [dict(lr=1e-2), dict(lr=1e-2, weight_decay=0.1),
                                dict(lr=3e-3, amsgrad=True, weight_decay=0.5)],
                         ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_adamw_matches_reference(backend, kw):
    ref = RefAdam(**{"weight_decay": 0.01, **kw}, decoupled=True)
    run_both(lambda ps: optim.AdamW(ps, **kw), ref)


@pytest.mark.parametrize("opt_cls, ref_cls, kw", [
    (optim.SGD, RefSGD, dict(lr=0.05, momentum=0.9)),
    (optim.SGD, RefSGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (optim.Adam, RefAdam, dict(lr=1e-2)),
    (optim.Adam, RefAdam, dict(lr=1e-2, amsgrad=True)),
    (optim.AdamW, RefAdam, dict(lr=1e-2, weight_decay=0.01)),
], ids=["sgd-momentum", "sgd-nesterov", "adam", "adam-amsgrad", "adamw"])
def test_state_created_inside_track_tensors_survives_the_scope(backend, opt_cls, ref_cls, kw):
    # every step runs in its own scope: the state made on the first one must stay usable
    ref = ref_cls(**kw, decoupled=True) if opt_cls is optim.AdamW else ref_cls(**kw)
    run_both(lambda ps: opt_cls(ps, **kw), ref, scoped=True)


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=1e-2),
                                  lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["adam", "sgd-momentum"])
def test_training_loop_in_track_tensors(backend, make):
    """The README's pattern: each step's temporaries are disposed, the state stays."""
    def train(scoped):
        torchic.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = make(model.parameters())
        x, y = torchic.randn(16, 4), torchic.randn(16, 3)
        losses, live = [], []
        for _ in range(6):
            with torchic.track_tensors() if scoped else contextlib.nullcontext():
                loss = torchic.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            torchic.sync()
            live.append(torchic.memory()["live_tensors"])
        return [p.detach().numpy() for p in model.parameters()], losses, live

    ref_params, ref_losses, _ = train(scoped=False)
    params, losses, live = train(scoped=True)
    assert losses == ref_losses and losses[-1] < losses[0]
    for p, r in zip(params, ref_params):
        np.testing.assert_array_equal(p, r)
    assert len(set(live[1:])) == 1, live        # the scope leaves only the state behind


def test_optimizer_load_state_dict_inside_track_tensors(backend):
    params = [T(p, requires_grad=True) for p in initial_params()]
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    for p, g in zip(params, grad_sequence()[0]):
        p.grad = T(g)
    opt.step()
    sd = opt.state_dict()
    opt2 = optim.SGD(params, lr=0.1, momentum=0.9)
    with torchic.track_tensors():
        opt2.load_state_dict(sd)            # the copied buffers belong to opt2
    for p in params:
        np.testing.assert_array_equal(opt2.state[p]["momentum_buffer"].numpy(),
                                      opt.state[p]["momentum_buffer"].numpy())


def test_learning_rate_changes_between_steps_are_used(backend):
    run_both(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), RefSGD(lr=0.1, momentum=0.9),
             lr_changes={4: 0.01, 8: 0.3})
    run_both(lambda ps: optim.Adam(ps, lr=0.1), RefAdam(lr=0.1), lr_changes={5: 0.01})


def test_matches_torch_optim_when_installed(backend):
    torch = pytest.importorskip("torch")
    for make, tmake in [
        (lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
         lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                    weight_decay=0.01)),
        (lambda ps: optim.Adam(ps, lr=1e-2, amsgrad=True),
         lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True)),
        (lambda ps: optim.AdamW(ps, lr=1e-2), lambda ps: torch.optim.AdamW(ps, lr=1e-2)),
    ]:
        params = [T(p, requires_grad=True) for p in initial_params()]
        tparams = [torch.tensor(p, dtype=torch.float32, requires_grad=True)
                   for p in initial_params()]
        opt, topt = make(params), tmake(tparams)
        for grads in grad_sequence():
            for p, tp, g in zip(params, tparams, grads):
                p.grad = T(g)
                tp.grad = torch.tensor(g, dtype=torch.float32)
            opt.step()
            topt.step()
        for p, tp in zip(params, tparams):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)


# ---------------------------------------------------------------------------------------
# behaviour
# ---------------------------------------------------------------------------------------
def test_params_without_grad_are_skipped(backend):
    a, b = T([1.0, 2.0], requires_grad=True), T([3.0], requires_grad=True)
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    a.grad = T([1.0, 1.0])
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.5, 1.5])
    np.testing.assert_allclose(b.detach().numpy(), [3.0])
    assert b not in opt.state


def test_zero_grad(backend):
    a = T([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * a).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0])
    opt.zero_grad()
    assert a.grad is None


def test_param_groups_with_their_own_hyperparameters(backend):
    a, b = T([1.0], requires_grad=True), T([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = T([1.0]), T([1.0])
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.9])
    np.testing.assert_allclose(b.detach().numpy(), [0.5])
    assert opt.param_groups[1]["momentum"] == 0.0


def test_step_with_closure(backend):
    w = T([2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0
    np.testing.assert_allclose(w.detach().numpy(), [1.0])


def test_optimizer_argument_errors(backend):
    w = T([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD([w], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta"):
        optim.Adam([w], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([w, w], lr=0.1)
    with pytest.raises(TypeError, match="ordered"):
        optim.SGD({w}, lr=0.1)


def test_updates_keep_memory_flat(backend):
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    x, y = torchic.randn(8, 16), torchic.randint(0, 4, (8,))
    for opt in (optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                optim.AdamW(model.parameters(), lr=1e-3)):
        use = []
        for step in range(30):
            loss = torchic.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            del loss
            torchic.sync()
            m = torchic.memory()
            use.append((m["bytes_in_use"], m["live_tensors"]))
        assert len(set(use[3:])) == 1, use   # flat after the state is created


def test_training_reduces_loss(backend):
    torchic.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    x = torchic.randn(64, 4)
    y = x.sum(1, keepdim=True) * 0.5
    for opt in (optim.Adam(model.parameters(), lr=1e-2),):
        first = None
        for _ in range(100):
            loss = torchic.mse_loss(model(x), y)
            first = first if first is not None else loss.item()
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert loss.item() < 0.05 * first


def test_optimizer_state_dict_round_trip(backend):
    def make():
        params = [T(p, requires_grad=True) for p in initial_params()]
        return params, optim.Adam(params, lr=1e-2, amsgrad=True)

    params, opt = make()
    grads = grad_sequence()
    for g in grads[:5]:
        for p, gi in zip(params, g):
            p.grad = T(gi)
        opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["state"][0]["step"] == 5
    assert sd["param_groups"][0]["params"] == [0, 1]
    params2, opt2 = make()
    for p2, p in zip(params2, params):
        with torchic.no_grad():
            p2.copy_(p)
    opt2.load_state_dict(sd)
    for g in grads[5:]:
        for ps, o in ((params, opt), (params2, opt2)):
            for p, gi in zip(ps, g):
                p.grad = T(gi)
            o.step()
    for p, p2 in zip(params, params2):
        np.testing.assert_array_equal(p.detach().numpy(), p2.detach().numpy())


# ---------------------------------------------------------------------------------------
# schedulers
# ---------------------------------------------------------------------------------------
def _lrs(sched, opt, n):
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_step_lr(backend):
    opt = optim.SGD([T([1.0], requires_grad=True)], lr=0.1)
    sched = lr_scheduler.StepLR(opt, step_size=3, gamma=0.1)
    lrs = _lrs(sched, opt, 8)
    np.testing.assert_allclose(lrs, [0.1] * 3 + [0.01] * 3 + [0.001] * 2)
    assert sched.get_last_lr() == [opt.param_groups[0]["lr"]]
    with pytest.raises(ValueError):
        lr_scheduler.StepLR(opt, step_size=0)


def test_multistep_exponential_lambda(backend):
    opt = optim.SGD([T([1.0], requires_grad=True)], lr=1.0)
    lrs = _lrs(lr_scheduler.MultiStepLR(opt, milestones=[4, 2], gamma=0.5), opt, 6)
    np.testing.assert_allclose(lrs, [1, 1, 0.5, 0.5, 0.25, 0.25])
    opt = optim.SGD([T([1.0], requires_grad=True)], lr=1.0)
    np.testing.assert_allclose(_lrs(lr_scheduler.ExponentialLR(opt, 0.5), opt, 3),
                               [1, 0.5, 0.25])
    opt = optim.SGD([T([1.0], requires_grad=True)], lr=2.0)
    np.testing.assert_allclose(_lrs(lr_scheduler.LambdaLR(opt, lambda e: 1 / (e + 1)), opt, 3),
                               [2, 1, 2 / 3])


def test_scheduler_state_dict_resume(backend):
    opt = optim.SGD([T([1.0], requires_grad=True)], lr=0.1)
    sched = lr_scheduler.StepLR(opt, step_size=2)
    _lrs(sched, opt, 3)
    state = sched.state_dict()
    opt2 = optim.SGD([T([1.0], requires_grad=True)], lr=0.1)
    sched2 = lr_scheduler.StepLR(opt2, step_size=2)
    opt2.load_state_dict(opt.state_dict())       # (PyTorch's resume: the rates live there)
    sched2.load_state_dict(state)
    sched.step()
    sched2.step()
    assert sched.get_last_lr() == sched2.get_last_lr()
    assert math.isclose(sched2.get_last_lr()[0], 0.001)   # epoch 4: 0.1 * 0.1 ** 2


# ---------------------------------------------------------------------------------------
# the fused update (ops.py's adam_update): one primitive per parameter
# ---------------------------------------------------------------------------------------
FUSED_VARIANTS = [
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, weight_decay=0.1)),
    ("Adam", dict(lr=1e-2, maximize=True, weight_decay=0.05)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("Adam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adam", dict(lr=3e-3, betas=(0.8, 0.95), eps=1e-6, fused=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.3, maximize=True, foreach=False)),
    ("AdamW", dict(lr=1e-2, amsgrad=True, weight_decay=0.1, capturable=True)),
]


_issued_ops = testing.issued_ops      # (the primitive ops fn() issues, in order)


@pytest.mark.parametrize("name,kw", FUSED_VARIANTS,
                         ids=[f"{n}-" + ",".join(f"{k}={v}" for k, v in kw.items())
                              for n, kw in FUSED_VARIANTS])
def test_adam_matches_torch_over_100_steps(backend, name, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    init = [rng.standard_normal(s).astype(np.float32) for s in [(16, 8), (8,), ()]]
    params = [T(a, requires_grad=True) for a in init]
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    tkw = {k: v for k, v in kw.items() if k != "capturable"}     # (CUDA-only in torch)
    opt, topt = getattr(optim, name)(params, **kw), getattr(torch.optim, name)(tparams, **tkw)
    for step in range(100):
        for p, tp in zip(params, tparams):
            g = rng.standard_normal(p.shape).astype(np.float32) * (1 + step % 3)
            p.grad, tp.grad = T(g), torch.tensor(g)
        opt.step()
        topt.step()
        for p, tp in zip(params, tparams):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=f"after step {step + 1}")
    for p, tp in zip(params, tparams):
        for k in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(opt.state[p][k].numpy(), topt.state[tp][k].numpy(),
                                       rtol=1e-5, atol=1e-6)
        assert opt.state[p]["step"] == 100


@pytest.mark.parametrize("make", [
    lambda ps: optim.Adam(ps, lr=1e-2, weight_decay=0.1),
    lambda ps: optim.AdamW(ps, lr=1e-2, weight_decay=0.2, maximize=True),
], ids=["adam_l2", "adamw_maximize"])
def test_fused_update_is_one_op_per_parameter_bit_for_bit_the_unfused_ops(backend, make):
    """Contiguous parameters take adam_update (one op each, nothing else issued); a
    transposed parameter and its copy through the separate ops give the same float32 bits."""
    rng = np.random.default_rng(2)
    base = rng.standard_normal((6, 5)).astype(np.float32)
    fused_p = [T(base, requires_grad=True), T(base[0], requires_grad=True)]
    strided = T(np.ascontiguousarray(base.T)).t()          # a (6, 5) transposed view: a leaf
    other_p = [strided, T(base[0], requires_grad=True)]
    opt_f, opt_o = make(fused_p), make(other_p)
    opt_o._fusable = lambda *a: False                      # the second one: separate ops only
    for step in range(5):
        g = [rng.standard_normal(p.shape).astype(np.float32) for p in fused_p]
        for ps in (fused_p, other_p):
            for p, gk in zip(ps, g):
                p.grad = T(gk)
        ops_f = _issued_ops(opt_f.step)
        if step:    # (the first step also fills the new state with zeros)
            assert ops_f == ["adam_update", "adam_update"], ops_f
        opt_o.step()
        for a, b in zip(fused_p, other_p):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(),
                                          err_msg=f"step {step + 1}")
            for k in ("exp_avg", "exp_avg_sq"):
                np.testing.assert_array_equal(opt_f.state[a][k].numpy(),
                                              opt_o.state[b][k].numpy())


def test_non_contiguous_parameter_or_grad_falls_back_to_the_separate_ops(backend):
    rng = np.random.default_rng(4)
    p0 = rng.standard_normal((4, 3))
    strided_p = T(np.ascontiguousarray(p0.T)).t()
    p = T(p0, requires_grad=True)
    opt_s, opt = optim.Adam([strided_p], lr=0.1), optim.Adam([p], lr=0.1)
    ref = RefAdam(lr=0.1)
    ref_p = p0.astype(np.float32).astype(np.float64)
    for _ in range(4):
        g = rng.standard_normal((4, 3)).astype(np.float32)
        strided_p.grad = T(g)
        p.grad = T(np.ascontiguousarray(g.T)).t()      # a transposed grad
        for o in (opt_s, opt):
            assert "adam_update" not in _issued_ops(o.step)
        ref_p = ref.step(0, ref_p, g.astype(np.float64))
        for t in (strided_p, p):
            np.testing.assert_allclose(t.detach().numpy(), ref_p, rtol=2e-5, atol=2e-6)


def test_compiled_fused_step_reads_hyperparameters_at_every_replay(backend):
    """lr, betas, eps and weight_decay changed between compiled replays are used (they
    travel in the host-written scalars), bit for bit as eager steps."""
    rng = np.random.default_rng(8)
    init = rng.standard_normal((7, 3)).astype(np.float32)
    grads = [rng.standard_normal((7, 3)).astype(np.float32) for _ in range(8)]
    results = []
    for compiled in (False, True):
        p = T(init, requires_grad=True)
        opt = optim.AdamW([p], lr=1e-2, weight_decay=0.1)

        def step(g):
            p.grad = g
            opt.step()
        run = torchic.compile(step) if compiled else step
        for k, g in enumerate(grads):
            if k == 4:
                opt.param_groups[0].update(lr=3e-2, betas=(0.7, 0.9), eps=1e-4,
                                           weight_decay=0.5)
            run(T(g))
        results.append((p.detach().numpy(), opt.state[p]["exp_avg"].numpy(),
                        opt.state[p]["step"]))
    (pe, me, se), (pc, mc, sc) = results
    np.testing.assert_array_equal(pc, pe)
    np.testing.assert_array_equal(mc, me)
    assert se == sc == len(grads)


def test_fused_state_dict_round_trip_continues_bit_for_bit(backend):
    rng = np.random.default_rng(9)
    init = rng.standard_normal((5, 4)).astype(np.float32)
    grads = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(10)]
    p = T(init, requires_grad=True)
    opt = optim.AdamW([p], lr=1e-2)
    for g in grads[:5]:
        p.grad = T(g)
        opt.step()
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 5 and sd["param_groups"][0]["fused"] is None
    q = T(p.detach().numpy(), requires_grad=True)
    opt2 = optim.AdamW([q], lr=1e-2)
    opt2.load_state_dict(sd)
    for g in grads[5:]:
        for t, o in ((p, opt), (q, opt2)):
            t.grad = T(g)
            o.step()
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
    assert opt2.state[q]["step"] == 10


def test_fused_update_bumps_versions_so_saved_tensors_are_checked(backend):
    p = T([1.0, 2.0, 3.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    loss = (p * p).sum()                     # Mul saves p for its backward
    p.grad = T([1.0, 1.0, 1.0])
    assert _issued_ops(opt.step)[-1] == "adam_update"
    with pytest.raises(RuntimeError, match="inplace|in-place|modified"):
        loss.backward()


def test_adam_bad_state_and_bad_fused_inputs_are_clear_errors(backend):
    import inspect
    from torchic import raw
    p = T(np.ones((3, 2)), requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = T(np.ones((3, 2)))
    opt.step()
    opt.state[p]["exp_avg"] = T(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match=r"'exp_avg' has shape \[2, 3\].* \[3, 2\]"):
        opt.step()
    s = T(np.zeros(10))
    m, v = T(np.zeros((3, 2))), T(np.zeros((3, 2)))
    with pytest.raises(RuntimeError, match="exp_avg has shape"):
        raw.adam_update(p, p.grad, T(np.zeros(6)), v, s)
    with pytest.raises(RuntimeError, match="share memory"):
        raw.adam_update(p, p.grad, m, m, s)
    with pytest.raises(RuntimeError, match="contiguous"):
        raw.adam_update(p, p.grad, m, T(np.zeros((2, 3))).t(), s)
    with pytest.raises(RuntimeError, match="scalars"):
        raw.adam_update(p, p.grad, m, v, T(np.zeros(9)))
    # PyTorch's keyword arguments (nanoGPT looks for 'fused') and their checks
    for cls in (optim.Adam, optim.AdamW):
        names = inspect.signature(cls).parameters
        assert {"foreach", "fused", "capturable", "differentiable"} <= set(names)
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True`"):
            cls([p], fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            cls([p], fused=True, differentiable=True)
