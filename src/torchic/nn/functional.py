"""torchic.nn.functional: stateless layer functions, PyTorch spellings.

    import torchic.nn.functional as F
    loss = F.cross_entropy(logits, targets)

Each function's docstring says what it computes, its Args, Shape and an Example; the
examples assume `import torchic as torch`, `import torchic.nn as nn` and
`import torchic.nn.functional as F`, as PyTorch's assume `import torch` (the tests run every
example on every backend, and through PyTorch, which prints the same).

Everything here is composed from the op functions in torchic.api (which apply one
Function per primitive op, each with its backward), except layer_norm, gelu and causal
scaled_dot_product_attention, which apply the fused Functions of functions/fused.py.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import api as _ops, raw as _raw, scopes
from ..creation import _gen, arange, from_numpy_array, tensor as _tensor_from_data
from ..dispatcher import runtime
from ..dtypes import bool_, dtype_code, get_default_dtype
from ..functions import (CausalSoftmax as _CausalSoftmax, Dropout as _Dropout, Gelu as _Gelu,
                         LayerNorm as _LayerNorm, Linear as _Linear)
from ..generator import Generator
from ..tensor import Tensor
from . import loss_functions as _losses
# -- nn-rest (issue 42): activations, losses, norms, distances, embeddings --------------------
from .activation_functions import (celu, glu, hardshrink, hardsigmoid, hardswish,  # noqa: F401
                                   hardtanh, logsigmoid, mish, prelu, relu6, relu_, rrelu,  # noqa: F401
                                   selu, softplus, softshrink, softsign, tanhshrink,  # noqa: F401
                                   threshold, celu_, hardtanh_, rrelu_, selu_,  # noqa: F401
                                   threshold_)  # noqa: F401
# silu, leaky_relu, elu: defined beside the other activations (issue 44 moved them there)
from .activation_functions import elu, leaky_relu, silu  # noqa: F401
from .extra_functions import (alpha_dropout, channel_shuffle,  # noqa: F401
                              dropout1d, dropout2d, dropout3d,  # noqa: F401
                              feature_alpha_dropout)  # noqa: F401
from .loss_functions import (binary_cross_entropy,  # noqa: F401
                             binary_cross_entropy_with_logits, cosine_embedding_loss,  # noqa: F401
                             gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div,  # noqa: F401
                             l1_loss, margin_ranking_loss, multi_margin_loss,  # noqa: F401
                             multilabel_margin_loss, multilabel_soft_margin_loss, nll_loss,  # noqa: F401
                             pairwise_distance, poisson_nll_loss, smooth_l1_loss,  # noqa: F401
                             soft_margin_loss, triplet_margin_loss,  # noqa: F401
                             triplet_margin_with_distance_loss)  # noqa: F401
from .norm_functions import (batch_norm, cosine_similarity, embedding,  # noqa: F401
                             embedding_bag, group_norm, instance_norm, local_response_norm,  # noqa: F401
                             normalize, rms_norm)  # noqa: F401

# re-exported as they are
relu = _ops.relu
tanh = _ops.tanh
sigmoid = _ops.sigmoid
mse_loss = _ops.mse_loss
bilinear = _ops.bilinear     # products (issue 41): api/products.py
# reductions (api/statistics.py)
softmin = _ops.softmin


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """Softmax along `dim`: `exp(x_i) / sum_j exp(x_j)`, values in [0, 1] that sum to 1.

    Args:
        input: the input tensor.
        dim: the dimension the values sum to 1 along. Default: the last (PyTorch warns and
            guesses; torchic takes the last).
        dtype: if given, the input is cast to it first (e.g. to compute in float64).

    Shape:
        - Input: `(*)`. Output: the input's shape.

    Example:
        >>> F.softmax(torch.tensor([[1.0, 2.0, 3.0]]), dim=1)
        tensor([[0.0900, 0.2447, 0.6652]])
    """
    input = _in_dtype(input, dtype)
    return _ops.softmax(input, -1 if dim is None else dim)


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """`log(softmax(x))` along `dim`, computed stably (`x - logsumexp(x)`).

    Args:
        input: the input tensor.
        dim: the dimension to normalize along. Default: the last.
        dtype: if given, the input is cast to it first.

    Shape:
        - Input: `(*)`. Output: the input's shape.

    Example:
        >>> F.log_softmax(torch.tensor([[1.0, 2.0, 3.0]]), dim=1)
        tensor([[-2.4076, -1.4076, -0.4076]])
    """
    input = _in_dtype(input, dtype)
    return _ops.log_softmax(input, -1 if dim is None else dim)


def _in_dtype(input, dtype):
    """PyTorch's dtype= of softmax / log_softmax: the input cast to it first."""
    return input if dtype is None else input.to(dtype_code(dtype))


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """The affine map `input @ weight.T + bias` (nn.Linear's forward).

    A >= 2-D input makes one op (the bias added as the product is stored) and gets the
    weight's gradient in the weight's layout, as PyTorch's addmm.

    Args:
        input: `(*, in_features)`.
        weight: `(out_features, in_features)` or `(in_features,)`.
        bias: `(out_features,)` or None.

    Shape:
        - Output: `(*, out_features)` (`(*)` for a 1-D weight).

    Example:
        >>> w = torch.tensor([[1.0, 0.0], [0.5, -1.0], [2.0, 1.0]])
        >>> F.linear(torch.tensor([[1.0, 2.0]]), w, torch.tensor([0.0, 1.0, -1.0]))
        tensor([[ 1.0000, -0.5000,  3.0000]])
    """
    if (isinstance(input, Tensor) and input.ndim >= 2 and isinstance(weight, Tensor) and
            weight.ndim == 2 and (bias is None or isinstance(bias, Tensor) and bias.ndim == 1)
            and input.dtype.is_floating_point):
        return _Linear.apply(input, weight, bias)
    out = _ops.matmul(input, weight.T)
    return out if bias is None else out + bias


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """The cross-entropy loss of unnormalized logits: `-log softmax(input)[target]` over
    the class dimension (1, or 0 for an unbatched input), i.e. `nll_loss(log_softmax(input))`.

    Args:
        input: float logits.
        target: class indices (integers in `[0, C)`), or class probabilities of the input's
            shape.
        weight: `(C,)` per-class weights (the mean divides by the counted targets' weights).
        ignore_index: targets equal to it add nothing and are not counted by the mean.
            Default: -100.
        reduction: `"mean"` (default), `"sum"` or `"none"` (one loss per target).
        label_smoothing: in [0, 1]: mixes the target with the uniform distribution.
        size_average, reduce: PyTorch's deprecated spellings of `reduction`.

    Shape:
        - Input: `(N, C)`, `(C,)` or `(N, C, d1, ...)`.
        - Target: `(N,)`, `()` or `(N, d1, ...)` of indices, or the input's shape.
        - Output: a scalar, or the target's shape with `reduction="none"`.

    Example:
        >>> logits = torch.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]])
        >>> F.cross_entropy(logits, torch.tensor([0, 1]))
        tensor(0.3964)
        >>> F.cross_entropy(logits, torch.tensor([0, 1]), reduction="none")
        tensor([0.2413, 0.5514])
    """
    reduction = _losses.legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError("cross_entropy(input, target) takes two tensors")
    nd = input.ndim
    if nd == 0:
        raise ValueError("cross_entropy: input must have at least 1 dimension (the classes)")
    if weight is not None or target.is_floating_point():
        return _losses.weighted_cross_entropy(input, target, weight, ignore_index, reduction,
                                              label_smoothing)
    if nd <= 2 and not label_smoothing and not target.is_floating_point():
        # the usual (N, C) / (C,) case: one fused op (ignored rows add 0, the mean counts
        # the others); torchic.cross_entropy checks the shapes
        out = _ops.cross_entropy(input, target, reduction, ignore_index)
        return out.reshape(()) if nd == 1 and reduction == "none" else out
    cdim = 0 if nd == 1 else 1
    classes = input.shape[cdim]
    if input.ndim > 2:     # (N, C, d1, ...) -> (N * d1 * ..., C): classes last
        input = input.permute(0, *range(2, input.ndim), 1)
    expected = tuple(input.shape[:-1]) if input.ndim > 1 else ()
    if tuple(target.shape) != expected:
        raise ValueError(f"cross_entropy: expected target of shape {list(expected)} for input "
                         f"of {classes} classes, got {list(target.shape)}")
    if not label_smoothing:     # (N, C, d1, ...): the fused op on its rows
        losses = _ops.cross_entropy(input.reshape(-1, classes), target.reshape(-1), reduction,
                                    ignore_index)
        return losses.reshape(target.shape) if reduction == "none" else losses
    rows, flat = input.reshape(-1, classes), target.reshape(-1)
    losses = _ops.cross_entropy(rows, flat, "none", ignore_index)    # 0 where ignored
    uniform = -_ops.log_softmax(rows, -1).mean(-1)
    # (where, not * valid: an all-ignored mean's 1/0 gradient stays out of the ignored rows;
    # an ignore_index outside int32 matches no target)
    valid = flat != ignore_index if -2 ** 31 <= ignore_index < 2 ** 31 else None
    if valid is not None:
        uniform = _ops.where(valid, uniform, 0.0)
    losses = losses * (1.0 - label_smoothing) + uniform * label_smoothing
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    if valid is None:
        return losses.mean()
    return losses.sum() / valid.sum()      # 0 / 0 = nan when every target is ignored


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """`cross_entropy(linear(input, linear_weight, linear_bias), target)` in one call.

    Args:
        input: `(N, in)` or `(in,)`.
        linear_weight: `(C, *out_features, in)` (out_features: a K-dimensional loss).
        target: class indices `(N, *out_features)`, or probabilities of the logits' shape
            `(N, C, *out_features)`.
        linear_bias: `(C, *out_features)` or None.
        weight, reduction, ignore_index, label_smoothing: as in `cross_entropy`.
        options: PyTorch's chunking strategy: it changes how PyTorch splits the work, not
            the result (torchic computes the logits whole).

    Example:
        >>> w = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> F.linear_cross_entropy(torch.tensor([[2.0, 0.0]]), w, torch.tensor([0]))
        tensor(0.1269)
    """
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           f"respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    n = classes * int(np.prod(out_features, dtype=np.int64))
    w = linear_weight.reshape(n, in_features)
    b = linear_bias.reshape(n) if linear_bias is not None else None
    logits = _ops.matmul(input, w.T)
    if b is not None:
        logits = logits + b
    logits = logits.reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                          ignore_index=-100 if ignore_index is None else ignore_index,
                          label_smoothing=label_smoothing)


