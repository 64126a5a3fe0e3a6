"""MatMul: (..., M, K) @ (..., K, N) with broadcast batch dims (raw.matmul does the work)."""

from .. import raw
from ..autograd import Function
from ..shape import numel
from .common import as_strided, require_float, reshape_raw, sum_to_shape


def _transposed(t):
    """t with its last two dims swapped: the same elements, strides swapped (no copy)."""
    shape, strides = list(t.shape), list(t._strides)
    shape[-1], shape[-2] = shape[-2], shape[-1]
    strides[-1], strides[-2] = strides[-2], strides[-1]
    return as_strided(t, t._offset, shape, strides)


class MatMul(Function):
    @staticmethod
    def compute(a, b):
        """The product with its checks: what forward runs, and what api.matmul runs
        without a node when no input requires grad (as the elementwise op functions do)."""
        if a._dtype != "f32" or b._dtype != "f32":
            require_float(a, b, op="matmul")     # (raises, naming the dtype)
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                             f"multiplied ({a.shape[-1]} columns vs {b.shape[-2]} rows)")
        return raw.matmul(a, b)

    def forward(self, a, b):
        self.save(a, b)
        return self.compute(a, b)

    def backward(self, g):
        a, b = self.saved
        ga = sum_to_shape(raw.matmul(g, _transposed(b)), a.shape) if self.needs_grad[0] else None
        gb = None
        if self.needs_grad[1]:
            if b.ndim == 2 and a.ndim > 2:
                # a 2-D b (a Linear weight against (B, T, C) inputs) met every row of every
                # batch: its gradient is one product over all of them, (B*T, K)^T @ (B*T, N),
                # as PyTorch computes it, instead of B products and a sum over B
                gb = raw.matmul(_transposed(_rows(a)), _rows(g))
            else:
                gb = sum_to_shape(raw.matmul(_transposed(a), g), b.shape)
        return ga, gb


class Linear(Function):
    """x @ weight^T (+ bias) for a 2-D weight (N, K), as PyTorch's linear / addmm.

    With a bias, one op (matmul_bias): the bias is added where the product is stored, not by
    an add that reads the product back (a GPT step's Linear layers wrote and re-read ~2.7 GB
    for their biases). The weight's gradient is computed in the weight's own layout,
    g^T @ x over every row (B*T of them for (B, T, K) inputs): (N, K), contiguous, as PyTorch
    does, so accumulating it into .grad copies nothing."""

    def forward(self, x, weight, bias):
        wt = _transposed(weight)
        if x._dtype != "f32" or wt._dtype != "f32" or x.shape[-1] != wt.shape[-2]:
            MatMul.compute(x, wt)       # (raises, naming the dtype or the shapes)
        if bias is not None:
            if bias._dtype != "f32":
                require_float(bias, op="linear")
            if bias.shape != (wt.shape[-1],):
                raise RuntimeError(f"linear: bias of shape {tuple(bias.shape)} for "
                                   f"{wt.shape[-1]} output features")
        self.save(x, weight)
        return raw.matmul(x, wt, bias)

    def backward(self, g):
        x, weight = self.saved
        need_x, need_w, need_b = self.needs_grad[:3]
        gx = raw.matmul(g, weight) if need_x else None
        gw = raw.matmul(_transposed(_rows(g)), _rows(x)) if need_w else None
        gb = sum_to_shape(g, (g.shape[-1],)) if need_b else None
        return gx, gw, gb


def _rows(t):
    """t (..., rows, cols) as one (all rows, cols) matrix: a view when its strides allow."""
    return reshape_raw(t, (numel(t.shape[:-1]), t.shape[-1]))
