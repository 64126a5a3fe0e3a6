"""The torch.nn surface of issue 42 against PyTorch, on every backend: module hooks and
machinery, reprs and class paths, Embedding / EmbeddingBag options, feature and alpha
dropouts, ChannelShuffle, Unflatten, Bilinear, parameters_to_vector. (The activations,
losses and norms are walked by tests/torch_opinfo and tests/torch_moduleinfo.)"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torchic  # noqa: E402
import torchic.nn as nn  # noqa: E402
import torchic.nn.functional as F  # noqa: E402


def tc(t, requires_grad=False):
    return torchic.tensor(t.detach().numpy(), requires_grad=requires_grad)


def close(got, ref, atol=1e-5, rtol=1e-5):
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), atol=atol, rtol=rtol)


def test_forward_hooks_and_pre_hooks_with_kwargs(backend):
    m = nn.Linear(3, 2)
    calls = []

    def pre(mod, args, kwargs):
        calls.append("pre")
        return (args[0] * 2.0,), kwargs

    h1 = m.register_forward_pre_hook(pre, with_kwargs=True)
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1.0)
    h3 = m.register_forward_hook(lambda mod, a, o: calls.append("first"), prepend=True)
    x = torchic.ones(1, 3)
    y = m(x)
    ref = F.linear(x * 2.0, m.weight, m.bias) + 1.0
    close(y, ref)
    assert calls == ["pre", "first"]
    for h in (h1, h2, h3):
        h.remove()
    close(m(x), F.linear(x, m.weight, m.bias))


def test_forward_hook_always_call_runs_when_forward_raises(backend):
    m = nn.Linear(3, 2)
    seen = []
    m.register_forward_hook(lambda mod, a, o: seen.append(o), always_call=True)
    with pytest.raises((RuntimeError, ValueError)):
        m(torchic.ones(1, 4))
    assert seen == [None]


def test_full_backward_hooks_match_torch(backend):
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    m = nn.Linear(3, 2)
    m.load_state_dict(tm.state_dict())
    got, want = [], []
    m.register_full_backward_pre_hook(lambda mod, go: got.append(("pre", go[0].numpy())))
    m.register_full_backward_hook(lambda mod, gi, go: got.append(("full", gi[0].numpy(),
                                                                  go[0].numpy())))
    tm.register_full_backward_pre_hook(lambda mod, go: want.append(("pre", go[0].numpy())))
    tm.register_full_backward_hook(lambda mod, gi, go: want.append(("full", gi[0].numpy(),
                                                                    go[0].numpy())))
    xt = torch.randn(4, 3, requires_grad=True)
    x = tc(xt, True)
    (tm(xt) ** 2).sum().backward()
    (m(x) ** 2).sum().backward()
    assert [g[0] for g in got] == [w[0] for w in want] == ["pre", "full"]
    for g, w in zip(got, want):
        for a, b in zip(g[1:], w[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    close(x.grad, xt.grad)


def test_full_backward_hook_replaces_grad_input(backend):
    m = nn.Tanh()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.0 + 3.0,))
    x = torchic.ones(2, 2, requires_grad=True)
    m(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 3.0))


def test_backward_hook_input_without_grad_gets_none(backend):
    m = nn.Linear(2, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    m(torchic.ones(1, 2)).sum().backward()
    assert seen == [(None,)]


def test_get_parameter_buffer_and_named_members(backend):
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError):
        m.get_parameter("0.nope")
    with pytest.raises(AttributeError):
        m.get_buffer("0.weight")
    t = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in t.named_modules()]
    assert list(m.state_dict(prefix="p.")) == list(t.state_dict(prefix="p."))


def test_load_state_dict_returns_keys_and_assigns(backend):
    m = nn.Linear(2, 2)
    sd = {"weight": torchic.ones(2, 2), "extra": torchic.ones(1)}
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["bias"] and r.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match="Missing key"):
        m.load_state_dict({"weight": torchic.ones(2, 2)})
    w = torchic.full((2, 2), 5.0)
    m.load_state_dict({"weight": w, "bias": torchic.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    np.testing.assert_allclose(m.weight.detach().numpy(), np.full((2, 2), 5.0))
    assert dict(m.named_parameters())["weight"] is m.weight


REPRS = [
    ("Hardtanh", (-2.0, 3.0), {}), ("ReLU6", (), {"inplace": True}), ("CELU", (0.5,), {}),
    ("GLU", (), {}), ("Softplus", (2.0, 10.0), {}), ("Softshrink", (0.3,), {}),
    ("Hardshrink", (), {}), ("Threshold", (0.1, 2.0), {}), ("PReLU", (3,), {}),
    ("RReLU", (0.1, 0.3), {}), ("Softmin", (1,), {}), ("SELU", (), {}), ("Mish", (), {}),
    ("BatchNorm2d", (4,), {"momentum": None}), ("InstanceNorm1d", (3,), {"affine": True}),
    ("GroupNorm", (2, 4), {}), ("RMSNorm", ([3, 4],), {}), ("LocalResponseNorm", (3,), {}),
    ("Bilinear", (2, 3, 4), {}), ("Embedding", (5, 3), {"padding_idx": 1, "max_norm": 2.0}),
    ("EmbeddingBag", (5, 3), {"mode": "max"}), ("Unflatten", (1, (2, 3)), {}),
    ("ChannelShuffle", (2,), {}), ("AlphaDropout", (0.2,), {}), ("Dropout2d", (), {}),
    ("CrossEntropyLoss", (), {"label_smoothing": 0.1}), ("ReLU", (), {}),
    ("LayerNorm", (4,), {"elementwise_affine": False}),
]


@pytest.mark.parametrize("name,args,kwargs", REPRS, ids=[r[0] for r in REPRS])
def test_repr_is_pytorchs(backend, name, args, kwargs):
    assert repr(getattr(nn, name)(*args, **kwargs)) == repr(getattr(torch.nn, name)(*args,
                                                                                   **kwargs))


def test_torch_nn_modules_class_paths(backend):
    assert nn.modules.loss.CrossEntropyLoss is nn.CrossEntropyLoss
    assert nn.modules.activation.Hardswish is nn.Hardswish
    assert nn.modules.linear.Linear is nn.Linear
    assert nn.modules.container.Sequential is nn.Sequential
    assert nn.modules.batchnorm.BatchNorm2d is nn.BatchNorm2d
    assert nn.modules.module.Module is nn.Module
    with pytest.raises(AttributeError):
        nn.modules.loss.NoSuchLoss  # noqa: B018


def test_batchnorm_cumulative_average_and_untracked(backend):
    torch.manual_seed(0)
    tm, m = torch.nn.BatchNorm1d(3, momentum=None), nn.BatchNorm1d(3, momentum=None)
    for _ in range(3):
        x = torch.randn(5, 3)
        close(m(tc(x)), tm(x))
    close(m.running_mean, tm.running_mean)
    close(m.running_var, tm.running_var)
    assert int(m.num_batches_tracked.item()) == 3
    m.eval(), tm.eval()
    x = torch.randn(2, 3)
    close(m(tc(x)), tm(x))
    tu, u = torch.nn.BatchNorm1d(3, track_running_stats=False), \
        nn.BatchNorm1d(3, track_running_stats=False)
    u.eval(), tu.eval()
    close(u(tc(x)), tu(x))
    empty = nn.BatchNorm1d(3)(torchic.zeros(0, 3))
    assert tuple(empty.shape) == (0, 3)


def test_embedding_padding_idx_and_max_norm_match_torch(backend):
    torch.manual_seed(0)
    tm = torch.nn.Embedding(6, 3, padding_idx=2, max_norm=1.0)
    m = nn.Embedding(6, 3, padding_idx=2, max_norm=1.0)
    with torch.no_grad():
        tm.weight.mul_(3.0)
    m.load_state_dict(tm.state_dict())
    idx = torch.tensor([[0, 2, 5], [2, 1, 0]])
    out_t, out = tm(idx), m(torchic.tensor(idx.numpy()))
    close(out, out_t)
    close(m.weight, tm.weight)              # the referenced rows renormalized in place
    (out_t * out_t).sum().backward()
    (out * out).sum().backward()
    close(m.weight.grad, tm.weight.grad)    # padding row: no gradient


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_torch(backend, mode):
    torch.manual_seed(1)
    tm = torch.nn.EmbeddingBag(7, 4, mode=mode, padding_idx=3)
    m = nn.EmbeddingBag(7, 4, mode=mode, padding_idx=3)
    m.load_state_dict(tm.state_dict())
    idx = torch.tensor([1, 3, 4, 4, 2, 6, 0, 3])
    offsets = torch.tensor([0, 2, 2, 5])       # an empty bag too
    psw = torch.rand(8) if mode == "sum" else None
    out_t = tm(idx, offsets, per_sample_weights=psw)
    out = m(torchic.tensor(idx.numpy()), torchic.tensor(offsets.numpy()),
            per_sample_weights=None if psw is None else tc(psw))
    close(out, out_t)
    out_t.sum().backward()
    out.sum().backward()
    close(m.weight.grad, tm.weight.grad)
    two_d = torch.tensor([[1, 2], [0, 6]])
    close(m(torchic.tensor(two_d.numpy())), tm(two_d))


def test_feature_and_alpha_dropouts(backend):
    x = torchic.ones(64, 8, 5)
    out = nn.Dropout1d(0.5)(x).numpy()
    per_channel = out.reshape(64 * 8, 5)
    assert all(len(set(row)) == 1 for row in per_channel)       # whole channels
    assert set(np.unique(out)) <= {0.0, 2.0} and 0.3 < (out == 0).mean() < 0.7
    a = nn.AlphaDropout(0.2)
    y = a(torchic.randn(20000)).numpy()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05     # self-normalizing
    a.eval()
    close(a(x), torch.ones(64, 8, 5))
    f = nn.FeatureAlphaDropout(0.5)(torchic.randn(4, 6, 3)).numpy()
    assert tuple(f.shape) == (4, 6, 3)
    with pytest.raises(RuntimeError):
        nn.Dropout1d()(torchic.ones(2, 3, 4, 5))
    for name, shape in (("Dropout1d", (3, 4, 5)), ("Dropout2d", (3, 4, 5)),
                        ("Dropout3d", (2, 3, 2, 2)), ("AlphaDropout", (5, 6)),
                        ("FeatureAlphaDropout", (3, 4, 2))):     # PyTorch's masks
        xt = torch.randn(*shape)
        torch.manual_seed(4)
        want = getattr(torch.nn, name)(0.4)(xt)
        torchic.manual_seed(4)
        close(getattr(nn, name)(0.4)(tc(xt)), want)


def test_channel_shuffle_unflatten_bilinear_match_torch(backend):
    x = torch.arange(2 * 6 * 2, dtype=torch.float32).reshape(2, 6, 2)
    close(nn.ChannelShuffle(3)(tc(x)), torch.nn.ChannelShuffle(3)(x))
    close(nn.Unflatten(1, (2, -1))(tc(x)), torch.nn.Unflatten(1, (2, -1))(x))
    torch.manual_seed(0)
    tb = torch.nn.Bilinear(3, 4, 2)
    b = nn.Bilinear(3, 4, 2)
    b.load_state_dict(tb.state_dict())
    x1, x2 = torch.randn(5, 3, requires_grad=True), torch.randn(5, 4)
    y1 = b(tc(x1, True), tc(x2))
    yt = tb(x1, x2)
    close(y1, yt)
    yt.sum().backward()
    y1.sum().backward()
    close(b.weight.grad, tb.weight.grad)


def test_parameters_to_vector_round_trip(backend):
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    v = nn.utils.parameters_to_vector(m.parameters())
    assert tuple(v.shape) == (13,)
    nn.utils.vector_to_parameters(torchic.arange(13).float(), m.parameters())
    np.testing.assert_allclose(m[0].weight.detach().numpy().ravel(), np.arange(6))
    np.testing.assert_allclose(m[1].bias.detach().numpy(), [12.0])
    with pytest.raises(RuntimeError):
        nn.utils.vector_to_parameters(torchic.zeros(5), m.parameters())


def test_init_orthogonal_eye_dirac_match_torch(backend):
    torch.manual_seed(3)
    a = torch.nn.init.orthogonal_(torch.empty(4, 6), gain=2.0)
    torchic.manual_seed(3)
    b = torchic.nn.init.orthogonal_(torchic.empty(4, 6), gain=2.0)
    np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-5)
    d = torchic.nn.init.dirac_(torchic.empty(6, 3, 3, 3), groups=2)
    np.testing.assert_array_equal(d.numpy(),
                                  torch.nn.init.dirac_(torch.empty(6, 3, 3, 3), groups=2))
    np.testing.assert_array_equal(torchic.nn.init.eye_(torchic.empty(2, 3)).numpy(),
                                  np.eye(2, 3))
    assert torchic.nn.init.calculate_gain("conv2d") == 1.0
    w = torchic.empty(8, 4, 3, 3)
    assert torchic.nn.init._calculate_fan_in_and_fan_out(w) == (36, 72)


# modules module_db does not list, each against torch's on the same inputs (train mode)
EXTRA = [
    ("CosineSimilarity", (), {"dim": 1}, [(4, 5), (4, 5)]),
    ("PairwiseDistance", (), {"p": 3.0, "keepdim": True}, [(4, 5), (4, 5)]),
    ("TripletMarginLoss", (), {"margin": 0.5, "swap": True}, [(4, 5), (4, 5), (4, 5)]),
    ("TripletMarginWithDistanceLoss", (), {"margin": 0.7}, [(4, 5), (4, 5), (4, 5)]),
    ("InstanceNorm1d", (3,), {"track_running_stats": True, "affine": True}, [(2, 3, 6)]),
    ("RReLU", (0.1, 0.4), {}, [(3, 7)]),
    ("Hardsigmoid", (), {}, [(3, 7)]),
    ("Softmax2d", (), {}, [(2, 3, 4, 4)]),
    ("ChannelShuffle", (2,), {}, [(2, 4, 3)]),
]


@pytest.mark.parametrize("name,args,kwargs,shapes", EXTRA, ids=[e[0] for e in EXTRA])
def test_more_modules_match_torch(backend, name, args, kwargs, shapes):
    torch.manual_seed(5)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    m = getattr(nn, name)(*args, **kwargs)
    m.load_state_dict(tm.state_dict())
    xs = [torch.randn(*s, requires_grad=True) for s in shapes]
    ys = [tc(x, True) for x in xs]
    torch.manual_seed(9)
    out_t = tm(*xs)
    torchic.manual_seed(9)
    out = m(*ys)
    close(out, out_t)
    (out_t * out_t).sum().backward()
    (out * out).sum().backward()
    for x, y in zip(xs, ys):
        close(y.grad, x.grad, atol=1e-4, rtol=1e-4)
    for (k, v), (k2, v2) in zip(tm.state_dict().items(), m.state_dict().items()):
        assert k == k2
        close(v2, v)


@pytest.mark.parametrize("kw", [{"reduction": "mean"}, {"reduction": "sum"},
                                {"reduction": "none"}], ids=str)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_weighted_cross_entropy_with_ignored_targets_matches_torch(backend, kw, smoothing):
    torch.manual_seed(2)
    x = torch.randn(6, 4, 3, requires_grad=True)
    target = torch.tensor([[0, 1, 3], [2, -1, 1], [3, 3, 0], [1, -1, 2], [0, 2, 2],
                           [3, 1, -1]])
    w = torch.tensor([0.5, 1.0, 2.0, 3.0])
    lt = torch.nn.CrossEntropyLoss(weight=w, ignore_index=-1, label_smoothing=smoothing, **kw)
    lc = nn.CrossEntropyLoss(weight=tc(w), ignore_index=-1, label_smoothing=smoothing, **kw)
    xc = tc(x, True)
    yt, yc = lt(x, target), lc(xc, torchic.tensor(target.numpy()))
    close(yc, yt)
    yt.sum().backward()
    yc.sum().backward()
    close(xc.grad, x.grad)
    assert "weight" in lc.state_dict()
