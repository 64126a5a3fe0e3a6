"""Elementwise op functions: operands promoted by PyTorch's rules, then one primitive.

Every op that mixes dtypes brings its operands to one dtype with `promote` (the dtype is
promotion.result_code's: tensors with dims > 0-d tensors > Python scalars, categories bool <
int < float), casting a tensor (a copy; a float -> float cast keeps the gradient) and making
a scalar a cached constant of that dtype. Then the op's primitive runs in that dtype (raw
computes float16 / bfloat16 in float32 and the narrow ints in int64, and rounds back: docs/
DTYPES.md). Ops whose rows take only floats (div, pow of floats, exp, log ...) bring integer
and bool operands to the default float dtype first, as PyTorch does.

The elementwise Functions compute one primitive (their `op`). When no input requires grad
there is nothing to record, so these call that primitive directly and make no Function
node: that is the whole per-op cost of a no-grad op in Python (the overhead bench measures
it).
"""

import numpy as np

from .. import known, raw
from ..dispatcher import DTYPES, INT_CODES, runtime, storage_code
from ..dtypes import default_float
from ..functions import (UNARY, Add, Cast, Div, Maximum, Minimum, Mul, Pow, Sub, Where,
                         as_operand, constant)
from ..ops import INT_BINARY
from ..promotion import BOOL, is_floating, result_code
from ..shape import broadcast_shapes
from ..tensor import Tensor


def cast_to(t, code):
    """Tensor t in dtype `code` (itself when it has it): a float -> float cast keeps the
    gradient (Cast), any other is a plain copy."""
    if t._dtype == code:
        return t
    if t.requires_grad:
        return Cast.apply(t, dtype=code)
    return raw.cast(t, code)


def promote(*operands):
    """(operands as tensors of one dtype, that dtype's code): THE place an op's operands are
    promoted (promotion.result_code decides; lists and arrays count as tensors of their own
    dtype, Python numbers as weak scalars)."""
    tensors = [x if isinstance(x, (Tensor, bool, int, float, np.number, np.bool_))
               else as_operand(x) for x in operands]
    code = result_code(*tensors)
    return [cast_to(x, code) if isinstance(x, Tensor) else as_operand(x, code)
            for x in tensors], code


def _to_float(tensors, code):
    """The tensors in the dtype a floating op computes in: theirs when it is a float, else
    the default float dtype (true division of ints, exp of ints ...: PyTorch's rule)."""
    if is_floating(code):
        return tensors, code
    code = default_float()
    return [cast_to(t, code) for t in tensors], code


# the (dtype code, Python scalar class) pairs where a tensor keeps its dtype with a Python
# int / float as the other operand: a float tensor always, a non-bool integer tensor with an
# int (promotion.result_code's rule for a weak scalar); a set: the binary ops' hot test
_KEEPS = frozenset((code, cls) for code in DTYPES for cls in (int, float)
                   if is_floating(code) or (cls is int and code != BOOL))


def _binary_fn(cls, name, doc, example=""):
    apply, primitive = cls.apply, cls.op
    floating_only = primitive not in INT_BINARY
    host_known = primitive in known.ARITH   # (known 0-d integer operands: known.py)

    def op(input: Tensor | float, other: Tensor | float, *, alpha: float = 1) -> Tensor:
        a, b = input, other       # PyTorch's keyword names, the short ones below
        if primitive == "sub":
            _check_bool_sub(a, b)
        if alpha.__class__ is not int or alpha != 1:
            a, b = _alpha_scaled(primitive, a, b, alpha)
        ca, cb = a.__class__, b.__class__
        # add / sub / mul of known 0-d integers (a 0-d tensor with a Python int, or two of
        # one dtype): the result's value, no kernel (known.py)
        if host_known and (ca is Tensor and not a.shape and (
                cb is int or cb is Tensor and not b.shape and b._dtype == a._dtype)
                or ca is int and cb is Tensor and not b.shape):
            code = a._dtype if ca is Tensor else b._dtype
            if code in INT_CODES:
                z = known.arith(primitive, code, a, b)
                if z is not None:
                    return raw.host_scalar(z, code)
        # the common pairs decided here (what promote would decide), the rest by promote:
        # two tensors of one dtype, and a tensor with a Python int / float that keeps its
        # dtype (a float tensor with either, an int tensor with an int: a weak scalar)
        if ca is Tensor and cb is Tensor and a._dtype == b._dtype:
            code = a._dtype
        elif ca is Tensor and (cb is float or cb is int) and (a._dtype, cb) in _KEEPS:
            code = a._dtype
            b = constant(b, code)
        elif cb is Tensor and (ca is float or ca is int) and (b._dtype, ca) in _KEEPS:
            code = b._dtype
            a = constant(a, code)
        else:
            (a, b), code = promote(a, b)
        if floating_only and not is_floating(code):
            (a, b), code = _to_float((a, b), code)
        elif code == BOOL:
            return _bool_arithmetic(primitive, a, b)
        if a.requires_grad or b.requires_grad:
            return apply(a, b)
        return raw.binary(primitive, a, b)
    op.__name__ = name
    op.__doc__ = _OPERANDS_DOC.format(what=doc, example=example)
    return op


