"""The normalization Modules of torch.nn: BatchNorm1d/2d/3d (running statistics, momentum
None as a cumulative average, track_running_stats, the int64 num_batches_tracked buffer),
InstanceNorm1d/2d/3d, GroupNorm, RMSNorm and LocalResponseNorm, PyTorch's arguments,
buffers and reprs, over nn.functional.
"""

import warnings
from collections.abc import Sequence
from typing import Any

from .. import creation
from ..autograd import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .layers import affine_parameters, reset_affine
from .module import Module
from .parameter import Parameter


def _features(value, what="num_features"):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative int, got {value!r}")
    return value


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share: weight / bias, the running statistics."""

    _no_batch_dim = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, bias: bool = True) -> None:
        super().__init__()
        self.num_features = _features(num_features)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        affine_parameters(self, num_features, affine, bias, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", creation.zeros((), dtype="int64"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Zero running_mean and num_batches_tracked, set running_var to ones."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.fill_(0)

    def reset_parameters(self) -> None:
        """`reset_running_stats()`, then weight to ones and bias to zeros."""
        self.reset_running_stats()
        reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims: tuple[int, ...] = ()

    def _check_input_dim(self, input):
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():   # the int64 counter += 1, in integers
                self.num_batches_tracked.add_(1)
            if self.momentum is None:      # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input with running statistics.

    train(): normalize with the batch mean / biased variance and update
    running_mean / running_var (unbiased) with `momentum` (None: cumulative
    average). eval(): normalize with the running statistics. Buffers
    running_mean, running_var and num_batches_tracked (int64, as PyTorch) are saved in
    state_dict().

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for numerical stability. Default: 1e-5.
        momentum: the running statistics' update factor (None: a cumulative average).
            Default: 0.1.
        affine: if True, learnable `weight` (ones) and `bias` (zeros) of shape (C,).
            Default: True.
        track_running_stats: if True, keep running statistics for eval mode. Default: True.
        device: where the parameters and buffers are made.
        dtype: the parameters' and buffers' dtype.
        bias: with affine=True, whether the learnable `bias` exists. Default: True.

    Shape:
        - Input: `(N, C)` or `(N, C, L)`.
        - Output: the input's shape.

    Example:
        >>> import torchic as torch
        >>> m = torch.nn.BatchNorm1d(4)
        >>> list(m(torch.randn(8, 4)).shape)
        [8, 4]
    """
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input, per channel C (see BatchNorm1d).

    Args:
        num_features: C, the number of channels.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update factor (None: a cumulative average).
            Default: 0.1.
        affine: learnable per-channel weight (ones) and bias (zeros). Default: True.
        track_running_stats: keep running mean / variance for evaluation. Default: True.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        bias: with affine, False leaves out the learnable bias. Default: True.

    Shape:
        - Input: `(N, C, H, W)`. Output: the input's shape.

    Example:
        >>> m = nn.BatchNorm2d(2)
        >>> m(torch.arange(8.0).reshape(2, 2, 1, 2)).shape
        torchic.Size([2, 2, 1, 2])
        >>> m.running_mean
        tensor([0.2500, 0.4500])
    """
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input, per channel C (see BatchNorm1d).

    Args:
        num_features: C, the number of channels.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update factor (None: a cumulative average).
            Default: 0.1.
        affine: learnable per-channel weight (ones) and bias (zeros). Default: True.
        track_running_stats: keep running mean / variance for evaluation. Default: True.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        bias: with affine, False leaves out the learnable bias. Default: True.

    Shape:
        - Input: `(N, C, D, H, W)`. Output: the input's shape.

    Example:
        >>> m = nn.BatchNorm3d(3)
        >>> m(torch.randn(2, 3, 2, 4, 4)).shape
        torchic.Size([2, 3, 2, 4, 4])
    """
    _dims = (5,)


