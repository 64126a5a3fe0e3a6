"""The eager small-program fast paths (issue 45): stack as one Cat op, iteration through
unbind's precomputed views, and `t[ix] += v` reading a 0-d index once. Each is compared
with PyTorch: values, gradients, and the cases where a shortcut must not apply."""

import numpy as np
import pytest
import torch

import torchic


def _both(fn):
    return fn(torchic), fn(torch)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_values_and_grads(backend, dim):
    a_np, b_np = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)

    def run(L):
        a = L.tensor(a_np, requires_grad=True)
        b = L.tensor(b_np, requires_grad=True)
        s = L.stack([a, b * 2, a], dim)
        (s * L.arange(s.numel()).reshape(s.shape)).sum().backward()
        return s.detach().numpy(), a.grad.numpy(), b.grad.numpy()
    for got, want in zip(*_both(run)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_stack_mixed_dtypes_and_0d(backend):
    got, want = _both(lambda L: L.stack([L.tensor(1), L.tensor(2.5), L.tensor(True)]))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_stack_of_any_sequence(backend):
    """stack takes a list, a tuple or any iterable of tensors, Python numbers and arrays
    among them (made tensors as any operand is), and checks the first part as it does the
    rest."""
    t = torchic.tensor([1.0, 2.0])
    for parts in ([t, t * 2], (t, t * 2), (x for x in [t, t * 2]), [[1.0, 2.0], t * 2],
                  [np.array([1.0, 2.0], np.float32), t * 2]):
        assert torchic.stack(parts).tolist() == [[1.0, 2.0], [2.0, 4.0]]
    assert torchic.stack([1, 2]).tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="non-empty"):
        torchic.stack(iter([]))
    with pytest.raises(RuntimeError, match="equal size"):
        torchic.stack([[1.0], t])


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_stack_of_many_views_of_one_tensor(backend, dim, dtype):
    """get_batch's `torch.stack([data[i:i + 8] for i in ix])`: many views of one tensor (one
    gather, functions/views.py's _stack_gathered), strided and overlapping views included;
    a float stack's gradient reaches every view's elements (repeated ones summed). Parts
    whose elements are evenly spaced (a row, a column, a contiguous block, every other
    column, an expanded element) stacked along dim 0 gather rows of an overlapping view;
    the rest, and other dims, gather positions."""
    base = np.random.default_rng(1).standard_normal((40, 6))
    a_np = {"float32": base.astype(np.float32), "int64": (base * 10).astype(np.int64),
            "bool": base > 0}[dtype]
    ix = [3, 5, 3, 9, 0, 1, 2, 30, 31, 7, 12, 4]
    picks = [lambda x, i: x[i:i + 5], lambda x, i: x[i], lambda x, i: x[i:i + 3, 1:4],
             lambda x, i: x.T[:, i:i + 2], lambda x, i: x[i:i + 4, ::2],
             lambda x, i: x[:, i % 6], lambda x, i: x[i, :1].expand(4),
             lambda x, i: x[i:i + 2, 1:2], lambda x, i: x[i:i + 2, 1:2].T]

    def run(L):
        x = L.tensor(a_np, requires_grad=dtype == "float32")
        out = [L.stack([pick(x, i) for i in ix], dim) for pick in picks]
        if dtype != "float32":
            return [o.numpy() for o in out]
        sum(((o * o).sum() for o in out), L.tensor(0.0)).backward()
        return [o.detach().numpy() for o in out] + [x.grad.numpy()]
    for got, want in zip(*_both(run)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_stack_of_views_with_0d_bounds(backend):
    data = torchic.arange(100)
    ix = torchic.randint(90, (16,))
    x = torchic.stack([data[i:i + 8] for i in ix])
    assert x.tolist() == [list(range(i, i + 8)) for i in ix.tolist()]


@pytest.mark.parametrize("wrap", ["int", "tensor", "numpy", "bool"])
def test_leading_slice_bounds(backend, wrap):
    """`x[a:b]` (api/indexing.py's _leading_slice: bounds worked out directly) against
    PyTorch for bounds in range, past either end, negative, reversed and None, given as ints,
    0-d integer tensors, NumPy ints or bools; the view's gradient lands in its rows."""
    values = [None, -100, -7, -6, -3, -1, 0, 1, 3, 5, 6, 7, 100]
    if wrap == "bool":
        values = [None, False, True]
    a_np = np.arange(24, dtype=np.float32).reshape(6, 4)

    def bound(L, v):
        if v is None or wrap in ("int", "bool"):
            return v
        return np.int64(v) if wrap == "numpy" else L.tensor(v)

    def run(L):
        x = L.tensor(a_np, requires_grad=True)
        out = []
        for start in values:
            for stop in values:
                y = x[bound(L, start):bound(L, stop)]
                (y * (start or 1)).sum().backward()
                out.append(y.detach().numpy())
        return out + [x.grad.numpy()]
    for got, want in zip(*_both(run)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_stack_double_backward(backend):
    def run(L):
        x = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = L.stack([x * x, x], 1).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        (gg,) = L.autograd.grad((g * g).sum(), x)
        return gg.numpy()
    got, want = _both(run)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_iteration_views_and_grads(backend):
    def run(L):
        x = L.arange(6.0).reshape(3, 2).requires_grad_()
        s = sum((r * (i + 1)).sum() for i, r in enumerate(x))
        s.backward()
        y = L.zeros(3, 2)
        for r in y:              # the rows are views: writes reach y
            r += 1
        cols = [c.numpy() for c in L.arange(6).reshape(2, 3).unbind(1)]
        return x.grad.numpy(), y.numpy(), np.stack(cols)
    for got, want in zip(*_both(run)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        iter(torchic.tensor(1))


def test_add_at_0d_index(backend):
    def run(L):
        d, ix, v = L.zeros(5, 2), L.tensor(1), L.ones(2)
        d[ix] += v
        d[ix] += v
        w = d[ix]
        ix += 2                  # the index changed between getitem and setitem: re-read
        d[ix] = w
        w = d[ix]
        ix.random_(0, 1)
        d[ix] = w
        W = L.zeros(4, 3, requires_grad=True)
        C = W * 1
        j = L.tensor(2)
        C[j] += L.arange(3.0)
        (C * C).sum().backward()
        return d.numpy(), ix.numpy(), C.detach().numpy(), W.grad.numpy()
    for got, want in zip(*_both(run)):
        np.testing.assert_array_equal(got, want)
