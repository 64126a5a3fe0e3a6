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
    (out_features,), both ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features)).

    Args:
        in1_features: the first input's size.
        in2_features: the second input's size.
        out_features: the output's size.
        bias: `(out,)` or None.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Output: `(*, out)`.

    Attributes:
        weight: `(out_features, in1_features, in2_features)`, ~ U(-1/sqrt(in1_features), +).
        bias: `(out_features,)` or None.

    Example:
        >>> m = nn.Bilinear(20, 30, 40)
        >>> m(torch.randn(128, 20), torch.randn(128, 30)).shape
        torchic.Size([128, 40])
    """

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
    """`F.cosine_similarity(x1, x2, dim, eps)`.

    Args:
        dim: the dimension of the vectors. Default: 1.
        eps: the norms' lower clamp. Default: 1e-8.

    Shape:
        - Output: the broadcast shape without dim.

    Example:
        >>> x1, x2 = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])
        >>> nn.CosineSimilarity()(x1, x2)
        tensor([0.7071])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """`F.pairwise_distance(x1, x2, p, eps, keepdim)`: the p-norm of x1 - x2 + eps.

    Args:
        p: the norm's order. Default: 2.
        eps: added to the difference (no zero division in the gradient). Default: 1e-6.
        keepdim: keep the last dimension (size 1). Default: False.

    Shape:
        - Output: `(N,)` (or `()`), `(N, 1)` with keepdim.

    Example:
        >>> x1, x2 = torch.tensor([[0.0, 0.0]]), torch.tensor([[3.0, 4.0]])
        >>> nn.PairwiseDistance(eps=0.0)(x1, x2)
        tensor([5.])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class EmbeddingBag(Module):
    """Sums / means / maxes of bags of embedding rows (`F.embedding_bag`), weight ~ N(0, 1)
    (padding_idx's row zeroed).

    Args:
        num_embeddings: the table's number of rows.
        embedding_dim: the rows' size.
        max_norm: as in embedding.
        norm_type: as in embedding.
        scale_grad_by_freq: as in embedding.
        mode: "sum", "mean" (default) or "max".
        sparse: as in embedding.
        include_last_offset: offsets holds B + 1 bounds. Default: False.
        padding_idx: an index left out of its bag.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Input: `(B, L)`, or 1-D with offsets `(B,)`. Output: `(B, embedding_dim)`.

    Attributes:
        weight: the table `(num_embeddings, embedding_dim)`, ~ N(0, 1).

    Example:
        >>> m = nn.EmbeddingBag(10, 3, mode="sum")
        >>> m(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4])).shape
        torchic.Size([2, 3])
    """

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
    """Split dim `dim` into `unflattened_size` (a -1 entry is inferred).

    Args:
        dim: the dimension to split.
        unflattened_size: the sizes it becomes (their product is its size; one -1 is
            inferred).

    Shape:
        - Input: `(*, S, *)`. Output: `(*, U1, ..., Un, *)`.

    Example:
        >>> nn.Unflatten(1, (2, 5, 5))(torch.randn(2, 50)).shape
        torchic.Size([2, 2, 5, 5])
    """

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
    """`F.channel_shuffle(input, groups)`.

    Args:
        groups: the number of groups (it divides C).

    Shape:
        - Output: the input's shape.

    Example:
        >>> nn.ChannelShuffle(2)(torch.arange(4.0).reshape(1, 4, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """
    _args = ("groups",)

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups


class Dropout1d(_DropoutNd, fn=F.dropout1d):
    """Zero whole channels of (N, C, L) / (C, L) input in training (`F.dropout1d`).

    Args:
        p: the probability of dropping. Default: 0.5.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> m = nn.Dropout1d(0.5).eval()
        >>> m(torch.ones(1, 2, 3))
        tensor([[[1., 1., 1.],
                 [1., 1., 1.]]])
    """


class Dropout2d(_DropoutNd, fn=F.dropout2d):
    """Zero whole channels of (N, C, H, W) / (C, H, W) input in training.

    Args:
        p: the probability of dropping. Default: 0.5.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> m = nn.Dropout2d(0.5)
        >>> m(torch.randn(20, 16, 32, 32)).shape
        torchic.Size([20, 16, 32, 32])
    """


class Dropout3d(_DropoutNd, fn=F.dropout3d):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) input in training.

    Args:
        p: the probability of dropping. Default: 0.5.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Output: the input's shape.

    Example:
        >>> m = nn.Dropout3d(0.5)
        >>> m(torch.randn(20, 16, 4, 32, 32)).shape
        torchic.Size([20, 16, 4, 32, 32])
    """


class AlphaDropout(_DropoutNd, fn=F.alpha_dropout):
    """`F.alpha_dropout` in training, the identity in eval.

    Args:
        p: the probability of dropping. Default: 0.5.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> m = nn.AlphaDropout(0.2).eval()
        >>> m(torch.tensor([1.0, -1.0]))
        tensor([ 1., -1.])
    """


class FeatureAlphaDropout(_DropoutNd, fn=F.feature_alpha_dropout):
    """`F.feature_alpha_dropout` in training, the identity in eval.

    Args:
        p: the probability of dropping. Default: 0.5.
        inplace: write the result into `input` (and return it). Default: False.

    Shape:
        - Input: `(N, C, *)`. Output: the input's shape.

    Example:
        >>> m = nn.FeatureAlphaDropout(0.2).eval()
        >>> m(torch.ones(1, 2, 2))
        tensor([[[1., 1.],
                 [1., 1.]]])
    """
