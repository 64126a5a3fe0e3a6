"""The gamma family and erfinv, composites of the primitive rows: lgamma, digamma,
polygamma, mvlgamma, erfinv.

The gamma functions share one plan: shift the argument up by the recurrences
(lgamma(x) = lgamma(x + 8) - log(x (x + 1) ... (x + 7)), psi(x) = psi(x + N) -
sum 1 / (x + k), and the same sum of powers for polygamma) until the asymptotic
(Stirling) series is accurate to float64's precision (its first omitted term at z = 8 is
below 1e-11 of the result), and reflect negative arguments (lgamma(x) = log(pi /
|sin(pi x)|) - lgamma(1 - x), psi(x) = psi(1 - x) - pi / tan(pi x), with sin and tan taken
at x - round(x), exactly reduced). Each is a Pointwise Function whose derivative is the next
one (lgamma' = digamma, digamma' = polygamma(1), ...).

erfinv starts from Giles' single-precision approximation ("Approximating the erfinv
function", GPU Computing Gems, 2011) and takes two Newton steps on erf (api/extra_ops.py).
"""

import math
from typing import NamedTuple

from .. import raw
from ..functions import FirstPasses, Pointwise, as_operand, constant
from ..promotion import SCALAR_TYPE_NAMES, is_floating
from ..tensor import Tensor
from .elementwise import UNARY_OPS, _to_float, cast_to, isnan, maximum, promote, where
from .extra_ops import erf
from .rounding import round_raw

_SHIFT = 8              # the asymptotic series are used from x + 8 on
_POLY_SHIFT = 20        # polygamma's direct sum: accurate from x >= -12
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)
# Bernoulli numbers B2, B4, ..., B12
_B = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0)

_log, _sin, _cos = UNARY_OPS["log"], UNARY_OPS["sin"], UNARY_OPS["cos"]


def _float(x):
    x = as_operand(x)
    return x if is_floating(x._dtype) else _to_float((x,), x._dtype)[0][0]


def _pointwise(x, value, derivative):
    if x._dtype in ("f16", "bf16"):     # computed in float32, rounded back (PyTorch CPU's)
        return cast_to(_pointwise(cast_to(x, "f32"), value, derivative), x._dtype)
    if x.requires_grad:
        return Pointwise.apply(x, value=value, derivative=derivative)
    return value(x)


def _reduced(x):
    """x - round(x), in [-1/2, 1/2], exact: sin(pi x) = +-sin(pi r), tan(pi x) = tan(pi r)."""
    return x - round_raw(x)


def _is_pole(x):
    """True at 0 and the negative integers."""
    return (x <= 0).logical_and(x == round_raw(x))


# -- lgamma ----------------------------------------------------------------------------------
def _lgamma_pos(x):
    """lgamma for x > 0."""
    small = x < _SHIFT
    z = where(small, x + float(_SHIFT), x)
    prod = x
    for k in range(1, _SHIFT):
        prod = prod * (x + float(k))
    zi = 1.0 / z
    zi2 = zi * zi
    series = zi * (1.0 / 12.0 + zi2 * (-1.0 / 360.0 + zi2 * (1.0 / 1260.0
                                                             + zi2 * (-1.0 / 1680.0))))
    stirling = (z - 0.5) * _log(z) - z + _HALF_LOG_2PI + series
    return where(small, stirling - _log(where(small, prod, 1.0)), stirling)


def _lgamma_value(x):
    negative = x < 0.5
    pos = _lgamma_pos(where(negative, 1.0 - x, x))
    s = _sin(_reduced(x) * math.pi).abs()
    reflected = _LOG_PI - _log(where(negative, s, 1.0)) - pos
    y = where(negative, reflected, pos)
    return where(_is_pole(x), math.inf, where(x.abs() == math.inf, math.inf, y))


def lgamma(input: Tensor) -> Tensor:
    """The natural logarithm of the absolute value of the gamma function, elementwise (inf at
    0 and the negative integers).

    Example:
        >>> torchic.lgamma(torchic.tensor([0.5, 3.0]))
        tensor([0.5724, 0.6931])
    """
    return _pointwise(_float(input), _lgamma_value, _digamma_value)


# -- digamma and polygamma ---------------------------------------------------------------------
def _digamma_pos(x):
    """psi for x > 0."""
    small = x < _SHIFT
    z = where(small, x + float(_SHIFT), x)
    acc = 1.0 / x
    for k in range(1, _SHIFT):
        acc = acc + 1.0 / (x + float(k))
    zi2 = 1.0 / (z * z)
    series = zi2 * (1.0 / 12.0 - zi2 * (1.0 / 120.0 - zi2 * (1.0 / 252.0 - zi2 * (
        1.0 / 240.0 - zi2 * (1.0 / 132.0)))))
    asym = _log(z) - 0.5 / z - series
    return where(small, asym - acc, asym)


