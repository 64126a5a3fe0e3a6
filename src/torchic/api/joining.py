"""Joining, splitting and repeating (issue 41): hstack / vstack / dstack / column_stack,
meshgrid, tile / repeat / repeat_interleave, tensor_split and its h / v / d forms,
split_with_sizes, block_diag, cartesian_prod, combinations, triu_indices / tril_indices.

Composites of cat, views (expand, reshape, slices) and index_select: each is correct on
every backend and differentiable through those.
"""

import builtins
import itertools
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..creation import tensor as _tensor_from_data
from ..creation import zeros
from ..dtypes import dtype_code
from ..functions import Clone
from ..shape import normalize_axis, numel
from ..tensor import Tensor
from .elementwise import promote
from .extra_ops import chunk, split
from .index_ops import index_select
from .shaping import cat, expand, reshape, stack
from .view_ops import atleast_1d, atleast_2d, atleast_3d, narrow


def _seq(tensors, what):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    return list(tensors)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined along dim 1 (dim 0 for 1-D tensors)."""
    ts = [atleast_1d(t) for t in _seq(tensors, "hstack")]
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors, made at least 2-D, joined along dim 0."""
    return cat([atleast_2d(t) for t in _seq(tensors, "vstack")], 0)


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors, made at least 3-D, joined along dim 2."""
    return cat([atleast_3d(t) for t in _seq(tensors, "dstack")], 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors as columns: 0-d and 1-D ones made (n, 1), then joined along dim 1."""
    ts = [reshape(t, (numel(t.shape), 1)) if t.ndim <= 1 else t
          for t in _seq(tensors, "column_stack")]
    return cat(ts, 1)


