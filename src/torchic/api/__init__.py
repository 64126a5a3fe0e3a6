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
                          maximum, minimum, mul, ne, pow, sub)
from .inplace import copy_, fill_, inplace_binary, setitem
from .ordering import argsort, cumsum, prod, sort, topk
from .reductions import (MaxResult, amax, amin, argmax, argmin, cross_entropy, log_softmax,
                         max, mean, min, mse_loss, softmax, std, sum, var)
from .indexing import getitem
# products (issue 41): composites over the one matmul primitive
from .products import (addbmm, addmm, addmv, addr, baddbmm, bilinear, bmm, cdist,
                       chain_matmul, cross, dot, ger, inner, kron, linalg_cross, mm,
                       multi_dot, mv, outer, tensordot, vdot, vecdot)
from .einsum import einsum
from .creation_ops import (empty_like, equal, full_like, logspace, new_empty, new_full, new_ones,
                           new_tensor, new_zeros, ones_like, randint_like, scalar_tensor,
                           zeros_like)
from .random_ops import bernoulli, bernoulli_, cauchy_, geometric_, log_normal_, normal
# reductions, scans, order statistics, norms
from .scans import (cummax, cummin, cumprod, cumulative_trapezoid, logcumsumexp,
                    trapezoid, trapz)
from .order_stats import (bincount, bucketize, kthvalue, median, mode, msort, nanmedian,
                          nanquantile, quantile, searchsorted, unique, unique_consecutive)
from .statistics import (aminmax, corrcoef, count_nonzero, cov, diff, logsumexp, nanmean,
                         nansum, softmin, std_mean, trace, var_mean)
from .norms import dist, norm, renorm
from .shaping import (cat, contiguous, expand, flatten, matmul, permute, reshape,
                      squeeze, stack, transpose, unbind, unsqueeze, view)

# shaping and indexing ops (issue 41)
from .view_ops import (as_strided, as_strided_copy, atleast_1d, atleast_2d, atleast_3d,
                       broadcast_shapes, broadcast_tensors, broadcast_to, diagonal,
                       diagonal_copy, expand_copy, flip, fliplr, flipud, matrix_transpose,
                       movedim, moveaxis, narrow, narrow_copy, permute_copy, ravel, reshape_as,
                       rot90, select, squeeze_copy, sum_to_size, swapaxes, swapdims,
                       transpose_copy, unflatten, unfold, unfold_copy, unsqueeze_copy,
                       view_as, view_copy)
from .index_ops import (gather, index_add, index_add_, index_copy, index_copy_, index_fill,
                        index_fill_, index_put, index_put_, index_reduce, index_reduce_,
                        index_select, put, put_, scatter, scatter_, scatter_add, scatter_add_,
                        scatter_reduce, scatter_reduce_, take, take_along_dim)
from .place_ops import (argwhere, as_strided_scatter, diag, diag_embed, diagonal_scatter,
                        masked_scatter, masked_scatter_, masked_select, nonzero,
                        nonzero_static, select_scatter, slice_scatter, unravel_index,
                        where)   # (elementwise's, or with the condition alone: nonzero)
from .extra_ops import tril_, triu_
from .joining import (block_diag, cartesian_prod, column_stack, combinations, dsplit, dstack,
                      hsplit, hstack, meshgrid, repeat, repeat_interleave, row_stack,
                      split_with_sizes, split_with_sizes_copy, tensor_split, tile,
                      tril_indices, triu_indices, unbind_copy, unsafe_chunk, unsafe_split,
                      vsplit, vstack)
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
# shaping and indexing ops (issue 41)
__all__ += [
    "narrow", "narrow_copy", "select", "movedim", "moveaxis", "swapaxes", "swapdims",
    "diagonal", "diagonal_copy", "unfold_copy", "as_strided", "as_strided_copy",
    "expand_copy", "view_copy", "permute_copy", "transpose_copy", "squeeze_copy",
    "unsqueeze_copy", "broadcast_shapes", "broadcast_to", "broadcast_tensors", "unflatten",
    "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "rot90",
    "gather", "take_along_dim", "take", "put", "scatter", "scatter_add", "scatter_reduce",
    "index_select", "index_add", "index_copy", "index_fill", "index_reduce", "index_put",
    "diag", "diag_embed", "diagonal_scatter", "select_scatter", "slice_scatter",
    "as_strided_scatter", "masked_select", "masked_scatter", "nonzero", "argwhere",
    "nonzero_static", "unravel_index",
    "hstack", "vstack", "row_stack", "dstack", "column_stack", "meshgrid", "repeat_interleave",
    "tile", "split_with_sizes", "split_with_sizes_copy", "unsafe_split", "unsafe_chunk",
    "unbind_copy", "tensor_split", "hsplit", "vsplit", "dsplit", "block_diag",
    "cartesian_prod", "combinations", "triu_indices", "tril_indices",
    # reductions, scans, order statistics, norms
    "cumprod", "cummax", "cummin", "logcumsumexp", "cumulative_trapezoid", "trapezoid",
    "trapz", "bincount", "bucketize", "kthvalue", "median", "mode", "msort",
    "nanmedian", "nanquantile", "quantile", "searchsorted", "unique", "unique_consecutive",
    "aminmax", "corrcoef", "count_nonzero", "cov", "diff", "logsumexp", "nanmean", "nansum",
    "softmin", "std_mean", "trace", "var_mean", "dist", "norm", "renorm"]
__all__ += sorted(UNARY_OPS)
# products (issue 41)
__all__ += ["mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmv",
            "baddbmm", "addbmm", "addr", "kron", "tensordot", "cross", "chain_matmul", "cdist",
            "einsum", "randint_like", "scalar_tensor", "equal", "normal", "bernoulli", "logspace"]
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