def _digamma_value(x):
    negative = x < 0.5
    pos = _digamma_pos(where(negative, 1.0 - x, x))
    r = _reduced(x) * math.pi
    reflected = pos - math.pi * _cos(r) / where(negative, _sin(r), 1.0)
    y = where(negative, reflected, pos)
    y = where(x == math.inf, math.inf, where(x == -math.inf, math.nan, y))
    return where(x == 0, -math.inf, where(_is_pole(x), math.nan, y))


def digamma(input: Tensor) -> Tensor:
    """The digamma function psi(x) = d/dx lgamma(x), elementwise (-inf at 0, NaN at the
    negative integers, as PyTorch's)."""
    return _pointwise(_float(input), _digamma_value, lambda x: _polygamma_value(1, x))


def _trigamma_value(x):
    """psi'(x) as PyTorch computes it: below 1/2 reflected, pi^2 / sin^2(pi x) with pi x
    rounded to x's dtype (as PyTorch's float32 kernel: near a negative pole its rounding is
    the result's), then the direct sum and the asymptotic series."""
    negative = x < 0.5
    s = _sin(x * math.pi)
    reflection = (math.pi * math.pi) / where(negative, s * s, 1.0)
    y = _polygamma_value(1, where(negative, 1.0 - x, x), reflect=False)
    return where(negative, reflection - y, y)


