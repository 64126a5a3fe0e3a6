"""Products: mm, bmm, mv, dot, inner, outer, addmm and its kin, kron, tensordot, cross,
vecdot, multi_dot, cdist, bilinear, as PyTorch spells and checks them.

Every one is a composite over the one product primitive (api.matmul -> MatMul ->
raw.matmul, whose layout plan reads strided operands without copying where it can) and
the elementwise ops and reductions, so gradients come from those Functions. Integer
products are exact in their dtype (functions/matmul.int_matmul), as PyTorch CPU's; bool
is refused, as PyTorch refuses it.
"""

import builtins
from collections.abc import Sequence

from ..dtypes import bool_
from ..shape import normalize_axis
from ..tensor import Tensor
from .elementwise import abs, add, logical_and, logical_or, mul, ne, pow, sub, where
from .reductions import amax, sum
from .shaping import matmul, permute, reshape, stack

_int = builtins.int


def _dims(name, t, want, arg="self"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    if t.ndim != want:
        kind = {1: "a vector", 2: "a matrix", 3: "a 3D tensor"}[want]
        raise RuntimeError(f"{name}: {arg} must be {kind}, got {t.ndim}-D tensor of shape "
                           f"{list(t.shape)}")


def _same_dtype(name, a, b):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{name}: expected both operands to have the same dtype, but got "
                           f"{a.dtype} and {b.dtype}")


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of `input` (n, m) and `mat2` (m, p): an (n, p) tensor.

    Unlike matmul, mm does not broadcast: both operands must be 2-D.

    Example::

        >>> torchic.mm(torchic.ones(2, 3), torchic.ones(3, 4)).shape
        torchic.Size([2, 4])
    """
    _dims("mm", input, 2)
    _dims("mm", mat2, 2, "mat2")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of (b, n, m) and (b, m, p) tensors: (b, n, p), no broadcast.

    Example::

        >>> torchic.bmm(torchic.ones(5, 2, 3), torchic.ones(5, 3, 4)).shape
        torchic.Size([5, 2, 4])
    """
    _dims("bmm", input, 3)
    _dims("bmm", mat2, 3, "mat2")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch1 and batch2 must have the same number of matrices, "
                           f"got {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of matrix `input` (n, m) and vector `vec` (m,): an (n,) tensor."""
    _dims("mv", input, 2)
    _dims("mv", vec, 1, "vec")
    return matmul(input, vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of one size and dtype: a 0-d tensor.

    Example::

        >>> torchic.dot(torchic.tensor([2, 3]), torchic.tensor([2, 1]))
        tensor(7)
    """
    _dims("dot", input, 1)
    _dims("dot", tensor, 1, "tensor")
    _same_dtype("dot", input, tensor)
    if input.shape != tensor.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{tensor.shape[0]}] to have the same number of elements")
    return matmul(input, tensor)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """dot(conj(input), other): for torchic's real dtypes, dot."""
    _dims("vdot", input, 1)
    _dims("vdot", other, 1, "other")
    return dot(input, other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum of products over the last dims of `input` and `other`: shape
    input.shape[:-1] + other.shape[:-1] (a product with a 0-d operand is `input * other`)."""
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of 1-D tensors `input` (n,) and `vec2` (m,): (n, m), promoted as
    `*` promotes. `ger` is its old name."""
    _dims("outer", input, 1)
    _dims("outer", vec2, 1, "vec2")
    return mul(reshape(input, (input.shape[0], 1)), vec2)


ger = outer


def _scaled_sum(name, input, product, beta, alpha):
    """beta * input + alpha * product, as PyTorch's addmm family: beta == 0 ignores input
    (its NaNs too). With integer tensors a float beta / alpha is truncated to an int, as
    PyTorch's addmm / addmv / baddbmm / addbmm do (addr refuses it: see addr)."""
    if not input.dtype.is_floating_point:
        beta, alpha = _int(beta), _int(alpha)
    _same_dtype(name, input, product)
    out = product if alpha == 1 else mul(product, alpha)
    if beta == 0:
        return out
    return add(input if beta == 1 else mul(input, beta), out)


def _bshape(a, b):
    n = builtins.max(a.ndim, b.ndim)
    sa, sb = (1,) * (n - a.ndim) + tuple(a.shape), (1,) * (n - b.ndim) + tuple(b.shape)
    return tuple(builtins.max(x, y) for x, y in zip(sa, sb))


def _check_input(name, input, shape):
    """input must broadcast to the product's shape (it is not broadcast the other way)."""
    if _bshape(input, _Shape(shape)) != tuple(shape) or input.ndim > len(shape):
        raise RuntimeError(f"{name}: the input of shape {list(input.shape)} does not "
                           f"broadcast to the product's shape {list(shape)}")


class _Shape:
    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1,
          alpha: float = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), mat1 (n, m), mat2 (m, p), input broadcast to
    (n, p). With beta = 0, input is ignored (NaN in it does not propagate)."""
    _dims("addmm", mat1, 2, "mat1")
    _dims("addmm", mat2, 2, "mat2")
    _check_input("addmm", input, (mat1.shape[0], mat2.shape[1]))
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1,
          alpha: float = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec), mat (n, m), vec (m,), input broadcast to (n,)."""
    _dims("addmv", mat, 2, "mat")
    _dims("addmv", vec, 1, "vec")
    _check_input("addmv", input, (mat.shape[0],))
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
            alpha: float = 1) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2), input broadcast to (b, n, p)."""
    _dims("baddbmm", batch1, 3, "batch1")
    _dims("baddbmm", batch2, 3, "batch2")
    _check_input("baddbmm", input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
           alpha: float = 1) -> Tensor:
    """beta * input + alpha * sum over b of batch1[b] @ batch2[b], input broadcast to
    (n, p): the batch summed inside one product, (n, b*m) @ (b*m, p)."""
    _dims("addbmm", batch1, 3, "batch1")
    _dims("addbmm", batch2, 3, "batch2")
    b, n, m = batch1.shape
    if batch2.shape[0] != b or batch2.shape[1] != m:
        raise RuntimeError(f"addbmm: batch shapes {list(batch1.shape)} and "
                           f"{list(batch2.shape)} cannot be multiplied")
    p = batch2.shape[2]
    _check_input("addbmm", input, (n, p))
    product = matmul(reshape(permute(batch1, (1, 0, 2)), (n, b * m)),
                     reshape(batch2, (b * m, p)))
    return _scaled_sum("addbmm", input, product, beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1,
         alpha: float = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2), input broadcast to (n, m). For bool
    tensors, PyTorch's logical form: (beta and input) or (alpha and the outer product)."""
    _dims("addr", vec1, 1, "vec1")
    _dims("addr", vec2, 1, "vec2")
    _check_input("addr", input, (vec1.shape[0], vec2.shape[0]))
    if not input.dtype.is_floating_point:
        for arg, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {arg} must not be "
                                   f"a floating point number.")
    if input.dtype == bool_:
        prod = logical_and(logical_and(reshape(vec1, (-1, 1)), vec2), builtins.bool(alpha))
        return logical_or(logical_and(input, builtins.bool(beta)), prod)
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: out[i * other.shape + j] = input[i] * other[j] over every dim
    (the shorter shape padded with leading 1s), shape the product of the two shapes."""
    n = builtins.max(input.ndim, other.ndim)
    sa = (1,) * (n - input.ndim) + tuple(input.shape)
    sb = (1,) * (n - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(x for d in sa for x in (d, 1)))
    b = reshape(other, tuple(x for d in sb for x in (1, d)))
    return reshape(mul(a, b), tuple(x * y for x, y in zip(sa, sb)))


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence = 2) -> Tensor:
    """Sum of products over the given dims: dims = n contracts a's last n dims with b's
    first n; dims = (dims_a, dims_b) contracts those pairs. The result's shape is a's
    remaining dims then b's. (`out=`: torchic.tensordot's, api/out.py.)"""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, _int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, _int) else list(da)
        db = [db] if isinstance(db, _int) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {da} and {db}")
    da = [normalize_axis(d, a.ndim) for d in da]
    db = [normalize_axis(d, b.ndim) for d in db]
    sa, sb = list(a.shape), list(b.shape)
    for x, y in zip(da, db):     # a size-1 dim broadcasts against its partner, as PyTorch's
        if sa[x] != sb[y] and 1 not in (sa[x], sb[y]):
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} "
                               f"in dim {y}")
        sa[x] = sb[y] = builtins.max(sa[x], sb[y])
    a = a if tuple(sa) == a.shape else a.expand(tuple(sa))
    b = b if tuple(sb) == b.shape else b.expand(tuple(sb))
    _same_dtype("tensordot", a, b)
    ra = [d for d in range(a.ndim) if d not in da]
    rb = [d for d in range(b.ndim) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    left = tuple(a.shape[d] for d in ra)
    right = tuple(b.shape[d] for d in rb)
    am = reshape(permute(a, ra + da), (_prod(left), k))
    bm = reshape(permute(b, db + rb), (k, _prod(right)))
    return reshape(matmul(am, bm), left + right)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _cross(input, other, dim, name):
    if input.ndim != other.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions, got "
                           f"{input.ndim} and {other.ndim}")
    shape = _bshape(input, other)
    d = normalize_axis(dim, len(shape))
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3, got "
                           f"{input.shape[d]} and {other.shape[d]}")

    def part(t, i):
        return t[(slice(None),) * d + (i,)]

    a0, a1, a2 = (part(input, i) for i in range(3))
    b0, b1, b2 = (part(other, i) for i in range(3))
    return stack([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                  sub(mul(a0, b1), mul(a1, b0))], dim=d)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The 3-D cross product of vectors along `dim` (of size 3; broadcast elsewhere). With
    dim=None, PyTorch's old default: the first dim of size 3."""
    if dim is None:
        shape = _bshape(input, other)
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input (shapes {list(input.shape)} "
                               f"and {list(other.shape)})")
    return _cross(input, other, dim, "cross")


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """torchic.linalg.cross: the cross product along `dim` (default the last)."""
    return _cross(input, other, dim, "linalg.cross")


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """torchic.linalg.vecdot: sum(x * y) along `dim`, x and y broadcast."""
    _same_dtype("linalg.vecdot", x, y)
    return sum(mul(x, y), dim=dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """torchic.linalg.multi_dot: the product of 2-D matrices in order; the first may be
    1-D (a row vector) and the last 1-D (a column vector), squeezed from the result."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        ok = t.ndim == 2 or (t.ndim == 1 and i in (0, len(tensors) - 1))
        if not ok:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D (the first and last may "
                               f"be 1D), got {t.ndim}D")
        _same_dtype("multi_dot", tensors[0], t)
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of 2-D matrices in order (deprecated in PyTorch for linalg.multi_dot)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        _dims("chain_matmul", t, 2, "matrices")
    out = matrices[0]
    for t in matrices[1:]:
        out = matmul(out, t)
    return out


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2
    (..., R, M): (..., P, R), batch dims broadcast. p = 0 counts differing coordinates,
    p = inf takes the largest. A zero distance has a zero gradient, as PyTorch's."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, "
                           f"X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if not x1.dtype.is_floating_point or not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    diff = sub(x1.unsqueeze(-2), x2.unsqueeze(-3))      # (..., P, R, M)
    if p == 0:      # a count: its gradient is zero (kept on the graph, as PyTorch's)
        return add(sum(ne(diff, 0).to(x1.dtype), dim=-1), mul(sum(diff, dim=-1), 0))
    if p == float("inf"):
        return amax(abs(diff), dim=-1)
    if p == 1:
        return sum(abs(diff), dim=-1)
    # |d|^p summed, then its 1/p power; where it is 0 the result and its gradient are 0
    # (the naive chain gives 0 * inf there)
    mag = abs(diff)
    safe_mag = where(ne(mag, 0), mag, 1.0)
    s = sum(where(ne(mag, 0), pow(safe_mag, p), 0.0), dim=-1)
    nonzero = ne(s, 0)
    return where(nonzero, pow(where(nonzero, s, 1.0), 1.0 / p), 0.0)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """The bilinear map `y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] +
    bias[o]` (nn.Bilinear's forward).

    One product (rows, in1) @ (in1, out * in2), then a sum over in2.

    Args:
        input1: `(*, in1)`.
        input2: `(*, in2)`, the same leading dims.
        weight: `(out, in1, in2)`.
        bias: `(out,)` or None.

    Shape:
        - Output: `(*, out)`.

    Example:
        >>> w = torch.ones(1, 2, 2)
        >>> F.bilinear(torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]]), w)
        tensor([[21.]])
    """
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D, got {weight.ndim}-D")
    o, i, j = weight.shape
    if input1.shape[-1] != i or input2.shape[-1] != j:
        raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]} and "
                           f"{input2.shape[-1]} do not match weight {list(weight.shape)}")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    lead = tuple(input1.shape[:-1])
    x1 = reshape(input1, (_prod(lead), i))
    t = matmul(x1, reshape(permute(weight, (1, 0, 2)), (i, o * j)))   # (rows, o * j)
    y = sum(mul(reshape(t, (-1, o, j)), reshape(input2, (-1, 1, j))), dim=-1,
            dtype=t.dtype)
    if bias is not None:
        y = add(y, bias)
    return reshape(y, lead + (o,))


__all__ = ["mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmv",
           "baddbmm", "addbmm", "addr", "kron", "tensordot", "cross", "chain_matmul",
           "cdist"]