class _InstanceNorm(_NormBase):
    _dims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._dims:
            raise ValueError(f"expected {self._dims[0]}D or {self._dims[1]}D input (got "
                             f"{input.ndim}D input)")
        no_batch = input.ndim == self._dims[0]
        feature_dim = 0 if no_batch else 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          f"You can silence this warning by not passing in num_features, "
                          f"which is not used because affine=False", stacklevel=2)
        x = input.unsqueeze(0) if no_batch else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if no_batch else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L) input: each sample's channel over L.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update factor. Default: 0.1.
        affine: learnable per-channel weight and bias. Default: False.
        track_running_stats: keep running statistics for evaluation. Default: False.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        bias: with affine, False leaves out the bias. Default: True.

    Shape:
        - Input: `(N, C, L)` or `(C, L)`. Output: the input's shape.

    Example:
        >>> nn.InstanceNorm1d(2)(torch.tensor([[[1.0, 3.0], [0.0, 10.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W) input.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update factor. Default: 0.1.
        affine: learnable per-channel weight and bias. Default: False.
        track_running_stats: keep running statistics for evaluation. Default: False.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        bias: with affine, False leaves out the bias. Default: True.

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: the input's shape.

    Example:
        >>> nn.InstanceNorm2d(1)(torch.tensor([[[[1.0, 3.0], [5.0, 7.0]]]]))
        tensor([[[[-1.3416, -0.4472],
                  [ 0.4472,  1.3416]]]])
    """
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W) input.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update factor. Default: 0.1.
        affine: learnable per-channel weight and bias. Default: False.
        track_running_stats: keep running statistics for evaluation. Default: False.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        bias: with affine, False leaves out the bias. Default: True.

    Shape:
        - Input: `(N, C, D, H, W)` or `(C, D, H, W)`. Output: the input's shape.

    Example:
        >>> nn.InstanceNorm3d(3)(torch.randn(2, 3, 2, 4, 4)).shape
        torchic.Size([2, 3, 2, 4, 4])
    """
    _dims = (4, 5)


class GroupNorm(Module):
    """Normalize (N, C, *) input over groups of C / num_groups channels; weight / bias per
    channel (affine).

    Args:
        num_groups: the number of groups (it divides C).
        num_channels: C, the input's channels.
        eps: added to the variance. Default: 1e-5.
        affine: learnable per-channel weight (ones) and bias (zeros). Default: True.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        bias: with affine, False leaves out the learnable bias. Default: True.

    Shape:
        - Input: `(N, C, *)`. Output: the input's shape.

    Example:
        >>> m = nn.GroupNorm(2, 4)
        >>> m(torch.tensor([[1.0, 3.0, 10.0, 30.0]])).detach()
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None,
                 bias: bool = True) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        affine_parameters(self, num_channels, affine, bias, dtype)

    reset_parameters = reset_affine

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """`x / sqrt(mean(x**2) + eps) * weight` over the trailing normalized_shape dims (eps None:
    the dtype's machine epsilon).

    Args:
        normalized_shape: an int or the shape of the trailing dims to normalize over.
        eps: added to the mean square. Default: the input dtype's machine epsilon.
        elementwise_affine: a learnable weight (ones) of normalized_shape. Default: True.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Output: the input's shape.

    Example:
        >>> m = nn.RMSNorm(2)
        >>> m(torch.tensor([[3.0, 4.0], [1.0, 1.0]])).detach()
        tensor([[0.8485, 1.1314],
                [1.0000, 1.0000]])
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """`F.local_response_norm`: each value divided by a power of its neighbouring channels' mean
    square.

    Args:
        size: the number of neighbouring channels.
        alpha: Default: 1e-4.
        beta: Default: 0.75.
        k: Default: 1.

    Shape:
        - Output: the input's shape.

    Example:
        >>> nn.LocalResponseNorm(2, alpha=1.0)(torch.tensor([[[1.0], [2.0], [3.0]]]))
        tensor([[[0.7378],
                 [0.7816],
                 [0.6620]]])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
