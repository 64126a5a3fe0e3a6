"""Random ops beyond the fills of random_fills.py: normal (tensor means / stds), bernoulli,
and Tensor.cauchy_ / geometric_ / log_normal_ / bernoulli_.

PyTorch's CPU numbers for the same seed (the generator reproduces its mt19937 and each
distribution's transformation, generator.py): normal(mean, std) is PyTorch's
`normal_(0, 1)` of the output, then `* std + mean`, as its normal_out_impl computes it;
bernoulli of a probability tensor and the three fills are PyTorch's serial kernels, one
draw per element in memory order. The gradients of normal with respect to mean and std
are zero, as PyTorch's (derivatives.yaml: the sample is not reparameterized).
"""

from typing import Any, Sequence

import numpy as np

from ..autograd import no_grad
from ..creation import _gen, _shape_args, empty, from_numpy_array
from ..formats import check_like_kwargs
from ..random_fills import _fill_random, normal_
from ..raw import values as _values
from ..tensor import Tensor
from .elementwise import add, mul


def normal(mean: Any, std: Any = 1.0, size: Sequence[int] | None = None, *,
           generator: Any = None, dtype: Any = None, requires_grad: bool = False,
           device: Any = None, **fmt: Any) -> Tensor:
    """Normal samples: normal(mean_tensor, std_tensor), normal(mean, std_tensor),
    normal(mean_tensor, std=1.0), or normal(mean, std, size) for float mean and std.

    Args:
        mean (Tensor or float): the means (broadcast against std).
        std (Tensor or float): the standard deviations (>= 0).
        size (tuple of int): the shape, when mean and std are both numbers.
        generator (Generator, optional): the generator to draw from.

    Example::

        >>> torchic.manual_seed(0)
        >>> torchic.normal(torchic.zeros(3), 1.0).shape
        torchic.Size([3])
    """
    check_like_kwargs(fmt, "normal")
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal(): with a float mean and std, size= is required")
        t = empty(*_shape_args((size,)), dtype=dtype, requires_grad=False, device=device)
        normal_(t, float(mean), float(std), generator=generator)
        return t.requires_grad_(True) if requires_grad else t
    for name, v in (("mean", mean), ("std", std)):
        if isinstance(v, Tensor) and not v.dtype.is_floating_point:
            raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                      f"'{str(v.dtype).replace('torchic.', '').title()}' "
                                      f"(the {name})")
    if st and std.numel() and (np.asarray(_values(std.detach())) < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not st and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    ref = mean if mt else std
    shape = tuple(np.broadcast_shapes(tuple(mean.shape), tuple(std.shape))) if mt and st \
        else tuple(ref.shape)
    with no_grad():
        z = empty(*shape, dtype=ref.dtype)
        if mt and not st:
            normal_(z, 0.0, float(std), generator=generator)
            sample = add(z, mean)
        else:
            normal_(z, 0.0, 1.0, generator=generator)
            sample = add(mul(z, std), mean)
    # zero gradients for mean and std, as PyTorch's (kept on the graph)
    for v in (mean, std):
        if isinstance(v, Tensor) and v.requires_grad:
            sample = add(sample, mul(v, 0))
    return sample


def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:
    """0 / 1 draws with the probabilities in `input` (in [0, 1]), in input's dtype.

    With a float `p`, every element is drawn with probability p instead (PyTorch's x86
    builds draw that case from MKL's stream, which torchic does not reproduce: its numbers
    there are the serial kernel's)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if p is not None:
        probs = np.full(tuple(input.shape), float(p), dtype=np.float64)
    else:
        if not input.dtype.is_floating_point:
            raise NotImplementedError(f"bernoulli of a {input.dtype} probability tensor")
        probs = np.ascontiguousarray(_values(input.detach())).reshape(tuple(input.shape))
        if probs.dtype == np.float16:
            probs = probs.astype(np.float32)
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    draws = _gen(generator).bernoulli(probs.ravel()).reshape(probs.shape)
    sample = from_numpy_array(draws.astype(np.float64), input._dtype)
    # a zero gradient for the probabilities, as PyTorch's (kept on the graph)
    return add(sample, mul(input, 0)) if input.requires_grad else sample


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill self with 0 / 1 draws of probability p (a float, or a tensor broadcast to self)."""
    if isinstance(p, Tensor):
        probs = p.expand(tuple(self.shape)).contiguous()
        return self.copy_(bernoulli(probs, generator=generator))
    return self.copy_(bernoulli(self, float(p), generator=generator))


def _require_float(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{str(t.dtype).replace('torchic.', '').title()}'")


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fill self with Cauchy(median, sigma) draws: PyTorch's numbers for the same seed."""
    _require_float(self, "cauchy_cpu")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _fill_random(self, lambda n, c: _gen(generator).cauchy_double(n, median, sigma),
                        "cauchy_")


def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill self with Geometric(p) draws (the number of trials to the first success)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill_random(self, lambda n, c: _gen(generator).geometric_double(n, p),
                        "geometric_")


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> Tensor:
    """Fill self with exp(N(mean, std^2)) draws: PyTorch's numbers for the same seed."""
    _require_float(self, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill_random(self, lambda n, c: _gen(generator).log_normal_double(n, mean, std),
                        "log_normal_")


__all__ = ["normal", "bernoulli"]
