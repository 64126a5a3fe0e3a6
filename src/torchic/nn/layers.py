"""The layers: thin Modules over nn.functional, initialized as PyTorch does."""

import math
from collections.abc import Sequence
from typing import Any

from .. import creation
from ..tensor import Tensor
from ..autograd import no_grad
from . import functional as F
from . import init
from .applies import Applies, OverDim
from .module import Module
from .parameter import Parameter


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative int, got {value!r}")
    return value


def affine_parameters(module: Module, shape: Any, affine: bool, bias: bool,
                      dtype: Any = None) -> None:
    """A normalization layer's `weight` (ones) and `bias` (zeros, where `bias`) of `shape`
    where `affine`; those it lacks are registered as None (PyTorch's declared absence)."""
    module.register_parameter(
        "weight", Parameter(creation.ones(shape, dtype=dtype)) if affine else None)
    module.register_parameter(
        "bias", Parameter(creation.zeros(shape, dtype=dtype)) if affine and bias else None)


def reset_affine(module: Module) -> None:
    """A normalization layer's weight back to ones and bias to zeros (those it has)."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


def embedding_options(module: Module) -> str:
    """The max_norm / norm_type / scale_grad_by_freq part of an embedding layer's repr
    (each where not its default), as PyTorch writes it."""
    s = ""
    if module.max_norm is not None:
        s += f", max_norm={module.max_norm}"
    if module.norm_type != 2:
        s += f", norm_type={module.norm_type}"
    if module.scale_grad_by_freq:
        s += f", scale_grad_by_freq={module.scale_grad_by_freq}"
    return s


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> m = nn.Identity(54, unused="argument")
        >>> m(torch.tensor([1.0, 2.0]))
        tensor([1., 2.])
    """

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
        padding_idx: that row starts at zero and gets no gradient.
        max_norm: the rows looked up are renormalized in place to at most max_norm
            (norm_type-norm) first (`F.embedding`).
        norm_type: the p of that norm. Default: 2.0.
        scale_grad_by_freq: scale the gradient by the inverse frequency of the indices in
            the batch. Default: False.
        sparse: PyTorch's sparse gradients; accepted, the gradient is dense. Default: False.
        device: where the weight is made (PyTorch's factory argument).
        dtype: the weight's dtype (PyTorch's factory argument).

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
                 padding_idx: int | None = None, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = _positive_int(num_embeddings, "num_embeddings")
        self.embedding_dim = _positive_int(embedding_dim, "embedding_dim")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"_weight has shape {list(_weight.shape)}, expected "
                                 f"{[num_embeddings, embedding_dim]}")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw the initial weight again from N(0, 1) (padding_idx's row zero)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0.0)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding whose weight is `embeddings` (2-D: (num_embeddings, embedding_dim)),
        frozen (no gradient) unless `freeze=False`."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        m = cls(embeddings.shape[0], embeddings.shape[1], padding_idx, max_norm, norm_type,
                scale_grad_by_freq, sparse, _weight=embeddings)
        m.weight.requires_grad = not freeze
        return m

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += embedding_options(self)
        if self.sparse:
            s += ", sparse=True"
        return s


class ReLU(Module):
    """`max(x, 0)` elementwise (`F.relu`).

    Args:
        inplace: write the result into the input (and return it). Default: False.

    Shape:
        - Input: `(*)`, any shape.
        - Output: `(*)`, the input's shape.

    Example:
        >>> import torchic as torch
        >>> torch.nn.ReLU()(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu_(input) if self.inplace else F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Applies, fn=F.tanh):
    """The hyperbolic tangent elementwise (`F.tanh`).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Tanh()
        >>> m(x)
        tensor([-0.9993, -0.7616,  0.0000,  0.4621,  1.0000])
    """


class Sigmoid(Applies, fn=F.sigmoid):
    """`1 / (1 + exp(-x))` elementwise (`F.sigmoid`).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 7.0])
        >>> m = nn.Sigmoid()
        >>> m(x)
        tensor([0.0180, 0.2689, 0.5000, 0.6225, 0.9991])
    """


class Softmax(OverDim, fn=F.softmax):
    """`F.softmax` over dim `dim` (the last when None): each slice sums to 1.

    Args:
        dim: the dimension the values sum to 1 along. Default: the last (PyTorch warns and
            guesses; torchic takes the last).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> m = nn.Softmax(dim=1)
        >>> m(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[0.0900, 0.2447, 0.6652]])
    """


class LogSoftmax(Softmax, fn=F.log_softmax):
    """`F.log_softmax` over dim `dim` (the last when None).

    Args:
        dim: the dimension to normalize along. Default: the last.

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> m = nn.LogSoftmax(dim=1)
        >>> m(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[-2.4076, -1.4076, -0.4076]])
    """


class Flatten(Module):
    """Flatten dims start_dim..end_dim (default: everything but the batch dim).

    Args:
        start_dim: the first dim to merge. Default: 1 (the batch dim stays).
        end_dim: the last dim to merge. Default: -1.

    Shape:
        - Input: `(*, S_start, ..., S_end, *)`. Output: `(*, S_start * ... * S_end, *)`.

    Example:
        >>> m = nn.Flatten()
        >>> m(torch.ones(32, 1, 5, 5)).shape
        torchic.Size([32, 25])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class _DropoutNd(Applies):
    """PyTorch's dropout modules: `_fn(input, p, training)`; p checked in [0, 1]."""
    _args = ("p", "training")

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p          # (as given: PyTorch's repr shows Dropout(1) as p=1)
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd, fn=F.dropout):
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
        tensor([[-1.2247,  0.0000,  1.2247]], grad_fn=<LayerNormBackward0>)
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        affine_parameters(self, self.normalized_shape, elementwise_affine, bias)

    reset_parameters = reset_affine

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")
