"""The Transformer layers (PyTorch's nn.Transformer family, "Attention Is All You Need").

TransformerEncoderLayer / TransformerDecoderLayer: self-attention (and cross-attention), a
two-layer feed-forward block, residual connections, LayerNorm after (norm_first=False) or
before (norm_first=True) each block, dropout. TransformerEncoder / TransformerDecoder stack
deep copies of a layer; Transformer puts an encoder and a decoder together. Names and
submodules are PyTorch's (self_attn, multihead_attn, linear1, linear2, norm1..3, dropout1..3),
so state_dicts load both ways. enable_nested_tensor and mask_check are accepted (PyTorch's
fast paths; the results do not depend on them).
"""

import copy
from collections.abc import Callable
from typing import Any

from .. import api as _ops, creation
from ..tensor import Tensor
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .layers import Dropout, LayerNorm, Linear
from .module import Module, ModuleList

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]


def _activation(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")
    return activation


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class _Sublayers(Module):
    """What the encoder and decoder layers share: their submodules, in PyTorch's order
    (the attentions named by `attentions`, linear1, dropout, linear2, norm1..k,
    dropout1..k for k = the attentions + the feed-forward block), and the sublayer
    plumbing: `_residual` (x + block(norm(x)) pre-norm, norm(x + block(x)) post-norm),
    `_attend` (attention then its dropout) and `_ff_block` (the last dropout)."""

    def __init__(self, attentions, d_model, nhead, dim_feedforward, dropout, activation,
                 layer_norm_eps, batch_first, norm_first, bias, dtype):
        super().__init__()
        for name in attentions:
            setattr(self, name, MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                   batch_first=batch_first, dtype=dtype))
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        blocks = range(1, len(attentions) + 2)
        for i in blocks:
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        for i in blocks:
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)
        if dtype is not None:
            self.to(dtype)

    def _residual(self, x, norm, block, *args):
        if self.norm_first:
            return x + block(norm(x), *args)
        return norm(x + block(x, *args))

    @staticmethod
    def _attend(attn, dropout, x, mem, attn_mask, key_padding_mask, is_causal):
        x = attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                 need_weights=False, is_causal=is_causal)[0]
        return dropout(x)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        return self._attend(self.self_attn, self.dropout1, x, x, attn_mask, key_padding_mask,
                            is_causal)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return getattr(self, self._FF_DROPOUT)(x)


