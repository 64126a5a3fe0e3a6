"""nn.Module machinery and the layers, on every backend, against NumPy float64 references."""

from collections import OrderedDict

import numpy as np
import pytest

import torchic
import torchic.nn as nn


def T(a, requires_grad=False):
    return torchic.tensor(np.asarray(a, dtype=np.float32), requires_grad=requires_grad)


def close(t, ref, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(t.detach().numpy() if isinstance(t, torchic.Tensor) else t, ref,
                               rtol=rtol, atol=atol)


def numeric_grad(f, x, eps=1e-6):
    """Central differences of a scalar float64 function f at x (float64 array)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("scale", torchic.ones(3))
        self.register_buffer("scratch", torchic.zeros(2), persistent=False)
        self.not_registered = [nn.Linear(2, 2)]   # plain lists are not registered

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


# ---------------------------------------------------------------------------------------
# Parameter
# ---------------------------------------------------------------------------------------
def test_parameter_is_a_leaf_tensor_that_requires_grad(backend):
    data = torchic.randn(3, 2)
    p = nn.Parameter(data)
    assert isinstance(p, torchic.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad is None
    assert p.shape == (3, 2) and p.dtype == torchic.float32
    np.testing.assert_array_equal(p.detach().numpy(), data.detach().numpy())   # shares the data
    assert "Parameter containing" in repr(p)
    frozen = nn.Parameter(torchic.zeros(2), requires_grad=False)
    assert not frozen.requires_grad
    # ops on parameters give plain tensors
    assert type(p * 2) is torchic.Tensor


def test_parameter_sgd_update_spelling(backend):
    p = nn.Parameter(T([1.0, 2.0, 3.0]))
    loss = (p * p).sum()
    loss.backward()
    close(p.grad, [2, 4, 6])
    p.data += -0.1 * p.grad
    close(p, [0.8, 1.6, 2.4])
    assert isinstance(p, nn.Parameter) and p.requires_grad
    p.grad = None
    (p * 3).sum().backward()
    close(p.grad, [3, 3, 3])


def test_parameter_rejects_non_tensors_and_int_tensors(backend):
    with pytest.raises(TypeError, match="torchic Tensor"):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(RuntimeError, match="floating point"):     # PyTorch's error
        nn.Parameter(torchic.tensor([1, 2]))
    assert not nn.Parameter(torchic.tensor([1, 2]), requires_grad=False).requires_grad


# ---------------------------------------------------------------------------------------
# Module registration, traversal, modes
# ---------------------------------------------------------------------------------------
def test_registration_by_attribute(backend):
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "Tanh", "Linear"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [n for n, _ in m.named_buffers()] == ["scale", "scratch"]
    # own parameters and buffers first, then the children (PyTorch order)
    assert list(m.state_dict()) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert m.num_parameters() == 4 * 8 + 8 + 8 * 3 + 3
    assert sum(p.numel() for p in m.parameters()) == m.num_parameters()
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())
    assert m.get_submodule("fc2") is m.fc2


def test_shared_parameters_are_listed_once(backend):
    a = nn.Linear(3, 3)
    seq = nn.Sequential(a, nn.ReLU(), a)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]


def test_reassign_and_delete_keep_registries_in_step(backend):
    m = TwoLayer()
    m.fc2 = nn.Linear(8, 5)
    assert m.fc2.out_features == 5 and m._modules["fc2"] is m.fc2
    with pytest.raises(TypeError, match="parameter"):
        m.fc1.weight = torchic.zeros(8, 4)      # a plain tensor cannot replace a Parameter
    m.fc1.bias = None
    assert [n for n, _ in m.fc1.named_parameters()] == ["weight"]
    m.extra = nn.Parameter(torchic.zeros(2))
    assert "extra" in dict(m.named_parameters())
    del m.extra
    assert "extra" not in dict(m.named_parameters())
    m.scale = torchic.full((3,), 2.0)           # a buffer can be replaced by a tensor
    close(m.state_dict()["scale"], [2, 2, 2])
    with pytest.raises(TypeError, match="buffer"):
        m.scale = 3.0


def test_assigning_before_super_init_is_a_clear_error(backend):
    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Bad()


def test_call_runs_forward_and_base_forward_raises(backend):
    m = TwoLayer()
    x = torchic.randn(5, 4)
    assert m(x).shape == (5, 3)
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(x)


def test_train_eval_recurse(backend):
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(2)))
    assert all(x.training for x in m.modules())
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError):
        m.train("yes")


def test_zero_grad(backend):
    m = TwoLayer()
    m(torchic.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_requires_grad_and_apply(backend):
    m = TwoLayer()
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Tanh", "Linear", "TwoLayer"]


def test_repr(backend):
    m = nn.Sequential(nn.Linear(30, 200), nn.Tanh(), nn.Linear(200, 27, bias=False))
    assert repr(m) == (
        "Sequential(\n"
        "  (0): Linear(in_features=30, out_features=200, bias=True)\n"
        "  (1): Tanh()\n"
        "  (2): Linear(in_features=200, out_features=27, bias=False)\n"
        ")")
    assert repr(nn.Embedding(27, 10)) == "Embedding(27, 10)"
    assert "BatchNorm1d(4, eps=1e-05, momentum=0.1" in repr(nn.BatchNorm1d(4))


def test_containers(backend):
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seq.append(nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    assert seq(torchic.randn(4, 2)).shape == (4, 1)
    named = nn.Sequential(OrderedDict([("inp", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in named.named_parameters()] == ["inp.weight", "inp.bias"]
    with pytest.raises(IndexError):
        seq[5]
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    assert [n for n, _ in ml.named_parameters()][-1] == "2.bias"
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.Tanh()})
    assert "a" in md and list(md.keys()) == ["a", "b"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]


# ---------------------------------------------------------------------------------------
# state_dict / load_state_dict
# ---------------------------------------------------------------------------------------
def test_state_dict_round_trip_in_place(backend):
    src, dst = TwoLayer(), TwoLayer()
    w_before = dst.fc1.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.fc1.weight is w_before            # copied in place: optimizers keep working
    x = torchic.randn(3, 4)
    close(dst(x), src(x).detach().numpy())


def test_state_dict_shares_storage_and_is_detached(backend):
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad
    with torchic.no_grad():
        m.weight.fill_(3.0)
    close(sd["weight"], np.full((2, 2), 3.0))
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_load_state_dict_accepts_numpy(backend):
    m = nn.Linear(2, 1)
    m.load_state_dict({"weight": np.array([[1.0, 2.0]]), "bias": np.array([0.5])})
    close(m(T([[1.0, 1.0]])), [[3.5]])


def test_load_state_dict_errors_list_every_problem_and_change_nothing(backend):
    m = TwoLayer()
    before = m.fc1.weight.detach().numpy().copy()
    sd = dict(TwoLayer().state_dict())
    del sd["fc2.bias"]
    sd["fc3.weight"] = torchic.zeros(1)
    sd["fc1.bias"] = torchic.zeros(7)
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict(sd)
    msg = str(err.value)
    assert "Error(s) in loading state_dict for TwoLayer" in msg
    assert 'Missing key(s) in state_dict: "fc2.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "fc3.weight"' in msg
    assert "size mismatch for fc1.bias: copying a param with shape [7] from checkpoint, " \
           "the shape in current model is [8]" in msg
    np.testing.assert_array_equal(m.fc1.weight.detach().numpy(), before)


def test_load_state_dict_non_strict(backend):
    m = TwoLayer()
    sd = dict(TwoLayer().state_dict())
    del sd["scale"]
    sd["junk"] = torchic.zeros(1)
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["scale"] and res.unexpected_keys == ["junk"]
    close(m.fc1.weight, sd["fc1.weight"].numpy())
    sd["fc1.weight"] = torchic.zeros(1, 1)
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict(sd, strict=False)        # shapes are checked even when not strict


def test_load_state_dict_type_errors(backend):
    m = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="'weight' \\(float\\)"):
        m.load_state_dict({"weight": 1.0, "bias": torchic.zeros(1)})
    with pytest.raises(TypeError, match="dict"):
        m.load_state_dict([torchic.zeros(1)])


# ---------------------------------------------------------------------------------------
# layers vs NumPy references
# ---------------------------------------------------------------------------------------
def test_linear_forward_backward(backend, rng):
    m = nn.Linear(5, 3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w, b = m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64)
    xt = T(x, requires_grad=True)
    y = m(xt)
    close(y, x @ w.T + b)
    gy = rng.standard_normal((4, 3))
    y.backward(T(gy))
    close(m.weight.grad, gy.T @ x, rtol=1e-4, atol=1e-5)
    close(m.bias.grad, gy.sum(0), rtol=1e-4, atol=1e-5)
    close(xt.grad, gy @ w, rtol=1e-4, atol=1e-5)
    # batched input and no bias
    m2 = nn.Linear(5, 2, bias=False)
    x3 = rng.standard_normal((2, 3, 5)).astype(np.float32)
    close(m2(T(x3)), x3 @ m2.weight.detach().numpy().T, rtol=1e-5, atol=1e-5)


def test_linear_init_bounds(backend):
    torchic.manual_seed(3)
    m = nn.Linear(100, 50)
    bound = 1 / np.sqrt(100)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert w.std() == pytest.approx(bound / np.sqrt(3), rel=0.1)


def test_linear_init_is_the_same_on_every_backend(backend):
    # PyTorch's torch.manual_seed(123); nn.Linear(3, 2).weight, bit for bit (torch 2.13)
    torchic.manual_seed(123)
    w = nn.Linear(3, 2).weight.detach().numpy()
    expected = np.array([[-0.23542964, 0.019124476, -0.28674594],
                         [0.21772662, -0.4919342, 0.42322308]], dtype=np.float32)
    np.testing.assert_array_equal(w, expected)


def test_embedding(backend, rng):
    m = nn.Embedding(7, 3)
    table = m.weight.detach().numpy()
    idx = np.array([[1, 2, 6], [0, 1, 1]], dtype=np.int32)
    out = m(torchic.tensor(idx))
    assert out.shape == (2, 3, 3)
    close(out, table[idx])
    gy = rng.standard_normal((2, 3, 3))
    out.backward(T(gy))
    expected = np.zeros((7, 3))
    np.add.at(expected, idx.reshape(-1), gy.reshape(-1, 3))
    close(m.weight.grad, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="integer"):
        m(T([1.0, 2.0]))
    pre = nn.Embedding.from_pretrained(T(np.eye(3)))
    assert not pre.weight.requires_grad and pre(torchic.tensor([2])).tolist() == [[0, 0, 1]]


@pytest.mark.parametrize("name, ref", [
    ("ReLU", lambda x: np.maximum(x, 0)),
    ("Tanh", np.tanh),
    ("Sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("Identity", lambda x: x),
])
def test_activations(backend, rng, name, ref):
    x = rng.standard_normal((3, 4))
    close(getattr(nn, name)()(T(x)), ref(x), rtol=1e-5, atol=1e-6)


def test_softmax_modules_and_flatten(backend, rng):
    x = rng.standard_normal((2, 3, 4))
    e = np.exp(x - x.max(1, keepdims=True))
    close(nn.Softmax(dim=1)(T(x)), e / e.sum(1, keepdims=True))
    close(nn.LogSoftmax(dim=1)(T(x)), np.log(e / e.sum(1, keepdims=True)), atol=1e-5)
    assert nn.Flatten()(T(x)).shape == (2, 12)
    assert nn.Flatten(0, 1)(T(x)).shape == (6, 4)


def _layer_norm_ref(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def test_layer_norm_forward_and_gradients(backend, rng):
    m = nn.LayerNorm(6)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    with torchic.no_grad():
        m.weight.copy_(T(rng.standard_normal(6)))
        m.bias.copy_(T(rng.standard_normal(6)))
    w, b = m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64)
    x = rng.standard_normal((4, 6))
    gy = rng.standard_normal((4, 6))
    xt = T(x, requires_grad=True)
    y = m(xt)
    close(y, _layer_norm_ref(x, w, b), rtol=1e-4, atol=1e-5)
    y.backward(T(gy))
    gx = numeric_grad(lambda v: float((_layer_norm_ref(v, w, b) * gy).sum()), x.copy())
    gw = numeric_grad(lambda v: float((_layer_norm_ref(x, v, b) * gy).sum()), w.copy())
    close(xt.grad, gx, rtol=1e-3, atol=1e-4)
    close(m.weight.grad, gw, rtol=1e-3, atol=1e-4)
    close(m.bias.grad, gy.sum(0), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="normalized_shape"):
        m(torchic.randn(4, 5))


def test_layer_norm_over_two_dims(backend, rng):
    x = rng.standard_normal((2, 3, 4))
    y = nn.LayerNorm((3, 4), elementwise_affine=False)(T(x))
    mu = x.mean((1, 2), keepdims=True)
    var = x.var((1, 2), keepdims=True)
    close(y, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)


def _bn_ref(x, w, b, eps=1e-5):
    mu = x.mean(0)
    var = x.var(0)
    return (x - mu) / np.sqrt(var + eps) * w + b


def test_batchnorm1d_training_forward_backward_and_running_stats(backend, rng):
    m = nn.BatchNorm1d(3, momentum=0.1)
    with torchic.no_grad():
        m.weight.copy_(T([1.5, 0.5, -1.0]))
        m.bias.copy_(T([0.1, 0.2, 0.3]))
    w, b = m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64)
    run_mean, run_var = np.zeros(3), np.ones(3)
    for step in range(3):
        x = rng.standard_normal((8, 3)) * 2 + step
        gy = rng.standard_normal((8, 3))
        xt = T(x, requires_grad=True)
        y = m(xt)
        close(y, _bn_ref(x, w, b), rtol=1e-4, atol=1e-4)
        y.backward(T(gy))
        gx = numeric_grad(lambda v: float((_bn_ref(v, w, b) * gy).sum()), x.copy())
        close(xt.grad, gx, rtol=1e-3, atol=1e-3)
        run_mean = 0.9 * run_mean + 0.1 * x.mean(0)
        run_var = 0.9 * run_var + 0.1 * x.var(0, ddof=1)
        close(m.running_mean, run_mean, rtol=1e-5, atol=1e-6)
        close(m.running_var, run_var, rtol=1e-5, atol=1e-6)
        m.zero_grad()
    assert m.num_batches_tracked.item() == 3
    assert m.num_batches_tracked.dtype == torchic.int64
    # eval: the running statistics, and no update
    m.eval()
    x = rng.standard_normal((5, 3))
    close(m(T(x)), (x - run_mean) / np.sqrt(run_var + 1e-5) * w + b, rtol=1e-4, atol=1e-5)
    close(m.running_mean, run_mean, rtol=1e-5, atol=1e-6)
    assert m.num_batches_tracked.item() == 3
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]


def test_batchnorm1d_3d_input_and_cumulative_average(backend, rng):
    m = nn.BatchNorm1d(2, momentum=None, affine=False)
    xs = [rng.standard_normal((4, 2, 5)) for _ in range(3)]
    for x in xs:
        y = m(T(x))
        mu = x.mean((0, 2), keepdims=True)
        var = x.var((0, 2), keepdims=True)
        close(y, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    # momentum=None: the plain average of the batch statistics
    close(m.running_mean, np.mean([x.mean((0, 2)) for x in xs], 0), rtol=1e-5, atol=1e-6)
    close(m.running_var, np.mean([x.var((0, 2), ddof=1) for x in xs], 0), rtol=1e-5, atol=1e-6)


def test_batchnorm1d_errors_and_no_running_stats(backend):
    m = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        m(torchic.randn(1, 3))
    with pytest.raises(RuntimeError, match="should contain 2 elements not 3"):   # PyTorch's
        m(torchic.randn(4, 2))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        m(torchic.randn(4))
    nostats = nn.BatchNorm1d(3, track_running_stats=False)
    assert list(nostats.state_dict()) == ["weight", "bias"]
    nostats.eval()
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    close(nostats(T(x)), _bn_ref(x, 1, 0), rtol=1e-4, atol=1e-4)  # batch stats even in eval


def test_dropout(backend):
    torchic.manual_seed(0)
    m = nn.Dropout(0.25)
    x = torchic.ones(200, 100)
    y = m(x).numpy()
    kept = y != 0
    assert kept.mean() == pytest.approx(0.75, abs=0.02)
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    # the same seed gives the same mask (on every backend: one counter-based generator)
    torchic.manual_seed(0)
    np.testing.assert_array_equal(m(x).numpy(), y)
    # gradient flows through the kept elements only, with the same scale
    xt = torchic.ones(4, 50, requires_grad=True)
    out = m(xt)
    out.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), out.detach().numpy())
    m.eval()
    assert m(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert np.all(nn.Dropout(1.0)(x).numpy() == 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_loss_modules(backend, rng):
    logits = rng.standard_normal((4, 5))
    target = np.array([0, 4, 2, 2], dtype=np.int32)
    lse = np.log(np.exp(logits).sum(1))
    ref = (lse - logits[np.arange(4), target]).mean()
    assert nn.CrossEntropyLoss()(T(logits), torchic.tensor(target)).item() == \
        pytest.approx(ref, rel=1e-5)
    a, b = rng.standard_normal(6), rng.standard_normal(6)
    assert nn.MSELoss()(T(a), T(b)).item() == pytest.approx(((a - b) ** 2).mean(), rel=1e-5)
    assert nn.MSELoss(reduction="sum")(T(a), T(b)).item() == \
        pytest.approx(((a - b) ** 2).sum(), rel=1e-5)


def test_to_device_is_a_no_op(backend):
    m = nn.Linear(2, 2)
    assert m.to("cpu") is m and m.to(torchic.float32) is m and m.cpu() is m
    assert m.to(device="cpu", non_blocking=True) is m and m.to(m.weight.device) is m
    assert m.to("cpu", torchic.float32) is m and nn.ReLU().to("cpu") is not None
    for device in ("cuda", "cuda:0", "mps"):        # as PyTorch without CUDA: an error
        with pytest.raises(RuntimeError, match="not available"):
            m.to(device)
        with pytest.raises(RuntimeError, match="not available"):
            nn.ReLU().to(device=device)
    with pytest.raises(TypeError, match="floating point"):
        m.to(torchic.int32)
