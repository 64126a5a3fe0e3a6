"""Rounding and rounded division: trunc, floor, ceil, round, frac, sign, signbit, and div's
rounding modes, fmod, remainder, floor_divide. All composites of the primitive rows.

trunc is the int cast (which truncates toward zero) where it is exact, |x| < 2^23 for a
float32 (every float32 at or past it is an integer already; 2^52 for a float64), and x
itself elsewhere (large values, inf, NaN). floor, ceil and round (half to even, as
PyTorch's nearbyint) correct trunc by one where it went the wrong way: every step is
exact. Their gradient is zero (functions/stepwise.py's Stepwise).

Integer division is exact: a float quotient first (float64 where the backend holds it,
else float32), refined twice from the integer remainder `a - q * b` (computed in the
integers, exact as they wrap), then corrected by one. An integer divisor of zero is
PyTorch's RuntimeError (a host read of the divisor, as PyTorch's check).
"""

from .. import raw
from ..dispatcher import runtime
from ..functions import Modulo, Stepwise, as_operand, constant
from ..promotion import BOOL, is_floating
from ..tensor import Tensor
from .elementwise import div as _true_div, promote

_LIMIT = {"f64": 2.0 ** 52}   # at and past this magnitude a float is an integer (else 2^23)


def _b(op, a, b):
    """raw.binary with a Python number b as a constant of a's dtype."""
    return raw.binary(op, a, b if isinstance(b, Tensor) else constant(b, a._dtype))


def _and(p, q):
    return raw.where(p, q, constant(False, BOOL))


def _or(p, q):
    return raw.where(p, constant(True, BOOL), q)


def _as(mask, code):
    return raw.cast(mask, code)


# -- the raw (unrecorded) values --------------------------------------------------------------
def trunc_raw(x):
    code = x._dtype
    if not is_floating(code):
        return x
    t = raw.cast(raw.cast(x, "i64" if code == "f64" else "i32"), code)
    return raw.where(_b("lt", raw.unary("abs", x), _LIMIT.get(code, 2.0 ** 23)), t, x)


def floor_raw(x):
    t = trunc_raw(x)
    return _b("sub", t, _as(_b("gt", t, x), x._dtype)) if is_floating(x._dtype) else x


def ceil_raw(x):
    t = trunc_raw(x)
    return _b("add", t, _as(_b("lt", t, x), x._dtype)) if is_floating(x._dtype) else x


def sign_raw(x):
    if x._dtype == BOOL:
        return x
    return _b("sub", _as(_b("gt", x, 0), x._dtype), _as(_b("lt", x, 0), x._dtype))


def round_raw(x):
    """Half to even (nearbyint): trunc, then one step away from zero where the fraction is
    past a half, or exactly a half and trunc is odd."""
    if not is_floating(x._dtype):
        return x
    t = trunc_raw(x)
    frac = raw.unary("abs", _b("sub", x, t))
    odd = _b("ne", _b("sub", t, _b("mul", trunc_raw(_b("mul", t, 0.5)), 2.0)), 0.0)
    up = _or(_b("gt", frac, 0.5), _and(_b("eq", frac, 0.5), odd))
    return _b("add", t, _b("mul", sign_raw(x), _as(up, x._dtype)))


def _check_int_divisor(b):
    if not is_floating(b._dtype) and raw.values(_b("eq", b, 0)).any():
        raise RuntimeError("ZeroDivisionError")


def _int_trunc_div(a, b):
    """(q, r): a / b truncated toward zero and a - q * b, exactly, for integer a and b (b has
    no zero; the quotient of the type's minimum by -1 wraps, as PyTorch's)."""
    code = a._dtype
    f = "f64" if "f64" in runtime().backend.dtypes else "f32"
    fb = raw.cast(b, f)

    def quotient(r):
        return raw.cast(trunc_raw(raw.binary("div", raw.cast(r, f), fb)), code)

    q = quotient(a)
    for _ in range(2):
        q = _b("add", q, quotient(_b("sub", a, _b("mul", q, b))))
    r = _b("sub", a, _b("mul", q, b))
    s = _b("mul", sign_raw(a), sign_raw(b))
    wrong_sign = _b("lt", _b("mul", sign_raw(r), sign_raw(a)), 0)
    q = raw.where(wrong_sign, _b("sub", q, s), q)
    r = _b("sub", a, _b("mul", q, b))
    too_far = _b("ge", raw.unary("abs", raw.cast(r, f)), raw.unary("abs", fb))
    q = raw.where(too_far, _b("add", q, s), q)
    return q, _b("sub", a, _b("mul", q, b))