class TransformerEncoderLayer(_Sublayers):
    """Self-attention then a feed-forward block, each with a residual connection and
    LayerNorm (PyTorch's nn.TransformerEncoderLayer).

    Args:
        d_model: E, the model width.
        nhead: attention heads.
        dim_feedforward: the feed-forward block's hidden width (default 2048).
        dropout: dropout after attention, inside and after the feed-forward (default 0.1).
        activation: "relu" (default), "gelu" or a callable.
        layer_norm_eps: LayerNorm's eps.
        batch_first: (N, S, E) inputs (default (S, N, E)).
        norm_first: LayerNorm before each block (pre-norm) instead of after.
        bias: biases in the Linear and LayerNorm layers.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False).

    Shape:
        - src: `(S, N, E)` (`(N, S, E)` with batch_first) or `(S, E)`. Output: src's shape.

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, batch_first=True)
        >>> layer(torchic.randn(2, 10, 32)).shape
        torchic.Size([2, 10, 32])
    """

    _FF_DROPOUT = "dropout2"

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(("self_attn",), d_model, nhead, dim_feedforward, dropout, activation,
                         layer_norm_eps, batch_first, norm_first, bias, dtype)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        x = self._residual(src, self.norm1, self._sa_block, src_mask, src_key_padding_mask,
                           is_causal)
        return self._residual(x, self.norm2, self._ff_block)


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer run in turn, then an optional norm.

    Args:
        encoder_layer: the TransformerEncoderLayer copied.
        num_layers: how many copies.
        norm: a module applied to the last layer's output (e.g. LayerNorm), or None.
        enable_nested_tensor: accepted and changes nothing (PyTorch's fast-path switch).
        mask_check: accepted and changes nothing (PyTorch's fast-path switch).

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None).

    Shape:
        - src: `(S, N, E)` (`(N, S, E)` with the layer's batch_first). Output: src's shape.

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=32, nhead=4)
        >>> encoder = nn.TransformerEncoder(layer, num_layers=2)
        >>> encoder(torchic.randn(10, 2, 32)).shape
        torchic.Size([10, 2, 32])
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoderLayer(_Sublayers):
    """Self-attention over the target, attention over the encoder's memory, then a
    feed-forward block, each with a residual connection and LayerNorm (PyTorch's
    nn.TransformerDecoderLayer).

    Args:
        d_model: E, the model width.
        nhead: attention heads.
        dim_feedforward: the feed-forward block's hidden width (default 2048).
        dropout: dropout after attention, inside and after the feed-forward (default 0.1).
        activation: "relu" (default), "gelu" or a callable.
        layer_norm_eps: LayerNorm's eps.
        batch_first: (N, S, E) inputs (default (S, N, E)).
        norm_first: LayerNorm before each block (pre-norm) instead of after.
        bias: biases in the Linear and LayerNorm layers.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False).

    Shape:
        - tgt: `(T, N, E)`; memory: `(S, N, E)` (N first with batch_first). Output: tgt's.

    Example:
        >>> layer = nn.TransformerDecoderLayer(d_model=32, nhead=4)
        >>> layer(torchic.randn(7, 2, 32), torchic.randn(10, 2, 32)).shape
        torchic.Size([7, 2, 32])
    """

    _FF_DROPOUT = "dropout3"

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(("self_attn", "multihead_attn"), d_model, nhead, dim_feedforward,
                         dropout, activation, layer_norm_eps, batch_first, norm_first, bias,
                         dtype)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = self._residual(tgt, self.norm1, self._sa_block, tgt_mask, tgt_key_padding_mask,
                           tgt_is_causal)
        x = self._residual(x, self.norm2, self._mha_block, memory, memory_mask,
                           memory_key_padding_mask, memory_is_causal)
        return self._residual(x, self.norm3, self._ff_block)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        return self._attend(self.multihead_attn, self.dropout2, x, mem, attn_mask,
                            key_padding_mask, is_causal)


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer run in turn over (tgt, memory), then an
    optional norm.

    Args:
        decoder_layer: the TransformerDecoderLayer copied.
        num_layers: how many copies.
        norm: a module applied to the last layer's output (e.g. LayerNorm), or None.

    Shape:
        - tgt: `(T, N, E)`; memory: `(S, N, E)` (N first with batch_first). Output: tgt's.

    Example:
        >>> layer = nn.TransformerDecoderLayer(d_model=32, nhead=4)
        >>> decoder = nn.TransformerDecoder(layer, num_layers=2)
        >>> decoder(torchic.randn(7, 2, 32), torchic.randn(10, 2, 32)).shape
        torchic.Size([7, 2, 32])
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        out = tgt
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """An encoder-decoder Transformer (PyTorch's nn.Transformer): every weight matrix drawn
    again with xavier_uniform_ after construction, as PyTorch does.

    Args:
        d_model: E, the model width. Default: 512.
        nhead: attention heads. Default: 8.
        num_encoder_layers: encoder layers. Default: 6.
        num_decoder_layers: decoder layers. Default: 6.
        dim_feedforward: the feed-forward blocks' hidden width. Default: 2048.
        dropout: as TransformerEncoderLayer's. Default: 0.1.
        activation: "relu" (default), "gelu" or a callable.
        custom_encoder: a module used as the encoder instead, or None.
        custom_decoder: a module used as the decoder instead, or None.
        layer_norm_eps: LayerNorm's eps.
        batch_first: (N, S, E) inputs (default (S, N, E)).
        norm_first: pre-norm layers.
        bias: biases in the Linear and LayerNorm layers.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    src_is_causal=None, tgt_is_causal=None, memory_is_causal=False) -> (T, N, E) (or
    (N, T, E) with batch_first).

    Shape:
        - src: `(S, N, E)`; tgt: `(T, N, E)` (N first with batch_first). Output: `(T, N, E)`.

    Example:
        >>> model = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2,
        ...                        num_decoder_layers=2, dim_feedforward=64)
        >>> mask = nn.Transformer.generate_square_subsequent_mask(7)
        >>> model(torchic.randn(10, 2, 32), torchic.randn(7, 2, 32), tgt_mask=mask).shape
        torchic.Size([7, 2, 32])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        for name, custom, layer_cls, stack_cls, n in (
                ("encoder", custom_encoder, TransformerEncoderLayer, TransformerEncoder,
                 num_encoder_layers),
                ("decoder", custom_decoder, TransformerDecoderLayer, TransformerDecoder,
                 num_decoder_layers)):
            if custom is None:
                layer = layer_cls(d_model, nhead, dim_feedforward, dropout, activation,
                                  layer_norm_eps, batch_first, norm_first, bias, dtype=dtype)
                custom = stack_cls(layer, n, LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
            setattr(self, name, custom)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batched = src.ndim == 3
        if not self.batch_first and src.shape[1] != tgt.shape[1] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.shape[0] != tgt.shape[0] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The (sz, sz) float causal mask: -inf above the diagonal, 0 on and below it."""
        return _ops.triu(creation.full((sz, sz), float("-inf"), dtype=dtype), diagonal=1)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
