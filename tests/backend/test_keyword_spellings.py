"""PyTorch's keyword spellings of the common functions and methods (input= / other= /
exponent= / dim= / keepdim= / shape= / dims= / size=), each call run by torch and by torchic
on every backend and the results compared (values, and the gradient of a float result)."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")

# each row: an expression over T (the module: torch or torchic), x and y (3x4 float32)
SPELLINGS = [
    # elementwise binary: input= / other=, alpha=, methods' other=
    "T.add(input=x, other=y)", "T.add(x, other=y)", "T.add(input=x, other=y, alpha=2)",
    "T.sub(input=x, other=y, alpha=0.5)", "T.mul(input=x, other=y)",
    "T.div(input=x, other=y)", "T.div(input=x, other=y, rounding_mode='floor')",
    "T.maximum(input=x, other=y)", "T.minimum(x, other=y)", "T.atan2(input=x, other=y)",
    "T.remainder(input=x, other=y)", "T.pow(input=x.abs(), exponent=2.5)",
    "T.pow(x, exponent=2)", "T.add(input=x, other=2.0)",
    "T.eq(input=x, other=y)", "T.ne(x, other=y)", "T.lt(input=x, other=y)",
    "T.le(input=x, other=y)", "T.gt(input=x, other=0.0)", "T.ge(x, other=y)",
    "x.add(other=y)", "x.sub(other=y, alpha=2)", "x.mul(other=y)", "x.div(other=y)",
    "x.pow(exponent=2)", "x.maximum(other=y)", "x.eq(other=y)", "x.lt(other=y)",
    # elementwise unary: input=
    "T.exp(input=x)", "T.abs(input=x)", "T.neg(input=x)", "T.sin(input=x)",
    "T.sqrt(input=x.abs())", "T.relu(input=x)", "T.sigmoid(input=x)", "T.tanh(input=x)",
    "T.log(input=x.abs())",
    # reductions: input= / dim= / keepdim=
    "T.sum(input=x, dim=1, keepdim=True)", "T.sum(x, dim=(0, 1), keepdim=True)",
    "T.sum(input=x)", "T.mean(input=x, dim=0, keepdim=True)", "T.mean(input=x)",
    "T.var(input=x, dim=1, keepdim=True)", "T.std(input=x, dim=1, keepdim=True)",
    "T.amax(input=x, dim=1, keepdim=True)", "T.amin(input=x, dim=0, keepdim=True)",
    "T.max(input=x, dim=1, keepdim=True)", "T.min(input=x, dim=1, keepdim=True)",
    "T.max(input=x)", "T.max(x, other=y)", "T.min(input=x, other=y)",
    "T.argmax(input=x, dim=1, keepdim=True)", "T.argmin(input=x, dim=0, keepdim=True)",
    "T.softmax(input=x, dim=1)", "T.log_softmax(input=x, dim=0)",
    "x.sum(dim=1, keepdim=True)", "x.mean(dim=1, keepdim=True)", "x.max(dim=1, keepdim=True)",
    "x.amax(dim=1, keepdim=True)", "x.std(dim=1, keepdim=True)",
    "x.argmax(dim=1, keepdim=True)",
    # shaping: input= and the size / order keywords
    "T.reshape(input=x, shape=(4, 3))", "T.reshape(x, shape=(-1,))",
    "T.transpose(input=x, dim0=0, dim1=1)", "T.permute(input=x, dims=(1, 0))",
    "T.flatten(input=x, start_dim=0, end_dim=1)", "T.squeeze(input=x[None], dim=0)",
    "T.unsqueeze(input=x, dim=0)", "T.squeeze(input=x[None])",
    "x.reshape(shape=(4, 3))", "x.view(size=(2, 6))", "x.permute(dims=(1, 0))",
    "x.expand(size=(2, 3, 4))", "x.transpose(dim0=0, dim1=1)", "x.unsqueeze(dim=0)",
    "x.flatten(start_dim=0)",
    # PyTorch's aliases and function forms of methods
    "T.multiply(input=x, other=y)", "T.subtract(input=x, other=y, alpha=2)",
    "T.divide(input=x, other=y)", "T.clone(input=x)", "T.t(input=x)",
]


def _run(T, expr, xn, yn, grad):
    x = T.tensor(xn, requires_grad=grad)
    y = T.tensor(yn)
    out = eval(expr, {"T": T, "x": x, "y": y})
    outs = tuple(out) if isinstance(out, tuple) else (out,)
    g = None
    if grad and outs[0].dtype == T.float32 and outs[0].requires_grad:
        outs[0].sum().backward()
        g = x.grad.numpy()
    return [o.detach().numpy() for o in outs], g


@pytest.mark.parametrize("expr", SPELLINGS)
def test_keyword_spelling_matches_torch(backend, expr):
    rng = np.random.default_rng(0)
    xn = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    yn = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    grad = not expr.startswith(("T.eq", "T.ne", "T.l", "T.g", "x.eq", "x.lt", "T.arg", "x.arg",
                                "T.remainder", "T.div(input=x, other=y, r"))
    want, want_grad = _run(torch, expr, xn, yn, grad)
    got, got_grad = _run(torchic, expr, xn, yn, grad)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    if want_grad is not None:
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-5)


def test_sizes_both_positionally_and_as_keyword_is_a_type_error(backend):
    x = torchic.zeros(3, 4)
    with pytest.raises(TypeError):
        x.reshape(4, 3, shape=(4, 3))
    with pytest.raises(TypeError):
        x.permute(1, 0, dims=(1, 0))
