"""Activation Modules over nn.functional (PyTorch's spellings and reprs): GELU, SiLU,
LeakyReLU, ELU, Hardtanh, ReLU6, Hardswish, ... Softmin, Softmax2d."""

from typing import Any

from .. import creation
from . import functional as F
from . import init as _init
from ..tensor import Tensor
from .module import Module
from .parameter import Parameter


class GELU(Module):
    """`F.gelu` as a module: `x * Phi(x)` (Phi the standard normal CDF), or its tanh
    approximation with `approximate="tanh"`."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """`F.silu` as a module: `x * sigmoid(x)` (the swish)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """`F.leaky_relu` as a module: `x` where positive, else `negative_slope * x`."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """`F.elu` as a module: `x` where positive, else `alpha * (exp(x) - 1)`."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


# -- nn-rest (issue 42): the other activation modules of torch.nn ----------------------------

def _inplace_str(inplace):
    return ", inplace=True" if inplace else ""


class Hardtanh(Module):
    """`F.hardtanh` as a module: x clamped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("max_val must be greater than min_val")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """`min(max(x, 0), 6)` (`F.relu6`)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Inplace(Module):
    """An activation whose only setting is `inplace` (applies `_fn`)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Hardswish(_Inplace):
    """`x * relu6(x + 3) / 6` (`F.hardswish`)."""
    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(_Inplace):
    """`relu6(x + 3) / 6` (`F.hardsigmoid`)."""
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Mish(_Inplace):
    """`x * tanh(softplus(x))` (`F.mish`)."""
    _fn = staticmethod(F.mish)

    def extra_repr(self) -> str:
        return ""


class SELU(_Inplace):
    """`scale * elu(x, alpha)` with SELU's constants (`F.selu`)."""
    _fn = staticmethod(F.selu)


class CELU(Module):
    """`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))` (`F.celu`)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class GLU(Module):
    """The gated linear unit along `dim`: `a * sigmoid(b)` of the input's two halves."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _NoArgs(Module):
    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class LogSigmoid(_NoArgs):
    """`log(sigmoid(x))` (`F.logsigmoid`)."""
    _fn = staticmethod(F.logsigmoid)


class Softsign(_NoArgs):
    """`x / (1 + |x|)` (`F.softsign`)."""
    _fn = staticmethod(F.softsign)


class Tanhshrink(_NoArgs):
    """`x - tanh(x)` (`F.tanhshrink`)."""
    _fn = staticmethod(F.tanhshrink)


class Softplus(Module):
    """`log(1 + exp(beta * x)) / beta`, linear above `threshold` (`F.softplus`)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """`x - lambd` above lambd, `x + lambd` below -lambd, 0 between (`F.softshrink`)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where `|x| > lambd`, else 0 (`F.hardshrink`)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """x where `x > threshold`, else `value` (`F.threshold`)."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class PReLU(Module):
    """x where positive, else `weight * x` with a learned weight: one slope, or one per
    channel (`num_parameters`), initialized to `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(creation.full((num_parameters,), init, dtype=dtype))

    def reset_parameters(self) -> None:
        """Fill the weight with `init` again."""
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """The randomized leaky ReLU (`F.rrelu`): random negative slopes in [lower, upper) in
    training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Softmin(Module):
    """`softmax(-x)` along `dim` (`F.softmin`)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input (dim -3)."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, -3)
