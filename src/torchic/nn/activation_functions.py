"""The activation functions of torch.nn.functional that are composites of torchic's ops
(relu6, hardtanh, hardswish, hardsigmoid, mish, selu, celu, glu, logsigmoid, softplus,
softsign, softshrink, hardshrink, tanhshrink, threshold, prelu, rrelu, softmin, silu,
leaky_relu, elu).

Each is built from differentiable api ops (no primitive of its own), so its gradient comes
from theirs; where PyTorch's derivative differs from the composite's at a kink (hardtanh's
is 0 on its bounds, clamp's 1) the composite picks PyTorch's with a `where`.
"""


from .. import api as _ops
import numpy as np

from ..api.creation_ops import full_like
from ..creation import _gen, tensor
from ..tensor import Tensor

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _maybe_inplace(input, out, inplace):
    return _ops.copy_(input, out) if inplace else out


def _float_only(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"{name}: expected a floating-point input, got {input.dtype}")


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """HardTanh, elementwise: x clamped to [min_val, max_val] (gradient 1 strictly inside, 0 on
    and outside the bounds, as PyTorch's).

    Args:
        input: the input tensor.
        min_val: the lower bound. Default: -1.0.
        max_val: the upper bound. Default: 1.0.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.hardtanh(x)
        tensor([-1.0000, -1.0000,  0.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.is_floating_point():     # an int input stays int (bounds truncated)
        min_val, max_val = int(min_val), int(max_val)
    inside = (input > min_val) & (input < max_val)
    out = _ops.where(inside, input, input.clamp(min_val, max_val).detach())
    return _maybe_inplace(input, out, inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """ReLU6, elementwise: `min(max(x, 0), 6)` (hardtanh(x, 0, 6)).

    Args:
        input: the input tensor.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.relu6(x)
        tensor([0.0000, 0.0000, 0.0000, 0.5000, 6.0000])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """Hardsigmoid, elementwise: `relu6(x + 3) / 6`: 0 below -3, 1 above 3, linear between.

    Args:
        input: the input tensor.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.hardsigmoid(x)
        tensor([0.0000, 0.3333, 0.5000, 0.5833, 1.0000])
    """
    _float_only(input, "hardsigmoid")
    return _maybe_inplace(input, hardtanh(input + 3.0, 0.0, 6.0) / 6.0, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """Hardswish (MobileNetV3's), elementwise: `x * relu6(x + 3) / 6`. PyTorch's gradient: 0
    below -3, 1 above 3, (2x + 3) / 6 on [-3, 3].

    Args:
        input: the input tensor.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.hardswish(x)
        tensor([-0.0000, -0.3333,  0.0000,  0.2917,  7.0000])
    """
    _float_only(input, "hardswish")
    mid = input * (input + 3.0) / 6.0
    out = _ops.where(input < -3.0, input * 0.0, _ops.where(input <= 3.0, mid, input))
    return _maybe_inplace(input, out, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Softplus, elementwise: `log(1 + exp(beta * x)) / beta`, and x itself where `beta * x >
    threshold` (no overflow).

    Args:
        input: the input tensor.
        beta: the sharpness. Default: 1.0.
        threshold: above `beta * x > threshold` the result is x. Default: 20.0.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.softplus(x)
        tensor([0.0181, 0.3133, 0.6931, 0.9741, 7.0009])
    """
    _float_only(input, "softplus")
    bx = input * beta
    big = bx > threshold
    # log1p, as PyTorch: log(1 + e^-7) in float32 lost 4 digits (-9.1142e-04, not -9.1147e-04)
    soft = _ops.log1p(_ops.exp(_ops.where(big, 0.0, bx))) / beta
    return _ops.where(big, input, soft)


def logsigmoid(input: Tensor) -> Tensor:
    """LogSigmoid, elementwise: `log(sigmoid(x)) = -softplus(-x)`, computed without overflow.

    Args:
        input: the input tensor.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.logsigmoid(x)
        tensor([-4.0181e+00, -1.3133e+00, -6.9315e-01, -4.7408e-01, -9.1147e-04])
    """
    _float_only(input, "log_sigmoid")
    negative = _ops.where(input < 0.0, input, input * 0.0)
    return negative - _ops.log1p(_ops.exp(-input.abs()))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Mish, elementwise: `x * tanh(softplus(x))`.

    Args:
        input: the input tensor.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.mish(x)
        tensor([-0.0726, -0.3034,  0.0000,  0.3752,  7.0000])
    """
    return _maybe_inplace(input, input * _ops.tanh(softplus(input)), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """CELU, elementwise: `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`.

    Args:
        input: the input tensor.
        alpha: the negative side's scale (it tends to -alpha). Default: 1.0.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.celu(x)
        tensor([-0.9817, -0.6321,  0.0000,  0.5000,  7.0000])
    """
    _float_only(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    positive = input > 0
    negative = alpha * (_ops.exp(_ops.where(positive, 0.0, input) / alpha) - 1.0)
    return _maybe_inplace(input, _ops.where(positive, input, negative), inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """SELU, elementwise: `scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))` with SELU's fixed
    alpha = 1.6733 and scale = 1.0507 (Klambauer et al.).

    Args:
        input: the input tensor.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.selu(x)
        tensor([-1.7259, -1.1113,  0.0000,  0.5254,  7.3549])
    """
    _float_only(input, "selu")
    positive = input > 0
    negative = _SELU_ALPHA * (_ops.exp(_ops.where(positive, 0.0, input)) - 1.0)
    return _maybe_inplace(input, _SELU_SCALE * _ops.where(positive, input, negative), inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: `a * sigmoid(b)`, a and b the two halves of `input` along `dim`.

    Args:
        input: the input tensor.
        dim: the dimension split in halves (its size must be even). Default: -1.

    Shape:
        - Input: `(*, 2n, *)`. Output: `(*, n, *)` (dim halved).

    Example:
        >>> F.glu(torch.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.ndim
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.split(n // 2, d)
    return a * _ops.sigmoid(b)


def softsign(input: Tensor) -> Tensor:
    """Softsign, elementwise: `x / (1 + |x|)`.

    Args:
        input: the input tensor.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.softsign(x)
        tensor([-0.8000, -0.5000,  0.0000,  0.3333,  0.8750])
    """
    return input / (input.abs() + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """Tanhshrink, elementwise: `x - tanh(x)`.

    Args:
        input: the input tensor.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.tanhshrink(x)
        tensor([-3.0007, -0.2384,  0.0000,  0.0379,  6.0000])
    """
    return input - _ops.tanh(input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Soft shrinkage, elementwise: `x - lambd` above lambd, `x + lambd` below -lambd, 0
    between.

    Args:
        input: the input tensor.
        lambd: the threshold (>= 0). Default: 0.5.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.softshrink(x)
        tensor([-3.5000, -0.5000,  0.0000,  0.0000,  6.5000])
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    zero = input * 0.0
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd,
                                                                zero))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Hard shrinkage, elementwise: x where `|x| > lambd`, else 0.

    Args:
        input: the input tensor.
        lambd: the threshold. Default: 0.5.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.hardshrink(x)
        tensor([-4., -1.,  0.,  0.,  7.])
    """
    return _ops.where((input >= -lambd) & (input <= lambd), input * 0, input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """Thresholds each element: x where `x > threshold`, else `value`.

    Args:
        input: the input tensor.
        threshold: the value to compare with.
        value: what replaces the elements not above it.
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.threshold(x, 0.1, 20.0)
        tensor([20.0000, 20.0000, 20.0000,  0.5000,  7.0000])
    """
    out = _ops.where(input > threshold, input, full_like(input, value))
    return _maybe_inplace(input, out, inplace)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """PReLU, elementwise: x where positive, else `weight * x` with a learnable slope.

    Args:
        input: the input tensor.
        weight: the slopes: 1 element, or one per channel (dim 1 of the input; a 1-D input is
            its own channel dim).

    Shape:
        - Input: `(N, C, *)`, `(C,)` or any shape with a 1-element weight. Output: the
          input's shape.

    Example:
        >>> F.prelu(torch.tensor([[-1.0, 2.0], [-3.0, -4.0]]), torch.tensor([0.5, 0.1]))
        tensor([[-0.5000,  2.0000],
                [-1.5000, -0.4000]])
    """
    if not isinstance(weight, Tensor):
        raise TypeError("prelu(): argument 'weight' must be Tensor")
    n = weight.numel()
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError(f"Not allow zero-dim input tensor. Mismatch of parameter "
                               f"numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = 1.")
        channels = input.shape[1] if input.ndim >= 2 else input.shape[0]
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
        shape = [1] * input.ndim
        shape[1 if input.ndim >= 2 else 0] = n
        w = weight.reshape(shape)
    else:
        w = weight.reshape(())
    return _ops.where(input > 0, input, w * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """The randomized leaky ReLU: x where positive, else x times a slope: drawn uniformly from
    [lower, upper) per element in training, `(lower + upper) / 2` in eval.

    The training slopes are PyTorch's CPU stream: one double uniform (the low 53 bits of a
    64-bit draw) per non-positive element, in order, from the default generator, with lower /
    upper first rounded to the input's precision. Finding those elements reads the input (a
    sync).

    Args:
        input: any shape.
        lower: the slopes' lower bound. Default: 1/8.
        upper: the slopes' upper bound. Default: 1/3.
        training: draw random slopes. Default: False.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.rrelu(torch.tensor([-2.0, 1.0]), 0.1, 0.3)
        tensor([-0.4000,  1.0000])
    """
    _float_only(input, "rrelu")
    if not training:
        out = _ops.where(input >= 0, input, input * ((lower + upper) / 2.0))
        return _maybe_inplace(input, out, inplace)
    values = input.detach().numpy()
    f64 = values.dtype == np.float64
    lo, hi = (float(lower), float(upper)) if f64 else \
        (float(np.float32(lower)), float(np.float32(upper)))
    negative = values.reshape(-1) <= 0
    noise = np.ones(values.size, np.float64)
    noise[negative] = _gen(None).uniform_double(int(negative.sum()), lo, hi)
    noise = noise.astype(values.dtype).reshape(values.shape)
    out = input * tensor(noise, dtype=input.dtype)
    return _maybe_inplace(input, out, inplace)


def relu_(input: Tensor) -> Tensor:
    """`relu` in place: `input` set to `max(input, 0)` and returned.

    Args:
        input: the input tensor.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.relu_(x)
        tensor([0.0000, 0.0000, 0.0000, 0.5000, 7.0000])
        >>> x
        tensor([0.0000, 0.0000, 0.0000, 0.5000, 7.0000])
    """
    return _ops.copy_(input, _ops.relu(input))



# the in-place spellings of torch.nn.functional (each writes its input and returns it)
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """`hardtanh` in place.

    Args:
        input: the input tensor.
        min_val: the lower bound. Default: -1.0.
        max_val: the upper bound. Default: 1.0.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.hardtanh_(x)
        tensor([-1.0000, -1.0000,  0.0000,  0.5000,  1.0000])
    """
    return hardtanh(input, min_val, max_val, inplace=True)


_threshold = threshold


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """`threshold` in place.

    Args:
        input: the input tensor.
        threshold: the value to compare with.
        value: what replaces the elements not above it.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.threshold_(x, 0.1, 20.0)
        tensor([20.0000, 20.0000, 20.0000,  0.5000,  7.0000])
    """
    return _threshold(input, threshold, value, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """`celu` in place.

    Args:
        input: the input tensor.
        alpha: the negative side's scale. Default: 1.0.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.celu_(x)
        tensor([-0.9817, -0.6321,  0.0000,  0.5000,  7.0000])
    """
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """`selu` in place.

    Args:
        input: the input tensor.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> F.selu_(x)
        tensor([-1.7259, -1.1113,  0.0000,  0.5254,  7.3549])
    """
    return selu(input, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """`rrelu` in place.

    Args:
        input: any shape.
        lower: the slopes' lower bound. Default: 1/8.
        upper: the slopes' upper bound. Default: 1/3.
        training: draw random slopes. Default: False.

    Example:
        >>> x = torch.tensor([-2.0, 1.0])
        >>> F.rrelu_(x, 0.1, 0.3)
        tensor([-0.4000,  1.0000])
    """
    return rrelu(input, lower, upper, training, inplace=True)


# -- silu, leaky_relu, elu (moved here from functional.py by issue 44) ----------------------


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """The sigmoid linear unit (swish), elementwise: `x * sigmoid(x)`.

    Args:
        input: the input tensor.
        inplace: write the result into `input` (and return it).

    Example:
        >>> F.silu(torch.tensor([-2.0, -0.5, 0.0, 1.0]))
        tensor([-0.2384, -0.1888,  0.0000,  0.7311])
    """
    return _maybe_inplace(input, input * _ops.sigmoid(input), inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01,
               inplace: bool = False) -> Tensor:
    """Leaky ReLU, elementwise: x where x > 0, `negative_slope * x` elsewhere.

    Args:
        input: the input tensor.
        negative_slope: the slope for x <= 0. Default: 0.01.
        inplace: write the result into `input` (and return it).

    Example:
        >>> F.leaky_relu(torch.tensor([-2.0, -0.5, 0.0, 1.0]), 0.1)
        tensor([-0.2000, -0.0500,  0.0000,  1.0000])
    """
    return _maybe_inplace(input, _ops.where(input > 0, input, input * negative_slope), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """The exponential linear unit, elementwise: x where x > 0, `alpha * (exp(x) - 1)`
    elsewhere (exp of x clipped to <= 0: no overflow in the branch not taken, and the whole
    gradient alpha at x = 0, as PyTorch).

    Args:
        input: the input tensor.
        alpha: the value the negative side tends to (-alpha). Default: 1.0.
        inplace: write the result into `input` (and return it).

    Example:
        >>> F.elu(torch.tensor([-2.0, -0.5, 0.0, 1.0]))
        tensor([-0.8647, -0.3935,  0.0000,  1.0000])
    """
    positive = input > 0
    negative = alpha * (_ops.exp(_ops.where(positive, 0.0, input)) - 1.0)
    return _maybe_inplace(input, _ops.where(positive, input, negative), inplace)
