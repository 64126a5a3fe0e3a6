"""nn.MultiheadAttention, F.multi_head_attention_forward, F.scaled_dot_product_attention and the
Transformer family against PyTorch on every backend: outputs, attention weights, input and
parameter gradients, state_dicts loaded both ways."""

import numpy as np
import pytest
import torch

import torchic
import torchic.nn as tnn
import torchic.nn.functional as F

RTOL, ATOL = 2e-4, 3e-5


def tt(x):
    return None if x is None else torchic.tensor(x.detach().numpy())


def close(got, want, what):
    got, want = got.detach().numpy(), want.detach().numpy()
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def load(tm, m):
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: tt(v) for k, v in tm.state_dict().items()})


def check_grads(tm, m, pairs):
    for k, (a, b) in enumerate(pairs):
        close(b.grad, a.grad, f"input {k} grad")
    for (name, p), q in zip(tm.named_parameters(), m.parameters()):
        if p.grad is None:
            assert q.grad is None, name
        else:
            close(q.grad, p.grad, f"{name}.grad")


MHA = [dict(), dict(batch_first=True), dict(add_bias_kv=True, add_zero_attn=True),
       dict(kdim=5, vdim=3), dict(bias=False)]


@pytest.mark.parametrize("kw", MHA, ids=["plain", "batch_first", "bias_kv_zero_attn", "kvdim",
                                          "nobias"])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention(backend, kw, average):
    torch.manual_seed(0)
    tm, m = torch.nn.MultiheadAttention(8, 2, **kw), tnn.MultiheadAttention(8, 2, **kw)
    load(tm, m)
    bf = kw.get("batch_first", False)
    lead = (lambda n: (3, n)) if bf else (lambda n: (n, 3))
    q = torch.randn(*lead(4), 8, requires_grad=True)
    k = torch.randn(*lead(6), kw.get("kdim", 8), requires_grad=True)
    v = torch.randn(*lead(6), kw.get("vdim", 8), requires_grad=True)
    am = torch.rand(4, 6) > 0.7
    am[:, 0] = False
    kpm = torch.zeros(3, 6, dtype=torch.bool)
    kpm[1, 4:] = True
    ins = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    ins_i = [tt(x).requires_grad_() for x in (q, k, v)]
    o, w = tm(*ins, key_padding_mask=kpm, attn_mask=am, average_attn_weights=average)
    oi, wi = m(*ins_i, key_padding_mask=tt(kpm), attn_mask=tt(am), average_attn_weights=average)
    close(oi, o, "output")
    close(wi, w, "weights")
    ro, rw = torch.randn(o.shape), torch.randn(w.shape)
    ((o * ro).sum() + (w * rw).sum()).backward()
    ((oi * tt(ro)).sum() + (wi * tt(rw)).sum()).backward()
    check_grads(tm, m, zip(ins, ins_i))


def test_multihead_self_attention_float_mask_unbatched(backend):
    torch.manual_seed(1)
    tm, m = torch.nn.MultiheadAttention(8, 4), tnn.MultiheadAttention(8, 4)
    load(tm, m)
    x, fm = torch.randn(5, 2, 8), torch.randn(5, 5)
    o, _ = tm(x, x, x, attn_mask=fm, need_weights=False)
    xi = tt(x)
    oi, wi = m(xi, xi, xi, attn_mask=tt(fm), need_weights=False)
    assert wi is None
    close(oi, o, "self attention")
    x = torch.randn(5, 8)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5)
    o, w = tm(x, x, x, attn_mask=causal, is_causal=True)
    oi, wi = m(tt(x), tt(x), tt(x), attn_mask=tt(causal), is_causal=True)
    close(oi, o, "unbatched output")
    close(wi, w, "unbatched weights")
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(tt(x), tt(x), tt(x), is_causal=True)


