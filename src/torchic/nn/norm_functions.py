"""Normalization, distance and embedding functions of torch.nn.functional, composites of
torchic's ops: batch_norm (any N, C, *), instance_norm, group_norm, rms_norm,
local_response_norm, normalize, cosine_similarity, embedding (padding_idx, max_norm) and
embedding_bag (sum / mean / max bags, offsets, per_sample_weights).
"""

import math
from collections.abc import Sequence

import numpy as np

from .. import api as _ops
from ..autograd import no_grad
from ..creation import arange, tensor as _tensor, zeros
from ..dtypes import dtype_code
from ..functions import GatherRows as _GatherRows
from ..tensor import Tensor


def _channel_shape(input):
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _centered(x, dims):
    """(mean, x - mean, biased variance) of x over `dims`, kept."""
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    return mean, centered, (centered * centered).mean(dims, keepdim=True)


def _affine(out, input, weight, bias):
    """out * weight + bias, both per channel (dim 1) of input, each where given."""
    bshape = _channel_shape(input)
    if weight is not None:
        out = out * weight.reshape(bshape)
    if bias is not None:
        out = out + bias.reshape(bshape)
    return out


def _normalize(input, dims, n, running_mean, running_var, weight, bias, use_input_stats,
               momentum, eps, no_running):
    """batch_norm / instance_norm: (input - mean) / sqrt(var + eps), then the affine. With
    use_input_stats, the statistics over `dims` (n elements each); running_mean /
    running_var (if given) move by `momentum` toward their average over the batch (the
    variance unbiased), in place. Else the running statistics (RuntimeError `no_running`
    where they are missing)."""
    if use_input_stats:
        mean, centered, var = _centered(input, dims)
        if running_mean is not None and running_var is not None:
            factor = 0.0 if momentum is None else float(momentum)
            with no_grad():
                m = mean.reshape(mean.shape[0], -1).mean(0)
                v = var.reshape(var.shape[0], -1).mean(0) * (n / (n - 1))
                running_mean.copy_(running_mean + (m - running_mean) * factor)
                running_var.copy_(running_var + (v - running_var) * factor)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(no_running)
        bshape = _channel_shape(input)
        var = running_var.reshape(bshape)
        centered = input - running_mean.reshape(bshape)
    return _affine(centered / _ops.sqrt(var + eps), input, weight, bias)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float | None = 0.1, eps: float = 1e-5
               ) -> Tensor:
    """Batch normalization per channel (dim 1): `(x - mean) / sqrt(var + eps) * weight + bias`.

    training=True normalizes with the batch statistics (biased variance) and, when
    running_mean / running_var are given, updates them in place with the unbiased variance:
    `running = (1 - momentum) * running + momentum * batch`. training=False normalizes with
    the running statistics. An empty batch gives an empty output (the statistics untouched),
    as PyTorch's.

    Args:
        input: `(N, C, *)`.
        running_mean, running_var: `(C,)` running statistics, or None (then training must be
            True).
        weight, bias: `(C,)` affine parameters, or None.
        training: use (and update) the batch statistics. Default: False.
        momentum: the running statistics' update factor. Default: 0.1.
        eps: added to the variance. Default: 1e-5.

    Shape:
        - Input: `(N, C)` or `(N, C, *)`. Output: the input's shape.

    Example:
        >>> x = torch.tensor([[1.0, 10.0], [3.0, 20.0]])
        >>> mean, var = torch.zeros(2), torch.ones(2)
        >>> F.batch_norm(x, mean, var, training=True)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]])
        >>> mean
        tensor([0.2000, 1.5000])
    """
    if input.numel() == 0:
        out = input * 1.0
        if weight is not None and weight.numel():
            out = out * weight.reshape(-1)[0]
        if bias is not None and bias.numel():
            out = out + bias.reshape(-1)[0]
        return out
    if input.ndim < 2:
        raise ValueError(f"batch_norm expects an input of at least 2 dims (N, C, *), got "
                         f"shape {list(input.shape)}")
    c = input.shape[1]
    for t, what in ((running_mean, "running_mean"), (running_var, "running_var"),
                    (weight, "weight"), (bias, "bias")):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{what} should contain {c} elements not {t.numel()}")
    n = input.numel() // c
    if training and n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got "
                         f"input size {list(input.shape)}")
    return _normalize(input, (0,) + tuple(range(2, input.ndim)), n, running_mean, running_var,
                      weight, bias, training, momentum, eps,
                      "running_mean and running_var must be defined in evaluation mode")


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Instance normalization: each (sample, channel) of `input` normalized over its own spatial
    dims.

    The running statistics (if given) take the batch average of the per-instance ones.

    Args:
        input: `(N, C, *)`.
        running_mean, running_var: `(C,)` or None.
        weight, bias: `(C,)` or None.
        use_input_stats: normalize with the input's statistics (default) rather than the
            running ones.
        momentum: the running statistics' update factor. Default: 0.1.
        eps: added to the variance. Default: 1e-5.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.instance_norm(torch.tensor([[[1.0, 3.0], [0.0, 10.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """
    if input.ndim < 3:
        raise ValueError(f"instance_norm expects (N, C, *) input with spatial dims, got shape "
                         f"{list(input.shape)}")
    n = int(np.prod(input.shape[2:]))
    if use_input_stats and n <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input "
                         f"size {list(input.shape)}")
    return _normalize(input, tuple(range(2, input.ndim)), n, running_mean, running_var,
                      weight, bias, use_input_stats, momentum, eps,
                      "Expected running_mean and running_var to be defined when "
                      "use_input_stats is false")


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Group normalization: each sample's C channels, split into num_groups groups, normalized
    over each group (and the spatial dims), then scaled and shifted per channel.

    Args:
        input: `(N, C, *)`.
        num_groups: the number of groups (it divides C).
        weight, bias: `(C,)` or None.
        eps: added to the variance. Default: 1e-5.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.group_norm(torch.tensor([[1.0, 3.0, 10.0, 30.0]]), 2)
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    if input.numel() == 0:
        out = input * 1.0
    else:
        _, centered, var = _centered(input.reshape(n, num_groups, -1), 2)
        out = (centered / _ops.sqrt(var + eps)).reshape(input.shape)
    return _affine(out, input, weight, bias)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Root-mean-square normalization: `x / sqrt(mean(x**2 over the normalized dims) + eps) *
    weight`.

    Args:
        input: `(*, *normalized_shape)`.
        normalized_shape: an int or the shape of the trailing dims to normalize over.
        weight: a tensor of normalized_shape, or None.
        eps: added to the mean square. Default: the input dtype's machine epsilon.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.rms_norm(torch.tensor([[3.0, 4.0], [1.0, 1.0]]), (2,))
        tensor([[0.8485, 1.1314],
                [1.0000, 1.0000]])
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape or k > input.ndim:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        eps = float(np.finfo(np.float64 if dtype_code(input.dtype) == "f64"
                             else np.float32).eps)
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input / _ops.sqrt((input * input).mean(dims, keepdim=True) + eps) if k else input
    return out * weight if weight is not None else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Local response normalization over channels: `x / (k + alpha * mean of x**2 over size
    neighbouring channels) ** beta` (the window zero-padded: size // 2 channels before, (size
    - 1) // 2 after).

    Args:
        input: `(N, C, *)`, at least 3-D.
        size: the number of neighbouring channels.
        alpha: Default: 1e-4.
        beta: Default: 0.75.
        k: Default: 1.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.local_response_norm(torch.tensor([[[1.0], [2.0], [3.0]]]), 2, alpha=1.0)
        tensor([[[0.7378],
                 [0.7816],
                 [0.6620]]])
    """
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    parts = []
    if before:
        parts.append(zeros(input.shape[0], before, *input.shape[2:], dtype=input.dtype))
    parts.append(sq)
    if after:
        parts.append(zeros(input.shape[0], after, *input.shape[2:], dtype=input.dtype))
    padded = _ops.cat(parts, 1) if len(parts) > 1 else sq
    total = padded[:, 0:c]
    for j in range(1, size):
        total = total + padded[:, j:j + c]
    div = (total * (alpha / size) + k).pow(beta)
    return input / div


def _norm(x, p, dim, keepdim):
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == math.inf:
        return x.abs().amax(dim, keepdim=keepdim)
    if p == 2:
        return _ops.sqrt((x * x).sum(dim, keepdim=keepdim))
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    return x.abs().pow(p).sum(dim, keepdim=keepdim).pow(1.0 / p)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """`input / max(||input||_p along dim, eps)`: vectors scaled to unit p-norm.

    Args:
        input: any shape.
        p: the norm's order. Default: 2.
        dim: the dimension of the vectors. Default: 1.
        eps: the norm's lower clamp. Default: 1e-12.
        out: an output tensor, or None.

    Shape:
        - Output: the input's shape.

    Example:
        >>> F.normalize(torch.tensor([[3.0, 4.0], [0.0, 2.0]]))
        tensor([[0.6000, 0.8000],
                [0.0000, 1.0000]])
    """
    res = input / _norm(input, p, dim, True).clamp(min=eps)
    return _ops.copy_(out, res) if out is not None else res


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine similarity `sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))` along dim
    (each input divided by its norm first, as PyTorch's; the clamp passes the gradient as
    PyTorch's does).

    Args:
        x1, x2: broadcastable tensors.
        dim: the dimension of the vectors. Default: 1.
        eps: the norms' lower clamp. Default: 1e-8.

    Shape:
        - Output: the broadcast shape without dim.

    Example:
        >>> x1 = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
        >>> x2 = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
        >>> F.cosine_similarity(x1, x2)
        tensor([ 0.7071, -1.0000])
    """
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1 = x1.reshape((1,) * (len(shape) - x1.ndim) + tuple(x1.shape)).expand(*shape)
    x2 = x2.reshape((1,) * (len(shape) - x2.ndim) + tuple(x2.shape)).expand(*shape)

    def unit(x):
        n = _ops.sqrt((x * x).sum(dim, keepdim=True))
        return x / (n + (n.clamp(min=eps) - n).detach())
    return (unit(x1) * unit(x2)).sum(dim)


def _renorm_rows(weight, indices, max_norm, norm_type):
    """PyTorch's embedding_renorm_: the referenced rows of `weight` with a norm above
    max_norm scaled (in place, no gradient) to max_norm."""
    with no_grad():
        rows = np.unique(indices.numpy().reshape(-1))
        if rows.size == 0:
            return
        idx = _tensor(rows.astype(np.int64))
        sel = weight[idx]
        norms = _norm(sel, norm_type, 1, True)
        scale = _ops.where(norms > max_norm, max_norm / (norms + 1e-7), norms * 0.0 + 1.0)
        mask = (arange(weight.shape[0]).unsqueeze(1) == idx.unsqueeze(0))    # (num, k)
        factor = (mask.to(weight.dtype) @ (scale - 1.0)) + 1.0
        weight.copy_(weight * factor)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """A lookup table: the rows of `weight` picked by integer indices.

    A negative index is refused (an IndexError at the next read), as PyTorch refuses it.

    Args:
        input: integer indices, any shape.
        weight: the table, `(num_embeddings, embedding_dim)`.
        padding_idx: this row gets no gradient. Default: None.
        max_norm: renormalize the referenced rows in place first so that their norm is at
            most this. Default: None.
        norm_type: the p of max_norm's norm. Default: 2.
        scale_grad_by_freq: scale the gradients by the inverse of the indices' frequency in
            the batch. Default: False.
        sparse: PyTorch's sparse gradients (dense here: same values).

    Shape:
        - Input: `(*)`. Output: `(*, embedding_dim)`.

    Example:
        >>> w = torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]])
        >>> F.embedding(torch.tensor([[2, 1], [0, 2]]), w)
        tensor([[[2., 4.],
                 [1., 1.]],
        <BLANKLINE>
                [[0., 0.],
                 [2., 4.]]])
    """
    if not isinstance(input, Tensor) or input.is_floating_point():
        raise TypeError("embedding indices must be an integer tensor (.long()), got "
                        + (str(input.dtype) if isinstance(input, Tensor)
                           else type(input).__name__))
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq / sparse gradients are not "
                                  "supported in torchic")
    if padding_idx is not None:
        if padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += weight.shape[0]
        elif padding_idx >= weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    out = _GatherRows.apply(weight, input)
    if padding_idx is not None:
        out = _ops.where((input == padding_idx).unsqueeze(-1), out.detach(), out)
    return out


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxes of bags of embedding rows, without making the rows.

    A 2-D input (B, L) is B bags of L indices; a 1-D input is cut into bags at `offsets`. An
    empty bag gives zeros; padding_idx's entries are left out of their bag.

    Args:
        input: `(B, L)`, or 1-D indices cut by offsets.
        weight: the table, `(num_embeddings, embedding_dim)`.
        offsets: for a 1-D input: the B bags' starts (or B + 1 bounds with
            include_last_offset).
        max_norm, norm_type, scale_grad_by_freq, sparse: as in embedding.
        mode: "sum", "mean" (default) or "max".
        per_sample_weights: the input's shape, mode="sum": scales each row.
        include_last_offset: offsets holds B + 1 bounds. Default: False.
        padding_idx: an index left out of its bag.

    Shape:
        - Output: `(B, embedding_dim)`.

    Example:
        >>> w = torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]])
        >>> F.embedding_bag(torch.tensor([0, 1, 2, 2]), w, torch.tensor([0, 3]), mode="sum")
        tensor([[3., 5.],
                [2., 4.]])
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        b, length = input.shape
        flat = input.reshape(-1)
        bag_of = np.repeat(np.arange(b), length)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = offsets.numpy().astype(np.int64)
        n = input.shape[0]
        if include_last_offset:
            bounds, b = starts, starts.shape[0] - 1
        else:
            bounds, b = np.append(starts, n), starts.shape[0]
        if b and (bounds[0] != 0 or np.any(np.diff(bounds) < 0) or bounds[-1] > n):
            raise RuntimeError("offsets must start at 0, grow, and not pass the input's "
                               "length")
        bag_of = np.full(n, -1, np.int64)
        for k in range(b):
            bag_of[bounds[k]:bounds[k + 1]] = k
        flat, psw = input, per_sample_weights
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    rows = _GatherRows.apply(weight, flat)                          # (n, dim)
    if psw is not None:
        rows = rows * psw.unsqueeze(-1)
    member = _tensor(bag_of).unsqueeze(0) == arange(b).unsqueeze(1)          # (b, n)
    if padding_idx is not None:
        member = member & (flat != padding_idx).unsqueeze(0)
    if mode == "max":
        masked = _ops.where(member.unsqueeze(-1), rows.unsqueeze(0), float("-inf"))
        best = masked.amax(1) if rows.shape[0] else zeros(b, weight.shape[1], dtype=weight.dtype)
        return _ops.where(member.any(1).unsqueeze(-1), best, 0.0) if rows.shape[0] else best
    m = member.to(weight.dtype)
    out = m @ rows
    if mode == "mean":
        out = out / m.sum(1, keepdim=True).clamp(min=1.0)
    return out
