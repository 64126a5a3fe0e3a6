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
    pre = x.detach().numpy() @ w.detach().numpy() + b.detach().numpy()
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
    with pytest.raises(RuntimeError, match="floating point"):    # PyTorch's error
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
    assert "grad_fn=<MulBackward0>" in repr(x * 2)     # PyTorch's name
    assert x.shape == (2, 2) and x.size() == (2, 2) and x.size(-1) == 2
    assert x.dim() == 2 and x.numel() == 4 and x.ndim == 2
    # PyTorch's CPU device on every backend: the backend, not a device, picks where ops run
    assert x.device == torchic.device("cpu") and x.device.type == "cpu" and not x.is_cuda
    assert torchic.get_backend() == backend
    assert repr(torchic.tensor([1, 2])) == "tensor([1, 2])"     # int64, PyTorch's default
    assert repr(torchic.tensor([1, 2], dtype=torchic.int32)) == \
        "tensor([1, 2], dtype=torchic.int32)"


# -- gradients of slices: one buffer per tensor (autograd._GradSum, views.SliceGrad) ----------

def _split_keys(sizes, dim):
    """The keys of split(sizes, dim)'s pieces."""
    starts = np.cumsum([0] + sizes)
    return [(slice(None),) * dim + (slice(a, b),) for a, b in zip(starts, starts[1:])]


_ALL, _EVEN, _ODD = slice(None), slice(None, None, 2), slice(1, None, 2)
# name -> (input shape, keys of the views of x, the API call making them (else x[key] for
# each key), whether x is also used whole)
_SLICE_CASES = {
    "split": ((3, 4, 12), _split_keys([4, 4, 4], 2), lambda x: x.split(4, dim=2), False),
    "split_sizes": ((3, 4, 12), _split_keys([2, 7, 3], 2), lambda x: x.split([2, 7, 3], -1),
                    False),
    "chunk": ((3, 5, 2), _split_keys([2, 2, 1], 1), lambda x: x.chunk(3, 1), False),
    "narrowed": ((5, 3), [(slice(1, 3),), (_ALL, slice(2, 3))], None, False),
    "overlapping": ((4, 5, 6), [(_ALL, slice(1, 3)), (_ALL, slice(2, 4)), (0,), (..., _EVEN),
                                (None, 1, _ALL, -3)], None, False),
    "strided_disjoint": ((6, 4), [(_EVEN,), (_ODD,)], None, False),
    "strided_meeting": ((12, 2), [(slice(None, None, 4),), (slice(2, None, 6),),
                                  (slice(1, None, 3),)], None, False),
    "with_gap_and_empty": ((4, 6), [(_ALL, slice(None, 2)), (_ALL, slice(4, None)),
                                    (_ALL, slice(3, 3)), (slice(2, 1),)], None, False),
    "columns_one_by_one": ((3, 7), [(_ALL, t) for t in range(7)], None, False),
    "same_view_twice": ((4, 3), [(slice(1, 3),)] * 2, None, False),
    "mixed_with_whole_use": ((4, 6), [(_ALL, slice(1, 3)), (3,), (_ALL, slice(None, None, 5))],
                             None, True),
    "zero_d": ((), [(None,), (...,), ()], None, False),
    "zero_size_input": ((0, 3), _split_keys([1, 1, 1], 1), lambda x: x.split(1, 1), False),
}


@pytest.mark.parametrize("through", ["leaf", "node", "leaf_with_grad"])
@pytest.mark.parametrize("name", sorted(_SLICE_CASES))
def test_slice_gradients_match_float64(backend, rng, name, through):
    shape, keys, views, whole = _SLICE_CASES[name]
    x_np = rng.standard_normal(shape).astype(np.float32)
    x = torchic.tensor(x_np, requires_grad=True)
    old = None
    if through == "leaf_with_grad":
        old_np = rng.standard_normal(shape).astype(np.float32)
        x.grad = old = torchic.tensor(old_np)
    h = x * 1.5 if through == "node" else x
    scale = 1.5 if through == "node" else 1.0
    parts = list(views(h)) if views else [h[k] for k in keys]
    ws = [rng.standard_normal(x_np[k].shape).astype(np.float32) for k in keys]
    want = np.zeros(shape)
    for k, w in zip(keys, ws):
        want[k] += w
    loss = sum(((p * torchic.tensor(w)).sum() for p, w in zip(parts, ws)), torchic.tensor(0.0))
    if whole:
        w0 = rng.standard_normal(shape).astype(np.float32)
        loss = loss + (h * torchic.tensor(w0)).sum()
        want += w0
    junk = torchic.full(shape, float("nan"))    # a freed block of x's size: garbage to reuse
    del junk
    loss.backward()
    want *= scale
    if old is not None:
        np.testing.assert_array_equal(old.numpy(), old_np)    # .grad is replaced, not mutated
        want += old_np
    assert x.grad.shape == x.shape
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-6)


