"""Higher-order gradients (create_graph=True) on every backend.

Per-op table (testing/cases.py): for every differentiable case, the Hessian-vector product
of L(x) = sum(w * f(x)), computed by torchic as grad(grad(L, x, create_graph) . v, x),
against the NumPy float64 reference's mixed central differences
(L(x + e v + d e_k) - L(x + e v - d e_k) - L(x - e v + d e_k) + L(x - e v - d e_k)) / 4ed
for every input element k. Then torch-compared scenarios: double backward, gradient
penalties, Hessian-vector products, retain_graph / create_graph defaults.
"""

import numpy as np
import pytest

import torchic
from torchic.testing.cases import CASES

torch = pytest.importorskip("torch")

# cases whose gradient is not checked against finite differences at all, or whose inputs
# are not differentiable: nothing of second order to check either
SECOND = [c for c in CASES.values()
          if c.grad is not False and c.family not in ("int", "compare")]


def _diff(case, n):
    return tuple(range(n)) if case.grad is True else tuple(case.grad)


def _numeric_hvp(ref, arrays, diff, w, v, eps=1e-5, delta=1e-5):
    """d/dx_k [ v . grad L ] for L = sum(w * ref(x)), every differentiable input element."""
    def L(shift_v, k, j, shift_k):
        xs = [a.copy() for a in arrays]
        for i, d in enumerate(diff):
            xs[d] = xs[d] + shift_v * v[i]
        flat = xs[k].reshape(-1)
        flat[j] += shift_k
        return float(np.sum(w * np.asarray(ref(*xs), np.float64)))
    out = []
    for k in diff:
        h = np.zeros(arrays[k].size)
        for j in range(arrays[k].size):
            h[j] = (L(eps, k, j, delta) - L(eps, k, j, -delta) - L(-eps, k, j, delta)
                    + L(-eps, k, j, -delta)) / (4 * eps * delta)
        out.append(h.reshape(arrays[k].shape))
    return out


@pytest.mark.parametrize("name", [c.name for c in SECOND])
def test_second_derivative_of_every_case(backend, name):
    case = CASES[name]
    rng = np.random.default_rng(1)
    arrays = [np.asarray(a, np.float64).astype(np.float32).astype(np.float64)
              for a in case.draw(rng)]
    diff = _diff(case, len(arrays))
    xs = [torchic.tensor(a.astype(np.float32), requires_grad=k in diff)
          for k, a in enumerate(arrays)]
    out = case.fn(*xs)
    ref_out = np.asarray(case.ref(*[a.copy() for a in arrays]), np.float64)
    w = rng.standard_normal(ref_out.shape)
    v = [rng.standard_normal(arrays[k].shape) for k in diff]
    loss = (out * torchic.tensor(w.astype(np.float32))).sum()
    grads = torchic.autograd.grad(loss, [xs[k] for k in diff], create_graph=True)
    dot = sum((g * torchic.tensor(vk.astype(np.float32))).sum()
              for g, vk in zip(grads, v) if g.requires_grad)
    if not isinstance(dot, torchic.Tensor):     # every first derivative is constant
        got = [np.zeros(arrays[k].shape) for k in diff]
    else:
        got = [np.zeros(arrays[k].shape) if g is None else g.numpy()
               for k, g in zip(diff, torchic.autograd.grad(
                   dot, [xs[k] for k in diff], allow_unused=True))]
    want = _numeric_hvp(case.ref, arrays, diff, w, v)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, atol=5e-3, rtol=5e-3,
                                   err_msg=f"{name}: input {diff[k]}")


# -- scenarios against torch -------------------------------------------------------------

def _both(fn, *arrays):
    """fn(lib, *tensors) with torch (float64 leaves) and torchic (float32 leaves)."""
    outs = []
    for lib, dt in ((torch, torch.float64), (torchic, torchic.float32)):
        ts = [lib.tensor(a, dtype=dt, requires_grad=True) for a in arrays]
        outs.append([np.asarray(t.detach().numpy(), np.float64) for t in fn(lib, *ts)])
    return outs