def test_multihead_state_dict_back_to_torch(backend):
    torchic.manual_seed(2)
    m = tnn.MultiheadAttention(6, 3, add_bias_kv=True)
    tm = torch.nn.MultiheadAttention(6, 3, add_bias_kv=True)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    x = torch.randn(4, 2, 6)
    o, w = tm(x, x, x)
    oi, wi = m(tt(x), tt(x), tt(x))
    close(oi, o, "output")
    close(wi, w, "weights")


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_masks_scale_gqa(backend, causal):
    torch.manual_seed(3)
    q = torch.randn(2, 4, 3, 8, requires_grad=True)
    k = torch.randn(2, 2, 5, 8, requires_grad=True)
    v = torch.randn(2, 2, 5, 8, requires_grad=True)
    qi, ki, vi = (tt(x).requires_grad_() for x in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3,
                                                         enable_gqa=True)
    oi = F.scaled_dot_product_attention(qi, ki, vi, is_causal=causal, scale=0.3,
                                        enable_gqa=True)
    close(oi, o, "gqa output")
    r = torch.randn(o.shape)
    (o * r).sum().backward()
    (oi * tt(r)).sum().backward()
    for a, b in ((q, qi), (k, ki), (v, vi)):
        close(b.grad, a.grad, "gqa grad")
    if not causal:
        kk, vv = k.detach().repeat_interleave(2, 1), v.detach().repeat_interleave(2, 1)
        for mask in (torch.rand(3, 5) > 0.4, torch.randn(2, 1, 3, 5)):
            if mask.dtype == torch.bool:
                mask[:, 0] = True
            o = torch.nn.functional.scaled_dot_product_attention(q.detach(), kk, vv, mask)
            oi = F.scaled_dot_product_attention(tt(q), tt(kk), tt(vv), tt(mask))
            close(oi, o, f"mask {mask.dtype}")


def _transformer_pair(kw):
    kwi = dict(kw)
    if callable(kw.get("activation")):
        kwi["activation"] = F.silu
    torch.manual_seed(4)
    tm = torch.nn.Transformer(16, 2, 2, 2, 32, dropout=0.0, **kw)
    m = tnn.Transformer(16, 2, 2, 2, 32, dropout=0.0, **kwi)
    load(tm, m)
    return tm, m


TRANSFORMERS = [dict(), dict(norm_first=True, activation="gelu", batch_first=True),
                dict(activation=torch.nn.functional.silu, bias=False)]


@pytest.mark.parametrize("kw", TRANSFORMERS, ids=["post_norm", "pre_norm_gelu", "silu_nobias"])
def test_transformer(backend, kw):
    tm, m = _transformer_pair(kw)
    bf = kw.get("batch_first", False)
    src = torch.randn(*((2, 7) if bf else (7, 2)), 16, requires_grad=True)
    tgt = torch.randn(*((2, 5) if bf else (5, 2)), 16, requires_grad=True)
    kpm = torch.zeros(2, 7, dtype=torch.bool)
    kpm[0, 5:] = True
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    mask_i = tnn.Transformer.generate_square_subsequent_mask(5)
    close(mask_i, mask, "square subsequent mask")
    si, ti = tt(src).requires_grad_(), tt(tgt).requires_grad_()
    o = tm(src, tgt, tgt_mask=mask, src_key_padding_mask=kpm, memory_key_padding_mask=kpm,
           tgt_is_causal=True)
    oi = m(si, ti, tgt_mask=mask_i, src_key_padding_mask=tt(kpm),
           memory_key_padding_mask=tt(kpm), tgt_is_causal=True)
    close(oi, o, "output")
    r = torch.randn(o.shape)     # (sum(o * o) is constant after the final LayerNorm)
    (o * r).sum().backward()
    (oi * tt(r)).sum().backward()
    check_grads(tm, m, [(src, si), (tgt, ti)])


def test_encoder_stack_and_errors(backend):
    torch.manual_seed(5)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    tm = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    m = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                           batch_first=True), 2,
                               enable_nested_tensor=False)
    load(tm, m)
    x = torch.randn(3, 4, 8)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    close(m(tt(x), mask=tt(mask), is_causal=True), tm(x, mask=mask, is_causal=True), "encoder")
    with pytest.raises(RuntimeError, match="relu/gelu"):
        tnn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="divisible"):
        tnn.MultiheadAttention(6, 4)
    model = tnn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="batch number"):
        model(torchic.randn(3, 2, 8), torchic.randn(3, 3, 8))