def _floor_fix(q, r, b):
    """(q, r) of a truncated division -> the floored one's: one less where r is nonzero and
    of the other sign than b."""
    off = _and(_b("ne", r, 0), _b("ne", _b("lt", r, 0), _b("lt", b, 0)))
    return (raw.where(off, _b("sub", q, 1), q), raw.where(off, _b("add", r, b), r))


def fmod_raw(a, b):
    """(fmod(a, b), the truncated quotient), floats or ints."""
    if not is_floating(a._dtype):
        _check_int_divisor(b)
        q, r = _int_trunc_div(a, b)
        return r, q
    code = a._dtype
    f = "f64" if code != "f64" and "f64" in runtime().backend.dtypes else code
    wa, wb = raw.cast(a, f), raw.cast(b, f)        # float32 in float64: q * b exact
    q = trunc_raw(raw.binary("div", wa, wb))
    r = _b("sub", wa, _b("mul", q, wb))
    # a quotient rounded across an integer: put r back between 0 and b, a's sign
    s = _b("mul", sign_raw(wa), sign_raw(wb))
    wrong = _and(_b("ne", r, 0.0), _b("ne", _b("lt", r, 0.0), _b("lt", wa, 0.0)))
    r = raw.where(wrong, _b("add", r, _b("mul", s, wb)), r)
    q = raw.where(wrong, _b("sub", q, s), q)
    over = _b("ge", raw.unary("abs", r), raw.unary("abs", wb))
    r = raw.where(over, _b("sub", r, _b("mul", s, wb)), r)
    q = raw.where(over, _b("add", q, s), q)
    finite_b = _b("eq", _b("sub", wb, wb), 0.0)
    r = raw.where(_and(finite_b, _b("ne", wb, 0.0)), r, raw.where(finite_b, _b("mul", r, float("nan")), wa))
    return raw.cast(r, code), raw.cast(q, code)


def remainder_raw(a, b):
    """(a mod b with b's sign (Python's %), the floored quotient)."""
    r, q = fmod_raw(a, b)
    q, r = _floor_fix(q, r, b)
    return r, q


def floor_div_raw(a, b):
    """a / b rounded toward -inf: PyTorch's div_floor (floats: (a - fmod(a, b)) / b, one less
    where the remainder and b differ in sign, then rounded to the nearest integer)."""
    if not is_floating(a._dtype):
        _check_int_divisor(b)
        q, r = _int_trunc_div(a, b)
        return _floor_fix(q, r, b)[0]
    mod, _ = fmod_raw(a, b)
    d = raw.binary("div", _b("sub", a, mod), b)
    off = _and(_b("ne", mod, 0.0), _b("ne", _b("lt", b, 0.0), _b("lt", mod, 0.0)))
    d = raw.where(off, _b("sub", d, 1.0), d)
    fl = floor_raw(d)
    fl = raw.where(_b("gt", _b("sub", d, fl), 0.5), _b("add", fl, 1.0), fl)
    quotient = raw.binary("div", a, b)
    zero = raw.where(_b("lt", quotient, 0.0), constant(-0.0, a._dtype),
                     constant(0.0, a._dtype))
    fl = raw.where(_b("eq", d, 0.0), zero, fl)
    return raw.where(_b("eq", b, 0.0), quotient, fl)


def trunc_div_raw(a, b):
    if not is_floating(a._dtype):
        _check_int_divisor(b)
        return _int_trunc_div(a, b)[0]
    return trunc_raw(raw.binary("div", a, b))


# -- the op functions ------------------------------------------------------------------------
def _stepwise(compute, *tensors):
    if any(t.requires_grad for t in tensors):
        return Stepwise.apply(*tensors, compute=compute)
    return compute(*tensors)


def _rounding_fn(name, compute, doc):
    def op(input: Tensor) -> Tensor:
        x = as_operand(input)
        if x._dtype == BOOL and name != "sign":
            raise RuntimeError(f"\"{name}_vml_cpu\" not implemented for 'Bool'")
        return _stepwise(compute, x)
    op.__name__ = name
    op.__doc__ = f"""{doc}, elementwise (integer inputs are returned as they are; the
    gradient is zero, as PyTorch's).

    Args:
        input (Tensor): the operand.

    Example:
        >>> torchic.{name}(torchic.tensor([-1.5, 0.5, 2.5]))
    """
    return op


