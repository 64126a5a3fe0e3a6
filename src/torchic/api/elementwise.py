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
                         constant)
from ..shape import broadcast_shapes
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
            # no gradient; ** in `pow`), int with float is float, and / of ints is float
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
    mul, maximum, minimum and `**`, computed in integers that wrap around (without
    gradients); `/` of ints, and ints with floats, are float32.

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


_float_pow = _binary_fn(Pow, "pow", "", "")


def pow(a: Tensor | float, b: Tensor | float) -> Tensor:
    """`a ** b`, elementwise (broadcast).

    int32 to an int32 power (a tensor or a Python int) stays int32 and is computed in
    integers, wrapping around as PyTorch's int32 does (`int_pow`); any float operand gives
    float32.

    Args:
        a (Tensor or number): the base.
        b (Tensor or number): the exponent.

    Example:
        >>> torchic.tensor([1.0, 2.0, 3.0]) ** 2
        tensor([1., 4., 9.])
    """
    if isinstance(a, Tensor) and a._dtype == "i32" and isinstance(b, (int, np.integer)) and \
            not isinstance(b, bool):
        return int_pow(a, int(b))
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    if like is not None:
        a, b = as_operand(a, like=like), as_operand(b, like=like)
        if a._dtype == "i32" and b._dtype == "i32":
            return int_pow(a, b)
    return _float_pow(a, b)


def int_pow(a: Tensor, b: Tensor | int) -> Tensor:
    """int32 `a ** b` in integers, wrapping around: square-and-multiply over the bits of b
    (log2(b) steps for a Python int b; 31 for a tensor b, whose bits are taken from the top
    by comparisons).

    As PyTorch: a negative Python int exponent is refused; a negative entry of an exponent
    tensor gives `a ** b` truncated toward zero (1 for a == 1, +-1 for a == -1, else 0)."""
    one = constant(1, "i32")
    if not isinstance(b, Tensor):
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        result, base = raw.full(a.shape, 1, "i32"), a
        while b:
            if b & 1:
                result = raw.binary("mul", result, base, "i32")
            b >>= 1
            if b:
                base = raw.binary("mul", base, base, "i32")
        return result
    zero = constant(0, "i32")
    negative = raw.binary("lt", b, zero)
    r = int_where(negative, raw.binary("sub", zero, b, "i32"), b)    # |b| (-2^31 stays < 0)
    result = raw.full(broadcast_shapes(a.shape, b.shape), 1, "i32")
    for k in range(30, -1, -1):
        step = constant(2 ** k, "i32")
        bit = raw.binary("ge", r, step)                                 # bit k of |b|
        r = raw.binary("sub", r, raw.binary("mul", raw.cast(bit, "i32"), step, "i32"), "i32")
        result = raw.binary("mul", result, result, "i32")
        result = int_where(bit, raw.binary("mul", result, a, "i32"), result)
    unit = raw.binary("eq", raw.binary("mul", a, a, "i32"), one)        # a is 1 or -1
    return int_where(negative, int_where(unit, result, zero), result)


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
    out = raw.binary(name, a, b)
    out._mask = True            # torchic's bool (dtypes.py): it indexes as a mask
    return out


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
        Tensor: of the broadcast shape; int32 when `a` and `b` are int32 tensors or Python
        ints, else float32 (PyTorch's promotion); gradients flow to float `a` and `b`.

    Example:
        >>> x = torchic.tensor([-1.0, 2.0])
        >>> torchic.where(x > 0, x, 0.0)
        tensor([0., 2.])
    """
    cond = as_operand(cond)
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    if like is None and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                            for v in (a, b)):
        like = constant(0, "i32")       # where(mask, 1, 0): two ints give ints
    a = as_operand(a, like=like)
    b = as_operand(b, like=like)
    if a._dtype == "i32" and b._dtype == "i32":
        return int_where(cond, a, b)
    if cond._dtype != "f32":
        cond = raw.cast(cond, "f32")
    return Where.apply(cond, _as_float(a), _as_float(b))


def int_where(cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """`where` of int32 `a` and `b`, in integers: `b + m * (a - b)` with m the 0/1 int32
    mask of `cond != 0`. int32 arithmetic wraps around, so the sum gives back exactly `a`
    where m is 1 (and `b` where it is 0) for every int32 value, without a float32 trip."""
    zero = constant(0, cond._dtype)
    mask = raw.cast(raw.binary("ne", cond, zero), "i32")
    diff = raw.binary("sub", a, b, "i32")
    return raw.binary("add", b, raw.binary("mul", mask, diff, "i32"), "i32")


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
