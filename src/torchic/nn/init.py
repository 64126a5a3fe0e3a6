"""torchic.nn.init: fill tensors in place with the classic initializations.

Values are drawn on the host from the seeded default generator (or the
``generator=`` given) and then copied into the tensor, so the same seed gives
the same weights on every backend. Every function runs under no_grad, returns
the tensor, and follows PyTorch's formulas (fan_in / fan_out as in
``torch.nn.init``: for a weight of shape (out, in, *k), fan_in = in * prod(k)).
"""

import math

import numpy as np

from ..autograd import no_grad
from ..creation import _rng, tensor as _make
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_"]


def _check(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} fills a torchic Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{what} fills float32 tensors, got an int32 tensor")


def _fill_from(t, values):
    with no_grad():
        t.copy_(_make(np.asarray(values, dtype=np.float32).reshape(t.shape)))
    return t


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(t):
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than "
                         f"2 dimensions (got shape {list(t.shape)})")
    receptive = 1
    for d in t.shape[2:]:
        receptive *= d
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(t, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode {mode!r} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    u = _rng(generator).random(tensor.shape, dtype=np.float32).astype(np.float64)
    return _fill_from(tensor, a + (b - a) * u)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2) (mean=0, std=1 gives the numbers randn would)."""
    _check(tensor, "normal_")
    z = _rng(generator).standard_normal(tensor.shape, dtype=np.float32)
    if mean == 0.0 and std == 1.0:
        return _fill_from(tensor, z)
    return _fill_from(tensor, mean + std * z.astype(np.float64))


def constant_(tensor, val):
    _check(tensor, "constant_")
    with no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He et al. 2015: U(-bound, bound), bound = gain * sqrt(3 / fan)."""
    _check(tensor, "kaiming_uniform_")
    fan = _fan(tensor, mode)
    if fan == 0:
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He et al. 2015: N(0, std^2), std = gain / sqrt(fan)."""
    _check(tensor, "kaiming_normal_")
    fan = _fan(tensor, mode)
    if fan == 0:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator=generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio 2010: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return uniform_(tensor, -a, a, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio 2010: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return normal_(tensor, 0.0, std, generator=generator)


# PyTorch's deprecated spellings without the trailing underscore
uniform = uniform_
normal = normal_
constant = constant_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
