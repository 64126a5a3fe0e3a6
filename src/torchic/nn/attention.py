"""Multi-head attention: F.multi_head_attention_forward and nn.MultiheadAttention.

PyTorch's signatures, parameter names (in_proj_weight (3E, E) or q/k/v_proj_weight when kdim /
vdim differ, in_proj_bias, out_proj, bias_k / bias_v), init and mask conventions: in these two
a True in a bool attn_mask / key_padding_mask means "may NOT attend" (the reverse of
scaled_dot_product_attention's bool mask); a float mask is added to the scores. Composites of
linear, matmul, softmax and dropout (differentiable as they are).
"""

import math
from typing import Any

from .. import api as _ops, creation
from ..dtypes import bool_
from ..tensor import Tensor
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["multi_head_attention_forward", "MultiheadAttention"]


def _float_mask(mask, dtype, what):
    """A bool mask (True = masked) as 0 / -inf of dtype; a float mask as it is."""
    if mask is None:
        return None
    if mask.dtype == bool_:
        return _ops.masked_fill(creation.zeros(tuple(mask.shape), dtype=dtype), mask,
                                float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {what} are supported")
    return mask


def _pad_last(t, value=0.0):
    """t with one more column on its last dim (PyTorch's F.pad(t, (0, 1)))."""
    return _ops.cat([t, creation.full((*t.shape[:-1], 1), value, dtype=t.dtype)], -1)


def _heads(t, static, what, batch_heads, head_dim):
    """(S, N, E) keys or values as (N * H, S, head_dim), or the given `static` ones (checked
    to be (N * H, S, head_dim))."""
    if static is None:
        return t.reshape(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if tuple(static.shape[::2]) != (batch_heads, head_dim):
        raise AssertionError(f"expecting {what} of shape (N * H, S, {head_dim}), got "
                             f"{tuple(static.shape)}")
    return static


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
        out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """The forward of nn.MultiheadAttention (PyTorch's function, sequence-first): the inputs
    projected per head, `softmax(q k^T / sqrt(E / num_heads) + mask) v` per head, the heads
    concatenated and projected.

    Args:
        query, key, value: `(L, N, E)`, `(S, N, E_k)`, `(S, N, E_v)`, or unbatched without N.
        embed_dim_to_check: E, checked against the query's last dim.
        num_heads: the number of heads (it divides E).
        in_proj_weight, in_proj_bias: the packed q, k, v projections `(3E, E)` and `(3E,)`
            (or None).
        bias_k, bias_v: `(1, 1, E)` biases appended to key / value as one more position, or
            None.
        add_zero_attn: append a position of zeros to key and value.
        dropout_p: the attention weights' dropout probability (in training).
        out_proj_weight, out_proj_bias: the output projection `(E, E)` and `(E,)` (or None).
        training: apply dropout. Default: True.
        key_padding_mask: `(N, S)` or `(S,)`: True (or -inf in a float mask) where a key is
            padding.
        need_weights: also return the attention weights. Default: True.
        attn_mask: `(L, S)` or `(N * num_heads, L, S)`: bool (True: masked) or float (added).
        use_separate_proj_weight: use q_proj_weight / k_proj_weight / v_proj_weight instead
            of in_proj_weight (kdim / vdim differ from E).
        q_proj_weight, k_proj_weight, v_proj_weight: the separate projections `(E, E)`, `(E,
            E_k)`, `(E, E_v)`.
        static_k, static_v: precomputed keys / values `(N * num_heads, S, E / num_heads)`, or
            None.
        average_attn_weights: average the returned weights over the heads. Default: True.
        is_causal: a hint that attn_mask is the causal mask (PyTorch's).

    Shape:
        - Output: `(attn_output (L, N, E), attn_weights)`: weights `(N, L, S)` averaged over
          heads, or `(N, num_heads, L, S)`; None when need_weights=False.

    Example:
        >>> E = 4
        >>> w, b = torch.eye(E).repeat(3, 1), torch.zeros(3 * E)
        >>> x = torch.tensor([[[1.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0, 0.0]]])
        >>> rest = (2, w, b, None, None, False, 0.0, torch.eye(E), None)
        >>> out, weights = F.multi_head_attention_forward(x, x, x, E, *rest)
        >>> out.shape, weights
        (torchic.Size([2, 1, 4]), tensor([[[0.5849, 0.4151],
                 [0.4151, 0.5849]]]))
    """
    batched = query.ndim == 3
    if batched:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 2-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
    elif query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to "
                                 f"be 2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    else:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                             f"match value's {tuple(value.shape[:2])}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    dtype = query.dtype
    key_padding_mask = _float_mask(key_padding_mask, dtype, "key_padding_mask")
    attn_mask = _float_mask(attn_mask, dtype, "attn_mask")

    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:      # self-attention: one product
            q, k, v = F.linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            wq, wk, wv = in_proj_weight.chunk(3)
            bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
            q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
        bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = (F.linear(query, q_proj_weight, bq), F.linear(key, k_proj_weight, bk),
                   F.linear(value, v_proj_weight, bv))

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is "
                                   f"{tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is "
                                   f"{tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key / value.")
        k = _ops.cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = _ops.cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    # (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads(v, static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        zero = creation.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype)
        k = _ops.cat([k, zero], 1)
        v = _ops.cat([v, zero], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                 f"got {tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    scores = _ops.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = _ops.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    out = _ops.matmul(weights, v)                            # (N * H, L, head_dim)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights


class MultiheadAttention(Module):
    """Attention over num_heads parallel heads (PyTorch's nn.MultiheadAttention):
    ``out = concat(head_1, ..., head_h) W_O``, ``head_i = softmax(Q W_i^Q (K W_i^K)^T /
    sqrt(d)) V W_i^V``.

    Args:
        embed_dim: E, the model width (split over num_heads heads).
        num_heads: heads (E must be divisible by it).
        dropout: dropout on the attention weights (training only).
        bias: in_proj_bias and out_proj.bias (default True).
        add_bias_kv: learnt bias_k / bias_v rows appended to key and value.
        add_zero_attn: a row of zeros appended to key and value.
        kdim, vdim: key / value widths (default E; when they differ, q/k/v_proj_weight
            replace in_proj_weight).
        batch_first: (N, L, E) inputs and outputs instead of (L, N, E).
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (attn_output, attn_weights or None).
    A True in a bool mask means that position may NOT be attended.

    Shape:
        - query `(L, N, E)`, key `(S, N, kdim)`, value `(S, N, vdim)` (N first with
          batch_first; unbatched without N).
        - key_padding_mask `(N, S)`; attn_mask `(L, S)` or `(N * num_heads, L, S)`.
        - attn_output `(L, N, E)`; attn_weights `(N, L, S)` averaged over the heads, else
          `(N, num_heads, L, S)`.

    Example:
        >>> mha = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torchic.randn(2, 5, 16)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (torchic.Size([2, 5, 16]), torchic.Size([2, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = True, add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(creation.empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(creation.empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(creation.empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim,
                                                           dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if dtype is not None:
            self.out_proj.to(dtype)
        if add_bias_kv:
            self.bias_k = Parameter(creation.empty(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(creation.empty(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.ndim == 3
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
