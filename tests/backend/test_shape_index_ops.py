"""Shaping and indexing ops (issue 41) beyond what the OpInfo walk checks: views stay views,
index values are validated with PyTorch's error classes, duplicate indices are deterministic,
and the gradients op_db does not compare (overlapping windows, as_strided_scatter, whose
PyTorch backward is wrong) are right. Values against torch, on every backend."""

import numpy as np
import pytest
import torch

import torchic


def _t(a, **kw):
    a = np.asarray(a)
    return torchic.tensor(a.astype(np.float32) if a.dtype == np.float64 else a, **kw)


def test_views_share_storage(backend):
    x = torchic.arange(24).reshape(2, 3, 4)
    for v in (x.narrow(1, 1, 2), x.select(2, 1), x.diagonal(0, 1, 2), x.unfold(2, 2, 1),
              x.movedim(0, -1), x.swapaxes(0, 1), torchic.as_strided(x, (3, 2), (2, 5), 1),
              x.mT, x.unflatten(2, (2, 2))):
        assert v._storage is x._storage
    xt = torch.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(x.unfold(2, 2, 1).numpy(), xt.unfold(2, 2, 1).numpy())
    np.testing.assert_array_equal(torchic.as_strided(x, (3, 2), (2, 5), 1).numpy(),
                                  torch.as_strided(xt, (3, 2), (2, 5), 1).numpy())
    np.testing.assert_array_equal(x.diagonal(1, 2, 0).numpy(), xt.diagonal(1, 2, 0).numpy())


def test_overlapping_windows_gradient_adds_up(backend):
    a = np.random.default_rng(0).standard_normal(7).astype(np.float32)
    x, xt = _t(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w = np.random.default_rng(1).standard_normal((3, 3)).astype(np.float32)
    (x.unfold(0, 3, 2) * _t(w)).sum().backward()
    (xt.unfold(0, 3, 2) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_as_strided_scatter_gradient_is_outside_the_region(backend):
    x = torchic.ones(3, 3, requires_grad=True)
    src = torchic.ones(2, 2, requires_grad=True)
    torchic.as_strided_scatter(x, src, (2, 2), (1, 2)).sum().backward()
    # the region is flat positions {0, 1, 2, 3}: x's gradient is zero there, one elsewhere
    np.testing.assert_array_equal(x.grad.numpy().reshape(-1), [0, 0, 0, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(src.grad.numpy(), np.ones((2, 2)))


def test_scatter_add_sums_repeated_indices(backend):
    idx = torch.tensor([[0, 1, 0, 0], [2, 2, 2, 1]])
    for dtype in ("float32", "int32", "int64", "bool"):
        src = torch.arange(1, 9).reshape(2, 4).to(getattr(torch, dtype))
        base = torch.zeros(3, 4, dtype=src.dtype)
        want = base.scatter_add(0, idx, src)
        got = torchic.scatter_add(_t(base.numpy()), 0, _t(idx.numpy()), _t(src.numpy()))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype == getattr(torchic, dtype)


def test_int_scatter_add_wraps_like_torch(backend):
    base = torch.tensor([2 ** 31 - 1, 0], dtype=torch.int32)
    src = torch.tensor([1, 5, 7], dtype=torch.int32)
    idx = torch.tensor([0, 0, 1])
    got = torchic.scatter_add(_t(base.numpy()), 0, _t(idx.numpy()), _t(src.numpy()))
    np.testing.assert_array_equal(got.numpy(), base.scatter_add(0, idx, src).numpy())


def test_scatter_with_repeated_indices_is_deterministic(backend):
    # PyTorch leaves this undefined; torchic's last value wins, on every backend
    x = torchic.zeros(3)
    out = x.scatter(0, _t([1, 1, 1]), _t([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(out.numpy(), [0.0, 3.0, 0.0])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_int(backend, reduce, include_self):
    base = torch.tensor([3, -4, 5, 6])
    src = torch.tensor([-7, 5, 4, 3, 2, 9])
    idx = torch.tensor([0, 0, 1, 1, 1, 3])
    want = base.scatter_reduce(0, idx, src, reduce, include_self=include_self)
    got = torchic.scatter_reduce(_t(base.numpy()), 0, _t(idx.numpy()), _t(src.numpy()),
                                 reduce, include_self=include_self)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_index_errors_are_torchs(backend):
    x = torchic.zeros(3, 4)
    with pytest.raises(RuntimeError, match="out of bounds for dimension 1 with size 4"):
        x.gather(1, _t([[0, 4]]))
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.scatter_add(0, _t([[3, 0]]), torchic.ones(1, 2))
    with pytest.raises(IndexError, match="out of range"):
        x.take(_t([12]))
    with pytest.raises(IndexError):
        x.index_add(0, _t([5]), torchic.ones(1, 4))
    with pytest.raises(IndexError):              # checked in the kernel: at the read
        x.index_select(1, _t([7])).numpy()
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        x.narrow(1, 2, 3)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        torchic.as_strided(x, (4, 4), (4, 1))
    with pytest.raises(RuntimeError):
        x.gather(1, _t([[0.0]]))
    assert torchic.ones(2).sum().item() == 2.0       # the runtime still computes


def test_index_put_accumulate_and_nonzero(backend):
    base = np.zeros((3, 3), np.float32)
    idx = (np.array([0, 0, 2]), np.array([1, 1, 0]))
    vals = np.array([1.0, 2.0, 4.0], np.float32)
    want = torch.tensor(base).index_put(tuple(torch.tensor(i) for i in idx), torch.tensor(vals),
                                        accumulate=True)
    got = torchic.index_put(_t(base), tuple(_t(i) for i in idx), _t(vals), accumulate=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    rows, cols = torchic.where(got != 0)
    np.testing.assert_array_equal(rows.numpy(), [0, 2])
    np.testing.assert_array_equal(cols.numpy(), [1, 0])


def test_inplace_through_strided_views(backend):
    x = torchic.zeros(3, 3)
    x.diagonal().fill_(1.0)
    np.testing.assert_array_equal(x.numpy(), np.eye(3))
    a = torchic.ones(3, 3, requires_grad=True)
    y = a * 2
    y.diagonal().mul_(5)
    y.sum().backward()
    at = torch.ones(3, 3, requires_grad=True)
    yt = at * 2
    yt.diagonal().mul_(5)
    yt.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(a.grad.numpy(), at.grad.numpy())
