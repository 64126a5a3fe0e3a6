"""Autograd behaviour on every backend: the original's scenarios and PyTorch's rules."""

import asyncio

import numpy as np
import pytest

import torchic


def test_original_matmul_scenario(backend):
    a = torchic.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = torchic.tensor([[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]])
    assert a.matmul(b).numpy().ravel().tolist() == [58, 64, 139, 154]


@pytest.mark.parametrize("a_shape", [(3, 5, 4), (2, 3, 5, 4), (0, 5, 4), (3, 0, 4), (3, 5, 0)])
@pytest.mark.parametrize("permuted", [False, True])
def test_weight_gradient_of_batched_input_is_one_product(backend, rng, a_shape, permuted):
    # (..., M, K) @ a 2-D (K, N): the weight's gradient folds every batch's rows into one
    # product (MatMul.backward), also for an input whose batch dims do not flatten (copied)
    k, n = a_shape[-1], 6
    a_np = rng.standard_normal(a_shape).astype(np.float32)
    b_np = rng.standard_normal((k, n)).astype(np.float32)
    g_np = rng.standard_normal(a_shape[:-1] + (n,)).astype(np.float32)
    a = torchic.tensor(a_np, requires_grad=True)
    b = torchic.tensor(b_np, requires_grad=True)
    x, x_np = a, a_np
    if permuted:
        x, x_np = a.transpose(0, 1), a_np.swapaxes(0, 1)
        g_np = g_np.swapaxes(0, 1).copy()
    (x @ b).backward(torchic.tensor(g_np))
    m = int(np.prod(x_np.shape[:-1]))
    want_b = x_np.reshape(m, k).astype(np.float64).T @ g_np.reshape(m, n)
    want_x = g_np.astype(np.float64) @ b_np.T
    np.testing.assert_allclose(b.grad.numpy(), want_b, rtol=1e-5, atol=1e-5)
    got_x = a.grad.numpy().swapaxes(0, 1) if permuted else a.grad.numpy()
    np.testing.assert_allclose(got_x, want_x, rtol=1e-5, atol=1e-5)


def test_x_squared_plus_3x(backend):
    x = torchic.tensor(2.0, requires_grad=True)
    y = x ** 2 + 3 * x
    y.backward()
    assert y.item() == 10.0
    assert x.grad.item() == 7.0


def test_quickstart_gradients(backend):
    # the original's quick start: z = sum(x @ w + b), gradients by hand
    x = torchic.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = torchic.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    b = torchic.tensor([0.1, 0.2], requires_grad=True)
    z = (x @ w + b).relu().sum()
    z.backward()
    pre = x.numpy() @ w.numpy() + b.numpy()
    mask = (pre > 0).astype(np.float32)
    np.testing.assert_allclose(z.item(), np.maximum(pre, 0).sum(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().T @ mask, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), mask.sum(0), rtol=1e-6)


def test_linear_regression_converges(backend):
    torchic.manual_seed(0)
    xs = torchic.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(-1, 1))
    ys = xs * 2 + 1
    w = torchic.zeros(1, 1, requires_grad=True)
    b = torchic.zeros(1, requires_grad=True)
    for _ in range(300):
        loss = torchic.mse_loss(xs @ w + b, ys)
        w.grad = None
        b.grad = None
        loss.backward()
        with torchic.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
    assert abs(w.item() - 2) < 1e-2 and abs(b.item() - 1) < 1e-2
    assert loss.item() < 1e-4


def test_gradient_accumulates_across_calls(backend):
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [3 + 2, 3 + 4]


def test_shared_subexpression_and_broadcast(backend):
    x = torchic.tensor([[1.0, 2.0, 3.0]], requires_grad=True)    # (1, 3)
    col = torchic.tensor([[1.0], [2.0]], requires_grad=True)     # (2, 1)
    y = x * col + x                                              # (2, 3)
    y.sum().backward()
    assert x.grad.tolist() == [[5.0, 5.0, 5.0]]   # col summed (3) + 2 rows of x
    assert col.grad.tolist() == [[6.0], [6.0]]


