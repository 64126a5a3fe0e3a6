"""Norms: linalg.vector_norm / matrix_norm / norm, torch.norm, dist, renorm.

Composites of abs / pow / sum / amax (differentiable through them). A p-norm is
`sum(|x|^p)^(1/p)` with the all-zero case masked so its gradient is 0 there, PyTorch's
subgradient (not the NaN of 0 * inf); the inf-norm is `amax(|x|)`, whose gradient goes to
the largest elements, times sign(x) (0 at 0, as PyTorch's). The spectral and nuclear matrix
norms (ord 2, -2, "nuc") take the singular vectors from NumPy's SVD on the host (a sync
point) and are `u^T A v` with those vectors held constant: the value is the singular value
and the gradient `u v^T` (summed over the values for "nuc"), PyTorch's formulas.
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..creation import tensor as _tensor_from_data
from ..dtypes import dtype_code
from ..promotion import is_floating
from ..shape import normalize_axes, normalize_axis
from ..tensor import Tensor
from .conversion import to_dtype
from .elementwise import abs, pow, where
from .reductions import amax, amin, sum
from .shaping import permute, reshape


def _check(input, what):
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _float_input(x, dtype, what):
    if dtype is not None:
        code = dtype_code(dtype)
        if not is_floating(code):
            raise RuntimeError(f"{what}: dtype should be floating point or complex, but got "
                               f"{dtype}")
        return to_dtype(x, code)
    if not x.is_floating_point():
        raise RuntimeError(f"{what}: Expected a floating point or complex tensor as input. "
                           f"Got {str(x.dtype).split('.')[-1].capitalize()}")
    return x


def _p_norm(x, ord, axes, keepdim):
    """sum(|x|^ord)^(1/ord) over axes, gradient 0 where the norm is 0."""
    if ord == 0:
        return sum(to_dtype(x != 0, x._dtype) + x * 0.0, axes, keepdim)   # (gradient 0)
    if ord == 1:
        return sum(abs(x), axes, keepdim)
    if ord == 2:
        powered = x * x
    else:           # |x|^ord with 0 at 0 and a 0 gradient there (not 0 * inf for ord < 1)
        a = abs(x)
        zero_x = a == 0
        powered = where(zero_x, 0.0, pow(where(zero_x, 1.0, a), float(ord)))
    s = sum(powered, axes, keepdim)
    zero = s == 0
    safe = where(zero, 1.0, s)
    root = safe.sqrt() if ord == 2 else pow(safe, 1.0 / ord)
    return where(zero, 0.0, root) if ord > 0 else where(zero, s, root)


def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None,
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The vector `ord`-norm of x over dim (every element, flattened, when None):
    `sum(|x|^ord)^(1/ord)`; inf: max |x|, -inf: min |x|, 0: the count of nonzeros.

    Example:
        >>> torchic.linalg.vector_norm(torchic.tensor([3.0, 4.0]))
        tensor(5.)
    """
    _check(x, "linalg.vector_norm")
    x = _float_input(x, dtype, "linalg.vector_norm")
    if isinstance(dim, int):
        dim = (dim,)
    axes = normalize_axes(dim, x.ndim)
    if x.numel() == 0 and ord < 0 or (math.isinf(ord) and any(x.shape[i] == 0 for i in axes)
                                     ) or (x.numel() == 0 and math.isinf(ord) and dim is None):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                           f"tensor because the operation does not have an identity")
    if math.isinf(ord):
        a = abs(x)
        if x.ndim == 0:
            return a
        return (amax if ord > 0 else amin)(a, axes, keepdim)
    return _p_norm(x, ord, axes, keepdim)