def _polygamma_value(n, x, reflect=True):
    """psi^(n)(x), n >= 1 (trigamma reflected: _trigamma_value): (-1)^(n+1) (n! sum_{k<N}
    (x + k)^-(n+1) + T(x + N)), T the asymptotic series (n-1)! / z^n + n! / (2 z^(n+1)) +
    sum_k B_2k (2k+n-1)! / (2k)! / z^(2k+n)."""
    if n == 1 and reflect:
        return where(_is_pole(x), math.inf, _trigamma_value(x))
    fact = math.factorial(n)
    acc = None
    for k in range(_POLY_SHIFT):
        term = (x + float(k)) ** float(-(n + 1))
        acc = term if acc is None else acc + term
    z = x + float(_POLY_SHIFT)
    zi = 1.0 / z
    tail = zi * 0.0
    for k in range(len(_B), 0, -1):     # Horner over 1 / z^2
        c = _B[k - 1] * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        tail = (tail + c) * (zi * zi)
    tail = zi ** float(n) * (math.factorial(n - 1) + fact * 0.5 * zi + tail)
    y = (acc * float(fact) + tail) * (1.0 if n % 2 else -1.0)
    return where(_is_pole(x), math.inf if n % 2 else -math.inf, y)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of the digamma function, elementwise (`n = 0` is digamma).

    Args:
        n (int): the order, n >= 0.
        input (Tensor): the argument.
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma(input)
    return _pointwise(_float(input), lambda x: _polygamma_value(n, x),
                      lambda x: _polygamma_value(n + 1, x))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension p: sum_{i<p} lgamma(x - i/2) + p (p - 1) / 4
    log(pi), elementwise; every element must exceed (p - 1) / 2 (a host check, as PyTorch's).
    """
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float(input)
    if raw.values((x <= (p - 1) / 2.0).detach()).any():
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = lgamma(x)
    for i in range(1, p):
        out = out + lgamma(x - i / 2.0)
    return out + p * (p - 1) / 4.0 * _LOG_PI


# -- erfinv ----------------------------------------------------------------------------------
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients, w):
    p = w * 0.0 + coefficients[0]
    for c in coefficients[1:]:
        p = p * w + c
    return p


def _erfinv_value(x):
    w = -_log((1.0 - x) * (1.0 + x))
    central = w < 5.0
    wc = where(central, w - 2.5, 0.0)
    wt = UNARY_OPS["sqrt"](where(central, 5.0, w)) - 3.0
    y = where(central, _horner(_GILES_CENTRAL, wc), _horner(_GILES_TAIL, wt)) * x
    inside = x.abs() < 1.0
    for _ in range(2):      # Newton on erf(y) = x
        ys = where(inside, y, 0.0)
        step = (erf(ys) - x) / (UNARY_OPS["exp"](-(ys * ys)) * (2.0 / math.sqrt(math.pi)))
        y = where(inside, y - step, y)
    y = where(x == 1.0, math.inf, where(x == -1.0, -math.inf, y))
    return where(x.abs() > 1.0, math.nan, y)


def erfinv(input: Tensor) -> Tensor:
    """The inverse error function on (-1, 1) (+-inf at +-1, NaN outside), elementwise."""
    return _pointwise(_float(input), _erfinv_value,
                      lambda x: math.sqrt(math.pi) / 2.0 * UNARY_OPS["exp"](
                          _erfinv_value(x) ** 2.0))


# -- i0 --------------------------------------------------------------------------------------
_I0_TERMS = 40          # the power series up to |x| = 15 (terms past 40 below 1e-26 of it)
_I0_SWITCH = 15.0       # past it the asymptotic series, 12 terms


def _bessel_i(nu, x):
    """I_nu(x) for nu = 0 or 1: the power series (x/2)^nu sum (x^2/4)^k / (k! (k+nu)!) up
    to |x| = 15, then e^|x| / sqrt(2 pi |x|) sum_k (-1)^k a_k(nu) / |x|^k, a_k = prod_{j<=k}
    (4 nu^2 - (2j-1)^2) / (k! 8^k) (Abramowitz and Stegun 9.7.1); I_1 is odd."""
    a = x.abs()
    small = a <= _I0_SWITCH
    s = where(small, a, 0.0)
    q = s * s * 0.25
    term = q * 0.0 + 1.0
    total = term
    for k in range(1, _I0_TERMS):
        term = term * q / float(k * (k + nu))
        total = total + term
    if nu == 1:
        total = total * s * 0.5
    big = where(small, _I0_SWITCH, a)
    inv = 1.0 / big
    c, series = 1.0, inv * 0.0 + 1.0
    power = series
    for k in range(1, 12):
        c = c * -(4 * nu * nu - (2 * k - 1) ** 2) / (k * 8.0)
        power = power * inv
        series = series + power * c
    half = UNARY_OPS["exp"](big * 0.5)
    asym = half * (half / UNARY_OPS["sqrt"](big * (2.0 * math.pi))) * series
    y = where(small, total, asym)
    return where(x < 0, -y, y) if nu == 1 else y


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 0, elementwise."""
    return _pointwise(_float(input), lambda x: _bessel_i(0, x), lambda x: _bessel_i(1, x))


# -- frexp, nextafter ------------------------------------------------------------------------
_MANTISSA = {"f64": (52, -1074)}        # (mantissa bits, the least exponent); else float32's
_F32_MANTISSA = (23, -149)


def _exponent(a):
    """(e, 2^e) with 2^e <= |a| < 2^(e+1), for finite nonzero a (ints: a's dtype is float):
    log2 rounded down, then corrected by one either way."""
    m = a.abs()
    e = round_raw(_log(where(m == 0, 1.0, m)) * (1.0 / math.log(2.0)))
    e = where(e.abs() == math.inf, 0.0, e)
    for _ in range(2):
        p = 2.0 ** e
        e = where(p > m, e - 1.0, where(p * 2.0 <= m, e + 1.0, e))
    return e, 2.0 ** e


class FrexpResult(NamedTuple):
    """frexp's result: (mantissa, exponent), as PyTorch's torch.return_types.frexp."""
    mantissa: Tensor
    exponent: Tensor


def frexp(input: Tensor) -> FrexpResult:
    """`input` as mantissa * 2^exponent, the mantissa in [0.5, 1) in magnitude (0, inf and
    NaN: themselves, exponent 0), elementwise: a (mantissa, exponent) named tuple, the
    exponent int32. The mantissa's gradient is 2^-exponent.

    Example:
        >>> torchic.frexp(torchic.tensor([8.0, 0.3]))
    """
    x = as_operand(input)
    if not is_floating(x._dtype):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    d = x.detach()
    finite = (d - d == 0).logical_and(d != 0)
    e, _ = _exponent(where(finite, d, 1.0))
    e = where(finite, e + 1.0, 0.0)
    return FrexpResult(x * (2.0 ** (-e)), raw.cast(e, "i32"))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after `input` toward `other`, elementwise (`other`
    where they are equal, NaN where either is)."""
    (a, b), code = promote(input, other)
    if not is_floating(code):
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{SCALAR_TYPE_NAMES[code]}'")
    if a.requires_grad or b.requires_grad:      # (d/da = 1, d/db = 0: PyTorch's)
        return FirstPasses.apply(a, b, compute=_nextafter)
    return _nextafter(a, b)


def _nextafter(a, b):
    code = a._dtype
    bits, least = _MANTISSA.get(code, _F32_MANTISSA)
    finite = (a - a == 0).logical_and(a != 0)
    e, p = _exponent(where(finite, a, 1.0))
    away = (b > a) == (a > 0)
    # a step away from zero is 2^(e - bits); toward zero from a power of two, half that
    step_e = where(away.logical_or(a.abs() != p), e - bits, e - bits - 1.0)
    step = 2.0 ** maximum(step_e, float(least))
    y = where(away, a + where(a < 0, -step, step), a - where(a < 0, -step, step))
    tiny = constant(2.0 ** float(least), code)
    y = where(a == 0, where(b > a, tiny, -tiny), y)
    y = where(a.abs() == math.inf, where(a > 0, _FLOAT_MAX[code], -_FLOAT_MAX[code]), y)
    y = where(a == b, b, y)
    return where(isnan(a).logical_or(isnan(b)), a + b, y)


_FLOAT_MAX = {"f64": 1.7976931348623157e308, "f32": 3.4028234663852886e38,
              "f16": 65504.0, "bf16": 3.3895313892515355e38}
