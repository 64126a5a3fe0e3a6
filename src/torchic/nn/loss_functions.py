"""The loss functions of torch.nn.functional, composites of torchic's ops (PyTorch's
formulas, arguments and reductions; the deprecated size_average / reduce map to reduction=
as PyTorch's do).

    F.nll_loss(log_probs, target, weight=w, ignore_index=0)
    F.binary_cross_entropy_with_logits(logits, target, pos_weight=p)
"""

import math
import warnings
from collections.abc import Callable
from typing import Any

from .. import api as _ops
from ..autograd import no_grad
from ..api.creation_ops import full_like
from ..creation import arange
from ..tensor import Tensor


def legacy_reduction(size_average: bool | None, reduce: bool | None,
                     reduction: str = "mean") -> str:
    """PyTorch's mapping of the deprecated size_average / reduce to reduction=."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='...' instead.", stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _pointwise(input, target, size_average, reduce, reduction, name):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{name}(): input and target must be tensors")
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the "
                      f"input size ({list(input.shape)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)
    return reduction


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """The mean (or sum) absolute error `|input - target|`.

    Args:
        input: any shape.
        target: the input's shape (broadcast).
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        weight: a rescaling weight per element, or None.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.l1_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.5, 2.0, 1.0]))
        tensor(0.8333)
    """
    reduction = _pointwise(input, target, size_average, reduce, reduction, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0
                   ) -> Tensor:
    """The smooth L1 loss of d = input - target: `0.5 * d**2 / beta` where `|d| < beta`, else
    `|d| - 0.5 * beta` (beta = 0: the L1 loss).

    Args:
        input: any shape.
        target: the input's shape.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        beta: where the loss turns from quadratic to linear (>= 0). Default: 1.0.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.smooth_l1_loss(torch.tensor([0.5, 3.0]), torch.tensor([0.0, 0.0]))
        tensor(1.3125)
    """
    reduction = _pointwise(input, target, size_average, reduce, reduction, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(_ops.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """The Huber loss of d = input - target: `0.5 * d**2` where `|d| <= delta`, else `delta *
    (|d| - 0.5 * delta)`.

    Args:
        input: any shape.
        target: the input's shape.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        delta: where the loss turns from quadratic to linear (> 0). Default: 1.0.
        weight: a rescaling weight per element, or None.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.huber_loss(torch.tensor([0.5, 3.0]), torch.tensor([0.0, 0.0]))
        tensor(1.3125)
    """
    reduction = _pointwise(input, target, None, None, reduction, "huber_loss")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    loss = _ops.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean", log_target: bool = False
           ) -> Tensor:
    """The Kullback-Leibler divergence `target * (log target - input)`, pointwise: input
    log-probabilities, target probabilities (or log-probabilities with log_target=True).

    Args:
        input: log-probabilities, any shape.
        target: the input's shape.
        reduction: `"mean"` (default: over every element), `"batchmean"` (the sum divided by
            input.size(0): the true KL divergence), `"sum"` or `"none"`.
        log_target: target holds log-probabilities. Default: False.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> logp = torch.tensor([[0.25, 0.75]]).log()
        >>> F.kl_div(logp, torch.tensor([[0.5, 0.5]]), reduction="batchmean")
        tensor(0.1438)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                      "the support size.'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition.'mean' will be changed to "
                      "behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:     # xlogy(target, target): 0 where target is 0 (nan below 0, as PyTorch's)
        loss = _ops.where(target == 0, target * 0.0, target * _ops.log(target)) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,
                     full: bool = False, size_average: bool | None = None,
                     eps: float = 1e-8, reduce: bool | None = None, reduction: str = "mean"
                     ) -> Tensor:
    """The Poisson negative log-likelihood: `exp(input) - target * input` (log_input), else
    `input - target * log(input + eps)`.

    Args:
        input: the predicted rates (their logs with log_input).
        target: the counts, the input's shape.
        log_input: input holds log-rates. Default: True.
        full: add Stirling's approximation of `log(target!)` for target > 1. Default: False.
        eps: keeps the log finite when not log_input. Default: 1e-8.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.poisson_nll_loss(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
        tensor(0.8591)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        safe = _ops.where(target > 1, target, 2.0)
        stirling = safe * _ops.log(safe) - safe + 0.5 * _ops.log(2 * math.pi * safe)
        loss = loss + _ops.where(target > 1, stirling, target * 0.0)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """The Gaussian negative log-likelihood `0.5 * (log(max(var, eps)) + (input - target)**2 /
    max(var, eps))`, plus `0.5 * log(2 pi)` with full.

    Args:
        input: the predicted means.
        target: the observations, the input's shape.
        var: the predicted variances: the input's shape, or one dimension fewer / of size 1
            (homoscedastic), or a float.
        full: add the constant term. Default: False.
        eps: the variances' lower clamp. Default: 1e-6.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Example:
        >>> mean, obs = torch.tensor([1.0, 2.0]), torch.tensor([1.5, 2.0])
        >>> F.gaussian_nll_loss(mean, obs, torch.tensor([1.0, 0.5]))
        tensor(-0.1108)
    """
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with no_grad():
        if var.numel() and bool((var < 0).any().item()):
            raise ValueError("var has negative entry/entries")
    # clamp(min=eps) without stopping the gradient (PyTorch clamps a no-grad clone)
    var = var + (var.clamp(min=eps) - var).detach()
    d = input - target
    loss = 0.5 * (_ops.log(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """The binary cross-entropy of probabilities: `-(target * log(input) + (1 - target) * log(1
    - input))`, each log clamped at -100 as PyTorch's.

    Args:
        input: probabilities in [0, 1].
        target: the input's shape, values in [0, 1].
        weight: a rescaling weight per element (broadcast to the input), or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> p = torch.tensor([0.9, 0.2, 0.6])
        >>> y = torch.tensor([1.0, 0.0, 1.0])
        >>> F.binary_cross_entropy(p, y)
        tensor(0.2798)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to "
                         f"the input size ({list(input.shape)}) is deprecated. Please ensure "
                         f"they have the same size.")
    log_p = _ops.log(input).clamp(min=-100.0)
    log_q = _ops.log(1.0 - input).clamp(min=-100.0)
    loss = -(target * log_p + (1.0 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """`binary_cross_entropy(sigmoid(input), target)`, computed stably from the logits.

    Args:
        input: logits, any shape.
        target: the input's shape, values in [0, 1].
        weight: a rescaling weight per element (broadcast to the input), or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).
        pos_weight: multiplies the positive term, per class (broadcast over the last dim), or
            None.

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> x = torch.tensor([2.0, -1.0, 0.5])
        >>> y = torch.tensor([1.0, 0.0, 1.0])
        >>> F.binary_cross_entropy_with_logits(x, y)
        tensor(0.3048)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")
    # log(1 + exp(-x)) = max(-x, 0) + log(1 + exp(-|x|))
    neg = _ops.where(input < 0, -input, input * 0.0)
    log_sig_neg = neg + _ops.log(_ops.exp(-input.abs()) + 1.0)      # -log sigmoid(x)
    if pos_weight is not None:
        lw = (pos_weight - 1.0) * target + 1.0
        loss = (1.0 - target) * input + lw * log_sig_neg
    else:
        loss = (1.0 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _flat_classes(input, target, name):
    """(rows (M, C), targets (M,), target shape) of a class-dim-1 input."""
    if input.ndim == 0:
        raise ValueError(f"{name}: input must have at least 1 dimension")
    if input.ndim == 1:
        if target.ndim != 0:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size "
                             f"({target.shape[0] if target.ndim else 1}).")
        return input.reshape(1, -1), target.reshape(1), ()
    if input.shape[0] != (target.shape[0] if target.ndim else -1):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.ndim else 0}).")
    if tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0], *input.shape[2:]]}, got "
                           f"{list(target.shape)}")
    c = input.shape[1]
    rows = input.permute(0, *range(2, input.ndim), 1).reshape(-1, c) if input.ndim > 2 \
        else input
    return rows, target.reshape(-1), tuple(target.shape)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class targets under log-probabilities: `-weight[t] *
    input[n, t]`, over the class dimension 1 (0 for an unbatched input).

    Targets equal to ignore_index add 0 and are not counted; the mean divides by the summed
    weights of the counted targets.

    Args:
        input: log-probabilities (e.g. from log_softmax).
        target: class indices in `[0, C)`.
        weight: a rescaling weight per class `(C,)`, or None.
        ignore_index: a target value that is skipped. Default: -100.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per target).

    Shape:
        - Input: `(N, C)`, `(C,)` or `(N, C, d1, ...)`.
        - Target: `(N,)`, `()` or `(N, d1, ...)`.
        - Output: a scalar, or the target's shape with `reduction="none"`.

    Example:
        >>> logp = torch.tensor([[0.2, 0.8], [0.6, 0.4]]).log()
        >>> F.nll_loss(logp, torch.tensor([1, 0]))
        tensor(0.3670)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not isinstance(target, Tensor) or target.is_floating_point():
        raise RuntimeError(f"expected scalar type Long but found "
                           f"{getattr(target, 'dtype', type(target).__name__)}")
    rows, flat, tshape = _flat_classes(input, target, "nll_loss")
    c = rows.shape[1]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or "
                           f"no classes but got weight tensor of shape: {list(weight.shape)}")
    valid = flat != ignore_index if -2 ** 63 <= ignore_index < 2 ** 63 else flat == flat
    safe = _ops.where(valid, flat, 0)
    picked = rows[arange(rows.shape[0]), safe] if rows.shape[0] else rows.sum(1)
    w = weight[safe] if weight is not None else valid.to(rows.dtype)
    w = _ops.where(valid, w, 0.0) if weight is not None else w
    loss = -picked * w
    if reduction == "none":
        return loss.reshape(tshape)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def weighted_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None,
                           ignore_index: int, reduction: str, label_smoothing: float
                           ) -> Tensor:
    """cross_entropy with class weights, or any target of a K-dim input (PyTorch's
    formulas: nll of log_softmax, label smoothing's uniform term weighted the same way)."""
    cdim = 0 if input.ndim == 1 else 1
    logp = _ops.log_softmax(input, cdim)
    c = input.shape[cdim]
    wshape = [1] * input.ndim
    wshape[cdim] = c
    if target.is_floating_point():    # class probabilities
        if target.ndim != input.ndim:     # a float tensor of class indices
            raise RuntimeError("expected target dtype to be Long or Byte, but got Float "
                               "(class indices are int tensors: .long())")
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected target size {list(input.shape)}, got "
                               f"{list(target.shape)}")
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -prod.sum(cdim)
        if reduction == "mean":
            return loss.sum() / (input.numel() / c) if input.numel() else loss.sum() * math.nan
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    smooth = -(logp * weight.reshape(wshape) if weight is not None else logp).sum(cdim)
    ignored = target == ignore_index
    smooth = _ops.where(ignored, smooth * 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            w = weight[_ops.where(ignored, 0, target)]
            smooth = smooth.sum() / _ops.where(ignored, w * 0.0, w).sum()
        else:
            smooth = smooth.sum() / _ops.logical_not(ignored).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1.0 - label_smoothing) * nll + smooth * (label_smoothing / c)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, size_average: bool | None = None,
                          reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """`1 - cos(x1, x2)` where target is 1, `max(0, cos(x1, x2) - margin)` where it is -1
    (cosine over the last dim, PyTorch's eps 1e-12 in the norms).

    Args:
        input1, input2: `(N, D)` or `(D,)`.
        target: `(N,)` or `()` of 1 / -1.
        margin: in [-1, 1]. Default: 0.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Example:
        >>> a = torch.tensor([[1.0, 2.0], [0.0, 1.0]])
        >>> b = torch.tensor([[1.5, 1.0], [0.0, -1.0]])
        >>> F.cosine_embedding_loss(a, b, torch.tensor([1, -1]))
        tensor(0.0659)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = input1.ndim - 1
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + 1e-12
    mag2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / _ops.sqrt(mag1 * mag2)
    zero = cos * 0.0
    pos = 1.0 - cos
    neg = (cos - margin).clamp(min=0.0)
    loss = _ops.where(target == 1, pos, zero) + _ops.where(target == -1, neg, zero)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """`max(0, -target * (x1 - x2) + margin)`: target 1 wants x1 ranked above x2, -1 below.

    Args:
        input1, input2: `(N,)` or `()`.
        target: the inputs' shape, of 1 / -1.
        margin: Default: 0.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Example:
        >>> x1, x2 = torch.tensor([0.2, 0.8]), torch.tensor([0.5, 0.1])
        >>> F.margin_ranking_loss(x1, x2, torch.tensor([1.0, 1.0]))
        tensor(0.1500)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {list(input1.shape)}, input2: "
                           f"{list(input2.shape)}, target: {list(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """x where target is 1, `max(0, margin - x)` where target is -1 (x: e.g. a distance).

    Args:
        input: any shape.
        target: the input's shape, of 1 / -1.
        margin: Default: 1.0.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.hinge_embedding_loss(torch.tensor([0.3, 0.4, 2.0]), torch.tensor([1.0, -1.0, -1.0]))
        tensor(0.3000)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    zero = input * 0.0
    margin_part = _ops.where(target != 1, (margin - input).clamp(min=0.0), zero)
    self_part = _ops.where(target != -1, input, zero)
    return _reduce(margin_part + self_part, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The two-class logistic loss `log(1 + exp(-target * x))`.

    Args:
        input: any shape.
        target: the input's shape, of 1 / -1.
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.soft_margin_loss(torch.tensor([2.0, -1.0]), torch.tensor([1.0, 1.0]))
        tensor(0.7201)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    z = -target * input
    big = z > 20.0
    return _reduce(_ops.where(big, z, _ops.log(_ops.exp(_ops.where(big, 0.0, z)) + 1.0)),
                   reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """The multi-label one-versus-all loss: `-mean_c(y log sigmoid(x) + (1 - y) log
    sigmoid(-x))` per sample.

    Args:
        input: `(N, C)` logits.
        target: `(N, C)` of 0 / 1.
        weight: a rescaling weight per class `(C,)`, or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Example:
        >>> x = torch.tensor([[2.0, -1.0, 0.0]])
        >>> F.multilabel_soft_margin_loss(x, torch.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.3778)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)

    def logsig(x):
        return _ops.where(x < 0, x, x * 0.0) - _ops.log(_ops.exp(-x.abs()) + 1.0)
    loss = -(target * logsig(input) + (1.0 - target) * logsig(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1] if input.ndim else loss
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: `sum_{j in targets, i not in targets} max(0, 1 - (x[j] -
    x[i])) / C` per sample; a sample's target classes are its target row up to the first -1.

    Args:
        input: `(N, C)` or `(C,)` scores.
        target: the input's shape: class indices, then -1 padding.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Example:
        >>> x = torch.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multilabel_margin_loss(x, torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    y = target.reshape(1, -1) if target.ndim <= 1 else target
    if tuple(x.shape) != tuple(y.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    n, c = x.shape
    # the targets before the first -1: a cumulative "seen -1" mask along the row
    stop = (y < 0).long().cumsum(1) > 0
    ysafe = _ops.where(stop, 0, y)
    hot = _ops.where(stop.unsqueeze(-1), 0, (ysafe.unsqueeze(-1) == arange(c)).long())
    is_target = hot.sum(1) > 0                                   # (n, c)
    xt = x[arange(n).unsqueeze(1), ysafe]                        # (n, c): x at each target
    margins = (1.0 - (xt.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0.0)   # (n, j, i)
    keep = _ops.logical_not(stop).unsqueeze(2) & _ops.logical_not(is_target).unsqueeze(1)
    loss = _ops.where(keep, margins, margins * 0.0).sum((1, 2)) / c
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: `sum_{i != y} max(0, margin - x[y] + x[i])**p / C` per sample
    (times weight[y]).

    Args:
        input: `(N, C)` or `(C,)` scores.
        target: `(N,)` or `()` class indices.
        p: 1 or 2. Default: 1.
        margin: Default: 1.
        weight: a rescaling weight per class `(C,)`, or None.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Example:
        >>> F.multi_margin_loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    y = target.reshape(-1)
    n, c = x.shape
    if y.shape[0] != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got "
                           f"{list(target.shape)}")
    xy = x[arange(n), y].unsqueeze(1)
    m = (margin - xy + x).clamp(min=0.0)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * weight[y].unsqueeze(1)
    other = (y.unsqueeze(1) != arange(c))
    loss = _ops.where(other, m, m * 0.0).sum(1) / c
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _pnorm_last(x, p, eps=0.0):
    """The p-norm over the last dim (PyTorch's pairwise_distance adds eps to the difference)."""
    x = x + eps if eps else x
    d = x.ndim - 1
    if p == math.inf:
        return x.abs().amax(d)
    if p == 2:
        return _ops.sqrt((x * x).sum(d))
    if p == 1:
        return x.abs().sum(d)
    return x.abs().pow(p).sum(d).pow(1.0 / p)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm distance `||x1 - x2 + eps||_p` over the last dimension.

    Args:
        x1, x2: broadcastable tensors `(N, D)` or `(D,)`.
        p: the norm's order. Default: 2.
        eps: added to the difference (no zero division in the gradient). Default: 1e-6.
        keepdim: keep the last dimension (size 1). Default: False.

    Shape:
        - Output: `(N,)` (or `()`), `(N, 1)` with keepdim.

    Example:
        >>> x1 = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
        >>> x2 = torch.tensor([[3.0, 4.0], [1.0, 2.0]])
        >>> F.pairwise_distance(x1, x2, eps=0.0)
        tensor([5., 1.])
    """
    out = _pnorm_last(x1 - x2, p, eps)
    return out.unsqueeze(-1) if keepdim and out.ndim < max(x1.ndim, x2.ndim) else out


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The triplet loss `max(0, d(a, p) - d(a, n) + margin)`, d the p-norm pairwise distance: an
    anchor nearer its positive than its negative by margin costs 0.

    Args:
        anchor, positive, negative: `(N, D)` or `(D,)`.
        margin: Default: 1.0.
        p: the norm's order. Default: 2.
        eps: as in pairwise_distance. Default: 1e-6.
        swap: use `min(d(a, n), d(p, n))` as the negative distance. Default: False.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Example:
        >>> a, pos = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, 1.0]])
        >>> neg = torch.tensor([[1.0, 0.5]])
        >>> F.triplet_margin_loss(a, pos, neg, eps=0.0)
        tensor(0.8820)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[..., Any] | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance function: `max(0, d(a, p) - d(a, n) + margin)`.

    Args:
        anchor, positive, negative: `(N, D)` or `(D,)`.
        distance_function: a function of two tensors giving their distances. Default:
            pairwise_distance.
        margin: Default: 1.0.
        swap: use `min(d(a, n), d(p, n))` as the negative distance. Default: False.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per sample).

    Example:
        >>> a, pos = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, 1.0]])
        >>> neg = torch.tensor([[1.0, 0.5]])
        >>> l1 = lambda x, y: (x - y).abs().sum(-1)
        >>> F.triplet_margin_with_distance_loss(a, pos, neg, distance_function=l1)
        tensor(0.5000)
    """
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than "
                         f"0, got {margin} instead")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have "
                           "the same number of dimensions")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _ops.minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)