def meshgrid(*tensors: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids (views) from 1-D (or 0-d) tensors: with `indexing="ij"` output k
    varies along dim k; "xy" swaps the first two dims (NumPy's Cartesian indexing)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t.ndim}D tensor")
    if builtins.any(t._dtype != tensors[0]._dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    ts = [reshape(t, (numel(t.shape),)) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    out = []
    for k, t in enumerate(ts):
        view = (1,) * k + (shape[k],) + (1,) * (len(ts) - k - 1)
        out.append(expand(reshape(t, view), shape))
    if swap:       # the grids of (b, a, ...) in ij order are those of (a, b, ...) in xy
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"repeat(): sizes must be ints, got {type(s).__name__}")
    return tuple(int(s) for s in sizes)


def repeat(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """`input` repeated `sizes[i]` times along each dim (new dims in front when `sizes` is
    longer): a copy.

    Example:
        >>> torchic.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    sizes = _sizes(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    shape = (1,) * (len(sizes) - input.ndim) + input.shape
    inter, big = [], []
    for r, n in zip(sizes, shape):
        inter += [1, n]
        big += [r, n]
    out = expand(reshape(input, tuple(inter)), tuple(big))
    return Clone.apply(reshape(out, tuple(r * n for r, n in zip(sizes, shape))))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """`input` repeated along each dim (`dims` shorter than input's dims: ones in front)."""
    dims = _sizes((dims,) if isinstance(dims, numbers.Integral) else (tuple(dims),))
    dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input: Tensor | int, repeats: Tensor | int | None = None,
                      dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Each element (slice along `dim`; None: of the flattened input) repeated `repeats`
    times in place; `repeats` an int or a tensor (one count per element). With a tensor as
    the only argument: the indices `arange(n)` each repeated that many times."""
    if repeats is None:          # repeat_interleave(repeats_tensor)
        counts = _counts(input, None)
        return _tensor_from_data(np.repeat(np.arange(counts.size), counts), dtype=input.dtype)
    if dim is None:
        input, d = reshape(input, (numel(input.shape),)), 0
    else:
        d = normalize_axis(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    counts = _counts(repeats, n)
    index = np.repeat(np.arange(n), counts)
    if output_size is not None and output_size != index.size:
        raise RuntimeError(f"repeat_interleave: output_size {output_size} does not match the "
                           f"sum of repeats {index.size}")
    if input.ndim == 0:
        input = reshape(input, (1,))
    return index_select(input, d, _tensor_from_data(index, dtype="i64"))


def _counts(repeats, n):
    if isinstance(repeats, Tensor):
        if repeats._dtype not in ("i8", "i16", "i32", "i64", "u8"):
            raise RuntimeError("repeat_interleave: repeats must have an integral dtype, got "
                               f"{repeats.dtype}")
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        counts = repeats.detach().numpy().reshape(-1).astype(np.int64)
    else:
        counts = np.array([int(repeats)], np.int64)
    if n is not None and counts.size == 1:
        counts = np.repeat(counts, n)
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if n is not None and counts.size != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size({0}) = {n}")
    return counts


def split_with_sizes(input: Tensor, split_sizes: Sequence[int],
                     dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `input` along dim of the listed sizes (which add up to the dim's size)."""
    return split(input, list(split_sizes), dim)


def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int],
                          dim: int = 0) -> tuple[Tensor, ...]:
    """`split_with_sizes`, each piece copied into new storage."""
    return tuple(Clone.apply(t) for t in split_with_sizes(input, split_sizes, dim))


def unsafe_split(input: Tensor, split_size: int | Sequence[int],
                 dim: int = 0) -> tuple[Tensor, ...]:
    """`split` (PyTorch's unsafe twin skips a view check torchic has no need of)."""
    return split(input, split_size, dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """`chunk` (see unsafe_split)."""
    return chunk(input, chunks, dim)


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """`unbind`, each slice copied into new storage."""
    return tuple(Clone.apply(t) for t in input.unbind(dim))


def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor,
                 dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `input` along dim: `sections` nearly equal pieces (the first ones one longer),
    or the pieces between the listed indices (NumPy's array_split)."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = normalize_axis(dim, input.ndim)
    n = input.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios._dtype != "i64":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have "
                               "ScalarType Long")
        if ios.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor")
        ios = int(ios.item()) if ios.ndim == 0 else [int(v) for v in ios.tolist()]
    if isinstance(ios, numbers.Integral):
        sections = int(ios)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(n, sections)
        bounds = list(itertools.accumulate([small + 1] * extra + [small] * (sections - extra)))
        bounds = [0] + bounds
    else:
        bounds = [0] + [int(i) for i in ios] + [n]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a = builtins.min(builtins.max(a + n if a < 0 else a, 0), n)
        b = builtins.min(builtins.max(b + n if b < 0 else b, 0), n)
        out.append(narrow(input, d, a, builtins.max(b - a, 0)))
    return tuple(out)


def _directional_split(input, ios, dim, what, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{what} requires a tensor with at least {min_dims} dimension"
                           f"{'s' if min_dims > 1 else ''}, but got a tensor with {input.ndim} "
                           f"dimensions!")
    if isinstance(ios, numbers.Integral) and ios and input.shape[dim] % ios:
        raise RuntimeError(f"torch.{what} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {input.shape[dim]} is not divisible by the "
                           f"split_size {ios}!")
    return tensor_split(input, ios, dim)


def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """`tensor_split` along dim 1 (dim 0 for a 1-D tensor); sections must divide evenly."""
    return _directional_split(input, indices_or_sections, 1 if input.ndim > 1 else 0,
                              "hsplit", 1)


def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """`tensor_split` along dim 0 of a tensor of at least 2 dims."""
    return _directional_split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """`tensor_split` along dim 2 of a tensor of at least 3 dims."""
    return _directional_split(input, indices_or_sections, 2, "dsplit", 3)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-d, 1-D or 2-D) as blocks along the diagonal of a matrix of zeros, in
    their promoted dtype."""
    ts = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        ts.append(reshape(t, (1, 1)) if t.ndim == 0 else
                  reshape(t, (1, t.shape[0])) if t.ndim == 1 else t)
    if not ts:
        return zeros(1, 0)
    ts, code = promote(*ts) if len(ts) > 1 else (ts, ts[0]._dtype)
    width = builtins.sum(t.shape[1] for t in ts)
    rows, left = [], 0
    for t in ts:
        r, c = t.shape
        parts = [zeros(r, left, dtype=code), t, zeros(r, width - left - c, dtype=code)]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every tuple of one element from each 1-D tensor, as rows (itertools.product's order);
    one tensor: itself."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (numel(g.shape),)) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Every length-`r` combination of a 1-D tensor's elements, as rows (itertools'
    combinations, or combinations_with_replacement, in their order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return zeros(0, dtype=input.dtype)
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    picks = np.array(list(make(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    return stack([index_select(input, 0, _tensor_from_data(picks[:, k].copy(), dtype="i64"))
                  for k in range(r)], 1)


def _tri_indices(fn, row, col, offset, dtype):
    code = dtype_code(dtype) if dtype is not None else "i64"
    if code not in ("i32", "i64"):
        raise RuntimeError(f"\"{fn.__name__}\" not implemented for '{dtype}'")
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got {row}" if row < 0 else
                           f"col must be non-negative, got {col}")
    i, j = fn(int(row), int(offset), int(col))
    return _tensor_from_data(np.stack([i, j]).astype(np.int64).reshape(2, -1), dtype=code)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None, layout: Any = None) -> Tensor:
    """The (2, N) row and column indices of the upper triangle (j >= i + offset) of a
    row x col matrix, row by row."""
    return _tri_indices(np.triu_indices, row, col, offset, dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None, layout: Any = None) -> Tensor:
    """The (2, N) row and column indices of the lower triangle (j <= i + offset) of a
    row x col matrix, row by row."""
    return _tri_indices(np.tril_indices, row, col, offset, dtype)
