"""Elementwise Functions: one primitive each, forward and derivative side by side.

A unary op declares its primitive (`op`), what its derivative needs (`saves`: the
"input", the "output" or nothing) and `grad(g, saved)`; declaring the class is all it
takes for torchic.<op> and Tensor.<op> to exist (api/elementwise.py makes them from UNARY). A binary op declares `grad_a` and
`grad_b` at the broadcast shape; summing each back to its input's shape and skipping the
gradients nobody needs is written once, in Binary.backward.
"""

from .. import raw
from ..autograd import Primitive
from .common import constant, sum_to_shape


def like(mask, t):
    """A bool mask as 0 / 1 values of t's dtype (a derivative's factor, in the gradient's
    dtype: float64 gradients stay float64)."""
    return raw.cast(mask, t._dtype)


UNARY = {}   # op name -> its Unary Primitive; each is also torchic.<name> and Tensor.<name>


class Unary(Primitive):
    op = None
    saves = None          # "input", "output" or None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        UNARY[cls.op] = cls

    def forward(self, a):
        y = raw.unary(self.op, a)
        if self.saves is not None:
            self.save(a if self.saves == "input" else y)
        return y

    def backward(self, g):
        return (self.grad(g, self.saved[0] if self.saves is not None else None),)


class Neg(Unary):
    op = "neg"
    def grad(self, g, _): return -g


class Exp(Unary):
    op, saves = "exp", "output"
    def grad(self, g, y): return g * y


class Log(Unary):
    op, saves = "log", "input"
    def grad(self, g, a): return g / a


class Relu(Unary):
    op, saves = "relu", "output"
    def grad(self, g, y): return g * (y > 0)


class Tanh(Unary):
    op, saves = "tanh", "output"
    def grad(self, g, y): return g * (1 - y * y)


class Sigmoid(Unary):
    op, saves = "sigmoid", "output"
    def grad(self, g, y): return g * y * (1 - y)


class Sqrt(Unary):
    op, saves = "sqrt", "output"
    def grad(self, g, y): return g / (2 * y)


class Abs(Unary):
    op, saves = "abs", "input"
    def grad(self, g, a): return g * (like(a > 0, g) - like(a < 0, g))


class Sin(Unary):
    op, saves = "sin", "input"
    def grad(self, g, a): return g * a.cos()


class Cos(Unary):
    op, saves = "cos", "input"
    def grad(self, g, a): return -(g * a.sin())


class Binary(Primitive):
    op = None
    saves = True          # keep (a, b) for the derivatives

    def forward(self, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape
        y = raw.binary(self.op, a, b)
        if self.saves:
            self.keep(a, b, y)
        return y

    def keep(self, a, b, y):
        self.save(a, b)

    def backward(self, g):
        saved = self.saved if self.saves else ()
        need_a, need_b = self.needs_grad
        return (sum_to_shape(self.grad_a(g, *saved), self.a_shape) if need_a else None,
                sum_to_shape(self.grad_b(g, *saved), self.b_shape) if need_b else None)


class Add(Binary):
    op, saves = "add", False
    def grad_a(self, g): return g
    def grad_b(self, g): return g


class Sub(Binary):
    op, saves = "sub", False
    def grad_a(self, g): return g
    def grad_b(self, g): return -g


class Mul(Binary):
    """Saves only the operand the other's gradient needs (PyTorch's rule: x * c, c a
    constant, keeps nothing of x, so x may change in place afterwards)."""
    op = "mul"

    def keep(self, a, b, y):
        if self.needs_grad:       # (empty: nothing is recorded)
            need_a, need_b = self.needs_grad
            self.save(a if need_b else None, b if need_a else None)
    def grad_a(self, g, a, b): return g * b
    def grad_b(self, g, a, b): return g * a


class Div(Binary):
    op = "div"
    def grad_a(self, g, a, b): return g / b
    def grad_b(self, g, a, b): return -g * a / (b * b)


class Pow(Binary):
    """PyTorch's derivatives.yaml: d/da is 0 where b == 0 (so x**0 at x = 0 gives 0, not
    0 * inf); d/db is 0 where a == 0 and b >= 0 (not 0 * log 0 = nan)."""
    op = "pow"

    def keep(self, a, b, y):
        self.save(a, b, y)

    def grad_a(self, g, a, b, y):
        return Where.apply(b == 0, constant(0.0, g._dtype), g * b * a ** (b - 1))

    def grad_b(self, g, a, b, y):
        return Where.apply((a == 0) * (b >= 0), constant(0.0, g._dtype), g * y * a.log())


class Atan2(Binary):
    """atan2(a, b), the angle of the point (b, a): d/da = b / (a^2 + b^2), d/db = -a / (...)."""
    op = "atan2"

    def grad_a(self, g, a, b):
        m, sa, sb = self.scaled(a, b)
        return g * sb / ((sa * sa + sb * sb) * m)

    def grad_b(self, g, a, b):
        m, sa, sb = self.scaled(a, b)
        return -(g * sa) / ((sa * sa + sb * sb) * m)

    @staticmethod
    def scaled(a, b):
        """(m, a / m, b / m), m = max(|a|, |b|): a^2 + b^2 neither underflows nor
        overflows."""
        m = a.abs().maximum(b.abs())
        return m, a / m, b / m


class Maximum(Binary):
    """Ties send half the gradient to each side (as PyTorch does)."""
    op = "maximum"

    def share_a(self, a, b):
        wins = (a > b) if self.op == "maximum" else (a < b)
        return like(wins, a) + like(a == b, a) * 0.5

    def grad_a(self, g, a, b): return g * self.share_a(a, b)
    def grad_b(self, g, a, b): return g * (1 - self.share_a(a, b))


class Minimum(Maximum):
    op = "minimum"


class Where(Primitive):
    def forward(self, cond, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape
        self.save(cond)
        return raw.where(cond, a, b)

    def backward(self, g):
        (cond,) = self.saved
        zero = constant(0.0, g._dtype)
        ga = sum_to_shape(Where.apply(cond, g, zero), self.a_shape) \
            if self.needs_grad[1] else None
        gb = sum_to_shape(Where.apply(cond, zero, g), self.b_shape) \
            if self.needs_grad[2] else None
        return None, ga, gb
