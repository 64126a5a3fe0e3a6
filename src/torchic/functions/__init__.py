"""One Function per differentiable op, forward and backward side by side, by family.

``forward`` computes with raw (unrecorded) primitive calls from raw.py;
``backward`` receives the gradient of the output and returns one gradient
per forward argument (None where no gradient is needed). Backward runs
under no_grad and is written with ordinary tensor ops.

The op functions users call (``torchic.sum(x, dim=1)``, ``x.sum(1)``) parse PyTorch's
arguments and apply these Functions: they live one layer up, in torchic.api.
"""

from .common import (MAX_CONSTANTS, as_operand, as_strided, constant, keepdim_shape,
                     require_float, reshape_raw, sum_to_shape)
from .elementwise import (UNARY, Abs, Add, Atan2, Binary, Div, Exp, Log, Maximum, Minimum, Mul, Neg, Pow,
                          Relu, Sigmoid, Sqrt, Sub, Tanh, Unary, Where)
from .fused import CausalSoftmax, Dropout, Gelu, LayerNorm
from .matmul import Linear, MatMul
from .reduce import CrossEntropy, LogSoftmax, MaxMin, MaxMinDim, Softmax, Sum
from .stepwise import FirstPasses, Modulo, Pointwise, Stepwise    # (elementwise math: rounding ops)
from .views import (AsStrided, Cast, Cat, Clone, Contiguous, CopySlices, Expand,
                    GatherRows, IndexView, Permute, Reshape, ScatterAddRows, StridedView,
                    narrow)
