"""Max pooling's winner in windows with NaN and ties, against torch on every backend.

PyTorch (CPU, 2.13) takes the LAST NaN of a window where it holds several (its scan keeps
`val > max || isnan(val)`), and the FIRST of equal maxima; the indices, and the gradient
(it goes to that element), must match on every path torchic takes: windows searched in
place (max_pool_index), webgpu's non-overlapping windows (the gradient by a where),
the composite of float16 / bfloat16 (no max_pool_index row) and adaptive pooling's
gathered windows. Also max pooling's double backward (its recorded scatter).
"""

import numpy as np
import pytest

import torchic
import torchic.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional
NAN, INF = float("nan"), float("inf")

# (1, 2, 4, 6): windows of several NaNs, NaN beside +-inf, ties (+-0 too), -inf only
PLANE = np.array([[NAN, 1.0, NAN, NAN, 3.0, 3.0],
                  [2.0, NAN, 3.0, NAN, 3.0, 3.0],
                  [INF, NAN, -INF, -INF, 0.0, -0.0],
                  [NAN, INF, -INF, -INF, 5.0, 5.0]], np.float32)
IMAGE = np.stack([PLANE, PLANE[::-1, ::-1]])[None]

POOLS = [
    ("max_pool2d_2x2", lambda f, t: f.max_pool2d(t, 2, return_indices=True), IMAGE),
    ("max_pool2d_3x3_s1", lambda f, t: f.max_pool2d(t, 3, 1, return_indices=True), IMAGE),
    ("max_pool2d_padded_ceil",
     lambda f, t: f.max_pool2d(t, 2, 2, padding=1, ceil_mode=True, return_indices=True), IMAGE),
    ("max_pool2d_dilated",
     lambda f, t: f.max_pool2d(t, (2, 2), (2, 3), dilation=(2, 1), return_indices=True),
     IMAGE),
    ("max_pool1d_3", lambda f, t: f.max_pool1d(t, 3, return_indices=True),
     IMAGE.reshape(1, 2, 24)),
    ("max_pool1d_2_s1", lambda f, t: f.max_pool1d(t, 2, 1, return_indices=True),
     IMAGE.reshape(1, 2, 24)),
    ("adaptive_max_pool2d", lambda f, t: f.adaptive_max_pool2d(t, (3, 2), return_indices=True),
     IMAGE),
    ("adaptive_max_pool2d_1", lambda f, t: f.adaptive_max_pool2d(t, 1, return_indices=True),
     IMAGE),
    ("adaptive_max_pool1d", lambda f, t: f.adaptive_max_pool1d(t, 5, return_indices=True),
     IMAGE.reshape(2, 24)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name,fn,data", POOLS, ids=[p[0] for p in POOLS])
def test_pool_nan_and_tie_winners_match_torch(backend, name, fn, data, dtype):
    if backend == "webgpu" and dtype == "float64":
        pytest.skip("webgpu holds no float64")
    xt = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=True)
    xc = torchic.tensor(data, dtype=getattr(torchic, dtype), requires_grad=True)
    (tv, ti), (cv, ci) = fn(F, xt), fn(TF, xc)
    np.testing.assert_array_equal(ci.numpy(), ti.numpy(), err_msg="indices")
    np.testing.assert_array_equal(cv.float().detach().numpy(), tv.float().detach().numpy(),
                                  err_msg="values")
    g = np.arange(1, tv.numel() + 1, dtype=np.float32).reshape(tuple(tv.shape))
    tv.backward(torch.tensor(g, dtype=tv.dtype))
    cv.backward(torchic.tensor(g, dtype=cv.dtype))
    np.testing.assert_array_equal(xc.grad.float().numpy(), xt.grad.float().numpy(),
                                  err_msg="gradient")


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_pool_ties_take_the_first(backend, dtype):
    data = np.array([[[[1, 3, 3, 0], [3, 2, 3, 3], [5, 5, 7, 7], [5, 5, 7, 7]]]])
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1)):
        _, ti = F.max_pool2d(torch.tensor(data, dtype=getattr(torch, dtype)),
                             return_indices=True, **kw)
        _, ci = TF.max_pool2d(torchic.tensor(data, dtype=getattr(torchic, dtype)),
                              return_indices=True, **kw)
        np.testing.assert_array_equal(ci.numpy(), ti.numpy(), err_msg=str(kw))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_large_window_nan_winner_matches_torch(backend, dtype):
    """A window over max_pool_index's 4096 elements: the composite's argmax path."""
    data = np.random.default_rng(0).standard_normal((1, 2, 66, 65)).astype(np.float32)
    data[0, 0, 3, 7] = data[0, 0, 40, 2] = data[0, 0, 64, 1] = NAN
    data[0, 1, :, :] = 2.0                                         # all tied
    xt = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=True)
    xc = torchic.tensor(data, dtype=getattr(torchic, dtype), requires_grad=True)
    tv, ti = F.max_pool2d(xt, 65, 1, return_indices=True)
    cv, ci = TF.max_pool2d(xc, 65, 1, return_indices=True)
    np.testing.assert_array_equal(ci.numpy(), ti.numpy())
    tv.sum().backward()
    cv.sum().backward()
    np.testing.assert_array_equal(xc.grad.float().numpy(), xt.grad.float().numpy())


@pytest.mark.parametrize("name,fn", [
    ("max_pool2d_2x2", lambda f, t: f.max_pool2d(t, 2)),
    ("max_pool2d_3x3_s1_p1", lambda f, t: f.max_pool2d(t, 3, 1, 1)),
    ("max_pool1d_2", lambda f, t: f.max_pool1d(t.flatten(2), 2)),
    ("adaptive_max_pool2d", lambda f, t: f.adaptive_max_pool2d(t, (3, 2))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_max_pool_double_backward_matches_torch(backend, name, fn):
    """A first gradient that depends on x through the pooled values (sum(pool(x) ** 3)),
    differentiated again: the scatter of g to the maxima must be recorded (create_graph)."""
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 6)).astype(np.float32)
    res = []
    for lib, f in ((torch, F), (torchic, TF)):
        t = lib.tensor(x, requires_grad=True)
        (g,) = lib.autograd.grad((fn(f, t) ** 3).sum(), t, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), t)
        res.append(h.detach().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-4, atol=1e-4)
