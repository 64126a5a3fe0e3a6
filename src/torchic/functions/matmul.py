"""MatMul: (..., M, K) @ (..., K, N) with broadcast batch dims (raw.matmul does the work)."""

from .. import raw
from ..autograd import Primitive, create_graph_on
from ..shape import ShapeError, numel
from .common import as_strided, reshape_raw, sum_to_shape


# the dtypes a product takes (the half ones computed in float32 by raw.matmul)
_FLOATS = ("f32", "f64", "f16", "bf16")
# the integer dtypes PyTorch CPU multiplies (exactly, wrapping as the dtype wraps): a
# composite of mul and sum here, no matmul kernel (bool is refused, as PyTorch refuses it)
_INTS = ("i64", "i32", "i16", "i8", "u8")
# the largest (..., M, k, N) product of one K chunk of an integer product, in elements
_INT_CHUNK = 1 << 22


def int_matmul(a, b):
    """(..., M, K) @ (..., K, N) of integer tensors, exact in their dtype: a[..., :, k, None]
    * b[..., None, k, :] summed over k (raw mul and sum, which every backend computes in
    i32 / i64 and wraps, as PyTorch's integer GEMM wraps), in chunks of K so that the
    temporary product stays under _INT_CHUNK elements."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = numel(a.shape[:-2]) if a.ndim >= b.ndim else numel(b.shape[:-2])
    step = max(1, _INT_CHUNK // max(1, batch * m * n))
    out = None
    for k0 in range(0, k, step):
        kc = min(step, k - k0)
        sa, sb = a._strides, b._strides
        a4 = as_strided(a, a._offset + k0 * sa[-1], a.shape[:-1] + (kc, 1),
                        sa[:-1] + (sa[-1], 0))
        b4 = as_strided(b, b._offset + k0 * sb[-2], b.shape[:-2] + (1, kc, n),
                        sb[:-2] + (0,) + sb[-2:])
        prod = raw.binary("mul", a4, b4)
        part = raw.reduce("sum", prod, (prod.ndim - 2,))
        if part._dtype != a._dtype:         # sum of a narrow int is int64: cast back (wraps)
            part = raw.cast(part, a._dtype)
        out = part if out is None else raw.binary("add", out, part)
    if out is None:                          # K == 0: zeros
        shape = (a.shape[:-2] if a.ndim >= b.ndim else b.shape[:-2]) + (m, n)
        out = raw.full(shape, 0, a._dtype)
    return out


class MatMul(Primitive):
    @staticmethod
    def compute(a, b):
        """The product with its checks: what forward runs, and what api.matmul runs
        without a node when no input requires grad (as the elementwise op functions do)."""
        if a._dtype != b._dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{a.dtype} != {b.dtype}")
        if a._dtype not in _FLOATS and a._dtype not in _INTS:
            raise NotImplementedError(f"matmul is not implemented for {a.dtype} (PyTorch's "
                                      f"\"addmm_impl_cpu_\" not implemented for 'Bool')")
        if a.shape[-1] != b.shape[-2]:
            raise ShapeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                             f"multiplied ({a.shape[-1]} columns vs {b.shape[-2]} rows)")
        if a._dtype in _INTS:
            return int_matmul(a, b)
        return raw.matmul(a, b)

    def forward(self, a, b):
        self.save(a, b)
        return self.compute(a, b)

    def backward(self, g):
        a, b = self.saved
        if create_graph_on():      # recorded: the products are MatMul nodes themselves
            return (sum_to_shape(g @ b.transpose(-1, -2), a.shape) if self.needs_grad[0]
                    else None,
                    sum_to_shape(a.transpose(-1, -2) @ g, b.shape) if self.needs_grad[1]
                    else None)
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


class Linear(Primitive):
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
        if create_graph_on():
            n, k = weight.shape
            return (g @ weight if need_x else None,
                    g.reshape((-1, n)).transpose(0, 1) @ x.reshape((-1, k)) if need_w else None,
                    sum_to_shape(g, (n,)) if need_b else None)
        gx = raw.matmul(g, weight) if need_x else None
        gw = raw.matmul(_rows(g), _rows(x), transpose_a=True) if need_w else None
        gb = sum_to_shape(g, (g.shape[-1],)) if need_b else None
        return gx, gw, gb


def _rows(t):
    """t (..., rows, cols) as one (all rows, cols) matrix: a view when its strides allow."""
    shape = tuple(t.shape)       # (a torchic.Size indexes through Python)
    return reshape_raw(t, (numel(shape[:-1]), shape[-1]))
