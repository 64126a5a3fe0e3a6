"""Elementwise math built from the primitive rows: reciprocal, rsqrt, square, log1p, expm1,
exp2, tan, the hyperbolic functions and their inverses, sinc, erfc, logit, xlogy, hypot,
fmax / fmin, heaviside, copysign, logaddexp, ldexp, lerp, addcmul / addcdiv, nan_to_num,
float_power, clamp_min / clamp_max, rsub, the float classes (isposinf, isneginf, isreal).

Integer and bool inputs of the floating ops give the default float dtype, as PyTorch's.
Where differentiating the composite would lose accuracy or meet 0 * inf in a branch
`where` does not take (log1p near 0, expm1, the inverse hyperbolics), the op is a
`Pointwise` Function with its derivative written out (functions/stepwise.py).

log1p and expm1 use Kahan's corrections: with u = 1 + x (rounded), log1p(x) =
log(u) * x / (u - 1) and expm1(x) = (u - 1) * x / log(u) for u = e^x, which cancel the
rounding of u (Goldberg, "What every computer scientist should know about floating-point
arithmetic", theorem 4).
"""

import math

import numpy as np

from .. import raw
from ..dtypes import default_float
from ..functions import Atan2, Pointwise, Stepwise, as_operand
from ..promotion import BOOL, is_floating
from ..tensor import Tensor
from .elementwise import (UNARY_OPS, _binary_fn, _to_float, cast_to, div, isinf, isnan, maximum, mul, pow, promote,
                          sub, where)
from .extra_ops import clamp, erf
from .rounding import signbit

_LN2 = math.log(2.0)
_BIG = 2.0 ** 28      # past it asinh / acosh are log(2 |x|) to the float64's precision


def _float(x):
    """x as a tensor of a floating dtype (integers and bools: the default float)."""
    x = as_operand(x)
    return x if is_floating(x._dtype) else _to_float((x,), x._dtype)[0][0]


def _floats(*xs):
    """The operands promoted together, then made floating (PyTorch's floating binary ops)."""
    ts, code = promote(*xs)
    if not is_floating(code):
        ts, code = _to_float(ts, code)
    return ts


def _pointwise(x, value, derivative):
    """value(x) with `derivative` (a Pointwise Function where x requires grad); float16 and
    bfloat16 computed in float32 and rounded back, as PyTorch CPU's."""
    if x._dtype in _HALF:
        return cast_to(_pointwise(cast_to(x, "f32"), value, derivative), x._dtype)
    if x.requires_grad:
        return Pointwise.apply(x, value=value, derivative=derivative)
    return value(x)


_HALF = ("f16", "bf16")
_TAYLOR = 1e-5      # below it log1p / expm1 are their cubic Taylor polynomials (exact to
                    # float64's precision there; no reliance on exp / log near 1)


def _safe(cond, x, fill):
    """x where cond is false, `fill` where it is true: an operand a branch not taken may
    not divide by (its derivative would be 0 * inf)."""
    return where(cond, fill, x)


# -- unary ---------------------------------------------------------------------------------
def reciprocal(input: Tensor) -> Tensor:
    """`1 / input`, elementwise (a float result)."""
    return 1.0 / _float(input)


def rsqrt(input: Tensor) -> Tensor:
    """`1 / sqrt(input)`, elementwise (a float result)."""
    return 1.0 / UNARY_OPS["sqrt"](_float(input))


def square(input: Tensor) -> Tensor:
    """`input * input`, elementwise (integers stay integers)."""
    x = as_operand(input)
    if x._dtype == BOOL:
        x = x.long()
    return mul(x, x)


def _log1p_value(x):
    u = x + 1.0
    ratio = x / _safe(u == 1.0, u - 1.0, 1.0)
    y = where(u == 1.0, x, UNARY_OPS["log"](u) * ratio)
    y = where(x.abs() < _TAYLOR, x * (1.0 - x * (0.5 - x * (1.0 / 3.0))), y)
    return where(u == math.inf, u, y)


