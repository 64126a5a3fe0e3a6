"""Every scheduler of torch.optim.lr_scheduler against PyTorch's: the rates (and cycled
momenta) of 40 steps, composed ones (SequentialLR, ChainedScheduler) included, and
state_dict round trips."""

import math

import pytest

import torchic

torch = pytest.importorskip("torch")


def _make(lib, spec, opt_name="SGD", opt_kw=None):
    params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
    opt = getattr(lib.optim, opt_name)([{"params": params[:1]}, {"params": params[1:],
                                                                 "lr": 0.05}],
                                       **(opt_kw or {"lr": 0.1, "momentum": 0.9}))
    return opt, spec(lib.optim.lr_scheduler, opt)


SPECS = {
    "LambdaLR": lambda s, o: s.LambdaLR(o, lambda e: 0.95 ** e),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lambda e: 0.9),
    "StepLR": lambda s, o: s.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=10),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=25, power=2.0),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=9, eta_min=1e-3),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=4,
                                                                              T_mult=2),
    "CyclicLR": lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=5,
                                        mode="triangular2"),
    "CyclicLR-exp_range": lambda s, o: s.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2,
                                                  step_size_up=3, step_size_down=6,
                                                  mode="exp_range", gamma=0.97),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=41),
    "OneCycleLR-three_phase": lambda s, o: s.OneCycleLR(o, max_lr=[0.5, 0.2], epochs=4,
                                                        steps_per_epoch=11, three_phase=True,
                                                        anneal_strategy="linear"),
    "SequentialLR": lambda s, o: s.SequentialLR(o, [s.LinearLR(o, start_factor=0.1,
                                                               total_iters=5),
                                                    s.CosineAnnealingLR(o, T_max=20)],
                                                milestones=[5]),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler([s.ConstantLR(o, factor=0.5,
                                                                      total_iters=4),
                                                         s.ExponentialLR(o, gamma=0.9)]),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_scheduler_matches_torch(name):
    ours_opt, ours = _make(torchic, SPECS[name])
    ref_opt, ref = _make(torch, SPECS[name])
    for step in range(40):
        got, want = ours.get_last_lr(), ref.get_last_lr()
        assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15) for a, b in
                   zip(got, want)), f"{name} step {step}: {got} vs {want}"
        for g1, g2 in zip(ours_opt.param_groups, ref_opt.param_groups):
            assert math.isclose(g1["momentum"], g2["momentum"], rel_tol=1e-9)
        ours_opt.step()
        ref_opt.step()
        ours.step()
        ref.step()


def test_cyclic_momentum_of_adam_betas():
    spec = lambda s, o: s.OneCycleLR(o, max_lr=0.01, total_steps=10)  # noqa: E731
    ours_opt, ours = _make(torchic, spec, "Adam", {"lr": 1e-3})
    ref_opt, ref = _make(torch, spec, "Adam", {"lr": 1e-3})
    for _ in range(9):
        ours_opt.step()
        ref_opt.step()
        ours.step()
        ref.step()
        assert ours_opt.param_groups[0]["betas"] == pytest.approx(ref_opt.param_groups[0]["betas"])
    with pytest.raises(ValueError, match="momentum or beta1"):
        _make(torchic, spec, "Adagrad", {"lr": 1e-3})


def test_reduce_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.91, 0.92, 0.93, 0.89, 0.9, 0.95, 0.96, 0.97, 0.98, 0.99] * 3
    for kw in ({"patience": 2}, {"mode": "max", "factor": 0.5, "patience": 1, "cooldown": 2},
               {"threshold_mode": "abs", "threshold": 0.05, "min_lr": [0.02, 0.001]}):
        opts = [_make(lib, lambda s, o: None)[0] for lib in (torchic, torch)]
        scheds = [lib.optim.lr_scheduler.ReduceLROnPlateau(o, **kw)
                  for lib, o in zip((torchic, torch), opts)]
        for m in metrics:
            for s in scheds:
                s.step(m)
            assert scheds[0].get_last_lr() == pytest.approx(scheds[1].get_last_lr())


def test_state_dict_resumes():
    opt, sched = _make(torchic, SPECS["CosineAnnealingWarmRestarts"])
    for _ in range(6):
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state
    opt2, sched2 = _make(torchic, SPECS["CosineAnnealingWarmRestarts"])
    sched2.load_state_dict(state)
    for _ in range(5):
        sched.step()
        sched2.step()
    assert sched.get_last_lr() == sched2.get_last_lr()
