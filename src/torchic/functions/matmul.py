"""MatMul: (..., M, K) @ (..., K, N) with broadcast batch dims (raw.matmul does the work)."""

from .. import raw
from ..autograd import Function
from ..shape import ShapeError, numel
from .common import require_float, reshape_raw, sum_to_shape


# the dtypes a product takes (the half ones computed in float32 by raw.matmul)
_FLOATS = ("f32", "f64", "f16", "bf16")


class MatMul(Function):
    @staticmethod
    def compute(a, b):
        """The product with its checks: what forward runs, and what api.matmul runs
        without a node when no input requires grad (as the elementwise op functions do)."""
        if a._dtype != b._dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{a.dtype} != {b.dtype}")
        if a._dtype not in _FLOATS:
            require_float(a, b, op="matmul")     # (raises, naming the dtype)
        if a.shape[-1] != b.shape[-2]:
            raise ShapeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                             f"multiplied ({a.shape[-1]} columns vs {b.shape[-2]} rows)")
        return raw.matmul(a, b)

    def forward(self, a, b):
        self.save(a, b)
        return self.compute(a, b)

    def backward(self, g):
        a, b = self.saved
        ga = sum_to_shape(raw.matmul(g, b, transpose_b=True), a.shape) \
            if self.needs_grad[0] else None
        gb = None
        if self.needs_grad[1]:
            if b.ndim == 2 and a.ndim > 2:
                # a 2-D b (a Linear weight against (B, T, C) inputs) met every row of every
                # batch: its gradient is one product over all of them, (B*T, K)^T @ (B*T, N),
                # as PyTorch computes it, instead of B products and a sum over B
                gb = raw.matmul(_rows(a), _rows(g), transpose_a=True)
            else:
                gb = sum_to_shape(raw.matmul(a, g, transpose_a=True), b.shape)
        return ga, gb


class Linear(Function):
    """x @ weight^T (+ bias) for a 2-D weight (N, K), as PyTorch's linear / addmm.

    With a bias, one op (matmul_bias): the bias is added where the product is stored, not by
    an add that reads the product back (a GPT step's Linear layers wrote and re-read ~2.7 GB
    for their biases). The weight's gradient is computed in the weight's own layout,
    g^T @ x over every row (B*T of them for (B, T, K) inputs): (N, K), contiguous, as PyTorch
    does, so accumulating it into .grad copies nothing."""

    def forward(self, x, weight, bias):
        n, k = weight.shape
        if x._dtype != weight._dtype or x._dtype not in _FLOATS or x.shape[-1] != k:
            MatMul.compute(x, weight.T)     # (raises, naming the dtype or the shapes)
        if bias is not None:
            if bias._dtype != x._dtype:
                raise RuntimeError(f"linear: the bias is {bias.dtype}, the input {x.dtype}")
            if bias.shape != (n,):
                raise RuntimeError(f"linear: bias of shape {tuple(bias.shape)} for "
                                   f"{n} output features")
        self.save(x, weight)
        return raw.matmul(x, weight, bias, transpose_b=True)

    def backward(self, g):
        x, weight = self.saved
        need_x, need_w, need_b = self.needs_grad[:3]
        gx = raw.matmul(g, weight) if need_x else None
        gw = raw.matmul(_rows(g), _rows(x), transpose_a=True) if need_w else None
        gb = sum_to_shape(g, (g.shape[-1],)) if need_b else None
        return gx, gw, gb


def _rows(t):
    """t (..., rows, cols) as one (all rows, cols) matrix: a view when its strides allow."""
    return reshape_raw(t, (numel(t.shape[:-1]), t.shape[-1]))