def _svd_norm(A, ord, d0, d1, keepdim):
    """ord 2 / -2 / "nuc" of the matrices over dims (d0, d1): u^T A v with the host SVD's
    singular vectors held constant (value: the singular value(s); gradient u v^T)."""
    rest = [i for i in range(A.ndim) if i not in (d0, d1)]
    moved = permute(A, rest + [d0, d1])
    host = moved.detach().numpy().astype(np.float64)
    u, sv, vt = np.linalg.svd(host, full_matrices=False)
    if ord == "nuc":
        share = np.ones_like(sv)                                 # d(sum s)/dA = U V^T
    else:       # amax / amin of the singular values: tied ones share it evenly (PyTorch's)
        extreme = (sv.max if ord == 2 else sv.min)(axis=-1, keepdims=True)
        share = (sv == extreme) / (sv == extreme).sum(-1, keepdims=True)
    weights = np.einsum("...ik,...k,...kj->...ij", u, share, vt)   # sum of share u v^T
    w = _tensor_from_data(np.ascontiguousarray(weights), dtype=A._dtype)
    out = sum(moved * w, (-2, -1))
    if keepdim:
        shape = list(out.shape)
        for i in sorted((d0, d1)):
            shape.insert(i, 1)
        out = reshape(out, tuple(shape))
    return out


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Sequence[int] = (-2, -1),
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The matrix norm of A over the two dims `dim`: "fro" (Frobenius), "nuc" (the sum of
    singular values), inf / -inf (max / min row sum of |A|), 1 / -1 (max / min column sum),
    2 / -2 (the largest / smallest singular value). The singular-value norms are a sync
    point (see the module docstring)."""
    _check(A, "linalg.matrix_norm")
    A = _float_input(A, dtype, "linalg.matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = normalize_axis(dim[0], A.ndim), normalize_axis(dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _p_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        if A.numel() == 0 and ord != "nuc":
            raise RuntimeError("linalg.matrix_norm: the 2-norm of an empty matrix has no "
                               "identity")
        return _svd_norm(A, ord, d0, d1, keepdim)
    if ord in (math.inf, -math.inf, 1, -1):
        rows, cols = (d1, d0) if ord in (1, -1) else (d0, d1)   # sum over cols, pick in rows
        if A.shape[rows] == 0:
            raise RuntimeError(f"linalg.matrix_norm: Expected a non-empty dim {rows}")
        sums = sum(abs(A), cols, keepdim=True)
        out = (amax if ord > 0 else amin)(sums, rows, keepdim=True)
        if not keepdim:
            out = reshape(out, tuple(s for i, s in enumerate(A.shape) if i not in (d0, d1)))
        return out
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def linalg_norm(A: Tensor, ord: Any = None, dim: int | Sequence[int] | None = None,
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """`linalg.norm`: a vector norm (dim an int, or None on a 1-D input, or ord None over
    every element), or a matrix norm (dim a pair, or None on a 2-D input with ord given)."""
    _check(A, "linalg.norm")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim,
                           keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: the norm {ord!r} needs a matrix (a 2-D input or a "
                           f"pair of dims)")
    if dim is None and ord is not None and A.ndim != 1:
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must "
                           "be 1D or 2D")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def norm(input: Tensor, p: Any = "fro", dim: int | Sequence[int] | None = None,
         keepdim: bool = False, dtype: Any = None) -> Tensor:
    """torch.norm: the p-norm over dim (a number p: a vector norm over the dims given, or
    every element), "fro" (the 2-norm over the dims, at most two), "nuc" (the nuclear norm
    of the matrices over a pair of dims)."""
    _check(input, "norm")
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                           dtype=dtype)
    if p == "fro" or p is None:
        if dim is not None and len(dim) > 2:
            raise RuntimeError(f"norm: Expected at most 2 dims for the Frobenius norm, got "
                               f"{len(dim)}")
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm: the norm {p!r} is not supported")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of `input - other` (broadcast), over every element."""
    _check(input, "dist")
    return vector_norm(input - other, p)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """input with each slice along `dim` whose p-norm exceeds `maxnorm` scaled down to
    norm `maxnorm` (by `maxnorm / (norm + 1e-7)`, as PyTorch's)."""
    _check(input, "renorm")
    if not input.is_floating_point():
        raise RuntimeError(f"renorm: Expected a floating point tensor as input. Got "
                           f"{str(input.dtype).split('.')[-1].capitalize()}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim == 0:
        raise IndexError("renorm: expected a tensor of at least one dim")
    d = normalize_axis(dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    n = vector_norm(input, p, others, keepdim=True)
    factor = where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)
    return input * factor

