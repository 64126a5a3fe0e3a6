"""More torch.nn.functional composites: bilinear, channel_shuffle, and the feature /
alpha dropouts (dropout1d / 2d / 3d, alpha_dropout, feature_alpha_dropout), whose masks are
PyTorch's CPU masks for the same seed: its bernoulli_(1 - p) draws one double uniform per
element (or per channel) in order from the default generator, and keeps those below 1 - p;
torchic draws the same numbers on the host (a mask upload per call, no read)."""

import math
import warnings

import numpy as np

from ..creation import _gen, tensor
from ..tensor import Tensor

_ALPHA = 1.7580993408473766      # SELU's alpha * scale: alpha dropout's saturation value


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Regroups the channels (dim 1): viewed as (groups, C / groups), transposed to (C / groups,
    groups) (ShuffleNet).

    Args:
        input: `(N, C, *)`.
        groups: the number of groups (it divides C).

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.channel_shuffle(torch.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, "
                           f"but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} "
                           f"channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


def _check_p(p):
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")


def _dropout_impl(input, p, training, feature, alpha):
    _check_p(p)
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    if input.numel() == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    # PyTorch's CPU bernoulli_(1 - p): one double uniform per element, in order
    n = int(np.prod(shape))
    mask = (_gen(None).uniform_double(n) < (1.0 - p)).reshape(shape)
    keep = tensor(mask, dtype=input.dtype)
    if not alpha:
        return input * (keep / (1.0 - p))
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p
    return input * (keep * a) + b


def _feature_dropout(input, p, training, batched_dims, name):
    if input.ndim not in batched_dims:
        raise RuntimeError(f"{name}: Expected {batched_dims[0]}D or {batched_dims[1]}D input, "
                           f"but received a {input.ndim}D input.")
    unbatched = input.ndim == batched_dims[0]
    x = input.unsqueeze(0) if unbatched else input
    out = _dropout_impl(x, p, training, True, False)
    return out.squeeze(0) if unbatched else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout: zeros whole channels (dim 1 of a batch) with probability p and scales
    the rest by 1 / (1 - p).

    Args:
        input: `(N, C, L)` or `(C, L)`.
        p: the probability of dropping. Default: 0.5.
        training: apply it if True (default); return the input unchanged otherwise.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.dropout1d(torch.ones(1, 2, 3), 0.5, training=False)
        tensor([[[1., 1., 1.],
                 [1., 1., 1.]]])
    """
    return _feature_dropout(input, p, training, (2, 3), "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout: zeros whole channels (dim 1) with probability p and scales the rest by 1
    / (1 - p). As PyTorch's, a 3-D input is read as (N, C, L) (with its warning), other ranks
    warn and work alike.

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        p: the probability of dropping. Default: 0.5.
        training: apply it if True (default); return the input unchanged otherwise.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.dropout2d(torch.ones(1, 2, 1, 2), 0.5, training=False)
        tensor([[[[1., 1.]],
        <BLANKLINE>
                 [[1., 1.]]]])
    """
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      f"deprecated and will result in an error in a future release.",
                      stacklevel=2)
    elif input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim.", stacklevel=2)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _dropout_impl(input, p, training, True, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout: zeros whole channels with probability p and scales the rest by 1 / (1 -
    p).

    Args:
        input: `(N, C, D, H, W)` or `(C, D, H, W)`.
        p: the probability of dropping. Default: 0.5.
        training: apply it if True (default); return the input unchanged otherwise.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.dropout3d(torch.ones(1, 2, 1, 1, 2), 0.5, training=False).shape
        torchic.Size([1, 2, 1, 1, 2])
    """
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release.",
                      stacklevel=2)
    unbatched = input.ndim == 4
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    out = _dropout_impl(x, p, training, True, False)
    return out.squeeze(0) if unbatched else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Alpha dropout, which keeps SELU's self-normalization: dropped values set to SELU's
    negative saturation, then an affine map restoring mean 0 / variance 1.

    Args:
        input: any shape.
        p: the probability of dropping. Default: 0.5.
        training: apply it if True; return the input unchanged otherwise (default: False, as
            PyTorch's).
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> F.alpha_dropout(torch.ones(3), 0.5)
        tensor([1., 1., 1.])
    """
    return _dropout_impl(input, p, training, False, True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels (dim 1): each channel of each sample is dropped or kept
    together.

    Args:
        input: `(N, C, *)`.
        p: the probability of dropping. Default: 0.5.
        training: apply it if True; return the input unchanged otherwise (default: False, as
            PyTorch's).
        inplace: write the result into `input` (and return it). Default: False.

    Example:
        >>> F.feature_alpha_dropout(torch.ones(1, 2, 3), 0.5)
        tensor([[[1., 1., 1.],
                 [1., 1., 1.]]])
    """
    return _dropout_impl(input, p, training, True, True)
