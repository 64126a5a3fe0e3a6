"""Activation Modules over nn.functional (PyTorch's spellings and reprs): GELU, SiLU,
LeakyReLU, ELU, Hardtanh, ReLU6, Hardswish, ... Softmin, Softmax2d."""

from typing import Any

from .. import creation
from . import functional as F
from . import init as _init
from ..tensor import Tensor
from .applies import Applies, OverDim
from .module import Module
from .parameter import Parameter


class GELU(Applies, fn=F.gelu):
    """`F.gelu` as a module: `x * Phi(x)` (Phi the standard normal CDF), or its tanh
    approximation with `approximate="tanh"`.

    Args:
        approximate: `"none"` (default) or `"tanh"`.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> m = nn.GELU()
        >>> m(torch.tensor([-1.0, 0.0, 0.5, 2.0]))
        tensor([-0.1587,  0.0000,  0.3457,  1.9545])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        self.approximate = approximate

    _args = ("approximate",)


class _Inplace(Applies):
    """An activation whose only setting is `inplace` (applies `_fn`)."""
    _args = ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class SiLU(_Inplace, fn=F.silu):
    """`F.silu` as a module: `x * sigmoid(x)` (the swish).

    Args:
        inplace: write the result into `input` (and return it).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.SiLU()
        >>> m(x)
        tensor([-0.0719, -0.2689,  0.0000,  0.3112,  6.9936])
    """


class _Alpha(Applies):
    """An activation of (alpha, inplace)."""
    _args = ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace


class LeakyReLU(Applies, fn=F.leaky_relu):
    """`F.leaky_relu` as a module: `x` where positive, else `negative_slope * x`.

    Args:
        negative_slope: the slope for x <= 0. Default: 0.01.
        inplace: write the result into `input` (and return it).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.LeakyReLU(0.1)
        >>> m(x)
        tensor([-0.4000, -0.1000,  0.0000,  0.5000,  7.0000])
    """
    _args = ("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace


class ELU(_Alpha, fn=F.elu):
    """`F.elu` as a module: `x` where positive, else `alpha * (exp(x) - 1)`.

    Args:
        alpha: the value the negative side tends to (-alpha). Default: 1.0.
        inplace: write the result into `input` (and return it).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.ELU()
        >>> m(x)
        tensor([-0.9817, -0.6321,  0.0000,  0.5000,  7.0000])
    """


# -- nn-rest (issue 42): the other activation modules of torch.nn ----------------------------

class Hardtanh(Applies, fn=F.hardtanh):
    """`F.hardtanh` as a module: x clamped to [min_val, max_val].

    Args:
        min_val: the lower bound. Default: -1.0.
        max_val: the upper bound. Default: 1.0.
        inplace: write the result into `input` (and return it). Default: False.
        min_value: PyTorch's deprecated spelling of min_val.
        max_value: PyTorch's deprecated spelling of max_val.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Hardtanh(-2.0, 2.0)
        >>> m(x)
        tensor([-2.0000, -1.0000,  0.0000,  0.5000,  2.0000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("max_val must be greater than min_val")

    _args = ("min_val", "max_val", "inplace")


class ReLU6(Hardtanh):
    """`min(max(x, 0), 6)` (`F.relu6`).

    Args:
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.ReLU6()
        >>> m(x)
        tensor([0.0000, 0.0000, 0.0000, 0.5000, 6.0000])
    """
    _repr = ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)


class Hardswish(_Inplace, fn=F.hardswish):
    """`x * relu6(x + 3) / 6` (`F.hardswish`).

    Args:
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Hardswish()
        >>> m(x)
        tensor([-0.0000, -0.3333,  0.0000,  0.2917,  7.0000])
    """
    _repr = ()


class Hardsigmoid(_Inplace, fn=F.hardsigmoid):
    """`relu6(x + 3) / 6` (`F.hardsigmoid`).

    Args:
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Hardsigmoid()
        >>> m(x)
        tensor([0.0000, 0.3333, 0.5000, 0.5833, 1.0000])
    """
    _repr = ()


class Mish(_Inplace, fn=F.mish):
    """`x * tanh(softplus(x))` (`F.mish`).

    Args:
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Mish()
        >>> m(x)
        tensor([-0.0726, -0.3034,  0.0000,  0.3752,  7.0000])
    """
    _repr = ()


class SELU(_Inplace, fn=F.selu):
    """`scale * elu(x, alpha)` with SELU's constants (`F.selu`).

    Args:
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.SELU()
        >>> m(x)
        tensor([-1.7259, -1.1113,  0.0000,  0.5254,  7.3549])
    """


class CELU(_Alpha, fn=F.celu):
    """`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))` (`F.celu`).

    Args:
        alpha: the negative side's scale (it tends to -alpha). Default: 1.0.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.CELU()
        >>> m(x)
        tensor([-0.9817, -0.6321,  0.0000,  0.5000,  7.0000])
    """


class GLU(Applies, fn=F.glu):
    """The gated linear unit along `dim`: `a * sigmoid(b)` of the input's two halves.

    Args:
        dim: the dimension split in halves (its size must be even). Default: -1.

    Shape:
        - Input: `(*, 2n, *)`. Output: `(*, n, *)` (dim halved).

    Example:
        >>> m = nn.GLU()
        >>> m(torch.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """
    _args = ("dim",)

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim


class LogSigmoid(Applies, fn=F.logsigmoid):
    """`log(sigmoid(x))` (`F.logsigmoid`).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.LogSigmoid()
        >>> m(x)
        tensor([-4.0181e+00, -1.3133e+00, -6.9315e-01, -4.7408e-01, -9.1147e-04])
    """


class Softsign(Applies, fn=F.softsign):
    """`x / (1 + |x|)` (`F.softsign`).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Softsign()
        >>> m(x)
        tensor([-0.8000, -0.5000,  0.0000,  0.3333,  0.8750])
    """


class Tanhshrink(Applies, fn=F.tanhshrink):
    """`x - tanh(x)` (`F.tanhshrink`).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Tanhshrink()
        >>> m(x)
        tensor([-3.0007, -0.2384,  0.0000,  0.0379,  6.0000])
    """


class Softplus(Applies, fn=F.softplus):
    """`log(1 + exp(beta * x)) / beta`, linear above `threshold` (`F.softplus`).

    Args:
        beta: the sharpness. Default: 1.0.
        threshold: above `beta * x > threshold` the result is x. Default: 20.0.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Softplus()
        >>> m(x)
        tensor([0.0181, 0.3133, 0.6931, 0.9741, 7.0009])
    """
    _args = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold


class Softshrink(Applies, fn=F.softshrink):
    """`x - lambd` above lambd, `x + lambd` below -lambd, 0 between (`F.softshrink`).

    Args:
        lambd: the threshold (>= 0). Default: 0.5.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Softshrink()
        >>> m(x)
        tensor([-3.5000, -0.5000,  0.0000,  0.0000,  6.5000])
    """
    _args = ("lambd",)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink, fn=F.hardshrink):
    """x where `|x| > lambd`, else 0 (`F.hardshrink`).

    Args:
        lambd: the threshold. Default: 0.5.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Hardshrink()
        >>> m(x)
        tensor([-4., -1.,  0.,  0.,  7.])
    """