trunc = _rounding_fn("trunc", trunc_raw, "The integer part of `input`, rounded toward zero")
fix = trunc
floor = _rounding_fn("floor", floor_raw, "The largest integer not above `input`")
ceil = _rounding_fn("ceil", ceil_raw, "The smallest integer not below `input`")
sign = _rounding_fn("sign", sign_raw, "The sign of `input`: -1, 0 or 1 (0 for NaN)")
sgn = sign


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """`input` rounded to the nearest integer, halves to the even one (as PyTorch's
    `nearbyint`), or to `decimals` decimal places (`round(x * 10**d) / 10**d`; negative
    `decimals` round to tens, hundreds ...). The gradient is zero.

    Args:
        input (Tensor): the operand.
        decimals (int): the number of decimal places (default 0).

    Example:
        >>> torchic.round(torchic.tensor([0.5, 1.5, 2.567]))
        tensor([0., 2., 3.])
    """
    x = as_operand(input)
    if x._dtype == BOOL:
        raise RuntimeError("\"round_cpu\" not implemented for 'Bool'")
    if decimals == 0:
        return _stepwise(round_raw, x)
    if not is_floating(x._dtype):
        raise RuntimeError("round_cpu with decimals is not implemented for integer types")
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return _stepwise(lambda t: _b("div", round_raw(_b("mul", t, scale)), scale), x)
    return _stepwise(lambda t: _b("mul", round_raw(_b("div", t, scale)), scale), x)


def frac(input: Tensor) -> Tensor:
    """The fractional part `input - trunc(input)`, elementwise (its gradient is 1).

    Example:
        >>> torchic.frac(torchic.tensor([1.25, -2.5]))
        tensor([ 0.2500, -0.5000])
    """
    x = as_operand(input)
    if not is_floating(x._dtype):
        raise RuntimeError("\"frac_cpu\" not implemented for 'Long'")
    return x - trunc(x)


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit of `input` is set (negative numbers and -0.0), a bool tensor."""
    x = as_operand(input).detach()
    if x._dtype == BOOL:
        return raw.full(x.shape, False, BOOL)
    negative = _b("lt", x, 0)
    if not is_floating(x._dtype):
        return negative
    minus_zero = _and(_b("eq", x, 0.0), _b("lt", _b("div", constant(1.0, x._dtype), x), 0.0))
    return _or(negative, minus_zero)


def positive(input: Tensor) -> Tensor:
    """`input` itself (`+input`); refused for bool tensors, as PyTorch."""
    x = as_operand(input)
    if x._dtype == BOOL:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


def _integer_operands(a, b):
    (a, b), code = promote(a, b)
    return a, b, code


def div(input: Tensor | float, other: Tensor | float, *, rounding_mode: str | None = None
        ) -> Tensor:
    """`input / other`, elementwise: true division (`rounding_mode=None`, a float result),
    or the quotient rounded toward zero (`"trunc"`) or toward -inf (`"floor"`, Python's
    `//`), in the promoted dtype (integers stay integers, exactly; an integer division by
    zero raises). Rounded quotients have a zero gradient.

    Args:
        input (Tensor or number): the dividend.
        other (Tensor or number): the divisor (broadcast).
        rounding_mode (str, optional): None, "trunc" or "floor".

    Example:
        >>> torchic.div(torchic.tensor([-7, 7]), 2, rounding_mode="floor")
        tensor([-4,  3])
    """
    if rounding_mode is None:
        return _true_div(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")
    a, b, code = _integer_operands(input, other)
    if code == BOOL:
        raise RuntimeError(f"\"div_{rounding_mode}_cpu\" not implemented for 'Bool'")
    return _stepwise(trunc_div_raw if rounding_mode == "trunc" else floor_div_raw, a, b)


def floor_divide(input: Tensor | float, other: Tensor | float) -> Tensor:
    """`input // other`: `div(input, other, rounding_mode="floor")`."""
    return div(input, other, rounding_mode="floor")


def true_divide(input: Tensor | float, other: Tensor | float) -> Tensor:
    """`input / other`, true division: `div(input, other)`."""
    return _true_div(input, other)


def _modulo_fn(name, compute, doc):
    def op(input: Tensor | float, other: Tensor | float) -> Tensor:
        a, b, code = _integer_operands(input, other)
        if code == BOOL:
            raise RuntimeError(f"\"{name}_cpu\" not implemented for 'Bool'")
        if a.requires_grad or b.requires_grad:
            return Modulo.apply(a, b, compute=compute)
        return compute(a, b)[0]
    op.__name__ = name
    op.__doc__ = f"""{doc}

    Args:
        input (Tensor or number): the dividend.
        other (Tensor or number): the divisor (broadcast; promoted as `add`'s operands).

    Example:
        >>> torchic.{name}(torchic.tensor([-3.0, 3.0]), 2)
    """
    return op


fmod = _modulo_fn("fmod", fmod_raw, "The remainder of `input / other` truncated toward zero "
                  "(C's fmod: the result has `input`'s sign), elementwise.")
remainder = _modulo_fn("remainder", remainder_raw, "The remainder of `input / other` "
                       "floored (Python's `%`: the result has `other`'s sign), elementwise.")
