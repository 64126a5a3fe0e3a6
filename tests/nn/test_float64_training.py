"""nn and optim in float64 (issue 40): Module.double / float / half / bfloat16 / to(dtype) /
type convert parameters in place (the Parameter objects an optimizer holds stay the same),
set_default_dtype(float64) builds float64 layers, and a float64 model trained by SGD, Adam
and AdamW matches PyTorch's float64 run step for step (no float32 constant anywhere on the
way: the learning rate and Adam's numbers are float64 too). webgpu refuses float64 with the
TypeError naming the backend."""

import numpy as np
import pytest

import torchic
import torchic.nn as nn

torch = pytest.importorskip("torch")


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))


def _same_weights(ours, theirs):
    with torchic.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            p.copy_(torchic.tensor(q.detach().numpy()))


def test_webgpu_refuses_float64(backend):
    if backend != "webgpu":
        pytest.skip("webgpu's rule")
    with pytest.raises(TypeError, match="webgpu"):
        _model(torchic).double()


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW"])
def test_float64_training_matches_pytorch(backend, opt):
    if backend == "webgpu":
        pytest.skip("no float64 on webgpu (test_webgpu_refuses_float64)")
    theirs = _model(torch).double()
    ours = _model(torchic)
    params = list(ours.parameters())
    kwargs = {"SGD": {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-3},
              "Adam": {"lr": 0.01, "weight_decay": 1e-3}, "AdamW": {"lr": 0.01}}[opt]
    our_opt = getattr(torchic.optim, opt)(ours.parameters(), **kwargs)
    ours.double()                              # after the optimizer: same Parameter objects
    assert [p for p in ours.parameters()] == params
    assert all(p.dtype == torchic.float64 for p in ours.parameters())
    _same_weights(ours, theirs)
    their_opt = getattr(torch.optim, opt)(theirs.parameters(), **kwargs)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    for _ in range(6):
        losses = []
        for model, optimizer, lib in ((ours, our_opt, torchic), (theirs, their_opt, torch)):
            loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            assert str(loss.dtype).endswith("float64")
        np.testing.assert_allclose(losses[0], losses[1], rtol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert p.grad.dtype == torchic.float64
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-11,
                                   atol=1e-13)


def test_module_dtype_conversions(backend):
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert m.half() is m and m[0].weight.dtype == torchic.float16
    assert m[1].num_batches_tracked.dtype == torchic.int64       # ints stay ints
    assert m.bfloat16()[0].bias.dtype == torchic.bfloat16
    assert m.float()[1].running_mean.dtype == torchic.float32
    assert m.to(torchic.float16)[0].weight.dtype == torchic.float16
    assert m.type(torchic.float32)[0].weight.dtype == torchic.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(torchic.int64)
    out = m.half()(torchic.randn(4, 2).half())
    assert out.dtype == torchic.float16


def test_set_default_dtype_builds_float64_layers(backend):
    if backend == "webgpu":
        pytest.skip("no float64 on webgpu")
    torchic.set_default_dtype(torchic.float64)
    try:
        layer, norm = nn.Linear(3, 2), nn.LayerNorm(2)
        assert layer.weight.dtype == layer.bias.dtype == torchic.float64
        assert norm.weight.dtype == torchic.float64 and torchic.randn(2).dtype == torchic.float64
        assert (torchic.tensor([1, 2]) / 3).dtype == torchic.float64    # int / int: default
        assert (torchic.tensor([1, 2]) * 0.5).dtype == torchic.float64
        out = norm(layer(torchic.randn(4, 3)))
        out.sum().backward()
        assert layer.weight.grad.dtype == torchic.float64
    finally:
        torchic.set_default_dtype(torchic.float32)
    assert nn.Linear(3, 2).weight.dtype == torchic.float32
