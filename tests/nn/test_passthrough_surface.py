"""The lines single-device PyTorch scripts pass through: backend flags, autocast, GradScaler,
torch.jit / torch.onnx / torch.accelerator, torch.compile's keywords, torch.nn.modules paths."""

import importlib
import warnings

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")


def test_backend_flags_are_settable(backend):
    torchic.backends.cuda.matmul.allow_tf32 = True
    torchic.backends.cudnn.allow_tf32 = True
    torchic.backends.cudnn.benchmark = True
    torchic.backends.cudnn.deterministic = True
    assert torchic.backends.cuda.matmul.allow_tf32 is True
    torchic.backends.cuda.enable_flash_sdp(False)
    assert not torchic.backends.cuda.flash_sdp_enabled()
    with torchic.backends.cuda.sdp_kernel(enable_flash=True):
        assert torchic.backends.cuda.flash_sdp_enabled()
    assert not torchic.backends.cuda.flash_sdp_enabled()
    torchic.backends.cuda.enable_flash_sdp(True)
    assert torchic.backends.cuda.is_built() is False


def test_autocast_changes_no_dtype(backend):
    w = torchic.ones(2, 2)

    @torchic.autocast(device_type="cpu")
    def f(x):
        assert torchic.amp.is_autocast_enabled("cpu")
        return x @ w

    with torchic.autocast(device_type="cpu", dtype=torchic.bfloat16):
        assert torchic.amp.get_autocast_dtype("cpu") == torchic.bfloat16
        y = w @ w
        with torchic.amp.autocast("cpu", enabled=False):
            assert not torchic.amp.is_autocast_enabled("cpu")
        assert torchic.amp.is_autocast_enabled("cpu")
    assert not torchic.amp.is_autocast_enabled("cpu")
    assert y.dtype == torchic.float32 and y.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert f(w).dtype == torchic.float32
    with pytest.raises(ValueError):
        torchic.autocast(0)


def _scaler_run(lib, scaler, model, opt, xs):
    scales, losses = [], []
    for x in xs:
        opt.zero_grad()
        loss = model(lib.tensor(x)).sum()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        losses.append(float(loss.item()))
    return scales, losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_grad_scaler_matches_torchs(backend):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(6)]
    xs[2][0, 0] = 3e38          # an overflowing gradient: the step is skipped, scale backs off
    ref = torch.nn.Linear(3, 2)
    ours = torchic.nn.Linear(3, 2)
    ours.load_state_dict({k: torchic.tensor(v.detach().numpy()) for k, v in
                          ref.state_dict().items()})
    kw = dict(init_scale=2.0 ** 10, growth_interval=2)
    want = _scaler_run(torch, torch.amp.GradScaler("cpu", **kw), ref,
                       torch.optim.SGD(ref.parameters(), lr=0.1), xs)
    got = _scaler_run(torchic, torchic.amp.GradScaler("cpu", **kw), ours,
                      torchic.optim.SGD(ours.parameters(), lr=0.1), xs)
    assert got[0] == want[0]
    for a, b in zip(got[2], want[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    s = torchic.amp.GradScaler("cpu", **kw)
    assert s.state_dict() == torch.amp.GradScaler("cpu", **kw).state_dict()


def test_grad_scaler_disabled_passes_through(backend):
    model = torchic.nn.Linear(2, 1)
    opt = torchic.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = torchic.cuda.amp.GradScaler()          # no CUDA: disabled, as PyTorch's
    assert not scaler.is_enabled() and "Disabling" in str(caught[0].message)
    quiet = torchic.amp.GradScaler(enabled=False)
    loss = model(torchic.ones(1, 2)).sum()
    assert scaler.scale(loss) is loss and quiet.scale(loss) is loss
    loss.backward()
    before = model.weight.detach().numpy().copy()
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model.weight.detach().numpy(), before)
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    from torchic.cuda.amp import GradScaler, autocast    # noqa: F401  (scripts' import)


def test_grad_scaler_misuse_raises_as_torch(backend):
    model = torchic.nn.Linear(2, 1)
    opt = torchic.optim.SGD(model.parameters(), lr=0.1)
    scaler = torchic.amp.GradScaler("cpu")
    scaler.scale(model(torchic.ones(1, 2)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(ValueError):
        torchic.amp.GradScaler("cpu", growth_factor=0.5)


def test_jit_and_onnx_and_accelerator(backend):
    @torchic.jit.script
    def double(x):
        return x * 2

    m = torchic.jit.trace(torchic.nn.Linear(2, 2), torchic.ones(1, 2))
    assert isinstance(m, torchic.nn.Linear)
    assert double(torchic.ones(2)).tolist() == [2.0, 2.0]
    assert not torchic.jit.is_scripting()
    with pytest.raises(NotImplementedError, match="TorchScript"):
        torchic.jit.save(m, "x.pt")
    importlib.import_module("torchic.onnx")
    with pytest.raises(NotImplementedError, match="ONNX"):
        torchic.onnx.export(m, torchic.ones(1, 2), "m.onnx")
    assert torchic.accelerator.is_available() is False
    assert torchic.accelerator.current_accelerator() is None
    assert torchic.accelerator.device_count() == 0
    torchic.cuda.set_device(0)
    assert torchic.cuda.device_count() == 0


def test_compile_takes_torchs_keywords(backend):
    model = torchic.nn.Linear(2, 2)
    x = torchic.ones(3, 2)
    want = model(x).detach().numpy()
    for kw in ({"mode": "max-autotune", "fullgraph": True}, {"dynamic": False},
               {"backend": "inductor", "options": {"trace.enabled": False}}):
        np.testing.assert_array_equal(torchic.compile(model, **kw)(x).detach().numpy(), want)
    assert torchic.compile(model, disable=True) is model
    deco = torchic.compile(mode="reduce-overhead")(lambda t: t + 1)
    assert deco(torchic.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        torchic.compile(model, mode="fastest")


@pytest.mark.parametrize("path, name", [
    ("torchic.nn.modules.loss", "CrossEntropyLoss"), ("torchic.nn.modules.linear", "Linear"),
    ("torchic.nn.modules.container", "Sequential"), ("torchic.nn.modules.module", "Module"),
    ("torchic.nn.modules.activation", "GELU"), ("torchic.nn.modules.sparse", "Embedding"),
    ("torchic.nn.modules.normalization", "LayerNorm"), ("torchic.utils.data.dataloader",
                                                        "DataLoader"),
    ("torchic.utils.data.dataset", "Dataset"), ("torchic.optim.optimizer", "Optimizer"),
    ("torchic.nn.parameter", "Parameter"), ("torchic.optim.lr_scheduler", "LambdaLR"),
])
def test_pytorchs_module_paths_import(path, name):
    module = importlib.import_module(path)
    assert getattr(module, name) is not None
    with pytest.raises(AttributeError):
        module.NoSuchThing       # noqa: B018