_eye_cache = {}
_EYE_MAX = 1024


def _eye(n):
    rt = runtime()
    t = _eye_cache.get(n)
    if t is None or t._storage.runtime is not rt or t._storage.block is None:
        if len(_eye_cache) > 16:
            _eye_cache.clear()
        with scopes.untracked():   # a cache: never disposed by a scope
            t = _tensor_from_data(np.eye(n, dtype=np.float32))
        _eye_cache[n] = t
    return t


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """One-hot rows: `out[..., c] = 1` where `tensor[...] == c`, else 0 (int64).

    `F.one_hot(x, num_classes=27).float()` gives float rows. Classes outside
    `[0, num_classes)` are an error (raised at the next read, like any kernel error).

    Args:
        tensor: integer class values, any shape.
        num_classes: the rows' length; -1 (default) uses `max(tensor) + 1`, which reads the
            tensor.

    Shape:
        - Input: `(*)`. Output: `(*, num_classes)`.

    Example:
        >>> F.one_hot(torch.tensor([0, 2, 1]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]])
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot takes an integer tensor, got {type(tensor).__name__}")
    if tensor.is_floating_point():
        raise TypeError(f"one_hot is only applicable to index tensors (.long()), got "
                        f"{tensor.dtype}")
    if num_classes == -1:
        values = tensor.numpy()
        if values.size == 0:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor")
        if values.min() < 0:
            raise ValueError("one_hot: class values must be non-negative")
        num_classes = int(values.max()) + 1
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be a positive int, got {num_classes!r}")
    if num_classes <= _EYE_MAX:
        # rows of the identity picked by a bounds-checked gather: no host read
        rows = _eye(num_classes)[tensor]
    else:
        values = tensor.numpy()
        if values.size and (values.min() < 0 or values.max() >= num_classes):
            raise ValueError(f"one_hot: class values must be in [0, {num_classes})")
        rows = tensor.unsqueeze(-1) == arange(num_classes)
    return rows.long()


def _dropout_key(generator):
    """Two raw 32-bit draws of the generator as an int32 (2,) tensor, made as rand's tensors
    are: the draw function lets torchic.compile's replays draw a fresh key every call."""
    def draw():
        return _gen(generator).random(2).view(np.int32)
    return from_numpy_array(draw(), "i32", False, draw)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False, *, generator: Generator | None = None) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only).

    Args:
        input: the input tensor (an integer one gives the default float dtype).
        p: the probability of zeroing an element. Default: 0.5.
        training: apply dropout if True; return the input unchanged otherwise.
        inplace: not supported (a NotImplementedError): use the result.
        generator: the generator the mask's key is drawn from. Default: the global one.

    Shape:
        - Input: `(*)`. Output: the input's shape.

    Example:
        >>> F.dropout(torch.ones(4), 0.5, training=False)
        tensor([1., 1., 1., 1.])
        >>> y = F.dropout(torch.ones(1000), 0.5)
        >>> bool(((y == 0) | (y == 2)).all())
        True

    One primitive (ops.py's dropout) multiplies by the mask, computed where the tensor lives
    by a counter-based generator (Threefry-2x32) from a 2-word key drawn from `generator`
    (default: the seeded default generator), so a seed gives the same mask on every backend.
    The backward recomputes the mask from the key: no mask is ever stored. (Like PyTorch's
    CUDA masks, they differ from PyTorch's CPU masks.)
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
    if inplace:
        raise NotImplementedError("dropout(inplace=True) is not supported; use the result")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    _raw.check_dropout_size(input.shape)
    if not input.is_floating_point():   # (an int input gives the default float)
        input = input.to(get_default_dtype())
    return _Dropout.apply(input, _dropout_key(generator), p=float(p))


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Layer normalization over the trailing dims named by `normalized_shape`:
    `(x - mean) / sqrt(var + eps) * weight + bias` (biased variance), as nn.LayerNorm.

    Args:
        input: the input tensor.
        normalized_shape: an int or the shape of the trailing dims to normalize over.
        weight, bias: tensors of `normalized_shape` (the elementwise affine), or None.
        eps: added to the variance. Default: 1e-5.

    Shape:
        - Input: `(*, *normalized_shape)`. Output: the input's shape.

    Example:
        >>> F.layer_norm(torch.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 5.0]]), (3,))
        tensor([[-1.2247,  0.0000,  1.2247],
                [-0.7071, -0.7071,  1.4142]])
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[-k:]) != normalized_shape:
        raise ValueError(f"layer_norm: input of shape {list(input.shape)} does not end with "
                         f"normalized_shape {list(normalized_shape)}")
    c = int(np.prod(normalized_shape))
    for t, what in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"layer_norm: {what} of shape {list(t.shape)} for "
                               f"normalized_shape {list(normalized_shape)}")
    rows = input.reshape(int(np.prod(input.shape[:-k], dtype=np.int64)), c)   # one fused op
    out = _LayerNorm.apply(rows, None if weight is None else weight.reshape(c),
                           None if bias is None else bias.reshape(c), eps=eps)
    return out.reshape(input.shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """`input.flatten(start_dim, end_dim)`: dims start_dim..end_dim merged into one.

    Args:
        input: the input tensor.
        start_dim, end_dim: the first and last dims to merge. Default: all (0, -1).

    Example:
        >>> F.flatten(torch.ones(2, 3, 4), 1).shape
        torchic.Size([2, 12])
    """
    return input.flatten(start_dim, end_dim)


# -- activations (nn.GELU, nn.SiLU, ... in activation.py apply these) -------------------------


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """The Gaussian error linear unit, elementwise: `x * Phi(x)` (Phi: the standard normal
    CDF), or with `approximate="tanh"`
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.

    Args:
        input: the input tensor.
        approximate: `"none"` (default) or `"tanh"`.

    Example:
        >>> F.gelu(torch.tensor([-2.0, -0.5, 0.0, 1.0]))
        tensor([-0.0455, -0.1543,  0.0000,  0.8413])
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _Gelu.apply(input, approximate=approximate)     # one fused kernel each way


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """Attention: `softmax(query @ key^T * scale + mask) @ value`.

    Args:
        query, key, value: `(..., L, E)`, `(..., S, E)` and `(..., S, Ev)`.
        attn_mask: broadcast to the `(..., L, S)` scores: a bool mask keeps the keys where it
            is True (the others are -inf before the softmax); a float mask is added.
        dropout_p: drops attention weights with this probability (always, as PyTorch's
            function does: pass 0.0 in evaluation).
        is_causal: query i sees keys j <= i (PyTorch's top-left causal mask; one fused
            masked softmax kernel). Not with attn_mask.
        scale: the scores' factor. Default: `1 / sqrt(E)`.
        enable_gqa: key / value may have fewer heads (dim -3) than query, each serving a
            group of query heads.

    Shape:
        - Output: `(..., L, Ev)`.

    Example:
        >>> q = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
        >>> v = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> F.scaled_dot_product_attention(q, q, v, is_causal=True)
        tensor([[[1.0000, 2.0000],
                 [2.3395, 3.3395]]])
    """
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key, value = _gqa_expand(query, key), _gqa_expand(query, value)
    e = query.shape[-1]
    att = _ops.matmul(query, key.transpose(-2, -1)) * (e ** -0.5 if scale is None else scale)
    if attn_mask is not None:
        att = _ops.masked_fill(att, _ops.logical_not(attn_mask), float("-inf")) \
            if attn_mask.dtype == bool_ else att + attn_mask
    att = _CausalSoftmax.apply(att, diagonal=0) if is_causal else _ops.softmax(att, -1)
    if dropout_p > 0.0:
        att = dropout(att, dropout_p)
    return _ops.matmul(att, value)


def _gqa_expand(query, kv):
    """Grouped-query attention: each of kv's Hk heads serves Hq / Hk query heads in turn
    (PyTorch's repeat_interleave over dim -3)."""
    hq, hk = query.shape[-3], kv.shape[-3]
    if hk == 0 or hq % hk:
        raise RuntimeError(f"scaled_dot_product_attention: number of heads in key/value "
                           f"({hk}) must divide number of heads in query ({hq})")
    lead = tuple(kv.shape[:-3])
    return kv.unsqueeze(-3).expand(*lead, hk, hq // hk, *kv.shape[-2:]).reshape(
        *lead, hq, *kv.shape[-2:])


# convolution, pooling, padding and resampling (issue 42: functional_conv / functional_pool)
from .functional_conv import (constant_pad_nd, conv1d, conv2d, conv_transpose1d,  # noqa: E402, F401
                              conv_transpose2d, fold, pad, unfold)
from .functional_pool import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: E402, F401
                              adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d, avg_pool2d,
                              max_pool1d, max_pool2d, max_unpool1d, max_unpool2d)
from .functional_resample import (interpolate, pixel_shuffle,  # noqa: E402, F401
                                  pixel_unshuffle, upsample, upsample_bilinear,
                                  upsample_nearest)
# power-average pooling (issue 42 ModuleInfo: nn.LPPool1d / nn.LPPool2d)
from .lp_pool import lp_pool1d, lp_pool2d  # noqa: E402, F401

# out= (issue 41): PyTorch's out keyword, from api/out.py's table
from ..api.out import out_variants as _out_variants  # noqa: E402
globals().update(_out_variants(globals(), "nn.functional."))