class Threshold(Applies, fn=F.threshold):
    """x where `x > threshold`, else `value` (`F.threshold`).

    Args:
        threshold: the value to compare with.
        value: what replaces the elements not above it.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Threshold(0.1, 20.0)
        >>> m(x)
        tensor([20.0000, 20.0000, 20.0000,  0.5000,  7.0000])
    """
    _args = ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace


class PReLU(Applies, fn=F.prelu):
    """x where positive, else `weight * x` with a learned weight: one slope, or one per channel
    (`num_parameters`), initialized to `init`.

    Args:
        num_parameters: the number of slopes: 1, or the input's channel count (dim 1).
            Default: 1.
        init: the slopes' initial value. Default: 0.25.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Input: `(N, C, *)` or any shape with one slope. Output: the input's shape.

    Attributes:
        weight: the learnable slopes, `(num_parameters,)`.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.PReLU()
        >>> m(x).tolist()
        [-1.0, -0.25, 0.0, 0.5, 7.0]
    """
    _args, _repr = ("weight",), ("num_parameters",)

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(creation.full((num_parameters,), init, dtype=dtype))

    def reset_parameters(self) -> None:
        """Fill the weight with `init` again."""
        _init.constant_(self.weight, self.init)


class RReLU(Applies, fn=F.rrelu):
    """The randomized leaky ReLU (`F.rrelu`): random negative slopes in [lower, upper) in
    training, their mean in eval.

    Args:
        lower: the slopes' lower bound. Default: 1/8.
        upper: the slopes' upper bound. Default: 1/3.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.RReLU(0.1, 0.3).eval()
        >>> m(x)
        tensor([-0.8000, -0.2000,  0.0000,  0.5000,  7.0000])
    """
    _args = ("lower", "upper", "training", "inplace")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace


class Softmin(OverDim, fn=F.softmin):
    """`softmax(-x)` along `dim` (`F.softmin`).

    Args:
        dim: the dimension to normalize along. Default: the last.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> m = nn.Softmin(dim=0)
        >>> m(torch.tensor([1.0, 2.0, 3.0]))
        tensor([0.6652, 0.2447, 0.0900])
    """


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input (dim -3).

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: the input's shape.

    Example:
        >>> m = nn.Softmax2d()
        >>> m(torch.tensor([[[1.0]], [[2.0]]]))
        tensor([[[0.2689]],
        <BLANKLINE>
                [[0.7311]]])
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, -3)