def test_slice_gradients_never_write_user_tensors(backend, rng):
    # the user's gradient reaches y's buffer as views (cat's backward), beside the slices'
    # gradients: the engine copies it before adding into it, and leaves it as it was
    x = torchic.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    a, b = y[:, :3], y[:, 1:]
    a.retain_grad()
    out = torchic.cat([a, y, b], 1)
    g_np = rng.standard_normal((3, 10)).astype(np.float32)
    g = torchic.tensor(g_np)
    out.backward(g)
    np.testing.assert_array_equal(g.numpy(), g_np)
    want_y = g_np[:, 3:7].astype(np.float64)
    want_y[:, :3] += g_np[:, :3]
    want_y[:, 1:] += g_np[:, 7:]
    np.testing.assert_allclose(y.grad.numpy(), want_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), g_np[:, :3], rtol=0, atol=0)
    np.testing.assert_allclose(x.grad.numpy(), 2 * want_y, rtol=1e-6, atol=1e-6)


def test_slice_gradients_hooks_and_retain_graph(backend):
    x = torchic.arange(6).float().requires_grad_()
    seen = []
    torchic.autograd.register_post_accumulate_grad_hook(x, lambda t: seen.append(t.grad.tolist()))
    p, q = x.split([2, 4])
    loss = (p * 2).sum() + (q * 3).sum() + x[1:3].sum()
    loss.backward(retain_graph=True)
    assert seen == [[2, 3, 4, 3, 3, 3]]       # called once, with the whole gradient
    loss.backward()
    assert x.grad.tolist() == [4, 6, 8, 6, 6, 6] and len(seen) == 2


def test_split_backward_writes_one_buffer(backend):
    # a 3-way split's backward: 3 copies into one buffer (it used to be 3 zero fills, 3
    # copies and 2 adds of the whole tensor: 12 ops for this backward, now 7)
    from torchic.testing import issued_ops
    x = torchic.randn(2, 3, 12, requires_grad=True)
    a, b, c = (torchic.randn(2, 3, 4) for _ in range(3))
    q, k, v = x.split(4, dim=2)
    loss = (q * a + k * b + v * c).sum()
    seen = issued_ops(loss.backward)
    assert seen.count("copy") == 3 and "add" not in seen, seen
    assert seen.count("fill") <= 1 and len(seen) <= 7, seen    # the fill: the loss's ones
    want = np.concatenate([a.numpy(), b.numpy(), c.numpy()], axis=2)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_slice_regions_meet_exactly():
    # the test behind "copy, or add where an earlier slice wrote" (functions/views.py)
    from torchic.functions.views import _ranges_meet
    rs = [range(a, b, s) for a in range(6) for b in range(a + 1, 14) for s in (1, 2, 3, 4, 6)]
    for a in rs:
        for b in rs:
            assert _ranges_meet(a, b) == bool(set(a) & set(b)), (a, b)


def test_slice_gradients_beside_dense_ones(backend, rng):
    # a node that gets three ordinary gradients (the third added in place into the engine's
    # sum) and slices' gradients; an int32 gradient given by the user is cast
    x = torchic.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    h = x * 2.0
    ws = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(3)]
    loss = sum((h * torchic.tensor(w)).sum() for w in ws) + h[1:3].sum() + h[:, 2:5].sum()
    loss.backward()
    want = sum(w.astype(np.float64) for w in ws)
    want[1:3] += 1
    want[:, 2:5] += 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * want, rtol=1e-6, atol=1e-6)
    y = torchic.tensor([1.0, 2.0, 3.0], requires_grad=True)
    torchic.cat([y[:2], y[1:]]).backward(torchic.tensor([1, 2, 3, 4]))
    assert x.grad.dtype == torchic.float32 and y.grad.tolist() == [1.0, 5.0, 4.0]


def test_compiled_step_with_slices_matches_eager_bitwise(backend):
    # the in-place writes into the engine's buffers are stream ops that compile records
    rng = np.random.default_rng(5)
    xs = [torchic.tensor(rng.standard_normal((4, 3, 12)).astype(np.float32)) for _ in range(6)]
    results = []
    for compiled in (False, True):
        torchic.manual_seed(0)
        w = torchic.randn(12, 12, requires_grad=True)
        p = torchic.randn(3, 12, requires_grad=True)
        opt = torchic.optim.SGD([w, p], lr=0.05)

        def step(x):
            q, k, v = (x @ w).split(4, dim=2)
            a, b = p[:, :8], p[1:, 4:]
            loss = ((q * k).sum() + (v * a[:, 4:]).sum() + (k[:, 1:] * b[:, :4]).sum()
                    + (p * p).sum() + (q[..., ::2] * v[..., 1::2]).sum())
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        if compiled:
            step = torchic.compile(step)
        losses = [step(x).item() for x in xs]
        results.append((losses, w.detach().numpy(), p.detach().numpy()))
    (le, we, pe), (lc, wc, pc) = results
    assert le == lc
    np.testing.assert_array_equal(we, wc)
    np.testing.assert_array_equal(pe, pc)
