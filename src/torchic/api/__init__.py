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
from .elementwise import (UNARY_OPS, add, div, eq, ge, gt, isfinite, isinf, isnan, le,
                          log2, log10, logical_and, logical_not, logical_or, logical_xor, lt,
                          maximum, minimum, mul, ne, pow, sub, where)
from .inplace import copy_, fill_, inplace_binary, setitem
from .ordering import argsort, cumsum, prod, sort, topk
from .reductions import (MaxResult, amax, amin, argmax, argmin, cross_entropy, log_softmax,
                         max, mean, min, mse_loss, softmax, std, sum, var)
from .indexing import getitem
# reductions, scans, order statistics, norms
from .scans import (cummax, cummin, cumprod, cumulative_trapezoid, logcumsumexp,
                    take_along_dim, trapezoid, trapz)
from .order_stats import (bincount, bucketize, kthvalue, median, mode, msort, nanmedian,
                          nanquantile, quantile, searchsorted, unique, unique_consecutive)
from .statistics import (aminmax, corrcoef, count_nonzero, cov, diff, logsumexp, nanmean,
                         nansum, softmin, std_mean, trace, var_mean)
from .norms import dist, norm, renorm
from .shaping import (cat, contiguous, expand, flatten, matmul, permute, reshape,
                      squeeze, stack, transpose, unbind, unsqueeze, view)

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
    "sort", "argsort", "topk", "cumsum", "prod",
    # reductions, scans, order statistics, norms
    "cumprod", "cummax", "cummin", "logcumsumexp", "cumulative_trapezoid", "trapezoid",
    "trapz", "take_along_dim", "bincount", "bucketize", "kthvalue", "median", "mode", "msort",
    "nanmedian", "nanquantile", "quantile", "searchsorted", "unique", "unique_consecutive",
    "aminmax", "corrcoef", "count_nonzero", "cov", "diff", "logsumexp", "nanmean", "nansum",
    "softmin", "std_mean", "trace", "var_mean", "dist", "norm", "renorm"]
__all__ += sorted(UNARY_OPS)