def log1p(input: Tensor) -> Tensor:
    """`log(1 + input)`, accurate for small `input` (Kahan's correction), elementwise.

    Example:
        >>> torchic.log1p(torchic.tensor([1e-10, 1.0]))
        tensor([1.0000e-10, 6.9315e-01])
    """
    return _pointwise(_float(input), _log1p_value, lambda x: 1.0 / (x + 1.0))


def _expm1_value(x):
    u = UNARY_OPS["exp"](x)
    log_u = UNARY_OPS["log"](u)
    y = (u - 1.0) * (x / _safe(log_u == 0.0, log_u, 1.0))
    y = where(u == 1.0, x, where(u - 1.0 == -1.0, u - 1.0, y))
    y = where(x.abs() < _TAYLOR, x * (1.0 + x * (0.5 + x * (1.0 / 6.0))), y)
    return where(u == math.inf, u, y)


def expm1(input: Tensor) -> Tensor:
    """`exp(input) - 1`, accurate for small `input` (Kahan's correction), elementwise."""
    return _pointwise(_float(input), _expm1_value, lambda x: UNARY_OPS["exp"](x))


def exp2(input: Tensor) -> Tensor:
    """`2 ** input`, elementwise (a float result)."""
    return pow(2.0, _float(input))


def tan(input: Tensor) -> Tensor:
    """The tangent (radians), `sin / cos`, elementwise."""
    x = _float(input)
    return UNARY_OPS["sin"](x) / UNARY_OPS["cos"](x)


def _sinh_value(x):
    small = (expm1(x) - expm1(-x)) * 0.5        # no cancellation: opposite signs
    big = UNARY_OPS["exp"](x.abs() - _LN2)      # e^|x| / 2, past exp's own overflow
    return where(x.abs() > 20.0, where(x < 0, -big, big), small)


def _cosh_value(x):
    e = UNARY_OPS["exp"](x.abs() - _LN2)
    return where(x.abs() > 20.0, e, e + 0.25 / e)


def sinh(input: Tensor) -> Tensor:
    """The hyperbolic sine, elementwise."""
    return _pointwise(_float(input), _sinh_value, _cosh_value)


def cosh(input: Tensor) -> Tensor:
    """The hyperbolic cosine, elementwise."""
    return _pointwise(_float(input), _cosh_value, _sinh_value)


def _asinh_value(x):
    a = x.abs()
    small = _log1p_value(a + a * a / (1.0 + UNARY_OPS["sqrt"](a * a + 1.0)))
    y = where(a > _BIG, UNARY_OPS["log"](a) + _LN2, small)
    return where(x < 0, -y, y)


def asinh(input: Tensor) -> Tensor:
    """The inverse hyperbolic sine, elementwise."""
    return _pointwise(_float(input), _asinh_value,
                      lambda x: 1.0 / UNARY_OPS["sqrt"](x * x + 1.0))


def _acosh_value(x):
    t = x - 1.0
    small = _log1p_value(t + UNARY_OPS["sqrt"](2.0 * t + t * t))
    return where(x > _BIG, UNARY_OPS["log"](x) + _LN2, small)


def acosh(input: Tensor) -> Tensor:
    """The inverse hyperbolic cosine (NaN below 1), elementwise."""
    return _pointwise(_float(input), _acosh_value,
                      lambda x: 1.0 / UNARY_OPS["sqrt"]((x - 1.0) * (x + 1.0)))


def atanh(input: Tensor) -> Tensor:
    """The inverse hyperbolic tangent (+-inf at +-1, NaN past them), elementwise."""
    return _pointwise(_float(input), lambda x: 0.5 * _log1p_value(2.0 * x / (1.0 - x)),
                      lambda x: 1.0 / ((1.0 - x) * (1.0 + x)))


def _sinc_value(x):
    px = x * math.pi
    return where(x == 0, 1.0, UNARY_OPS["sin"](px) / _safe(x == 0, px, 1.0))


def _sinc_derivative(x):
    safe = _safe(x == 0, x, 1.0)
    return where(x == 0, 0.0, (UNARY_OPS["cos"](safe * math.pi) - _sinc_value(safe)) / safe)


