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
    approximation with `approximate="tanh"`."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        self.approximate = approximate

    _args = ("approximate",)


class _Inplace(Applies):
    """An activation whose only setting is `inplace`."""
    _args = ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class SiLU(_Inplace, fn=F.silu):
    """`F.silu` as a module: `x * sigmoid(x)` (the swish)."""


class _Alpha(Applies):
    """An activation of (alpha, inplace)."""
    _args = ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace


class LeakyReLU(Applies, fn=F.leaky_relu):
    """`F.leaky_relu` as a module: `x` where positive, else `negative_slope * x`."""
    _args = ("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace


class ELU(_Alpha, fn=F.elu):
    """`F.elu` as a module: `x` where positive, else `alpha * (exp(x) - 1)`."""


# -- nn-rest (issue 42): the other activation modules of torch.nn ----------------------------

class Hardtanh(Applies, fn=F.hardtanh):
    """`F.hardtanh` as a module: x clamped to [min_val, max_val]."""

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
    """`min(max(x, 0), 6)` (`F.relu6`)."""
    _repr = ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)


class Hardswish(_Inplace, fn=F.hardswish):
    """`x * relu6(x + 3) / 6` (`F.hardswish`)."""
    _repr = ()


class Hardsigmoid(_Inplace, fn=F.hardsigmoid):
    """`relu6(x + 3) / 6` (`F.hardsigmoid`)."""
    _repr = ()


class Mish(_Inplace, fn=F.mish):
    """`x * tanh(softplus(x))` (`F.mish`)."""
    _repr = ()


class SELU(_Inplace, fn=F.selu):
    """`scale * elu(x, alpha)` with SELU's constants (`F.selu`)."""


class CELU(_Alpha, fn=F.celu):
    """`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))` (`F.celu`)."""


class GLU(Applies, fn=F.glu):
    """The gated linear unit along `dim`: `a * sigmoid(b)` of the input's two halves."""
    _args = ("dim",)

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim


class LogSigmoid(Applies, fn=F.logsigmoid):
    """`log(sigmoid(x))` (`F.logsigmoid`)."""


class Softsign(Applies, fn=F.softsign):
    """`x / (1 + |x|)` (`F.softsign`)."""


class Tanhshrink(Applies, fn=F.tanhshrink):
    """`x - tanh(x)` (`F.tanhshrink`)."""


class Softplus(Applies, fn=F.softplus):
    """`log(1 + exp(beta * x)) / beta`, linear above `threshold` (`F.softplus`)."""
    _args = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold


class Softshrink(Applies, fn=F.softshrink):
    """`x - lambd` above lambd, `x + lambd` below -lambd, 0 between (`F.softshrink`)."""
    _args = ("lambd",)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink, fn=F.hardshrink):
    """x where `|x| > lambd`, else 0 (`F.hardshrink`)."""


class Threshold(Applies, fn=F.threshold):
    """x where `x > threshold`, else `value` (`F.threshold`)."""
    _args = ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace


class PReLU(Applies, fn=F.prelu):
    """x where positive, else `weight * x` with a learned weight: one slope, or one per
    channel (`num_parameters`), initialized to `init`."""
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
    training, their mean in eval."""
    _args = ("lower", "upper", "training", "inplace")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace


class Softmin(OverDim, fn=F.softmin):
    """`softmax(-x)` along `dim` (`F.softmin`)."""


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input (dim -3)."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, -3)
