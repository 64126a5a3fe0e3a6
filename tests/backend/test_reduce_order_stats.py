"""Reductions, scans and order statistics beyond what the OpInfo walk samples: ties in
PyTorch's order at sizes past the insertion-sort threshold, scans against torch with NaN and
infinities, and gradients of the composites, on every backend."""

import numpy as np
import pytest
import torch

import torchic


def _t(a, requires_grad=False):
    return torchic.tensor(a, requires_grad=requires_grad)


@pytest.mark.parametrize("n", [17, 64, 300, 3000])
def test_sort_topk_mode_ties_follow_torch(backend, n):
    rng = np.random.default_rng(n)
    a = rng.integers(-3, 3, size=(3, n)).astype(np.float32)
    a[1, rng.integers(0, n, size=4)] = np.nan
    for descending in (False, True):
        got = torchic.sort(_t(a), descending=descending).indices.numpy()
        want = torch.sort(torch.tensor(a), descending=descending).indices.numpy()
        np.testing.assert_array_equal(got, want)
    for k, srt in ((1, True), (5, True), (n // 2, True), (n // 2, False)):
        got = torchic.topk(_t(a), k, sorted=srt).indices.numpy()
        np.testing.assert_array_equal(got, torch.topk(torch.tensor(a), k, sorted=srt).indices)
    ints = rng.integers(-2, 2, size=(2, n))
    np.testing.assert_array_equal(torchic.mode(_t(ints)).indices.numpy(),
                                  torch.mode(torch.tensor(ints)).indices.numpy())
    np.testing.assert_array_equal(torchic.kthvalue(_t(ints), 3).indices.numpy(),
                                  torch.kthvalue(torch.tensor(ints), 3).indices.numpy())


def test_scans_match_torch_with_nan_and_inf(backend):
    a = np.array([[1.0, 3.0, np.nan, 2.0, 5.0], [-np.inf, 0.5, 0.5, np.inf, -1.0]], np.float32)
    for name in ("cummax", "cummin"):
        got, want = getattr(torchic, name)(_t(a), 1), getattr(torch, name)(torch.tensor(a), 1)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    b = np.array([[-1000.0, 0.0, -np.inf, 3.0]], np.float32)
    np.testing.assert_allclose(torchic.logcumsumexp(_t(b), 1).numpy(),
                               torch.logcumsumexp(torch.tensor(b), 1).numpy(), rtol=1e-6)


def test_composite_gradients_match_torch(backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    a[0, 2] = 0.0
    cases = [
        lambda m, x: m.cumprod(x, 1),
        lambda m, x: m.logcumsumexp(x, 0),
        lambda m, x: m.cummax(x, 1).values,
        lambda m, x: m.logsumexp(x, 1),
        lambda m, x: m.quantile(x, 0.3, dim=1),
        lambda m, x: m.median(x, 0).values,
        lambda m, x: m.linalg.vector_norm(x, 3, dim=1),
        lambda m, x: m.linalg.matrix_norm(x, "nuc"),
        lambda m, x: m.renorm(x, 2, 0, 1.0),
    ]
    w = rng.standard_normal(64).astype(np.float32)
    for f in cases:
        x, y = _t(a, True), torch.tensor(a, requires_grad=True)
        out, ref = f(torchic, x), f(torch, y)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        cot = w[:ref.numel()].reshape(ref.shape)
        (out * _t(cot)).sum().backward()
        (ref * torch.tensor(cot)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-4, atol=1e-5)
