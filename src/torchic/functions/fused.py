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
from ..autograd import Primitive, create_graph_on
from ..shape import numel
from ..ops import COMPUTE_AS
from .common import as_strided, constant, require_float, reshape_raw
from .views import Cast


class Gelu(Primitive):
    """x * Phi(x) (approximate "none") or its tanh approximation ("tanh")."""

    def forward(self, a, approximate):
        require_float(a, op="gelu")
        self.op = "gelu" if approximate == "none" else "gelu_tanh"
        self.save(a)
        return raw.unary(self.op, a)

    def backward(self, g):
        (a,) = self.saved
        if create_graph_on():
            return (g * self.derivative(a),)
        return (raw.binary(self.op + "_grad", a, g),)

    def derivative(self, a):
        """d gelu / da as recorded ops (create_graph)."""
        if self.op == "gelu":      # Phi(a) + a phi(a)
            return 0.5 * (1 + (a * 0.7071067811865476).erf()) + \
                a * (a * a * -0.5).exp() * 0.3989422804014327
        k, c = 0.7978845608028654, 0.044715
        t = (k * (a + c * a * a * a)).tanh()
        return 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * k * (1 + 3 * c * a * a)


def _or_constant(t, fill, code):
    """t, or the cached 0-d constant `fill` (read as a (C,) vector with stride 0) when t is
    None. The caller holds what this returns until its kernel is enqueued: a View holds only
    the block, and creating the next constant may evict this one from the cache (FIFO) and
    free its block, which the next allocation then reuses (it read as the other constant)."""
    return constant(fill, code) if t is None else t


def _computed(t):
    """t in the dtype the fused kernels compute it in (float16 / bfloat16: float32)."""
    code = COMPUTE_AS.get(t._dtype, t._dtype)
    return t if t._dtype == code else raw.cast(t, code)


def _back(t, code):
    """A result computed in float32 back in its operand's dtype (a half one)."""
    return t if t._dtype == code else raw.cast(t, code)


class LayerNorm(Primitive):
    """Layer norm over the rows of a (R, C) x, with optional (C,) weight and bias (float16 /
    bfloat16 computed in float32 and rounded back)."""

    def forward(self, x, weight, bias, eps):
        require_float(x, *(t for t in (weight, bias) if t is not None), op="layer_norm")
        self.params = {"eps": float(eps)}
        self.has_weight = weight is not None
        self.dtypes = (x._dtype, None if weight is None else weight._dtype)
        x, weight, bias = (None if t is None else _computed(t) for t in (x, weight, bias))
        self.save(x, weight) if self.has_weight else self.save(x)
        c, code = x.shape[1], x._dtype
        weight, bias = _or_constant(weight, 1.0, code), _or_constant(bias, 0.0, code)
        ins = (raw.view_of(x), raw.broadcast_view(weight, (c,)), raw.broadcast_view(bias, (c,)))
        out = raw.run("layer_norm", raw.new_tensor(x.shape, code), ins, self.params)
        return _back(out, self.dtypes[0])

    def backward(self, g):
        x, *w = self.saved
        c, code = x.shape[1], x._dtype
        need_x, need_w, need_b = self.needs_grad[:3]
        if create_graph_on():
            return self.recorded_grads(g, x, w[0] if w else None)
        g = _computed(g)
        xv, gv = raw.view_of(x), raw.view_of(g)
        dx = dw = db = None
        if need_w:    # one pass: dx and g * xhat, whose sum over rows is dw
            r = x.shape[0]
            both = raw.run("layer_norm_grad", raw.new_tensor((2, r, c), code),
                           (xv, raw.view_of(w[0]), gv), self.params)
            dx = as_strided(both, 0, x.shape, (c, 1)) if need_x else None
            dw = _back(as_strided(both, r * c, x.shape, (c, 1)).sum(0), self.dtypes[1])
        elif need_x:
            weight = w[0] if w else constant(1.0, code)
            wv = raw.broadcast_view(weight, (c,))
            dx = raw.run("layer_norm_grad", raw.new_tensor(x.shape, code), (xv, wv, gv),
                         self.params)
        if need_b:
            db = g.sum(0)
        return (None if dx is None else _back(dx, self.dtypes[0])), dw, db


    def recorded_grads(self, g, x, w):
        """dx, dweight, dbias as recorded ops (create_graph), in x's computing dtype."""
        need_x, need_w, need_b = self.needs_grad[:3]
        if g._dtype != x._dtype:
            g = g.to(g.float().dtype if x._dtype == "f32" else g.double().dtype)
        mu = x.mean(1, keepdim=True)
        xc = x - mu
        rstd = 1 / ((xc * xc).mean(1, keepdim=True) + self.params["eps"]).sqrt()
        xhat = xc * rstd
        gw = g if w is None else g * w
        dx = rstd * (gw - gw.mean(1, keepdim=True) - xhat * (gw * xhat).mean(1, keepdim=True))
        back = (lambda t, code: t if code is None or t._dtype == code else
                Cast.apply(t, dtype=code))
        return (back(dx, self.dtypes[0]) if need_x else None,
                back((g * xhat).sum(0), self.dtypes[1]) if need_w else None,
                g.sum(0) if need_b else None)


class CausalSoftmax(Primitive):
    """softmax over the last dim of (..., Tq, Tk), column j of row i kept where
    j <= i + diagonal (PyTorch's tril(diagonal) mask, then softmax)."""

    def forward(self, a, diagonal):
        require_float(a, op="causal_softmax")
        tq, tk = a.shape[-2:]
        code, a = a._dtype, _computed(a)
        a3 = reshape_raw(a, (numel(a.shape[:-2]), tq, tk))
        y = raw.run("causal_softmax", raw.new_tensor(a3.shape, a._dtype), (raw.view_of(a3),),
                    {"diagonal": int(diagonal)})
        y = _back(reshape_raw(y, a.shape), code)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved     # (softmax's gradient holds: y is 0 at the masked columns)
        if create_graph_on():
            return (y * (g - (g * y).sum(-1, keepdim=True)),)
        rows = (numel(y.shape[:-1]), y.shape[-1])
        dx = raw.rows_op("softmax_grad", reshape_raw(y, rows), reshape_raw(g, rows))
        return (reshape_raw(dx, y.shape),)


class Dropout(Primitive):
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
        if create_graph_on():       # linear in g: its own derivative
            return Dropout.apply(g, key, self.p), None
        return raw.dropout(g, key, self.p), None
