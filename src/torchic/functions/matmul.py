"""MatMul: (..., M, K) @ (..., K, N) with broadcast batch dims (raw.matmul does the work)."""

from .. import raw
from ..autograd import Function
from .common import as_strided, require_float, sum_to_shape


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
        gb = sum_to_shape(raw.matmul(_transposed(a), g), b.shape) if self.needs_grad[1] else None
        return ga, gb
