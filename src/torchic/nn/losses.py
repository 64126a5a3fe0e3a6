"""The loss Modules of torch.nn (PyTorch's class paths are torch.nn.modules.loss.*): thin
wrappers over nn.functional with PyTorch's constructor arguments; class weights are
registered buffers (so `weight` is in state_dict), as PyTorch's are.

    loss = nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(logits, target)
"""

import math
from collections.abc import Callable
from typing import Any

from . import functional as F
from . import loss_functions as L
from ..tensor import Tensor
from .layers import Linear
from .module import Module


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = L.legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """`|input - target|`, reduced (`F.l1_loss`).

    Args:
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> nn.L1Loss()(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.5, 2.0, 1.0]))
        tensor(0.8333)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
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

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """The negative log-likelihood of class targets under log-probabilities (`F.nll_loss`:
    weight, ignore_index, any (N, C, d1, ...) input).

    Args:
        weight: a rescaling weight per class `(C,)`, or None.
        ignore_index: a target value that is skipped. Default: -100.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per target).

    Shape:
        - Input: `(N, C)`, `(C,)` or `(N, C, d1, ...)`.
        - Target: `(N,)`, `()` or `(N, d1, ...)`.
        - Output: a scalar, or the target's shape with `reduction="none"`.

    Example:
        >>> logp = torch.tensor([[0.2, 0.8], [0.6, 0.4]]).log()
        >>> nn.NLLLoss()(logp, torch.tensor([1, 0]))
        tensor(0.3670)
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """The cross-entropy between logits `input` and class-index (or class-probability)
    `target`: the negative log of the softmax probability of the target class, averaged
    over the batch by default (PyTorch's signature, the deprecated size_average / reduce too).

    Args:
        weight: a (C,) rescaling of each class's loss (the mean divides by the summed
            weights of the targets). Default: None.
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
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (`F.binary_cross_entropy`).

    Args:
        weight: a rescaling weight per element (broadcast to the input), or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> p, y = torch.tensor([0.9, 0.2, 0.6]), torch.tensor([1.0, 0.0, 1.0])
        >>> nn.BCELoss()(p, y)
        tensor(0.2798)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, computed stably; pos_weight weighs the positives
    (`F.binary_cross_entropy_with_logits`).

    Args:
        weight: a rescaling weight per element (broadcast to the input), or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        pos_weight: multiplies the positive term, per class (broadcast over the last dim), or
            None.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> x, y = torch.tensor([2.0, -1.0, 0.5]), torch.tensor([1.0, 0.0, 1.0])
        >>> nn.BCEWithLogitsLoss()(x, y)
        tensor(0.3048)
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below `beta`, linear above (`F.smooth_l1_loss`).

    Args:
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        beta: where the loss turns from quadratic to linear (>= 0). Default: 1.0.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> nn.SmoothL1Loss()(torch.tensor([0.5, 3.0]), torch.tensor([0.0, 0.0]))
        tensor(1.3125)
    """

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below `delta`, `delta`-scaled linear above (`F.huber_loss`).

    Args:
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        delta: where the loss turns from quadratic to linear (> 0). Default: 1.0.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> nn.HuberLoss()(torch.tensor([0.5, 3.0]), torch.tensor([0.0, 0.0]))
        tensor(1.3125)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence of log-probability inputs (`F.kl_div`).

    Args:
        reduction: `"mean"` (default: over every element), `"batchmean"` (the sum divided by
            input.size(0): the true KL divergence), `"sum"` or `"none"`.
        log_target: target holds log-probabilities. Default: False.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> logp = torch.tensor([[0.25, 0.75]]).log()
        >>> nn.KLDivLoss(reduction="batchmean")(logp, torch.tensor([[0.5, 0.5]]))
        tensor(0.1438)
    """

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """The Poisson negative log-likelihood (`F.poisson_nll_loss`).

    Args:
        log_input: input holds log-rates. Default: True.
        full: add Stirling's approximation of `log(target!)` for target > 1. Default: False.
        eps: keeps the log finite when not log_input. Default: 1e-8.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> nn.PoissonNLLLoss()(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
        tensor(0.8591)
    """

    def __init__(self, log_input: bool = True, full: bool = False,
                 size_average: bool | None = None, eps: float = 1e-8,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """The Gaussian negative log-likelihood with a predicted variance (`F.gaussian_nll_loss`).

    Args:
        full: add the constant term. Default: False.
        eps: the variances' lower clamp. Default: 1e-6.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(N, *)` or `(*)`. Target: the input's shape. Var: the input's shape, or one
          dimension fewer / of size 1.
        - Output: a scalar, or the input's shape with `reduction="none"`.

    Example:
        >>> mean, obs = torch.tensor([1.0, 2.0]), torch.tensor([1.5, 2.0])
        >>> nn.GaussianNLLLoss()(mean, obs, torch.tensor([1.0, 0.5]))
        tensor(-0.1108)
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class _MarginLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class CosineEmbeddingLoss(_MarginLoss):
    """`1 - cos` for target 1, `max(0, cos - margin)` for -1 (`F.cosine_embedding_loss`).

    Args:
        margin: in [-1, 1]. Default: 0.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Shape:
        - Input: `(*)`, any shape. Output: the input's shape.

    Example:
        >>> a, b = torch.tensor([[1.0, 2.0], [0.0, 1.0]]), torch.tensor([[1.5, 1.0], [0.0, -1.0]])
        >>> nn.CosineEmbeddingLoss()(a, b, torch.tensor([1, -1]))
        tensor(0.0659)
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_MarginLoss):
    """`max(0, -target * (x1 - x2) + margin)` (`F.margin_ranking_loss`).

    Args:
        margin: Default: 0.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input1, Input2: `(N,)` or `()`. Target: the inputs' shape. Output: a scalar, or
          `(N,)` with `reduction="none"`.

    Example:
        >>> x1, x2 = torch.tensor([0.2, 0.8]), torch.tensor([0.5, 0.1])
        >>> nn.MarginRankingLoss()(x1, x2, torch.tensor([1.0, 1.0]))
        tensor(0.1500)
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """x for target 1, `max(0, margin - x)` for -1 (`F.hinge_embedding_loss`).

    Args:
        margin: Default: 1.0.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> nn.HingeEmbeddingLoss()(torch.tensor([0.3, 0.4, 2.0]), torch.tensor([1.0, -1.0, -1.0]))
        tensor(0.3000)
    """

    def __init__(self, margin: float = 1.0, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """`log(1 + exp(-target * x))` (`F.soft_margin_loss`).

    Args:
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> nn.SoftMarginLoss()(torch.tensor([2.0, -1.0]), torch.tensor([1.0, 1.0]))
        tensor(0.7201)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic losses, averaged over the classes (`F.multilabel_soft_margin_loss`).

    Args:
        weight: a rescaling weight per class `(C,)`, or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Shape:
        - Input: `(N, C)`. Target: `(N, C)`. Output: a scalar, or `(N,)` with
          `reduction="none"`.

    Example:
        >>> x = torch.tensor([[2.0, -1.0, 0.0]])
        >>> nn.MultiLabelSoftMarginLoss()(x, torch.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.3778)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """The multi-class multi-label hinge loss (`F.multilabel_margin_loss`).

    Args:
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Shape:
        - Input: `(N, C)` or `(C,)`. Target: the input's shape. Output: a scalar, or `(N,)`
          with `reduction="none"`.

    Example:
        >>> x = torch.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> nn.MultiLabelMarginLoss()(x, torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """The multi-class hinge loss (`F.multi_margin_loss`: p 1 or 2, margin, weight).

    Args:
        p: 1 or 2. Default: 1.
        margin: Default: 1.
        weight: a rescaling weight per class `(C,)`, or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Shape:
        - Input: `(N, C)` or `(C,)`. Target: `(N,)` or `()`. Output: a scalar, or `(N,)` with
          `reduction="none"`.

    Example:
        >>> nn.MultiMarginLoss()(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """`max(0, d(a, p) - d(a, n) + margin)` with the p-norm distance (`F.triplet_margin_loss`).

    Args:
        margin: Default: 1.0.
        p: the norm's order. Default: 2.
        eps: as in pairwise_distance. Default: 1e-6.
        swap: use `min(d(a, n), d(p, n))` as the negative distance. Default: False.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Shape:
        - Anchor, positive, negative: `(N, D)` or `(D,)`. Output: a scalar, or `(N,)` with
          `reduction="none"`.

    Example:
        >>> a, pos = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, 1.0]])
        >>> neg = torch.tensor([[1.0, 0.5]])
        >>> nn.TripletMarginLoss(eps=0.0)(a, pos, neg)
        tensor(0.8820)
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss with any distance function (`F.triplet_margin_with_distance_loss`).

    Args:
        distance_function: a function of two tensors giving their distances. Default:
            pairwise_distance.
        margin: Default: 1.0.
        swap: use `min(d(a, n), d(p, n))` as the negative distance. Default: False.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Shape:
        - Anchor, positive, negative: `(N, D)` or `(D,)`. Output: a scalar, or `(N,)` with
          `reduction="none"`.

    Example:
        >>> a, pos = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, 1.0]])
        >>> neg = torch.tensor([[1.0, 0.5]])
        >>> l1 = lambda x, y: (x - y).abs().sum(-1)
        >>> nn.TripletMarginWithDistanceLoss(distance_function=l1)(a, pos, neg)
        tensor(0.5000)
    """

    def __init__(self, *, distance_function: Callable[..., Any] | None = None,
                 margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross_entropy of a learned linear map of the input (`F.linear_cross_entropy`): an
    internal `linear` (Linear(in_features, num_classes * prod(out_features), bias)) whose
    weight is read as (num_classes, *out_features, in_features).

    Args:
        in_features: the input's features.
        num_classes: C, the number of classes.
        out_features: extra output dims for a K-dimensional loss. Default: () (none).
        bias: learn a bias for the linear map. Default: False.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.
        reduction: `"mean"` (default), `"sum"` or `"none"`.
        weight: `(C,)` per-class weights, or None.
        ignore_index: targets equal to it add nothing (class indices only). Default: None.
        label_smoothing: in [0, 1], as in cross_entropy. Default: 0.
        options: PyTorch's chunking strategy: it changes how PyTorch splits the work, not the
            result (torchic computes the logits whole).

    Shape:
        - Input: `(N, in_features)` or `(in_features,)`.
        - Target: `(N, *out_features)` class indices, or probabilities `(N, C,
          *out_features)`.
        - Output: a scalar, or the target's shape with `reduction="none"`.

    Attributes:
        linear: the Linear(in_features, num_classes * prod(out_features), bias) whose weight
            is read as (num_classes, *out_features, in_features).

    Example:
        >>> loss_fn = nn.LinearCrossEntropyLoss(8, 5)
        >>> loss = loss_fn(torch.randn(4, 8), torch.tensor([0, 1, 4, 2]))
        >>> loss.shape, bool(loss > 0)
        (torchic.Size([]), True)
    """

    def __init__(self, in_features: int, num_classes: int, *,
                 out_features: tuple[int, ...] = (), bias: bool = False, device: Any = None,
                 dtype: Any = None, reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: Any = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias)
        if dtype is not None:
            self.linear.to(dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        w = self.linear.weight.reshape((self.num_classes, *self.out_features,
                                        self.linear.in_features))
        b = self.linear.bias.reshape((self.num_classes, *self.out_features)) \
            if self.linear.bias is not None else None
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
