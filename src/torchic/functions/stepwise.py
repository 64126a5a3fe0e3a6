"""Piecewise-constant ops (floor, ceil, trunc, round, sign, a rounded quotient ...): their
values computed from unrecorded ops, their derivative zero wherever it exists (PyTorch's
gradient of them, everywhere)."""

from .. import raw
from ..autograd import Primitive
from .common import sum_to_shape


class Stepwise(Primitive):
    """`compute(*inputs)` (a function of raw, unrecorded ops giving a tensor of the
    broadcast shape) with a zero gradient for every input that requires one."""

    def forward(self, *inputs, compute):
        self.shapes = [t.shape for t in inputs]
        return compute(*inputs)

    def backward(self, g):
        return tuple(raw.full(shape, 0.0, g._dtype) if need else None
                     for shape, need in zip(self.shapes, self.needs_grad))


class Modulo(Primitive):
    """`a - q * b` for a rounded quotient q (fmod: toward zero; remainder: toward -inf):
    its values from `compute(a, b)` -> (the result, q), both of the broadcast shape; the
    derivatives PyTorch's: 1 for a, -q for b."""

    def forward(self, a, b, compute):
        self.a_shape, self.b_shape = a.shape, b.shape
        result, q = compute(a, b)
        self.save(q)
        return result

    def backward(self, g):
        (q,) = self.saved
        need_a, need_b = self.needs_grad
        return (sum_to_shape(g, self.a_shape) if need_a else None,
                sum_to_shape(-(g * q), self.b_shape) if need_b else None)


class Pointwise(Primitive):
    """A composite unary op with its own derivative: `value(x)` (computed with tensor ops,
    unrecorded) and `g * derivative(x)` (differentiable tensor ops), where differentiating
    the composite itself would be inaccurate or meet 0 * inf in a branch not taken (log1p,
    expm1, the gamma functions ...)."""

    def forward(self, x, value, derivative):
        self.derivative = derivative
        self.save(x)
        return value(x)

    def backward(self, g):
        (x,) = self.saved
        return (g * self.derivative(x),)


class FirstPasses(Primitive):
    """`compute(a, b)` whose derivative is 1 for a and 0 for b (PyTorch's for nextafter)."""

    def forward(self, a, b, compute):
        self.a_shape, self.b_shape = a.shape, b.shape
        return compute(a, b)

    def backward(self, g):
        need_a, need_b = self.needs_grad
        return (sum_to_shape(g, self.a_shape) if need_a else None,
                raw.full(self.b_shape, 0.0, g._dtype) if need_b else None)
