"""Integer bitwise ops: bitwise_and / or / xor / not, the shifts, gcd and lcm.

and / or / xor and the shifts are primitive rows (ops.py, integers only: bool operands are
computed in int64 by raw and cast back, which gives the logical results); not is `-x - 1`
(exact as integers wrap), gcd is Euclid's algorithm on the exact integer remainder
(rounding.py), one step per round until every divisor is 0 (a host read per round).
"""

from .. import raw
from ..functions import as_operand, constant
from ..promotion import BOOL, SCALAR_TYPE_NAMES, is_floating
from ..tensor import Tensor
from .elementwise import logical_not, promote
from .rounding import _int_trunc_div


def _int_operands(name, input, other):
    (a, b), code = promote(input, other)
    if is_floating(code):
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{SCALAR_TYPE_NAMES[code]}'")
    return a.detach(), b.detach(), code


def _bitwise_fn(name, symbol, op=None):
    op = op or name

    def fn(input: Tensor | int, other: Tensor | int) -> Tensor:
        a, b, _ = _int_operands(name, input, other)
        return raw.binary(op, a, b)
    fn.__name__ = name
    fn.__doc__ = f"""`input {symbol} other`, elementwise, on integer or bool tensors (and Python
    ints / bools; floats are refused, as PyTorch).

    Args:
        input (Tensor or int): the first operand.
        other (Tensor or int): the second operand (broadcast, promoted as `add`'s).

    Example:
        >>> torchic.{name}(torchic.tensor([12, 10]), 6)
    """
    return fn


bitwise_and = _bitwise_fn("bitwise_and", "&")
bitwise_or = _bitwise_fn("bitwise_or", "|")
bitwise_xor = _bitwise_fn("bitwise_xor", "^")
bitwise_left_shift = _bitwise_fn("bitwise_left_shift", "<<", "shift_left")
bitwise_right_shift = _bitwise_fn("bitwise_right_shift", ">>", "shift_right")


def bitwise_not(input: Tensor) -> Tensor:
    """`~input`: the bitwise not of an integer tensor (`-input - 1`), the logical not of a
    bool one; floats are refused."""
    x = as_operand(input).detach()
    if x._dtype == BOOL:
        return logical_not(x)
    if is_floating(x._dtype):
        raise RuntimeError(f"\"bitwise_not_cpu\" not implemented for "
                           f"'{SCALAR_TYPE_NAMES[x._dtype]}'")
    return raw.binary("bitwise_xor", x, constant(-1, x._dtype))


def _abs(x):
    return raw.where(raw.binary("lt", x, constant(0, x._dtype)),
                     raw.binary("sub", constant(0, x._dtype), x), x)


def _gcd_raw(a, b):
    zero, one = constant(0, a._dtype), constant(1, a._dtype)
    a, b = _abs(a), _abs(b)
    shape = tuple(max(p, q) for p, q in zip(_pad(a.shape, b.shape), _pad(b.shape, a.shape)))
    a = raw.copy_into(raw.new_tensor(shape, a._dtype), a)
    b = raw.copy_into(raw.new_tensor(shape, b._dtype), b)
    while raw.values(raw.binary("ne", b, zero)).any():
        nonzero = raw.binary("ne", b, zero)
        _, r = _int_trunc_div(a, raw.where(nonzero, b, one))
        a, b = raw.where(nonzero, b, a), raw.where(nonzero, r, zero)
    return a


def _pad(shape, other):
    return (1,) * (len(other) - len(shape)) + tuple(shape)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of |input| and |other|, elementwise (gcd(0, 0) = 0), on
    integer tensors.

    Example:
        >>> torchic.gcd(torchic.tensor([12, 7]), torchic.tensor([18, 0]))
        tensor([6, 7])
    """
    a, b, code = _int_operands("gcd", input, other)
    if code == BOOL:
        raise RuntimeError("\"gcd_cpu\" not implemented for 'Bool'")
    return _gcd_raw(a, b)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of |input| and |other|, elementwise (0 where either is 0),
    on integer tensors."""
    a, b, code = _int_operands("lcm", input, other)
    if code == BOOL:
        raise RuntimeError("\"lcm_cpu\" not implemented for 'Bool'")
    g = _gcd_raw(a, b)
    zero = constant(0, g._dtype)
    is_zero = raw.binary("eq", g, zero)
    q, _ = _int_trunc_div(a, raw.where(is_zero, constant(1, g._dtype), g))
    return raw.where(is_zero, zero, _abs(raw.binary("mul", q, b)))
