"""The layers: thin Modules over nn.functional, initialized as PyTorch does."""

import math
from collections.abc import Sequence
from typing import Any

from .. import creation
from ..tensor import Tensor
from ..autograd import no_grad
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative int, got {value!r}")
    return value


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """Applies an affine map to the last dimension: `y = x @ weight.T + bias`.

    Initialized like PyTorch: weight and bias ~ U(-1/sqrt(in_features), 1/sqrt(in_features))
    (kaiming_uniform_ with a=sqrt(5)).

    Args:
        in_features: size of each input sample (the last dimension of the input).
        out_features: size of each output sample.
        bias: if False, the layer learns no additive bias. Default: True.

    Shape:
        - Input: `(*, in_features)`, any number of leading dimensions.
        - Output: `(*, out_features)`.

    Attributes:
        weight: the learnable weights, `(out_features, in_features)`.
        bias: the learnable bias, `(out_features,)`, or None.

    Example:
        >>> import torchic as torch
        >>> m = torch.nn.Linear(20, 30)
        >>> list(m(torch.randn(128, 20)).shape)
        [128, 30]
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.in_features = _positive_int(in_features, "in_features")
        self.out_features = _positive_int(out_features, "out_features")
        self.weight = Parameter(creation.empty(out_features, in_features))
        if bias:
            self.bias = Parameter(creation.empty(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the initial weight and bias again (PyTorch's init, PyTorch's numbers)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table: integer indices of any shape select rows of `weight`.

    The weight is initialized from N(0, 1), as PyTorch's.

    Args:
        num_embeddings: how many rows the table has (indices run over 0 .. num_embeddings - 1).
        embedding_dim: the size of each row.

    Shape:
        - Input: `(*)`, integer indices of any shape.
        - Output: `(*, embedding_dim)`.

    Attributes:
        weight: the learnable table, `(num_embeddings, embedding_dim)`.

    Example:
        >>> import torchic as torch
        >>> emb = torch.nn.Embedding(10, 3)
        >>> list(emb(torch.tensor([[1, 2, 4], [4, 3, 9]])).shape)
        [2, 3, 3]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 _weight: Tensor | None = None) -> None:
        super().__init__()
        self.num_embeddings = _positive_int(num_embeddings, "num_embeddings")
        self.embedding_dim = _positive_int(embedding_dim, "embedding_dim")
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"_weight has shape {list(_weight.shape)}, expected "
                                 f"{[num_embeddings, embedding_dim]}")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """Draw the initial weight again from N(0, 1)."""
        init.normal_(self.weight)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True) -> "Embedding":
        """An Embedding whose weight is `embeddings` (2-D: (num_embeddings, embedding_dim)),
        frozen (no gradient) unless `freeze=False`."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        m = cls(embeddings.shape[0], embeddings.shape[1], _weight=embeddings)
        m.weight.requires_grad = not freeze
        return m

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class ReLU(Module):
    """`max(x, 0)` elementwise (`F.relu`).

    Shape:
        - Input: `(*)`, any shape.
        - Output: `(*)`, the input's shape.

    Example:
        >>> import torchic as torch
        >>> torch.nn.ReLU()(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input)


class Tanh(Module):
    """The hyperbolic tangent elementwise (`F.tanh`)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    """`1 / (1 + exp(-x))` elementwise (`F.sigmoid`)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Softmax(Module):
    """`F.softmax` over dim `dim` (the last when None): each slice sums to 1."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """`F.log_softmax` over dim `dim` (the last when None)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Flatten(Module):
    """Flatten dims start_dim..end_dim (default: everything but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """In training mode, zeroes each element with probability `p` and scales the others by
    `1 / (1 - p)`; in eval mode (`model.eval()`), returns the input unchanged.

    Args:
        p: the probability of an element being zeroed. Default: 0.5.
        inplace: accepted for PyTorch's signature. Default: False.

    Shape:
        - Input: `(*)`, any shape.
        - Output: `(*)`, the input's shape.

    Example:
        >>> import torchic as torch
        >>> m = torch.nn.Dropout(p=0.2)
        >>> list(m(torch.randn(20, 16)).shape)
        [20, 16]
        >>> m.eval()(torch.ones(3))
        tensor([1., 1., 1.])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
        self.p = float(p)
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """Layer normalization: normalizes over the trailing `normalized_shape` dimensions to
    mean 0 and variance 1 (biased), then scales by `weight` and shifts by `bias`.

    Args:
        normalized_shape: the trailing shape to normalize over (an int: the last dimension).
        eps: added to the variance for numerical stability. Default: 1e-5.
        elementwise_affine: if True, learnable `weight` (initially ones) and `bias`
            (initially zeros) of shape `normalized_shape`. Default: True.
        bias: if False (with elementwise_affine), no bias is learned. Default: True.

    Shape:
        - Input: `(N, *)`, ending in `normalized_shape`.
        - Output: `(N, *)`, the input's shape.

    Example:
        >>> import torchic as torch
        >>> m = torch.nn.LayerNorm(3)
        >>> m(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[-1.2247,  0.0000,  1.2247]], grad_fn=<LayerNormBackward>)
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape))
            if bias:
                self.bias = Parameter(creation.zeros(self.normalized_shape))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Set weight to ones and bias to zeros again."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class BatchNorm1d(Module):
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

    Shape:
        - Input: `(N, C)` or `(N, C, L)`.
        - Output: the input's shape.

    Example:
        >>> import torchic as torch
        >>> m = torch.nn.BatchNorm1d(4)
        >>> list(m(torch.randn(8, 4)).shape)
        [8, 4]
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True) -> None:
        super().__init__()
        self.num_features = _positive_int(num_features, "num_features")
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(creation.ones(num_features))
            self.bias = Parameter(creation.zeros(num_features))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features))
            self.register_buffer("running_var", creation.ones(num_features))
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
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (2, 3) or input.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm1d({self.num_features}) expects input (N, "
                             f"{self.num_features}) or (N, {self.num_features}, L), got shape "
                             f"{list(input.shape)}")
        use_batch_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            with no_grad():   # the int64 counter += 1, in integers (no host read)
                self.num_batches_tracked.add_(1)
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, use_batch_stats, self.momentum, self.eps,
            num_batches_tracked=self.num_batches_tracked)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class CrossEntropyLoss(Module):
    """The cross-entropy between logits `input` and class-index `target`: the negative log of
    the softmax probability of the target class, averaged over the batch by default.

    PyTorch's signature; class weights (and the deprecated size_average / reduce) are
    not supported, as in F.cross_entropy.

    Args:
        ignore_index: targets equal to it add nothing (and do not count in the mean).
            Default: -100.
        reduction: `"mean"`, `"sum"` or `"none"` (one loss per sample). Default: `"mean"`.
        label_smoothing: in [0, 1]: the target is mixed with a uniform distribution over the
            classes by this amount. Default: 0.0.

    Shape:
        - Input: `(N, C)` logits (or `(C,)`, or `(N, C, d1, ...)`).
        - Target: `(N,)` int64 class indices in [0, C) (or `()`, or `(N, d1, ...)`).
        - Output: a scalar, or the target's shape with `reduction="none"`.

    Example:
        >>> import torchic as torch
        >>> loss = torch.nn.CrossEntropyLoss()
        >>> loss(torch.zeros(2, 4), torch.tensor([0, 3]))
        tensor(1.3863)
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__()
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss: class weights are not supported in "
                                      "torchic")
        if size_average is not None or reduce is not None:
            raise NotImplementedError("CrossEntropyLoss: size_average / reduce are deprecated; "
                                      "use reduction=")
        self.weight = None
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class MSELoss(Module):
    """The mean squared error between `input` and `target` (`F.mse_loss`).

    Args:
        reduction: `"mean"` (default), `"sum"` or `"none"` (the elementwise squared errors).

    Shape:
        - Input: `(*)`, any shape.
        - Target: `(*)`, the input's shape.
        - Output: a scalar, or the input's shape with `reduction="none"`.

    Example:
        >>> import torchic as torch
        >>> torch.nn.MSELoss()(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0]))
        tensor(2.)
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)
