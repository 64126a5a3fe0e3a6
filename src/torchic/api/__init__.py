"""The op functions users call (torchic.sum, x.sum, x[i] = v ...): PyTorch's argument
spellings parsed and checked, then the Functions of torchic.functions applied.

methods.py binds these onto Tensor; torchic/__init__.py exports them.
"""

from .conversion import check_device, parse_to, to, to_dtype, type_as
from .elementwise import (abs, add, div, eq, exp, ge, gt, le, log, log2, log10, lt, maximum,
                          minimum, mul, ne, neg, pow, relu, sigmoid, sqrt, sub, tanh, where)
from .inplace import copy_, fill_, inplace_binary, setitem
from .reductions import (MaxResult, amax, amin, argmax, argmin, cross_entropy, log_softmax,
                         max, mean, min, mse_loss, softmax, std, sum, var)
from .shaping import (cat, contiguous, expand, flatten, getitem, matmul, permute, reshape,
                      squeeze, stack, transpose, unbind, unsqueeze, view)
