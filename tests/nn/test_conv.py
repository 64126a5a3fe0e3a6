"""Convolution, pooling, padding and resampling (issue 42) against the installed PyTorch:
values and gradients of the same call on the same float32 data, on every backend; module
parameters, init and state_dicts both ways."""

import numpy as np
import pytest

import torchic
import torchic.nn as tnn
import torchic.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _check(backend, torch_fn, torchic_fn, *shapes, tol=1e-4, grad=True):
    """Run both on the same inputs; compare outputs and input gradients (of sum(out * w))."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    tt = [torch.tensor(a, requires_grad=grad) for a in arrays]
    ct = [torchic.tensor(a, requires_grad=grad) for a in arrays]
    want, got = torch_fn(*tt), torchic_fn(*ct)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=tol, rtol=tol)
    if not grad:
        return
    w = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(w))
    (got * torchic.tensor(w)).sum().backward()
    for a, b in zip(tt, ct):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), atol=tol * 10, rtol=tol * 10)


CONV = [
    ("plain", (2, 3, 7, 6), (4, 3, 3, 2), {}),
    ("stride_pad_dilation", (2, 3, 9, 8), (4, 3, 3, 2), dict(stride=2, padding=1, dilation=2)),
    ("groups", (2, 4, 9, 8), (6, 2, 3, 3), dict(stride=(2, 1), padding=(1, 2), groups=2)),
    ("depthwise", (2, 4, 6, 6), (4, 1, 3, 3), dict(padding=1, groups=4)),
    ("same", (2, 4, 9, 8), (6, 4, 4, 3), dict(padding="same", dilation=2)),
    ("valid", (1, 2, 5, 5), (3, 2, 2, 2), dict(padding="valid")),
]


@pytest.mark.parametrize("name,xs,ws,kw", CONV, ids=[c[0] for c in CONV])
def test_conv2d_matches_torch(backend, name, xs, ws, kw):
    _check(backend, lambda x, w, b: F.conv2d(x, w, b, **kw),
           lambda x, w, b: TF.conv2d(x, w, b, **kw), xs, ws, (ws[0],))


def test_conv1d_and_unbatched(backend):
    _check(backend, lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
           lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=1), (2, 3, 11), (5, 3, 3), (5,))
    _check(backend, lambda x, w: F.conv2d(x, w), lambda x, w: TF.conv2d(x, w), (3, 6, 5),
           (2, 3, 3, 3))


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv2d_module_padding_modes(backend, mode):
    torch.manual_seed(0)
    torchic.manual_seed(0)
    ref = torch.nn.Conv2d(3, 4, 3, padding=1, padding_mode=mode)
    mod = tnn.Conv2d(3, 4, 3, padding=1, padding_mode=mode)
    for k, v in ref.state_dict().items():     # PyTorch's init, PyTorch's numbers
        np.testing.assert_allclose(mod.state_dict()[k].numpy(), v.numpy(), atol=1e-7)
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(mod(torchic.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), atol=1e-5)


def test_conv_transpose_matches_torch(backend):
    _check(backend, lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                       output_padding=1, groups=2),
           lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                               groups=2), (2, 4, 5, 4), (4, 3, 3, 3), (6,))
    _check(backend, lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2, dilation=2),
           lambda x, w: TF.conv_transpose1d(x, w, stride=3, padding=2, dilation=2),
           (2, 4, 5), (4, 3, 3))


def test_state_dicts_load_both_ways(backend):
    for make in (lambda m: m.Conv2d(3, 6, 5), lambda m: m.Conv1d(3, 6, 3, groups=3, bias=False),
                 lambda m: m.ConvTranspose2d(4, 6, 3, groups=2)):
        ref, mod = make(torch.nn), make(tnn)
        mod.load_state_dict({k: torchic.tensor(v.numpy()) for k, v in ref.state_dict().items()})
        ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mod.state_dict().items()})
        assert [(k, tuple(v.shape)) for k, v in ref.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in mod.state_dict().items()]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes(backend, mode):
    _check(backend, lambda x: F.pad(x, (1, 2, 2, 1), mode=mode),
           lambda x: TF.pad(x, (1, 2, 2, 1), mode=mode), (2, 3, 4, 5))


def test_pad_negative_and_value(backend):
    _check(backend, lambda x: F.pad(x, (-1, 2, 1, -2), value=3.0),
           lambda x: TF.pad(x, (-1, 2, 1, -2), value=3.0), (2, 3, 4, 5))
    with pytest.raises(RuntimeError):
        TF.pad(torchic.ones(1, 2, 3), (3, 3), mode="reflect")


def test_fold_unfold(backend):
    _check(backend, lambda x: F.unfold(x, (2, 3), padding=1, stride=2),
           lambda x: TF.unfold(x, (2, 3), padding=1, stride=2), (2, 3, 5, 6))
    _check(backend, lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=2),
           lambda x: TF.fold(x, (5, 6), (2, 3), padding=1, stride=2), (2, 18, 9))


POOL = [
    ("max2", lambda M, x: M.max_pool2d(x, 2), (2, 3, 8, 6)),
    ("max_relu_ties", lambda M, x: M.max_pool2d(M.relu(x), 2), (2, 3, 8, 6)),
    ("max_pad_ceil_dil", lambda M, x: M.max_pool2d(x, 3, 2, 1, 2, ceil_mode=True), (2, 3, 9, 8)),
    ("max1d", lambda M, x: M.max_pool1d(x, 3, 2, 1, ceil_mode=True), (2, 3, 10)),
    ("avg_ceil_nopad", lambda M, x: M.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                 count_include_pad=False), (2, 3, 9, 8)),
    ("avg_cip", lambda M, x: M.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 9, 8)),
    ("avg_divisor", lambda M, x: M.avg_pool2d(x, 2, divisor_override=3), (2, 3, 9, 8)),
    ("avg1d", lambda M, x: M.avg_pool1d(x, 3, 2, 1), (2, 3, 10)),
    ("adaptive_avg2d", lambda M, x: M.adaptive_avg_pool2d(x, (3, 5)), (2, 3, 7, 8)),
    ("adaptive_avg1d", lambda M, x: M.adaptive_avg_pool1d(x, 4), (2, 3, 10)),
    ("adaptive_max2d", lambda M, x: M.adaptive_max_pool2d(x, (3, 5)), (2, 3, 7, 8)),
    ("adaptive_max1d", lambda M, x: M.adaptive_max_pool1d(x, 4), (2, 3, 10)),
    ("pixel_shuffle", lambda M, x: M.pixel_shuffle(x, 2), (2, 8, 3, 4)),
    ("pixel_unshuffle", lambda M, x: M.pixel_unshuffle(x, 2), (2, 2, 6, 4)),
]


@pytest.mark.parametrize("name,fn,shape", POOL, ids=[p[0] for p in POOL])
def test_pooling_matches_torch(backend, name, fn, shape):
    _check(backend, lambda x: fn(F, x), lambda x: fn(TF, x), shape)


def test_pool_indices_and_unpool(backend):
    x = np.random.default_rng(2).standard_normal((2, 3, 9, 8)).astype(np.float32)
    ref, ref_i = F.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    got, got_i = TF.max_pool2d(torchic.tensor(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(got_i.numpy(), ref_i.numpy())
    assert got_i.dtype == torchic.int64
    _, ai = TF.adaptive_max_pool2d(torchic.tensor(x), (3, 5), return_indices=True)
    np.testing.assert_array_equal(ai.numpy(), F.adaptive_max_pool2d(
        torch.tensor(x), (3, 5), return_indices=True)[1].numpy())

    def unpool(M):
        def fn(t):
            y, i = M.max_pool2d(t, 2, return_indices=True)
            return M.max_unpool2d(y, i, 2)
        return fn
    _check(backend, unpool(F), unpool(TF), (2, 3, 8, 6))


INTERP = [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True),
          ("bicubic", False), ("bicubic", True), ("area", None)]


@pytest.mark.parametrize("mode,align", INTERP, ids=[f"{m}-{a}" for m, a in INTERP])
def test_interpolate_matches_torch(backend, mode, align):
    for kw in (dict(size=(7, 5)), dict(scale_factor=1.7)):
        _check(backend, lambda x: F.interpolate(x, mode=mode, align_corners=align, **kw),
               lambda x: TF.interpolate(x, mode=mode, align_corners=align, **kw), (2, 3, 4, 6))
    _check(backend, lambda x: F.interpolate(x, scale_factor=2.5, mode="linear"),
           lambda x: TF.interpolate(x, scale_factor=2.5, mode="linear"), (2, 3, 5))


def test_modules_forward_like_torch(backend):
    x = np.random.default_rng(3).standard_normal((2, 4, 8, 8)).astype(np.float32)
    for name, args in [("MaxPool2d", (2,)), ("AvgPool2d", (3, 2, 1)), ("AdaptiveAvgPool2d", (1,)),
                       ("AdaptiveMaxPool2d", ((2, 3),)), ("ZeroPad2d", ((1, 2, 0, 1),)),
                       ("ConstantPad2d", (1, 2.5)), ("ReflectionPad2d", (2,)),
                       ("ReplicationPad2d", (1,)), ("CircularPad2d", (1,)),
                       ("PixelShuffle", (2,)), ("PixelUnshuffle", (2,)),
                       ("Upsample", (None, 2, "bilinear")), ("UpsamplingNearest2d", (None, 2)),
                       ("UpsamplingBilinear2d", (None, 2))]:
        want = getattr(torch.nn, name)(*args)(torch.tensor(x))
        got = getattr(tnn, name)(*args)(torchic.tensor(x))
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, err_msg=name)


def test_lenet_step_matches_torch(backend):
    from torchic.bench import conv as bc
    weights, x, y = bc.lenet_data({"batch": 8})
    losses = []
    for lib in (torch, torchic):
        P = {k: lib.tensor(v, requires_grad=True) for k, v in weights.items()}
        loss = bc.lenet_loss(lib, P, lib.tensor(x), lib.tensor(y))
        loss.backward()
        losses.append((float(loss.item()), P["c1.w"].grad.numpy()))
    assert abs(losses[0][0] - losses[1][0]) < 1e-4
    np.testing.assert_allclose(losses[1][1], losses[0][1], atol=1e-4)


def test_errors_like_torch(backend):
    x = torchic.ones(1, 3, 5, 5)
    with pytest.raises(RuntimeError):
        TF.conv2d(x, torchic.ones(4, 2, 3, 3))           # channels mismatch
    with pytest.raises(RuntimeError):
        TF.conv2d(x, torchic.ones(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError):
        TF.max_pool2d(x, 2, padding=2)                    # pad more than half the kernel
    with pytest.raises(ValueError):
        tnn.Conv2d(3, 4, 3, groups=2)


def test_same_padding_with_modes_and_transpose_output_size(backend):
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 7)).astype(np.float32)
    for mode in ("reflect", "circular"):
        torch.manual_seed(1)
        torchic.manual_seed(1)
        ref = torch.nn.Conv2d(3, 4, (3, 4), padding="same", padding_mode=mode)
        mod = tnn.Conv2d(3, 4, (3, 4), padding="same", padding_mode=mode)
        np.testing.assert_allclose(mod(torchic.tensor(x)).detach().numpy(),
                                   ref(torch.tensor(x)).detach().numpy(), atol=1e-5)
    ref = torch.nn.ConvTranspose2d(3, 2, 3, stride=2)
    mod = tnn.ConvTranspose2d(3, 2, 3, stride=2)
    mod.load_state_dict({k: torchic.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    want = ref(torch.tensor(x), output_size=(14, 16))
    got = mod(torchic.tensor(x), output_size=(14, 16))
    assert tuple(got.shape) == (2, 2, 14, 16)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-5)