def _close(outs, tol=1e-4):
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def test_double_backward_of_x_cubed(backend):
    x = torchic.tensor(3.0, requires_grad=True)
    (g,) = torchic.autograd.grad(x ** 3, x, create_graph=True)
    assert g.requires_grad and g.item() == pytest.approx(27.0)
    (h,) = torchic.autograd.grad(g, x, create_graph=True)
    assert h.item() == pytest.approx(18.0)
    (t,) = torchic.autograd.grad(h, x)
    assert t.item() == pytest.approx(6.0)


def test_gradient_penalty_of_mlp_matches_torch(backend):
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.standard_normal((5, 4)), rng.standard_normal((4, 6)), \
        rng.standard_normal((6, 1))

    def fn(lib, x, w1, w2):
        out = (x @ w1).tanh() @ w2
        (gx,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        penalty = (((gx * gx).sum(1).sqrt() - 1) ** 2).mean()
        loss = out.pow(2).mean() + penalty
        loss.backward()
        return [loss, x.grad, w1.grad, w2.grad]
    _close(_both(fn, x, w1, w2))


def test_hessian_vector_product_matches_torch(backend):
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal(6), rng.standard_normal(6)

    def fn(lib, x, v):
        y = (x.sigmoid() * (1 + x.exp()).log() + x.sin() * x).sum() + (x[:3] * x[3:]).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (hv,) = lib.autograd.grad((g * v.detach()).sum(), x)
        return [g, hv]
    _close(_both(fn, x, v))


def test_backward_create_graph_then_grad_of_grad(backend):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))

    def fn(lib, a, b):
        y = (lib.softmax(a @ b, dim=1) * (a @ b)).sum()
        y.backward(create_graph=True)
        ga = a.grad
        z = (ga ** 2).sum()
        a.grad = None
        b.grad = None
        z.backward()
        return [ga, a.grad, b.grad]
    _close(_both(fn, a, b))


def test_double_backward_through_slices_cat_and_reductions(backend):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))

    def fn(lib, x):
        parts = lib.cat([x[:, :2] * x[:, 3:], x[1:, :2].mean(0, keepdim=True) ** 2], dim=0)
        y = (parts.exp().sum(1).log() + parts.amax(1)).sum() + lib.nn.functional.gelu(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return [g, h]
    _close(_both(fn, x))


def test_layer_norm_and_cross_entropy_second_order(backend):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal((5, 4))

    def fn(lib, x, w):
        F = lib.nn.functional
        h = F.layer_norm(x, (5,)) @ w
        loss = F.cross_entropy(h, lib.tensor([0, 3, 1]))
        gx, gw = lib.autograd.grad(loss, (x, w), create_graph=True)
        (hx,) = lib.autograd.grad(gx.pow(2).sum() + gw.sum(), x)
        return [gx, gw, hx]
    _close(_both(fn, x, w))


def test_create_graph_keeps_graph_by_default(backend):
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 2).sum()
    torchic.autograd.grad(y, x, create_graph=True)
    torchic.autograd.grad(y, x)                 # retain_graph defaulted to create_graph
    with pytest.raises(RuntimeError, match="second time"):
        torchic.autograd.grad(y, x)


def test_double_backward_through_in_place_ops_on_views(backend):
    # CopySlices and the AsStrided grad_fn a view gets after it: their recorded gradients
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4))

    def fn(lib, x):
        h = x * 1
        v = h[:, 1:3]
        v.mul_(x[:, :2])
        h[0] = h[1] * 2 + h[2].exp()
        y = (h ** 3).sum() + (v * v).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (hh,) = lib.autograd.grad((g * g).sum(), x)
        return [g, hh]
    _close(_both(fn, x))