def sinc(input: Tensor) -> Tensor:
    """The normalized sinc, `sin(pi x) / (pi x)` (1 at 0), elementwise."""
    return _pointwise(_float(input), _sinc_value, _sinc_derivative)


def erfc(input: Tensor) -> Tensor:
    """The complementary error function `1 - erf(input)`, elementwise."""
    return 1.0 - erf(_float(input))


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (`input * pi / 180`), elementwise."""
    return _float(input) * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees (`input * 180 / pi`), elementwise."""
    return _float(input) * (180.0 / math.pi)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """`log(p / (1 - p))`, elementwise; with `eps`, p is first clamped to [eps, 1 - eps]."""
    x = _float(input)
    if eps is not None:
        x = clamp(x, eps, 1.0 - eps)
    return UNARY_OPS["log"](x / (1.0 - x))


def isposinf(input: Tensor) -> Tensor:
    """True where `input` is +inf, a bool tensor."""
    x = as_operand(input).detach()
    return x == math.inf if is_floating(x._dtype) else isinf(x)


def isneginf(input: Tensor) -> Tensor:
    """True where `input` is -inf, a bool tensor."""
    x = as_operand(input).detach()
    return x == -math.inf if is_floating(x._dtype) else isinf(x)


def isreal(input: Tensor) -> Tensor:
    """True everywhere (torchic has no complex dtypes), a bool tensor."""
    x = as_operand(input)
    return raw.full(x.shape, True, BOOL)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """`input` with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by
    default the dtype's largest and smallest finite values); integers are returned as they
    are."""
    x = as_operand(input)
    if not is_floating(x._dtype):
        return x
    info = np.finfo(np.float32 if x._dtype != "f64" else np.float64)
    if x._dtype == "f16":
        info = np.finfo(np.float16)
    top = float(info.max) if posinf is None else posinf
    bottom = float(info.min) if neginf is None else neginf
    y = where(isnan(x), nan, x)
    return where(x == math.inf, top, where(x == -math.inf, bottom, y))


