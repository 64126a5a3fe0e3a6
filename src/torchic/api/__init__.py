"""The op functions users call (torchic.sum, x.sum, x[i] = v ...): PyTorch's argument
spellings parsed and checked, then the Functions of torchic.functions applied.

methods.py binds these onto Tensor; torchic/__init__.py exports them.
"""

from typing import TYPE_CHECKING

from ..promotion import can_cast, promote_types, result_type
from .conversion import check_device, parse_to, to, to_dtype, type_as
from .extra_ops import (all, allclose, any, chunk, clamp, clamp_, clip, clip_, erf, histc,
                        histogram, isclose, isin, masked_fill, masked_fill_, roll, split, tril,
                        triu)
from .elementwise import (UNARY_OPS, add, eq, ge, gt, isfinite, isinf, isnan, le,
                          log2, log10, logical_and, logical_not, logical_or, logical_xor, lt,
                          maximum, minimum, mul, ne, pow, sub, where)
from .inplace import copy_, fill_, inplace_binary, setitem
from .ordering import argsort, cumsum, prod, sort, topk
from .reductions import (MaxResult, amax, amin, argmax, argmin, cross_entropy, log_softmax,
                         max, mean, min, mse_loss, softmax, std, sum, var)
from .indexing import getitem
from .shaping import (cat, contiguous, expand, flatten, matmul, permute, reshape,
                      squeeze, stack, transpose, unbind, unsqueeze, view)

# elementwise math (rounding.py, math_ops.py)
from .rounding import (ceil, div, fix, floor, floor_divide, fmod, frac, positive, remainder,
                       round, sgn, sign, signbit, true_divide, trunc)
from .math_ops import (acos, acosh, arccos, arcsin, arctan, arctan2, asin, atan, atan2, addcdiv, addcmul, asinh, atanh, clamp_max, clamp_min, copysign,
                       cosh, deg2rad, erfc, exp2, expm1, float_power, fmax, fmin, heaviside,
                       hypot, isneginf, isposinf, isreal, ldexp, lerp, log1p, logaddexp,
                       logaddexp2, logit, nan_to_num, rad2deg, reciprocal, rsqrt, rsub, sinc,
                       sinh, square, tan, xlogy)
from .bitwise import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
                      bitwise_right_shift, bitwise_xor, gcd, lcm)
from .special import (FrexpResult, digamma, erfinv, frexp, i0, lgamma, mvlgamma, nextafter,
                      polygamma)

globals().update(UNARY_OPS)    # exp, log, relu, ...: one per Unary Function
if TYPE_CHECKING:   # ...as a checker sees them: the stub scripts/gen_tensor_stub.py writes
    from .._tensor_methods import *  # noqa: F403

# what `torchic` exports (torchic/__init__.py: from .api import *): a literal list, which a
# type checker reads too (torchic/__init__.py gives it the unary ops from the stub)
__all__ = [
    "promote_types", "result_type", "can_cast",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
    "ge", "where", "log10", "log2", "logical_and", "logical_or", "logical_xor", "logical_not",
    "isnan", "isinf", "isfinite",
    "sum", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "softmax",
    "log_softmax", "cross_entropy", "mse_loss",
    "matmul", "reshape", "permute", "transpose", "expand", "squeeze", "unsqueeze", "flatten",
    "stack", "cat", "unbind",
    "tril", "triu", "masked_fill", "split", "chunk", "roll", "clamp", "clip", "clamp_", "clip_",
    "all", "any", "isclose", "isin", "allclose", "histc", "histogram", "erf",
    "sort", "argsort", "topk", "cumsum", "prod"]
__all__ += sorted(UNARY_OPS)
# elementwise math
__all__ += [
    "ceil", "fix", "floor", "floor_divide", "fmod", "frac", "positive", "remainder", "round",
    "sgn", "sign", "signbit", "true_divide", "trunc", "acosh", "addcdiv", "addcmul", "asinh",
    "atanh", "clamp_max", "clamp_min", "copysign", "cosh", "deg2rad", "erfc", "exp2", "expm1",
    "float_power", "fmax", "fmin", "heaviside", "hypot", "isneginf", "isposinf", "isreal",
    "ldexp", "lerp", "log1p", "logaddexp", "logaddexp2", "logit", "nan_to_num", "rad2deg",
    "reciprocal", "rsqrt", "rsub", "sinc", "sinh", "square", "tan", "xlogy", "acos", "arccos",
    "arcsin", "arctan", "arctan2", "asin", "atan", "atan2", "digamma", "erfinv", "lgamma",
    "mvlgamma", "polygamma", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "gcd", "lcm", "frexp", "i0", "nextafter"]
