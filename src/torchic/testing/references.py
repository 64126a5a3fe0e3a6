"""NumPy float64 references of torchic's ops: what the per-op table (cases.py) and the
suites compare torchic with (no torchic inside: each is the op written again, plainly)."""

import math

import numpy as np


def np_softmax(x, axis=-1):
    """NumPy reference: softmax along `axis` (the max subtracted; empty in, empty out)."""
    if np.size(x) == 0:
        return np.array(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    """NumPy reference: log-softmax along `axis` (empty in, empty out)."""
    if np.size(x) == 0:
        return np.array(x, np.float64)
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def np_cross_entropy(logits, target):
    """NumPy reference: the mean cross-entropy of (N, C) logits and N class indices."""
    return -np_log_softmax(logits)[np.arange(len(target)), target].mean()


def np_matmul_by_definition(a, b):
    """sum_k a[i, k] * b[k, j] in float64 without BLAS (whose zero / inf handling may differ)."""
    with np.errstate(all="ignore"):
        return (np.asarray(a, np.float64)[:, :, None] * np.asarray(b, np.float64)[None]).sum(1)


def np_logsumexp_rows(x):
    """NumPy reference: log(sum(exp(x))) over the last dim (inf / nan rows as NumPy)."""
    with np.errstate(all="ignore"):
        m = x.max(-1, keepdims=True)
        return (np.log(np.exp(x - m).sum(-1, keepdims=True)) + m)[..., 0]


np_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_gelu(a):
    """NumPy reference: the exact GELU `a * Phi(a)`."""
    return 0.5 * a * (1 + np_erf(a / math.sqrt(2)))


def np_gelu_tanh(a):
    """NumPy reference: GELU's tanh approximation."""
    with np.errstate(all="ignore"):
        return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


def np_cross_entropy_nd(logits, target, ignore_index=-100, smoothing=0.0):
    """Mean cross-entropy of (N, C, d...) logits over the targets that are not ignored."""
    logp = np_log_softmax(np.moveaxis(logits, 1, -1))
    valid = target != ignore_index
    picked = np.take_along_axis(logp, np.where(valid, target, 0)[..., None], -1)[..., 0]
    losses = -(1 - smoothing) * picked - smoothing * logp.mean(-1)
    return (losses * valid).sum() / valid.sum()


def np_gelu_grad(x, g):
    """NumPy reference: g * d/dx gelu(x) = g * (Phi(x) + x phi(x))."""
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    return g * (0.5 * (1 + np_erf(x / math.sqrt(2))) + x * pdf)


def np_gelu_tanh_grad(x, g):
    """NumPy reference: g * d/dx of GELU's tanh approximation."""
    k = math.sqrt(2 / math.pi)
    t = np.tanh(k * (x + 0.044715 * x ** 3))
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x))


def np_layer_norm(x, w=None, b=None, k=1, eps=1e-5):
    """NumPy reference: layer norm over the last k dims (biased variance)."""
    axes = tuple(range(x.ndim - k, x.ndim))
    c = x - x.mean(axes, keepdims=True)
    y = c / np.sqrt((c * c).mean(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_causal_attention(q, k, v):
    """NumPy reference: softmax(q k^T / sqrt(E)) v, key j kept for query i where j <= i."""
    att = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    att = np.where(np.tri(q.shape[-2], k.shape[-2], 0, bool), att, -np.inf)
    return np_softmax(att) @ v


def np_layer_norm_dx(x, w, g, eps=1e-5):
    """NumPy reference: x's gradient of sum(layer_norm(x, w) * g) over the last dim."""
    c = x - x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt((c * c).mean(-1, keepdims=True) + eps)
    gw, xhat = g * w, c * rstd
    return rstd * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))


def np_layer_norm_dw(x, w, g, eps=1e-5):
    """NumPy reference: w's gradient of sum(layer_norm(x, w) * g): sum over rows of g xhat."""
    c = x - x.mean(-1, keepdims=True)
    return (g * c / np.sqrt((c * c).mean(-1, keepdims=True) + eps)).sum(0)


def np_softmax_dx(x, g):
    """NumPy reference: x's gradient of sum(softmax(x) * g) over the last dim."""
    y = np_softmax(x)
    return y * (g - (g * y).sum(-1, keepdims=True))


THREEFRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def threefry2x32(key, counter):
    """threefry2x32_20(key, counter) -> (word 0, word 1), all 32-bit unsigned ints."""
    m = 0xFFFFFFFF
    ks = (key[0] & m, key[1] & m, (key[0] ^ key[1] ^ 0x1BD11BDA) & m)
    x0, x1 = (counter[0] + ks[0]) & m, (counter[1] + ks[1]) & m
    for r in range(20):
        x0 = (x0 + x1) & m
        rot = THREEFRY_ROTATIONS[r % 8]
        x1 = (((x1 << rot) | (x1 >> (32 - rot))) & m) ^ x0
        if r % 4 == 3:                  # key injection s = 1..5
            s = r // 4 + 1
            x0 = (x0 + ks[s % 3]) & m
            x1 = (x1 + ks[(s + 1) % 3] + s) & m
    return x0, x1


def np_dropout_mask(key, shape, p):
    """NumPy reference of dropout's mask (the op multiplies x by it, and its gradient g):
    float32(1 / (1 - p)) where element i's word, word i & 1 of threefry2x32(key, (i >> 1, 0)),
    >> 8 is >= ceil(p 2^24), else 0 (key: two ints, e.g. a generator's two raw draws)."""
    threshold, scale, n = math.ceil(p * 2 ** 24), np.float32(1.0 / (1.0 - p)), math.prod(shape)
    k = (int(key[0]), int(key[1]))
    words = [w for j in range((n + 1) // 2) for w in threefry2x32(k, (j, 0))][:n]
    return np.array([scale if w >> 8 >= threshold else 0.0 for w in words],
                    np.float32).reshape(shape)


def np_adam(p, g, steps=3, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
            decoupled=False, maximize=False):
    """NumPy float64 reference: p after `steps` Adam / AdamW steps with the gradient g."""
    b1, b2 = betas
    m, v, g = np.zeros_like(p), np.zeros_like(p), -g if maximize else g
    for t in range(1, steps + 1):
        gt = g
        if weight_decay and decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            gt = g + weight_decay * p
        m = b1 * m + (1 - b1) * gt
        v = b2 * v + (1 - b2) * gt * gt
        p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


def np_cross_entropy_rows(logits, target, ignore_index=-100):
    """Per-row cross-entropy of (N, C) logits, 0 where the target is ignore_index."""
    valid = target != ignore_index
    picked = np_log_softmax(logits)[np.arange(len(target)), np.where(valid, target, 0)]
    return np.where(valid, -picked, 0.0)