# -- binary --------------------------------------------------------------------------------
def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """`input * log(other)`, 0 where input is 0 (unless other is NaN), elementwise."""
    x, y = _floats(input, other)
    safe_y = _safe(x == 0, y, 1.0)
    out = where(x == 0, 0.0, x * UNARY_OPS["log"](safe_y))
    return where(isnan(y), y, out)


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """`sqrt(input**2 + other**2)`, elementwise."""
    a, b = _floats(input, other)
    return UNARY_OPS["sqrt"](a * a + b * b)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, ignoring NaN (NaN only where both are); the gradient goes to
    `input` on ties."""
    (a, b), _ = promote(input, other)
    return where((a >= b).logical_or(isnan(b)), a, b)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, ignoring NaN (NaN only where both are)."""
    (a, b), _ = promote(input, other)
    return where((a <= b).logical_or(isnan(b)), a, b)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step: 0 where input < 0, `values` where input == 0, 1 where input > 0."""
    if not isinstance(values, Tensor) or not isinstance(input, Tensor):
        raise TypeError("heaviside(): argument 'values' must be Tensor")
    if input._dtype != values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes")
    x, v = input.detach(), values.detach()
    return where(x == 0, v, (x > 0).to(x.dtype))


def copysign(input: Tensor | float, other: Tensor | float) -> Tensor:
    """`|input|` with the sign of `other` (-0.0 counts as negative), elementwise."""
    a, b = _floats(input, other)
    y = where(signbit(b), -a.abs(), a.abs())
    if b.requires_grad:     # PyTorch's gradient for `other`: zeros (y - 0 keeps -0.0)
        y = y - Stepwise.apply(b, compute=lambda t: raw.full(t.shape, 0.0, t._dtype))
    return y


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """`log(exp(input) + exp(other))` without overflow, elementwise."""
    a, b = _floats(input, other)
    m = maximum(a, b)
    same_inf = isinf(m).logical_and(a == b)
    d = _safe(same_inf, (a - b).abs(), 0.0)
    return where(same_inf, m, m + log1p(UNARY_OPS["exp"](-d)))


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """`log2(2**input + 2**other)` without overflow, elementwise."""
    a, b = _floats(input, other)
    m = maximum(a, b)
    same_inf = isinf(m).logical_and(a == b)
    d = _safe(same_inf, (a - b).abs(), 0.0)
    return where(same_inf, m, m + log1p(pow(2.0, -d)) * (1.0 / _LN2))


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """`input * 2 ** other`, elementwise (a float result)."""
    x = _float(input)
    e = as_operand(other)
    return mul(x, pow(2.0, e.to(default_float_like(x)) if not is_floating(e._dtype) else e))


def default_float_like(x):
    return x.dtype if is_floating(x._dtype) else default_float()


def float_power(input: Tensor | float, exponent: Tensor | float) -> Tensor:
    """`input ** exponent` computed in float64, elementwise (a float64 result)."""
    a = as_operand(input, "f64") if not isinstance(input, Tensor) else input.double()
    b = as_operand(exponent, "f64") if not isinstance(exponent, Tensor) else exponent.double()
    return pow(a, b)


def clamp_min(input: Tensor, min: Tensor | float) -> Tensor:
    """`clamp(input, min=min)`."""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Tensor | float) -> Tensor:
    """`clamp(input, max=max)`."""
    return clamp(input, max=max)


def lerp(input: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
    """`input + weight * (end - input)`, elementwise (PyTorch's two-sided formula: exact at
    weight 0 and 1)."""
    (a, b), _ = promote(input, end)
    w = weight if isinstance(weight, Tensor) else as_operand(weight, a._dtype)
    diff = b - a
    return where(w.abs() < 0.5, a + w * diff, b - diff * (1.0 - w))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """`input + value * tensor1 * tensor2`, elementwise."""
    return input + value * (tensor1 * tensor2) if value != 1 else input + tensor1 * tensor2


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """`input + value * tensor1 / tensor2`, elementwise (integer tensors are refused)."""
    if all(not is_floating(as_operand(t)._dtype) for t in (tensor1, tensor2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 "
                           "and tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all "
                           "dtypes.")
    return input + value * div(tensor1, tensor2) if value != 1 else input + div(tensor1,
                                                                               tensor2)


def rsub(input: Tensor, other: Tensor | float, alpha: float = 1) -> Tensor:
    """`other - alpha * input`, elementwise."""
    return sub(other, input, alpha=alpha)


# -- inverse trigonometric: the atan2 primitive ----------------------------------------------
atan2 = _binary_fn(Atan2, "atan2", "The angle (radians, in [-pi, pi]) of the point (other, "
                   "input): `atan(input / other)` in the right quadrant, elementwise.")
arctan2 = atan2


def _atan_value(x):
    return atan2(x, 1.0)


def atan(input: Tensor) -> Tensor:
    """The inverse tangent (radians, in [-pi/2, pi/2]), elementwise."""
    return _pointwise(_float(input), _atan_value, lambda x: 1.0 / (x * x + 1.0))


def _cathetus(x):
    """sqrt(1 - x^2), as sqrt((1 - x)(1 + x)): no cancellation near |x| = 1."""
    return UNARY_OPS["sqrt"]((1.0 - x) * (1.0 + x))


def asin(input: Tensor) -> Tensor:
    """The inverse sine (radians, in [-pi/2, pi/2]; NaN outside [-1, 1]), elementwise."""
    return _pointwise(_float(input), lambda x: atan2(x, _cathetus(x)),
                      lambda x: 1.0 / _cathetus(x))


def acos(input: Tensor) -> Tensor:
    """The inverse cosine (radians, in [0, pi]; NaN outside [-1, 1]), elementwise."""
    return _pointwise(_float(input), lambda x: atan2(_cathetus(x), x),
                      lambda x: -1.0 / _cathetus(x))


arctan, arcsin, arccos = atan, asin, acos
