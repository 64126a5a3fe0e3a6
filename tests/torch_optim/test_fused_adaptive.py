"""Adagrad and plain RMSprop update each parameter with one adam_update pass (beta1 = 0,
no bias correction; optim/adaptive.py's PerParameter._fused): the op count per parameter,
and a compiled training step (host_values re-reading the step count and a scheduled lr at
every replay) matching the eager one bit for bit. Their numbers against torch are
test_optim_db.py's and test_optim_state_interop.py's."""

import numpy as np
import pytest

import torchic
from torchic.testing.checks import issued_ops

CONFIGS = [("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
           ("RMSprop", dict(lr=0.01, weight_decay=0.1))]


def _model(name, kwargs):
    rng = np.random.default_rng(0)
    params = [torchic.nn.Parameter(torchic.tensor(rng.standard_normal(s).astype(np.float32)))
              for s in ((6, 4), (6,), (3, 6), (3,))]
    opt = getattr(torchic.optim, name)(params, **kwargs)
    sched = torchic.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    x = torchic.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = torchic.tensor(rng.standard_normal((8, 3)).astype(np.float32))

    def step():
        h = torchic.tanh(x @ params[0].t() + params[1])
        loss = ((h @ params[2].t() + params[3] - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return params, opt, sched, step


@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=[n for n, _ in CONFIGS])
def test_adaptive_step_is_one_adam_update_per_parameter(backend, name, kwargs):
    params, opt, _, step = _model(name, kwargs)
    step()
    ops = issued_ops(opt.step)
    assert sum(op == "adam_update" for op in ops) == len(params), ops
    assert len(ops) <= 3 * len(params), ops


@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=[n for n, _ in CONFIGS])
def test_compiled_adaptive_step_matches_eager_bitwise(backend, name, kwargs):
    results = []
    for compiled in (False, True):
        params, opt, sched, step = _model(name, kwargs)
        if compiled:
            step = torchic.compile(step)
        losses = []
        for _ in range(8):
            losses.append(step().item())
            sched.step()
        results.append((losses, [p.detach().numpy() for p in params],
                        [s["step"] for s in opt.state.values()]))
    (le, pe, se), (lc, pc, sc) = results
    assert le == lc and se == sc == [8] * 4
    for a, b in zip(pe, pc):
        assert np.array_equal(a, b)
    assert le[-1] < le[0]
