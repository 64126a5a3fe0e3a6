"""torchic.autograd.Function (PyTorch's custom-op protocol) on every backend, each scenario
run with torch and with torchic on the same inputs: values and gradients must agree."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy(), np.float64)


def _same(fn, *arrays, tol=1e-5):
    """fn(lib, *leaves) with torch and torchic (float32 leaves that require grad)."""
    got = {}
    for lib in (torch, torchic):
        leaves = [lib.tensor(np.asarray(a, np.float32), requires_grad=True) for a in arrays]
        got[lib] = [_np(t) if not isinstance(t, (int, float, bool, str, tuple)) else t
                    for t in fn(lib, *leaves)]
    for k, (a, b) in enumerate(zip(got[torch], got[torchic])):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=f"value {k}")
        else:
            assert a == b, (k, a, b)


def legendre(lib):
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)
    return LegendrePolynomial3


def test_tutorial_legendre_polynomial(backend):
    def fn(lib, x):
        P3 = legendre(lib)
        y = P3.apply(x * 0.5)
        (y * y).sum().backward()
        return [y, x.grad, y.grad_fn.name(), type(y.grad_fn).__name__]
    _same(fn, np.linspace(-1, 1, 7))


def test_setup_context_form_with_non_tensor_inputs_and_kwargs(backend):
    def fn(lib, x, w):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, w, power, shift=1.0):
                return (x * w) ** power + shift

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, w, power, shift = inputs
                ctx.save_for_backward(x, w)
                ctx.power = power

            @staticmethod
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                d = ctx.power * (x * w) ** (ctx.power - 1) * g
                return d * w, (d * x).sum(0), None, None
        y = Scale.apply(x, w, 3, shift=2.0)
        y.sum().backward()
        z = Scale.apply(x, w, 2)         # setup_context sees the default shift too
        return [y, x.grad, w.grad, z]
    rng = np.random.default_rng(0)
    _same(fn, rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, (4,)))


def test_multiple_outputs_needs_input_grad_and_materialize(backend):
    def fn(lib, x, y):
        seen = []

        class SumAndProduct(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, tag):
                ctx.save_for_backward(a, b)
                ctx.tag = tag
                return a + b, a * b, tag

            @staticmethod
            def backward(ctx, g_sum, g_prod, g_tag):
                a, b = ctx.saved_tensors
                seen.append((ctx.needs_input_grad, g_tag, ctx.tag))
                return g_sum + g_prod * b, g_sum + g_prod * a, None
        s, p, tag = SumAndProduct.apply(x, y.detach(), "t")
        (p * 3).sum().backward()          # s gets no gradient: backward sees zeros
        return [s, p, x.grad, tag, seen[0]]
    _same(fn, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])


def test_set_materialize_grads_false_gives_none(backend):
    def fn(lib, x):
        seen = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.set_materialize_grads(False)
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1 is None, g2 is None))
                return g2 * 3
        a, b = Two.apply(x)
        b.sum().backward()
        return [x.grad, seen[0]]
    _same(fn, [1.0, 2.0])


def test_mark_dirty_and_mark_non_differentiable(backend):
    def fn(lib, x):
        class AddOneInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                a.add_(1)
                ctx.mark_dirty(a)
                return a

            @staticmethod
            def backward(ctx, g):
                return g

        class SortLike(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                idx = (a > 2).long()
                ctx.mark_non_differentiable(idx)
                return a * 2, idx

            @staticmethod
            def backward(ctx, g, g_idx):
                return g * 2
        h = x * 1
        out = AddOneInPlace.apply(h)
        same = out is h
        y, idx = SortLike.apply(out)
        (y * y).sum().backward()
        return [out, y, idx, x.grad, same, idx.requires_grad, y.requires_grad]
    _same(fn, [1.0, 2.0, 3.0])


def test_mark_dirty_on_a_leaf_raises(backend):
    class Bad(torchic.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.add_(1)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g
    x = torchic.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        Bad.apply(x)


def test_double_backward_through_custom_function(backend):
    def fn(lib, x):
        P3 = legendre(lib)
        y = P3.apply(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return [g, h]
    _same(fn, [0.3, -0.7, 1.2])


def test_once_differentiable(backend):
    for lib in (torch, torchic):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 2 * a * g
        x = lib.tensor([1.0, 3.0], requires_grad=True)
        v = lib.tensor([1.0, 1.0], requires_grad=True)     # (a gradient with a graph)
        (g,) = lib.autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
        np.testing.assert_allclose(_np(g), [2.0, 6.0])
        with pytest.raises(RuntimeError, match="once_differentiable"):
            g.sum().backward()
        (g,) = lib.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad      # no input of backward had a graph: a plain result


def test_errors_as_torch_raises_them(backend):
    class WrongCount(torchic.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g
    x = torchic.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        WrongCount.apply(x, x).backward()

    class WrongShape(torchic.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return torchic.ones(5)
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        WrongShape.apply(torchic.ones(3, requires_grad=True)).sum().backward()

    class GradForInt(torchic.autograd.Function):
        @staticmethod
        def forward(ctx, a, n):
            return a * n

        @staticmethod
        def backward(ctx, g):
            return g, g
    with pytest.raises(RuntimeError, match="was not a Variable"):
        GradForInt.apply(torchic.ones(2, requires_grad=True), 3).sum().backward()


def test_saved_tensor_modified_in_place_and_freed(backend):
    P3 = legendre(torchic)
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = P3.apply(h)
    with torchic.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = P3.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_function_ctx_and_no_grad_apply(backend):
    ctx = torchic.autograd.function.FunctionCtx()
    ctx.save_for_backward(torchic.ones(2))
    ctx.anything = 3
    P3 = legendre(torchic)
    x = torchic.tensor([0.5], requires_grad=True)
    with torchic.no_grad():
        y = P3.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    y = P3.apply(torchic.tensor([0.5]))          # no input requires grad: nothing recorded
    assert y.grad_fn is None


def test_internal_primitive_protocol_still_works_under_the_old_name(backend):
    # torchic's own op base was named Function; a subclass with an instance forward (the
    # internal protocol) still records as a Primitive
    from torchic.autograd import Function, Primitive

    class Twice(Function):
        def forward(self, a):
            from torchic import raw
            return raw.binary("add", a, a)

        def backward(self, g):
            return (g * 2,)
    x = torchic.tensor([1.0, 2.0], requires_grad=True)
    y = Twice.apply(x)
    assert isinstance(y.grad_fn, Primitive)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_saved_outputs_of_several_outputs_under_create_graph(backend):
    # outputs saved for backward come back connected to their node: a double backward
    # through them sees their own derivatives
    def fn(lib, x):
        class TwoExps(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                e1, e2 = a.exp(), (2 * a).exp()
                ctx.save_for_backward(e1, e2)
                return e1, e2

            @staticmethod
            def backward(ctx, g1, g2):
                e1, e2 = ctx.saved_tensors
                return g1 * e1 + 2 * g2 * e2
        e1, e2 = TwoExps.apply(x)
        (g,) = lib.autograd.grad((e1 * e2).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return [e1, e2, g, h, e1.grad_fn.name()]
    _same(fn, [0.1, -0.3, 0.5], tol=1e-4)


def test_backward_that_runs_autograd_itself(backend):
    # a backward that recomputes forward with grad on and calls autograd.grad (the engine
    # is re-entered from inside a pass, as torch.utils.checkpoint's reentrant form does)
    def fn(lib, x):
        class Recompute(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return (a.sin() * a).sum()

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                with lib.enable_grad():
                    ad = a.detach().requires_grad_(True)
                    (ga,) = lib.autograd.grad((ad.sin() * ad).sum(), ad)
                return g * ga
        y = Recompute.apply(x)
        (y * 3).backward()
        return [y, x.grad]
    _same(fn, [0.5, 1.0, 2.0])


def test_compiled_step_with_a_custom_function_matches_eager(backend):
    P3 = legendre(torchic)
    x = torchic.linspace(-3.0, 3.0, 50)
    y = x.sin()

    def run(compiled):
        c = torchic.full((), 0.1, requires_grad=True)
        d = torchic.full((), 0.3, requires_grad=True)
        opt = torchic.optim.SGD([c, d], lr=1e-4)

        def step():
            opt.zero_grad()
            loss = (P3.apply(c + d * x) - y).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = torchic.compile(step) if compiled else step
        return [f().item() for _ in range(5)]
    assert run(True) == run(False)
