"""torch.autograd's entry points on every backend, against torch: grad (grad_outputs,
allow_unused, materialize_grads, non-leaf inputs), backward (inputs=, several tensors),
tensor hooks, retain_grad, autograd.functional, gradcheck / gradgradcheck, anomaly
detection, the graph (grad_fn, next_functions, name()) and the grad-mode switches."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy(), np.float64)


def _both(fn, *arrays, tol=1e-5):
    got = {}
    for lib in (torch, torchic):
        leaves = [lib.tensor(np.asarray(a, np.float32), requires_grad=True) for a in arrays]
        got[lib] = fn(lib, *leaves)
    for k, (a, b) in enumerate(zip(got[torch], got[torchic])):
        if a is None or b is None:
            assert a is None and b is None, k
        elif isinstance(a, (bool, int, str, tuple)):
            assert a == b, (k, a, b)
        else:
            np.testing.assert_allclose(_np(b), _np(a), rtol=tol, atol=tol, err_msg=f"value {k}")


def test_grad_options(backend):
    def fn(lib, x, y, z):
        h = x * y
        out = (h.exp() + y).sum()
        gx, gh, gz = lib.autograd.grad(out, (x, h, z), retain_graph=True, allow_unused=True)
        (gz0,) = lib.autograd.grad(out, z, retain_graph=True, materialize_grads=True)
        g2 = lib.autograd.grad([h, out], [y], grad_outputs=[lib.ones(3) * 2, None])[0]
        return [gx, gh, gz, gz0, g2, x.grad]
    _both(fn, [0.1, 0.2, 0.3], [1.0, -1.0, 0.5], [4.0, 5.0, 6.0])


def test_grad_errors(backend):
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    z = torchic.tensor([1.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        torchic.autograd.grad(y, [x, z], retain_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        torchic.autograd.grad(y, torchic.ones(2), retain_graph=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        torchic.autograd.grad(x * 2, x)


def test_backward_inputs_and_several_tensors(backend):
    def fn(lib, x, y):
        a = (x * y).sum()
        b = (x + y).pow(2).sum()
        lib.autograd.backward([a, b], retain_graph=True)
        gx, gy = x.grad.clone(), y.grad.clone()
        x.grad = None
        y.grad = None
        b.backward(inputs=[y])
        return [gx, gy, x.grad, y.grad]
    _both(fn, [1.0, 2.0], [3.0, -1.0])


def test_backward_inputs_non_leaf(backend):
    def fn(lib, x):
        h = x * 3
        (h * h).sum().backward(inputs=[h])
        return [h.grad, x.grad]
    _both(fn, [1.0, 2.0])


def test_register_hook_leaf_and_non_leaf(backend):
    def fn(lib, x):
        seen = []
        h = x * 2
        handle = h.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: seen.append(g.clone()))      # returns None: unchanged
        y = (h * x).sum() + h.sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        handle.remove()
        x.grad = None
        y.backward()
        return [first, x.grad, seen[0], seen[1]]
    _both(fn, [1.0, -2.0])


def test_retain_grad_and_post_accumulate_hook(backend):
    def fn(lib, x):
        calls = []
        h = (x * 3).exp()
        h.retain_grad()
        x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.clone()))
        (h * x).sum().backward()
        return [h.grad, x.grad, calls[0], len(calls), h.retains_grad, x.retains_grad]
    _both(fn, [0.1, 0.2])


def test_functional(backend):
    F = {lib: lib.autograd.functional for lib in (torch, torchic)}

    def fn(lib, x, v):
        f = (lambda t: (t ** 3).sum())
        g = (lambda a, b: (a * b.sin(), a.exp()))
        out = [F[lib].jacobian(lambda t: t ** 2 * t.sum(), x),
               F[lib].hessian(f, x),
               *F[lib].vjp(lambda t: t.tanh(), x, v),
               *F[lib].jvp(lambda t: t.tanh() * t, x, v),
               *F[lib].hvp(f, x, v),
               *F[lib].vhp(f, x, v)]
        jac = F[lib].jacobian(g, (x, v))
        out += [jac[0][0], jac[0][1], jac[1][0], jac[1][1]]
        hs = F[lib].hessian(lambda a, b: (a * b * b).sum(), (x, v))
        out += [hs[0][0], hs[0][1], hs[1][0], hs[1][1]]
        return out
    _both(fn, [0.5, -1.0, 2.0], [1.0, 0.3, -0.2], tol=1e-4)


def test_gradcheck_and_gradgradcheck(backend):
    if backend == "webgpu":
        pytest.skip("gradcheck runs in float64, which webgpu does not hold")
    x = torchic.tensor([0.3, -0.6, 1.1], dtype=torchic.float64, requires_grad=True)
    w = torchic.tensor([[0.2, 0.1, -0.4]], dtype=torchic.float64, requires_grad=True)
    f = (lambda a, b: (a.sin() * b).tanh().sum(1))
    assert torchic.autograd.gradcheck(f, (x, w))
    assert torchic.autograd.gradgradcheck(f, (x, w))

    class Wrong(torchic.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g * 3
    assert not torchic.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        torchic.autograd.gradcheck(Wrong.apply, (x,))


def test_detect_anomaly_names_the_op_and_forward_line(backend):
    x = torchic.tensor([0.0, 1.0], requires_grad=True)
    with torchic.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()             # d sqrt at 0: inf * 0 = nan
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan") as e:
            y.backward()
    assert "test_autograd_api.py" in str(e.value) and "x.sqrt() * 0" in str(e.value)
    assert not torchic.autograd.is_anomaly_enabled()
    torchic.autograd.set_detect_anomaly(True)
    try:
        assert torchic.autograd.is_anomaly_enabled()
    finally:
        torchic.autograd.set_detect_anomaly(False)
    with torchic.autograd.set_detect_anomaly(True, check_nan=False):
        y = (x.sqrt() * 0).sum()
        y.backward()                          # stacks recorded, NaN not checked
    assert torchic.autograd.is_anomaly_enabled() is False
    y = (x.sqrt() * 0).sum()
    y.backward()                              # off: nan goes through, as in torch
    assert np.isnan(x.grad.numpy()[0])


def test_graph_basics(backend):
    def fn(lib, x, w):
        y = (x * w).sum()
        nf = y.grad_fn.next_functions
        inner = nf[0][0].next_functions
        kinds = tuple(n.name() if n is not None else None for n, _ in inner)
        return [y.grad_fn.name(), len(nf), nf[0][0].name(), kinds,
                inner[0][0].variable is x, x.grad_fn is None, x.is_leaf, y.is_leaf]
    _both(fn, [1.0, 2.0], [3.0, 4.0])


def test_grad_modes(backend):
    for lib in (torch, torchic):
        x = lib.tensor([1.0], requires_grad=True)

        @lib.no_grad()
        def f(t):
            return t * 2

        @lib.no_grad
        def g(t):
            return t * 2
        assert not f(x).requires_grad and not g(x).requires_grad
        with lib.set_grad_enabled(False):
            assert not lib.is_grad_enabled() and not (x * 2).requires_grad
        assert lib.is_grad_enabled()
        lib.set_grad_enabled(False)
        try:
            assert not (x * 2).requires_grad
        finally:
            lib.set_grad_enabled(True)
        @lib.set_grad_enabled(False)
        def h(t):
            return t * 2
        assert lib.is_grad_enabled() and not h(x).requires_grad and lib.is_grad_enabled()
        with lib.inference_mode():
            assert not (x * 2).requires_grad and lib.is_inference_mode_enabled()
        with lib.no_grad(), lib.enable_grad():
            assert (x * 2).requires_grad


def test_node_hooks(backend):
    def fn(lib, x, w):
        seen = []
        h = x * w
        y = h.exp().sum()
        pre = h.grad_fn.register_prehook(lambda gouts: (gouts[0] * 2,))
        post = h.grad_fn.register_hook(
            lambda gins, gouts: seen.append((len(gins), len(gouts))) or (gins[0], gins[1] * 0))
        y.backward(retain_graph=True)
        first = (x.grad.clone(), w.grad.clone())
        pre.remove()
        post.remove()
        x.grad = None
        w.grad = None
        y.backward()
        return [*first, x.grad, w.grad, seen[0]]
    _both(fn, [0.5, -1.0], [2.0, 0.25])


def test_grad_is_grads_batched(backend):
    def fn(lib, x):
        y = x.sin() * x
        eye = lib.eye(3)
        (jac,) = lib.autograd.grad(y, x, eye, retain_graph=True, is_grads_batched=True)
        (jac2,) = lib.autograd.grad(y, x, eye, create_graph=True, is_grads_batched=True)
        (h,) = lib.autograd.grad(jac2.sum(), x)
        return [jac, jac2, h]
    _both(fn, [0.5, -1.0, 2.0])
