"""Fused transformer Functions: GELU, layer norm, causal softmax, dropout (one kernel each
way).

Where a transformer step spends its memory bandwidth, one primitive replaces the chain of
elementwise ops and reductions the composite took: each reads its inputs and writes its
output once. Layer norm's backward kernel recomputes each row's mean and rstd from x (two
row sums over data it reads anyway), so the forward saves only x and the weight; when the
weight needs a gradient, the same pass writes g * xhat beside dx and dweight is its sum over
rows. Dropout saves only its 2-word key: the backward recomputes the same mask from it.
"""

from .. import raw
from ..autograd import Function
from ..shape import numel
from .common import as_strided, constant, require_float, reshape_raw


class Gelu(Function):
    """x * Phi(x) (approximate "none") or its tanh approximation ("tanh")."""

    def forward(self, a, approximate):
        require_float(a, op="gelu")
        self.op = "gelu" if approximate == "none" else "gelu_tanh"
        self.save(a)
        return raw.unary(self.op, a)

    def backward(self, g):
        (a,) = self.saved
        return (raw.binary(self.op + "_grad", a, g),)


def _vector(t, fill, n):
    """The View of a (C,) weight, or of a constant `fill` read with stride 0 when t is None."""
    return raw.broadcast_view(constant(fill), (n,)) if t is None else raw.view_of(t)


class LayerNorm(Function):
    """Layer norm over the rows of a (R, C) x, with optional (C,) weight and bias."""

    def forward(self, x, weight, bias, eps):
        require_float(x, *(t for t in (weight, bias) if t is not None), op="layer_norm")
        self.params = {"eps": float(eps)}
        self.has_weight = weight is not None
        self.save(x, weight) if self.has_weight else self.save(x)
        c = x.shape[1]
        ins = (raw.view_of(x), _vector(weight, 1.0, c), _vector(bias, 0.0, c))
        return raw.run("layer_norm", raw.new_tensor(x.shape), ins, self.params)

    def backward(self, g):
        x, *w = self.saved
        c = x.shape[1]
        need_x, need_w, need_b = self.needs_grad[:3]
        xv, gv = raw.view_of(x), raw.view_of(g)
        dx = dw = db = None
        if need_w:    # one pass: dx and g * xhat, whose sum over rows is dw
            r = x.shape[0]
            both = raw.run("layer_norm_grad", raw.new_tensor((2, r, c)),
                           (xv, raw.view_of(w[0]), gv), self.params)
            dx = as_strided(both, 0, x.shape, (c, 1)) if need_x else None
            dw = as_strided(both, r * c, x.shape, (c, 1)).sum(0)
        elif need_x:
            wv = raw.view_of(w[0]) if w else _vector(None, 1.0, c)
            dx = raw.run("layer_norm_grad", raw.new_tensor(x.shape), (xv, wv, gv), self.params)
        if need_b:
            db = g.sum(0)
        return dx, dw, db


class CausalSoftmax(Function):
    """softmax over the last dim of (..., Tq, Tk), column j of row i kept where
    j <= i + diagonal (PyTorch's tril(diagonal) mask, then softmax)."""

    def forward(self, a, diagonal):
        require_float(a, op="causal_softmax")
        tq, tk = a.shape[-2:]
        a3 = reshape_raw(a, (numel(a.shape[:-2]), tq, tk))
        y = raw.run("causal_softmax", raw.new_tensor(a3.shape), (raw.view_of(a3),),
                    {"diagonal": int(diagonal)})
        y = reshape_raw(y, a.shape)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved     # (softmax's gradient holds: y is 0 at the masked columns)
        rows = (numel(y.shape[:-1]), y.shape[-1])
        dx = raw.rows_op("softmax_grad", reshape_raw(y, rows), reshape_raw(g, rows))
        return (reshape_raw(dx, y.shape),)


class Dropout(Function):
    """x times dropout's mask for probability p, the mask drawn from an int32 (2,) key by
    the dropout primitive. The gradient is the same op on g with the same key: the mask is
    recomputed, never stored (a GPT step saved ~1 GB of masks)."""

    def forward(self, x, key, p):
        require_float(x, op="dropout")
        self.p = p
        self.save(key)
        return raw.dropout(x, key, p)

    def backward(self, g):
        (key,) = self.saved
        return raw.dropout(g, key, self.p), None
