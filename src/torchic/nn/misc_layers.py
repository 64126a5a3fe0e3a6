"""More torch.nn Modules: Bilinear, CosineSimilarity, PairwiseDistance, EmbeddingBag,
Unflatten, ChannelShuffle, Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout
(PyTorch's arguments, parameters, initialization and reprs)."""

import math
from collections.abc import Sequence
from typing import Any

from .. import creation
from ..autograd import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .applies import Applies
from .layers import _DropoutNd, embedding_options
from .module import Module
from .parameter import Parameter


class Bilinear(Module):
    """`y = x1^T A x2 + b`: weight (out_features, in1_features, in2_features), bias
    (out_features,), both ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(creation.empty(out_features, in1_features, in2_features,
                                               dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class CosineSimilarity(Module):
    """`F.cosine_similarity(x1, x2, dim, eps)`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """`F.pairwise_distance(x1, x2, p, eps, keepdim)`: the p-norm of x1 - x2 + eps."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class EmbeddingBag(Module):
    """Sums / means / maxes of bags of embedding rows (`F.embedding_bag`), weight ~ N(0, 1)
    (padding_idx's row zeroed)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Draw the weight from N(0, 1) again (padding_idx's row zero)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0.0)

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}" + embedding_options(self)
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (a -1 entry is inferred)."""

    def __init__(self, dim: int | str, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("Unflatten: named dims are not supported in torchic")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        d = self.dim % input.ndim
        shape = (*input.shape[:d], *self.unflattened_size, *input.shape[d + 1:])
        return input.reshape(shape)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class ChannelShuffle(Applies, fn=F.channel_shuffle):
    """`F.channel_shuffle(input, groups)`."""
    _args = ("groups",)

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups


class Dropout1d(_DropoutNd, fn=F.dropout1d):
    """Zero whole channels of (N, C, L) / (C, L) input in training (`F.dropout1d`)."""


class Dropout2d(_DropoutNd, fn=F.dropout2d):
    """Zero whole channels of (N, C, H, W) / (C, H, W) input in training."""


class Dropout3d(_DropoutNd, fn=F.dropout3d):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) input in training."""


class AlphaDropout(_DropoutNd, fn=F.alpha_dropout):
    """`F.alpha_dropout` in training, the identity in eval."""


class FeatureAlphaDropout(_DropoutNd, fn=F.feature_alpha_dropout):
    """`F.feature_alpha_dropout` in training, the identity in eval."""
