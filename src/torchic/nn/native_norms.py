"""torch.native_layer_norm / native_batch_norm / native_group_norm: the norms with the
statistics they save for the backward, as PyTorch's aten entry points return them
(composites of torchic's ops: every output is differentiable)."""

from collections.abc import Sequence

from .. import api as _ops
from ..creation import zeros
from ..tensor import Tensor
from . import norm_functions as N


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm(input), mean, rstd): mean and 1 / sqrt(biased var + eps) over the
    normalized dims, kept as size-1 dims (shape input.shape[:axis] + (1,) * k)."""
    shape = tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    if input.numel() == 0:
        stat = zeros(*input.shape[:input.ndim - k], *(1,) * k, dtype=input.dtype) + \
            input.sum() * 0.0
        return input * 1.0, stat, stat
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    rstd = 1.0 / _ops.sqrt((centered * centered).mean(dims, keepdim=True) + eps)
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm(input), save_mean, save_invstd): in training the batch's per-channel mean
    and 1 / sqrt(biased var + eps) (the running statistics updated as F.batch_norm does);
    in eval two empty tensors, as PyTorch's CPU kernel."""
    out = N.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = zeros(0, dtype=input.dtype)
        return out, empty, empty
    dims = (0,) + tuple(range(2, input.ndim))
    mean = input.mean(dims)
    centered = input - input.mean(dims, keepdim=True)
    invstd = 1.0 / _ops.sqrt((centered * centered).mean(dims) + eps)
    return out, mean, invstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N_: int,
                      C: int, HxW: int, group: int, eps: float
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """(group_norm(input), mean, rstd), the statistics of shape (N, group)."""
    out = N.group_norm(input, group, weight, bias, eps)
    if input.numel() == 0:
        stat = zeros(N_, group, dtype=input.dtype) + input.sum() * 0.0   # (differentiable)
        return out, stat, stat
    g = input.reshape(N_, group, -1)
    mean = g.mean(2)
    centered = g - g.mean(2, keepdim=True)
    rstd = 1.0 / _ops.sqrt((centered * centered).mean(2) + eps)
    return out, mean, rstd
