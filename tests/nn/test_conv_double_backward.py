"""Second and third derivatives of the convolutions against torch (float64) on every backend.

out = conv(x, w, b) with a grad_output `go` that is a leaf too: g = grad(out, (x, w, b), go,
create_graph=True), then grad(sum_i g_i * v_i) with respect to x, w, b and go (the cross
terms d2/dx dW, d2/dW dgo, ... that a backward not written with recorded ops loses), then
once more (third order: grad of sum_j h_j * u_j). Strides, padding, dilation, groups and
depthwise, for conv1d, conv2d, conv_transpose1d and conv_transpose2d.
"""

import numpy as np
import pytest

import torchic
import torchic.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional

CASES = [
    ("conv2d_plain", "conv2d", (2, 3, 7, 6), (4, 3, 3, 2), {}),
    ("conv2d_stride_pad_dilation", "conv2d", (2, 3, 9, 8), (4, 3, 3, 2),
     dict(stride=2, padding=1, dilation=2)),
    ("conv2d_leftover_rows", "conv2d", (1, 2, 8, 9), (3, 2, 2, 3), dict(stride=(3, 2))),
    ("conv2d_groups", "conv2d", (2, 4, 9, 8), (6, 2, 3, 3),
     dict(stride=(2, 1), padding=(1, 2), groups=2)),
    ("conv2d_depthwise", "conv2d", (2, 4, 6, 6), (4, 1, 3, 3), dict(padding=1, groups=4)),
    ("conv2d_same", "conv2d", (2, 2, 7, 6), (3, 2, 4, 3), dict(padding="same", dilation=2)),
    ("conv1d_stride_pad_dilation_groups", "conv1d", (2, 4, 13), (6, 2, 3),
     dict(stride=2, padding=2, dilation=2, groups=2)),
    ("conv1d_depthwise", "conv1d", (3, 3, 10), (3, 1, 4), dict(padding=1, groups=3)),
    ("conv_transpose2d_stride_pad_outpad", "conv_transpose2d", (2, 4, 4, 5), (4, 3, 3, 2),
     dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d_groups_dilation", "conv_transpose2d", (2, 4, 5, 4), (4, 2, 2, 3),
     dict(stride=(1, 2), groups=2, dilation=2)),
    ("conv_transpose1d", "conv_transpose1d", (2, 3, 6), (3, 2, 3),
     dict(stride=3, padding=1, output_padding=2)),
]


def _derivatives(lib, fn, arrays, dtype, bias=True):
    """(first, second, third) derivatives of the chain above, as float64 arrays."""
    x, w, b, go, v, u = ([lib.tensor(a, dtype=dtype, requires_grad=True) for a in arrays[:4]]
                         + [[lib.tensor(a, dtype=dtype) for a in arrays[k]] for k in (4, 5)])
    leaves = [x, w, b] if bias else [x, w]
    out = fn(x, w, b if bias else None)
    first = lib.autograd.grad(out, leaves, go, create_graph=True)
    s = sum((g * vi).sum() for g, vi in zip(first, v))
    second = lib.autograd.grad(s, leaves + [go], create_graph=True, allow_unused=True)
    terms = [(h * ui).sum() for h, ui in zip(second, u) if h is not None and h.requires_grad]
    try:
        third = lib.autograd.grad(sum(terms), leaves + [go], allow_unused=True)
    except RuntimeError:
        if lib is not torch:
            raise
        # torch 2.13's third derivative of a transposed convolution with output_padding
        # raises ("output_padding is not supported for non-transposed convolutions")
        return [[np.asarray(t.detach().numpy(), np.float64) for t in first],
                [None if t is None else np.asarray(t.detach().numpy(), np.float64)
                 for t in second]]
    return [[None if t is None else np.asarray(t.detach().numpy(), np.float64) for t in ts]
            for ts in (first, second, third)]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("name,op,xs,ws,kw", CASES, ids=[c[0] for c in CASES])
def test_conv_higher_derivatives_match_torch(backend, name, op, xs, ws, kw, bias):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    nb = ws[1] * kw.get("groups", 1) if op.startswith("conv_transpose") else ws[0]
    b = rng.standard_normal((nb,)).astype(np.float32)
    out_shape = tuple(getattr(F, op)(torch.tensor(x), torch.tensor(w), torch.tensor(b),
                                     **kw).shape)
    go = rng.standard_normal(out_shape).astype(np.float32)
    v = [rng.standard_normal(a.shape).astype(np.float32) for a in (x, w, b)]
    u = [rng.standard_normal(a.shape).astype(np.float32) for a in (x, w, b, go)]
    if not bias:
        v, u = v[:2], u[:2] + u[3:]
    arrays = [x, w, b, go, v, u]
    want = _derivatives(torch, lambda *a: getattr(F, op)(*a, **kw), arrays, torch.float64, bias)
    got = _derivatives(torchic, lambda *a: getattr(TF, op)(*a, **kw), arrays, torchic.float32,
                       bias)
    for order, (ws_, gs) in enumerate(zip(want, got), 1):
        for k, (a, g) in enumerate(zip(ws_, gs)):
            if a is None or not np.any(a):
                assert g is None or not np.any(g), f"order {order}, input {k}: expected zero"
                continue
            assert g is not None, f"order {order}, input {k}: no gradient"
            np.testing.assert_allclose(g, a, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(a).max()),
                                       err_msg=f"order {order}, input {k}")


def test_conv2d_gradient_penalty_matches_torch(backend):
    """A gradient penalty on both gradients, ||d y / d x||^2 + ||d y / d w||^2, differentiated
    w.r.t. x and w (the weight gradient's x term, d2/dx dW, included)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    outs = []
    for lib, f in ((torch, F), (torchic, TF)):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = f.conv2d(xt, wt, stride=2, padding=1).tanh().sum()
        gx, gw = lib.autograd.grad(y, (xt, wt), create_graph=True)
        (gx.pow(2).sum() + gw.pow(2).sum()).backward()
        outs.append((wt.grad.detach().numpy(), xt.grad.detach().numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op,xs,ws,kw", [
    ("conv2d", (1, 4, 6, 5), (4, 2, 2, 3), dict(stride=(2, 1), padding=1, dilation=(1, 2),
                                                groups=2)),
    ("conv1d", (2, 3, 7), (3, 1, 3), dict(padding=1, groups=3)),
    ("conv_transpose2d", (1, 2, 3, 4), (2, 2, 2, 2), dict(stride=2, padding=1,
                                                          output_padding=1)),
], ids=["conv2d", "conv1d_depthwise", "conv_transpose2d"])
def test_conv_gradgradcheck_float64(backend, op, xs, ws, kw):
    """gradgradcheck (finite differences of the recorded first derivatives) in float64."""
    if backend == "webgpu":
        pytest.skip("webgpu holds no float64")
    rng = np.random.default_rng(7)
    x, w = (torchic.tensor(rng.standard_normal(s), dtype=torchic.float64, requires_grad=True)
            for s in (xs, ws))
    nb = ws[1] * kw.get("groups", 1) if op.startswith("conv_transpose") else ws[0]
    b = torchic.tensor(rng.standard_normal(nb), dtype=torchic.float64, requires_grad=True)
    assert torchic.autograd.gradgradcheck(lambda *a: getattr(TF, op)(*a, **kw), (x, w, b))