def test_backward_with_gradient_and_errors(backend):
    x = torchic.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y.backward()
    y.backward(torchic.tensor([1.0, 0.0, -1.0]))
    assert x.grad.tolist() == [2.0, 0.0, -2.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        torchic.tensor([1.0]).sum().backward()


def test_backward_twice_needs_retain_graph(backend):
    x = torchic.tensor(3.0, requires_grad=True)
    y = x.exp() * x
    y.backward(retain_graph=True)
    first = x.grad.item()
    y.backward()
    assert np.isclose(x.grad.item(), 2 * first)
    z = x.exp() * x
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()


def test_detach_leaf_and_requires_grad(backend):
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.requires_grad
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d._storage is y._storage
    z = (d * x).sum()
    z.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    p = torchic.zeros(2).requires_grad_()
    assert p.requires_grad
    with pytest.raises(TypeError):
        torchic.tensor([1, 2]).requires_grad_()


def test_retain_grad(backend):
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward()
    assert h.grad.tolist() == [6.0, 12.0]
    assert x.grad.tolist() == [18.0, 36.0]


def test_no_grad_forms(backend):
    x = torchic.tensor([1.0], requires_grad=True)
    with torchic.no_grad():
        assert not (x * 2).requires_grad
        assert not torchic.is_grad_enabled()
    assert torchic.is_grad_enabled()

    @torchic.no_grad
    def f(t):
        return t * 2

    @torchic.no_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad
    assert not torchic.no_grad(lambda: x * 2)().requires_grad
    with torchic.no_grad():
        with torchic.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_deep_graph_has_no_recursion_limit(backend):
    x = torchic.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0 + 0.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_inplace_rules(backend):
    w = torchic.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0] = 3.0
    with torchic.no_grad():
        w.add_(1)
    assert w.tolist() == [2.0, 2.0]
    # modifying a tensor saved for backward is detected at backward
    a = torchic.tensor([1.0, 2.0], requires_grad=True)
    b = torchic.tensor([3.0, 4.0])
    y = (a * b).sum()
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    # .data updates bypass the graph (the PyTorch idiom)
    p = torchic.ones(3, requires_grad=True)
    (p * p).sum().backward()
    p.data += -0.5 * p.grad
    assert p.tolist() == [0.0, 0.0, 0.0] and p.requires_grad and p.is_leaf


def test_gradient_through_views(backend):
    x = torchic.arange(6).float().requires_grad_()
    y = x.reshape(2, 3).T[1:, :]        # (2, 2) view of a view
    (y * torchic.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [0, 1, 3, 0, 2, 4]


def test_awaitable_reads(backend):
    t = torchic.tensor([[1.0, 2.0]]) * 2

    async def main():
        return await t.item_async() if t.numel() == 1 else (await t.numpy_async(),
                                                            await t.tolist_async())
    arr, lst = asyncio.run(main())
    assert lst == [[2.0, 4.0]] and arr.dtype == np.float32
    s = t.sum()
    assert asyncio.run(s.item_async()) == 6.0


def test_repr_and_metadata(backend):
    x = torchic.tensor([[1.0, 2.5], [3.0, 4.0]], requires_grad=True)
    assert repr(x).startswith("tensor([[1.0000, 2.5000],") and "requires_grad=True" in repr(x)
    assert "grad_fn=<MulBackward>" in repr(x * 2)
    assert x.shape == (2, 2) and x.size() == (2, 2) and x.size(-1) == 2
    assert x.dim() == 2 and x.numel() == 4 and x.ndim == 2
    # PyTorch's CPU device on every backend: the backend, not a device, picks where ops run
    assert x.device == torchic.device("cpu") and x.device.type == "cpu" and not x.is_cuda
    assert torchic.get_backend() == backend
    assert repr(torchic.tensor([1, 2])) == "tensor([1, 2], dtype=torchic.int32)"