def _alpha_scaled(primitive, a, b, alpha):
    """(a, alpha * b) for add / sub's `alpha` (PyTorch's checks: a float alpha needs a
    float result, a bool one bool operands)."""
    if primitive not in ("add", "sub"):
        raise TypeError(f"{primitive}() got an unexpected keyword argument 'alpha'")
    _, code = promote(a, b)
    if isinstance(alpha, bool) and code != BOOL:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not is_floating(code):
        raise RuntimeError("For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    b = as_operand(b)
    if code == BOOL:
        return a, b if alpha else raw.full(b.shape, False, BOOL)
    if is_floating(code) and not is_floating(b._dtype):
        b = cast_to(b, code)
    return a, mul(b, alpha)


def _check_bool_sub(a, b):
    """PyTorch refuses `-` with a bool operand (a bool tensor or a Python bool)."""
    bools = [x._dtype == BOOL if isinstance(x, Tensor) else isinstance(x, bool) for x in (a, b)]
    if all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


def _bool_arithmetic(primitive, a, b):
    """add / mul / maximum / minimum of two bools: PyTorch's bool results (or, and);
    computed in int64, then != 0."""
    return raw.cast(raw.binary(primitive, raw.cast(a, "i64"), raw.cast(b, "i64")), BOOL)


_OPERANDS_DOC = """{what}

    Broadcasts the operands and promotes them as PyTorch does (`torchic.result_type`: an
    int tensor with a float scalar is the default float dtype, a float16 tensor with a
    Python float stays float16, ...). Integer results are computed in integers, wrapping
    around as PyTorch's do; `/` of integers gives the default float dtype.

    Args:
        input (Tensor or number): the first operand.
        other (Tensor or number): the second operand.

    Returns:
        Tensor: the elementwise result, of the broadcast shape and the promoted dtype.
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


def pow(input: Tensor | float, exponent: Tensor | float) -> Tensor:
    """`input ** exponent`, elementwise (broadcast, promoted as `add`).

    Integers to integer powers stay integers, computed in integers and wrapping around as
    PyTorch's do (`int_pow`); any float operand gives a float.

    Args:
        input (Tensor or number): the base.
        exponent (Tensor or number): the exponent.

    Example:
        >>> torchic.tensor([1.0, 2.0, 3.0]) ** 2
        tensor([1., 4., 9.])
    """
    a, b = input, exponent
    (ta, tb), code = promote(a, b)
    if code == BOOL:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if is_floating(code):
        return _float_pow(ta, tb)
    if isinstance(b, (int, np.integer)) and not isinstance(b, bool):
        return int_pow(ta, int(b))
    return int_pow(ta, tb)


def _int_bits(code):
    """The value bits of an integer code (its width less the sign bit), at most those of
    the word the backend stores it in (webgpu's int64 is a 32-bit word)."""
    return min(_value_bits(code), _value_bits(storage_code(runtime().backend, code)))


def _value_bits(code):
    info = np.iinfo(DTYPES[code])
    return info.bits - (1 if info.min < 0 else 0)


def int_pow(a: Tensor, b: Tensor | int) -> Tensor:
    """Integer `a ** b` in a's dtype, wrapping around: square-and-multiply over the bits of
    b (log2(b) steps for a Python int b; one per value bit of the dtype for a tensor b, whose
    bits are taken from the top by comparisons).

    As PyTorch: a negative Python int exponent is refused; a negative entry of an exponent
    tensor gives `a ** b` truncated toward zero (1 for a == 1, +-1 for a == -1, else 0)."""
    code = a._dtype
    if not isinstance(b, Tensor):
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        result, base = raw.full(a.shape, 1, code), a
        while b:
            if b & 1:
                result = raw.binary("mul", result, base)
            b >>= 1
            if b:
                base = raw.binary("mul", base, base)
        return result
    one, zero = constant(1, code), constant(0, code)
    negative = raw.binary("lt", b, zero)
    r = raw.where(negative, raw.binary("sub", zero, b), b)    # |b| (the minimum stays < 0)
    result = raw.full(broadcast_shapes(a.shape, b.shape), 1, code)
    for k in range(_int_bits(code) - 1, -1, -1):
        step = constant(2 ** k, code)
        bit = raw.binary("ge", r, step)                                 # bit k of |b|
        r = raw.where(bit, raw.binary("sub", r, step), r)
        result = raw.binary("mul", result, result)
        result = raw.where(bit, raw.binary("mul", result, a), result)
    unit = raw.binary("eq", raw.binary("mul", a, a), one)                # a is 1 or -1
    return raw.where(negative, raw.where(unit, result, zero), result)


maximum = _binary_fn(Maximum, "maximum", "The elementwise maximum of `a` and `b` "
                     "(a tie sends half the gradient to each).")


minimum = _binary_fn(Minimum, "minimum", "The elementwise minimum of `a` and `b` "
                     "(a tie sends half the gradient to each).")


def _compare_fn(name, symbol):
    def op(input: Tensor | float, other: Tensor | float) -> Tensor:
        a, b = input, other
        if a.__class__ is not Tensor or b.__class__ is not Tensor or a._dtype != b._dtype:
            (a, b), _ = promote(a, b)
        return raw.binary(name, a, b)
    op.__name__ = name
    op.__doc__ = f"""`input {symbol} other`, elementwise, as a bool tensor (the operands promoted
    as `add`'s: an int tensor compared with 2.5 is compared in floats).

    Args:
        input (Tensor or number): the first operand.
        other (Tensor or number): the second operand (broadcast).

    Returns:
        Tensor: bool, True where the comparison holds (no gradient).
    """
    return op


eq, ne, lt = _compare_fn("eq", "=="), _compare_fn("ne", "!="), _compare_fn("lt", "<")
le, gt, ge = _compare_fn("le", "<="), _compare_fn("gt", ">"), _compare_fn("ge", ">=")


def where(cond: Tensor, a: Tensor | float, b: Tensor | float) -> Tensor:
    """`a` where the bool tensor `cond` is True, else `b`, elementwise (all three broadcast).

    Args:
        cond (Tensor): the condition, a bool tensor (a comparison's result).
        a (Tensor or number): the values taken where `cond` is true.
        b (Tensor or number): the values taken elsewhere.

    Returns:
        Tensor: of the broadcast shape and `a` and `b`'s promoted dtype (two Python ints:
        int64); gradients flow to float `a` and `b`.

    Example:
        >>> x = torchic.tensor([-1.0, 2.0])
        >>> torchic.where(x > 0, x, 0.0)
        tensor([0., 2.])
    """
    cond = as_operand(cond)
    if cond._dtype != BOOL:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                           f"tensor with dtype {_TYPE_NAME[cond._dtype]}")
    (a, b), _ = promote(a, b)
    if a.requires_grad or b.requires_grad:
        return Where.apply(cond, a, b)
    return raw.where(cond, a, b)


_TYPE_NAME = {"b8": "Bool", "u8": "Byte", "i8": "Char", "i16": "Short", "i32": "Int",
              "i64": "Long", "f16": "Half", "bf16": "BFloat16", "f32": "Float", "f64": "Double"}


# -- logical ops and float classes: bool results -------------------------------------------
def _truth(x):
    """x as a bool tensor: itself when bool, else x != 0 (NaN counts as True)."""
    x = as_operand(x)
    return x if x._dtype == BOOL else raw.binary("ne", x, constant(0, x._dtype))


def logical_not(input: Tensor) -> Tensor:
    """`not input`, elementwise: a bool tensor, True where `input` is zero (False)."""
    return raw.binary("eq", _truth(input), constant(False, BOOL))


def logical_and(input: Tensor, other: Tensor) -> Tensor:
    """`input and other`, elementwise (nonzero is True): a bool tensor."""
    a, b = _truth(input), _truth(other)
    return raw.where(a, b, constant(False, BOOL))


def logical_or(input: Tensor, other: Tensor) -> Tensor:
    """`input or other`, elementwise (nonzero is True): a bool tensor."""
    a, b = _truth(input), _truth(other)
    return raw.where(a, constant(True, BOOL), b)


def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """`input != other` as truth values, elementwise (nonzero is True): a bool tensor."""
    return raw.binary("ne", _truth(input), _truth(other))


def isnan(input: Tensor) -> Tensor:
    """True where `input` is NaN (never for integers), a bool tensor."""
    if is_floating(input._dtype):
        return raw.binary("ne", input, input)
    return raw.full(input.shape, False, BOOL)


def isinf(input: Tensor) -> Tensor:
    """True where `input` is +inf or -inf (never for integers), a bool tensor."""
    if is_floating(input._dtype):
        return raw.binary("eq", UNARY_OPS["abs"](input.detach()),
                          constant(float("inf"), input._dtype))
    return raw.full(input.shape, False, BOOL)


def isfinite(input: Tensor) -> Tensor:
    """True where `input` is neither inf nor NaN (always for integers), a bool tensor."""
    if is_floating(input._dtype):
        x = input.detach()
        return raw.binary("eq", raw.binary("sub", x, x), constant(0.0, x._dtype))
    return raw.full(input.shape, True, BOOL)


def _unary_fn(cls, name):
    apply, primitive = cls.apply, cls.op
    what = _UNARY_DOCS[name]

    def op(input: Tensor | float) -> Tensor:
        a = input
        if a.__class__ is not Tensor:
            a = as_operand(a)
        if not is_floating(a._dtype):
            int_op = _INT_UNARY.get(name)
            if int_op is not None:
                return int_op(a)
            (a,), _ = _to_float((a,), a._dtype)  # exp, log ... of ints: the default float
        if a.requires_grad:
            return apply(a)
        return raw.unary(primitive, a)
    op.__name__ = name
    op.__doc__ = f"""{what}, elementwise.

    Args:
        input (Tensor or number): the operand; integer and bool inputs give the default float
            dtype ({"except neg, abs and relu, which keep integers integers" if name in
                    _INT_UNARY else "as in PyTorch"}).

    Returns:
        Tensor: the result, of `input`'s shape.
    """
    if name in _UNARY_EXAMPLES:
        op.__doc__ += f"""
    Example:
        >>> torchic.{name}(torchic.tensor([-1.0, 0.5, 2.0]))
        {_UNARY_EXAMPLES[name]}
    """
    return op


# what each Unary op computes (its docstring's first line; a new Unary op needs one)
_UNARY_DOCS = {
    "neg": "`-a`", "exp": "The exponential `e ** a`", "log": "The natural logarithm",
    "relu": "The rectified linear unit `max(a, 0)`", "tanh": "The hyperbolic tangent",
    "sigmoid": "The logistic sigmoid `1 / (1 + exp(-a))`", "sqrt": "The square root",
    "abs": "The absolute value", "sin": "The sine (radians)", "cos": "The cosine (radians)",
}


# each one's example: the output of torchic.<name>(torchic.tensor([-1.0, 0.5, 2.0])) (PyTorch's
# too), doctested by tests/nn/test_doc_examples.py
_UNARY_EXAMPLES = {
    "neg": "tensor([ 1.0000, -0.5000, -2.0000])", "exp": "tensor([0.3679, 1.6487, 7.3891])",
    "log": "tensor([    nan, -0.6931,  0.6931])", "relu": "tensor([0.0000, 0.5000, 2.0000])",
    "tanh": "tensor([-0.7616,  0.4621,  0.9640])",
    "sigmoid": "tensor([0.2689, 0.6225, 0.8808])", "sqrt": "tensor([   nan, 0.7071, 1.4142])",
    "abs": "tensor([1.0000, 0.5000, 2.0000])", "sin": "tensor([-0.8415,  0.4794,  0.9093])",
    "cos": "tensor([ 0.5403,  0.8776, -0.4161])",
}


def _int_unary(name, fn):
    def op(a):
        if a._dtype == BOOL:
            raise _BOOL_UNARY[name]()
        return fn(a, constant(0, a._dtype))
    return op


_BOOL_UNARY = {
    "neg": lambda: RuntimeError("Negation, the `-` operator, on a bool tensor is not "
                                "supported. If you are trying to invert a mask, use the `~` "
                                "or `logical_not()` operator instead."),
    "abs": lambda: NotImplementedError("\"abs_cpu\" not implemented for 'Bool'"),
    "relu": lambda: RuntimeError("Boolean inputs not supported for relu"),
}

# the unary ops that keep integers integers (PyTorch's), built from the integer binary ops
_INT_UNARY = {
    "neg": _int_unary("neg", lambda a, zero: raw.binary("sub", zero, a)),
    "abs": _int_unary("abs", lambda a, zero: raw.binary("maximum", a,
                                                        raw.binary("sub", zero, a))
                      if a._dtype != "u8" else raw.copy_into(raw.new_tensor(a.shape, "u8"), a)),
    "relu": _int_unary("relu", lambda a, zero: raw.binary("maximum", a, zero)),
}

# one op function per Unary Function (functions/elementwise.py declares them): torchic.exp,
# Tensor.exp, ... are these
UNARY_OPS = {name: _unary_fn(cls, name) for name, cls in UNARY.items()}
globals().update(UNARY_OPS)


def log10(input: Tensor | float) -> Tensor:
    """The base-10 logarithm, elementwise (a float result)."""
    return UNARY_OPS["log"](input) * (1.0 / np.log(10.0))


def log2(input: Tensor | float) -> Tensor:
    """The base-2 logarithm, elementwise (a float result)."""
    return UNARY_OPS["log"](input) * (1.0 / np.log(2.0))
