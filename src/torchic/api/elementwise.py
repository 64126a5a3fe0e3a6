"""Elementwise op functions: Python scalars and array-likes as operands, dtype checks.

The elementwise Functions compute one primitive (their `op`). When no input requires
grad there is nothing to record, so these call that primitive directly and make no
Function node: that is the whole per-op cost of a no-grad op in Python (the overhead
bench measures it).
"""

import numpy as np

from .. import raw
from ..ops import INT_BINARY
from ..functions import (UNARY, Add, Div, Maximum, Minimum, Mul, Pow, Sub, Where, as_operand,
                         constant, require_float)
from ..tensor import Tensor


def _as_float(t):
    return t if t._dtype == "f32" else raw.cast(t, "f32")


def _binary_fn(cls, name, doc, example=""):
    apply, primitive = cls.apply, cls.op
    takes_ints = primitive in INT_BINARY

    def op(a: Tensor | float, b: Tensor | float) -> Tensor:
        if a.__class__ is not Tensor or b.__class__ is not Tensor:
            a = as_operand(a, like=b if isinstance(b, Tensor) else None)
            b = as_operand(b, like=a)
        if a._dtype != "f32" or b._dtype != "f32":
            # PyTorch's promotion: int op int stays int (add, sub, mul, maximum, minimum;
            # no gradient), int with float is float, and / and ** of ints are float
            if takes_ints and a._dtype == b._dtype:
                return raw.binary(primitive, a, b, "i32")
            a, b = _as_float(a), _as_float(b)
        if a.requires_grad or b.requires_grad:
            return apply(a, b)
        return raw.binary(primitive, a, b)
    op.__name__ = name
    op.__doc__ = _OPERANDS_DOC.format(what=doc, example=example)
    return op


_OPERANDS_DOC = """{what}

    Broadcasts the operands (PyTorch's rules). int32 with int32 stays int32 for add, sub,
    mul, maximum and minimum (without gradients); `/` and `**` of ints, and ints with
    floats, are float32.

    Args:
        a (Tensor or number): the first operand.
        b (Tensor or number): the second operand.

    Returns:
        Tensor: the elementwise result, of the broadcast shape.
    {example}"""


add = _binary_fn(Add, "add", "`a + b`, elementwise.", """
    Example:
        >>> torchic.add(torchic.tensor([1.0, 2.0]), 10)
        tensor([11., 12.])
    """)


sub = _binary_fn(Sub, "sub", "`a - b`, elementwise.")


mul = _binary_fn(Mul, "mul", "`a * b`, elementwise.")


div = _binary_fn(Div, "div", "`a / b`, elementwise (true division: `x / 0` is inf).")


pow = _binary_fn(Pow, "pow", "`a ** b`, elementwise.", """
    Example:
        >>> torchic.tensor([1.0, 2.0, 3.0]) ** 2
        tensor([1., 4., 9.])
    """)


maximum = _binary_fn(Maximum, "maximum", "The elementwise maximum of `a` and `b` "
                     "(a tie sends half the gradient to each).")


minimum = _binary_fn(Minimum, "minimum", "The elementwise minimum of `a` and `b` "
                     "(a tie sends half the gradient to each).")


def _compare(name, a, b):
    a = as_operand(a)
    b = as_operand(b, like=a)
    if a._dtype != b._dtype:
        a = raw.cast(a, "f32") if a._dtype != "f32" else a
        b = raw.cast(b, "f32") if b._dtype != "f32" else b
    return raw.binary(name, a, b)


def _compare_fn(name, symbol):
    def op(a: Tensor | float, b: Tensor | float) -> Tensor:
        return _compare(name, a, b)
    op.__name__ = name
    op.__doc__ = f"""`a {symbol} b`, elementwise, as a 0/1 float32 mask (torchic's bool).

    Args:
        a (Tensor or number): the first operand.
        b (Tensor or number): the second operand (broadcast).

    Returns:
        Tensor: 1.0 where the comparison holds, else 0.0 (no gradient).
    """
    return op


eq, ne, lt = _compare_fn("eq", "=="), _compare_fn("ne", "!="), _compare_fn("lt", "<")
le, gt, ge = _compare_fn("le", "<="), _compare_fn("gt", ">"), _compare_fn("ge", ">=")


def where(cond: Tensor, a: Tensor | float, b: Tensor | float) -> Tensor:
    """`a` where `cond` is true (nonzero), else `b`, elementwise (all three broadcast).

    Args:
        cond (Tensor): the condition (a mask; any nonzero value counts as true).
        a (Tensor or number): the values taken where `cond` is true.
        b (Tensor or number): the values taken elsewhere.

    Returns:
        Tensor: float32, of the broadcast shape; gradients flow to `a` and `b`.

    Example:
        >>> x = torchic.tensor([-1.0, 2.0])
        >>> torchic.where(x > 0, x, 0.0)
        tensor([0., 2.])
    """
    cond = as_operand(cond)
    a = as_operand(a)
    b = as_operand(b)
    if cond._dtype != "f32":
        cond = raw.cast(cond, "f32")
    require_float(a, b, op="where")
    return Where.apply(cond, a, b)


def _unary_fn(cls, name):
    apply, primitive = cls.apply, cls.op
    what = _UNARY_DOCS[name]

    def op(a: Tensor | float) -> Tensor:
        if a.__class__ is not Tensor:
            a = as_operand(a)
        if a._dtype != "f32":
            int_op = _INT_UNARY.get(name)
            if int_op is not None:
                return int_op(a)
            a = raw.cast(a, "f32")      # exp, log, sqrt ... of ints are float (PyTorch's rule)
        if a.requires_grad:
            return apply(a)
        return raw.unary(primitive, a)
    op.__name__ = name
    op.__doc__ = f"""{what}, elementwise.

    Args:
        a (Tensor or number): the operand; int32 inputs give float32 results
            ({"except neg, abs and relu, which keep int32" if name in _INT_UNARY else
              "as in PyTorch"}).

    Returns:
        Tensor: the result, of `a`'s shape.
    """
    return op


# what each Unary op computes (its docstring's first line; a new Unary op needs one)
_UNARY_DOCS = {
    "neg": "`-a`", "exp": "The exponential `e ** a`", "log": "The natural logarithm",
    "relu": "The rectified linear unit `max(a, 0)`", "tanh": "The hyperbolic tangent",
    "sigmoid": "The logistic sigmoid `1 / (1 + exp(-a))`", "sqrt": "The square root",
    "abs": "The absolute value", "sin": "The sine (radians)", "cos": "The cosine (radians)",
}


# the unary ops that keep int32 ints int32 (PyTorch's), built from the int32 binary ops
_INT_UNARY = {
    "neg": lambda a: raw.binary("sub", constant(0, "i32"), a, "i32"),
    "abs": lambda a: raw.binary("maximum", a, raw.binary("sub", constant(0, "i32"), a, "i32"),
                                "i32"),
    "relu": lambda a: raw.binary("maximum", a, constant(0, "i32"), "i32"),
}

# one op function per Unary Function (functions/elementwise.py declares them): torchic.exp,
# Tensor.exp, ... are these
UNARY_OPS = {name: _unary_fn(cls, name) for name, cls in UNARY.items()}
globals().update(UNARY_OPS)


def log10(a: Tensor | float) -> Tensor:
    """The base-10 logarithm, elementwise (float32 result)."""
    return UNARY_OPS["log"](a) * (1.0 / np.log(10.0))


def log2(a: Tensor | float) -> Tensor:
    """The base-2 logarithm, elementwise (float32 result)."""
    return UNARY_OPS["log"](a) * (1.0 / np.log(2.0))
