"""torch.optim.swa_utils against PyTorch's: AveragedModel (SWA and EMA), SWALR, update_bn."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")


def _pair():
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.Linear(4, 2))
    ours = torchic.nn.Sequential(torchic.nn.Linear(3, 4), torchic.nn.BatchNorm1d(4),
                                 torchic.nn.Linear(4, 2))
    ours.load_state_dict({k: torchic.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    return ours, ref


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi", "buffers"])
def test_averaged_model_matches_torch(backend, kind):
    ours, ref = _pair()
    kw = {"swa": {}, "ema": "avg", "ema_multi": "multi", "buffers": {"use_buffers": True}}[kind]

    def args(lib):
        if kw == "avg":
            return {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.9)}
        if kw == "multi":
            return {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.9)}
        return kw
    avg_ours = torchic.optim.swa_utils.AveragedModel(ours, **args(torchic))
    avg_ref = torch.optim.swa_utils.AveragedModel(ref, **args(torch))
    opt_ours = torchic.optim.SGD(ours.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for _ in range(4):
        for lib, model, opt, avg in ((torchic, ours, opt_ours, avg_ours),
                                     (torch, ref, opt_ref, avg_ref)):
            opt.zero_grad()
            model(lib.tensor(x)).pow(2).sum().backward()
            opt.step()
            avg.update_parameters(model)
    for (k, a), (k2, b) in zip(avg_ours.state_dict().items(), avg_ref.state_dict().items()):
        assert k == k2
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_swalr_matches_torch():
    for kw in ({"swa_lr": 0.05, "anneal_epochs": 5}, {"swa_lr": [0.05], "anneal_epochs": 3,
                                                      "anneal_strategy": "linear"},
               {"swa_lr": 0.01, "anneal_epochs": 0}):
        opts = [lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=0.5)
                for lib in (torchic, torch)]
        scheds = [lib.optim.swa_utils.SWALR(o, **kw) for lib, o in zip((torchic, torch), opts)]
        for _ in range(8):
            assert scheds[0].get_last_lr() == pytest.approx(scheds[1].get_last_lr())
            for o in opts:
                o.step()
            for s in scheds:
                s.step()


def test_update_bn_matches_torch(backend):
    ours, ref = _pair()
    data = [np.random.default_rng(i).standard_normal((6, 3)).astype(np.float32)
            for i in range(3)]
    torchic.optim.swa_utils.update_bn([(torchic.tensor(d), 0) for d in data], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(d), 0) for d in data], ref)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(ours[1], name).numpy(),
                                   getattr(ref[1], name).numpy(), rtol=1e-5, atol=1e-6)
    assert ours[1].momentum == ref[1].momentum
