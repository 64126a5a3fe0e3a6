"""torchic.nn.init: fill tensors in place with the classic initializations.

Values are PyTorch's for the same seed: each function computes its bound / std with
torch.nn.init's formulas in the same float64 order and fills through Tensor.uniform_ /
normal_ (random_fills.py), which draw from the generator exactly as PyTorch's kernels do, so
`torch.manual_seed(42); nn.Linear(4, 3).weight` is bit-identical to PyTorch's. Every
function runs under no_grad and returns the tensor (fan_in / fan_out as in
``torch.nn.init``: for a weight of shape (out, in, *k), fan_in = in * prod(k)).
"""

import math
import warnings

import numpy as np

from .. import creation, random_fills
from ..autograd import no_grad
from ..generator import Generator
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_",
           "ones_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
           "xavier_normal_", "orthogonal_", "eye_", "dirac_"]


def _check(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} fills a torchic Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{what} fills floating point tensors, got {t.dtype}")


def _no_op_if_empty(t):
    """PyTorch's kaiming_* warn and leave a zero-element tensor alone."""
    if 0 in t.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
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


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    with no_grad():
        return random_fills.uniform_(tensor, a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2) (mean=0, std=1 gives the numbers randn would)."""
    _check(tensor, "normal_")
    with no_grad():
        return random_fills.normal_(tensor, mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Generator | None = None) -> Tensor:
    """N(mean, std^2) truncated to [a, b], by PyTorch's rejection sampling and draw order:
    when [a, b] holds more than 0.3 of the mass, normals redrawn for the whole tensor where
    a value fell outside (bit-exact: only normal_ draws); otherwise uniform proposals on
    [a, b] accepted by log(u) <= log density (the draws are PyTorch's; the float32 log
    here is NumPy's, so an acceptance within an ulp of the bound can differ)."""
    _check(tensor, "trunc_normal_")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    gen = creation._gen(generator)

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    def by_normals(n, contiguous):
        lo, hi = np.float32(a), np.float32(b)
        result = gen.normal_float(n, mean, std, contiguous)
        while True:
            outside = (result < lo) | (result > hi)
            if not outside.any():
                return result
            result = np.where(outside, gen.normal_float(n, mean, std, contiguous), result)

    def by_uniforms(n, contiguous):
        mode = max(a, min(mean, b))
        log_peak = np.float32(-0.5 * ((mode - mean) / std) ** 2)

        def log_density(x):
            z = (x - np.float32(mean)) / np.float32(std)
            return (z * z) * np.float32(-0.5) - log_peak

        def rejected(x):
            with np.errstate(divide="ignore"):
                return np.log(gen.uniform_float(n)) > log_density(x)

        result = gen.uniform_float(n, a, b)
        pending = rejected(result)
        while pending.any():
            candidates = gen.uniform_float(n, a, b)
            result = np.where(pending, candidates, result)
            pending = np.where(pending, rejected(candidates), pending)
        return result

    p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
    with no_grad():
        return random_fills._fill_random(tensor, by_normals if p > 0.3 else by_uniforms,
                                         "trunc_normal_")


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill `tensor` with `val` in place (without recording a gradient); returns it."""
    _check(tensor, "constant_")
    with no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill `tensor` with zeros in place; returns it."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill `tensor` with ones in place; returns it."""
    return constant_(tensor, 1.0)


def _kaiming_std(tensor, a, mode, nonlinearity, name):
    """gain / sqrt(fan) of kaiming_*_ (`name`), or None for an empty tensor (no draw)."""
    _check(tensor, name)
    if _no_op_if_empty(tensor):
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Generator | None = None) -> Tensor:
    """He et al. 2015: U(-bound, bound), bound = gain * sqrt(3 / fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Generator | None = None) -> Tensor:
    """He et al. 2015: N(0, std^2), std = gain / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_")
    return tensor if std is None else normal_(tensor, 0.0, std, generator=generator)


def _xavier_std(tensor, gain, name):
    """gain * sqrt(2 / (fan_in + fan_out)) of xavier_*_ (`name`)."""
    _check(tensor, name)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / float(fan_in + fan_out))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot & Bengio 2010: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    a = math.sqrt(3.0) * _xavier_std(tensor, gain, "xavier_uniform_")
    return uniform_(tensor, -a, a, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot & Bengio 2010: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain, "xavier_normal_"),
                   generator=generator)


# -- nn-rest (issue 42): recurrent and convolution weights ----------------------------------

def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None
                ) -> Tensor:
    """Fill with a (semi-)orthogonal matrix (Saxe et al. 2013), as PyTorch's: N(0, 1) draws
    of shape (rows, prod(rest)) from the generator, the Q of their QR decomposition with
    the signs of R's diagonal, times gain (the usual init of recurrent weights)."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = creation.empty(rows, cols, dtype=tensor.dtype)
    normal_(flat, 0.0, 1.0, generator=generator)
    a = flat.numpy()
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        tensor.copy_(creation.tensor(np.ascontiguousarray(q * gain), dtype=tensor.dtype)
                     .reshape(tensor.shape))
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal)."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(creation.tensor(np.eye(*tensor.shape), dtype=tensor.dtype))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta: the convolution keeps
    its input's channels (per group)."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_ch = tensor.shape[0]
    if out_ch % groups:
        raise ValueError("dim 0 must be divisible by groups")
    per = out_ch // groups
    w = np.zeros(tuple(tensor.shape))
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(per, tensor.shape[1])):
            w[(g * per + d, d) + centre] = 1.0
    with no_grad():
        tensor.copy_(creation.tensor(w, dtype=tensor.dtype))
    return tensor


# PyTorch's deprecated spellings without the trailing underscore
uniform = uniform_
normal = normal_
constant = constant_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
