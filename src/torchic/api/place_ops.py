"""Ops that place values at data-free positions or find positions in data (issue 41): diag,
diag_embed, the *_scatter twins of the views (diagonal, select, slice, as_strided),
masked_select / masked_scatter, nonzero / argwhere / nonzero_static, one-argument where,
unravel_index.

A placement is index_ops.write_at of the positions a view would see (computed on the host
from shapes alone: no sync); nonzero and the masked ops read their mask (a sync: the
result's size depends on the data, as in PyTorch).
"""

import builtins
import numbers
from collections.abc import Sequence
from typing import overload

import numpy as np

from ..creation import tensor as _tensor_from_data
from ..creation import zeros
from ..functions import Clone
from ..shape import normalize_axis, numel, strided_positions
from ..tensor import Tensor
from .elementwise import where as _where3
from .index_ops import write_at
from .inplace import copy_
from .indexing import _gather_positions
from .view_ops import diagonal

_INT_CODES = ("u8", "i8", "i16", "i32", "i64")


def _grid(shape):
    return np.arange(numel(shape), dtype=np.int64).reshape(shape)


def _check_src(src, shape, what):
    if not isinstance(src, Tensor):
        raise TypeError(f"{what}(): argument 'src' must be Tensor, not {type(src).__name__}")
    if tuple(src.shape) != tuple(shape):
        raise RuntimeError(f"{what}: expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(shape)}")


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D input: a square matrix with input on its diagonal `diagonal` (> 0: above the main
    one), zeros elsewhere. 2-D input: a copy of its diagonal `diagonal`, as a 1-D tensor."""
    if input.ndim == 2:
        return Clone.apply(_diagonal_view(input, diagonal))
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    m = input.shape[0] + builtins.abs(int(diagonal))
    pos = np.diagonal(_grid((m, m)), int(diagonal))
    return write_at(zeros(m, m, dtype=input.dtype), pos, input)


def _diagonal_view(input, offset, dim1=0, dim2=1):
    return diagonal(input, offset, dim1, dim2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims dim1, dim2 of a result with one dim more) whose diagonal `offset`
    holds input's last dim, zeros elsewhere."""
    nd = input.ndim + 1
    d1, d2 = normalize_axis(dim1, nd), normalize_axis(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (input.shape[-1] if input.ndim else 1) + builtins.abs(int(offset))
    rest = iter(input.shape[:-1])
    shape = tuple(n if k in (d1, d2) else next(rest) for k in range(nd))
    pos = np.diagonal(_grid(shape), int(offset), d1, d2)
    return write_at(zeros(shape, dtype=input.dtype), pos,
                    input if input.ndim else input.reshape((1,)))


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of `input` with `src` written into its diagonal (as `diagonal` sees it)."""
    d1, d2 = normalize_axis(dim1, input.ndim), normalize_axis(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    pos = np.diagonal(_grid(input.shape), int(offset), d1, d2)
    _check_src(src, pos.shape, "diagonal_scatter")
    return write_at(input, pos, src)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of `input` with `src` written at `index` of dim `dim` (`x[:, index] = src`)."""
    d = normalize_axis(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    pos = np.take(_grid(input.shape), index, axis=d)
    _check_src(src, pos.shape, "select_scatter")
    return write_at(input, pos, src)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of `input` with `src` written into `input[..., start:end:step, ...]` (dim)."""
    d = normalize_axis(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    pos = _grid(input.shape)[(slice(None),) * d + (slice(start, end, step),)]
    _check_src(src, pos.shape, "slice_scatter")
    return write_at(input, pos, src)


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of `input` (contiguous) with `src` written where `as_strided(size, stride,
    storage_offset)` of that copy looks."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    pos = strided_positions(int(storage_offset or 0), size, stride)
    if pos.size and (pos.min() < 0 or pos.max() >= numel(input.shape)):
        raise RuntimeError(f"as_strided_scatter: size {list(size)}, stride {list(stride)} "
                           f"and storage offset {storage_offset} go past the input's "
                           f"{numel(input.shape)} elements")
    _check_src(src, size, "as_strided_scatter")
    return write_at(input, pos, src)


# -- masks and nonzero -----------------------------------------------------------------------
def _mask_array(mask, shape, what):
    if not isinstance(mask, Tensor) or mask._dtype not in ("b8", "u8"):
        raise RuntimeError(f"{what}: expected BoolTensor for mask")
    m = mask.detach().numpy() != 0
    try:
        return np.broadcast_to(m, shape)
    except ValueError:
        raise RuntimeError(f"The size of the mask {list(mask.shape)} must match the size of "
                           f"the tensor {list(shape)}") from None


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of `input` where the bool `mask` is True (both broadcast), as 1-D."""
    shape = tuple(np.broadcast_shapes(input.shape, mask.shape))
    m = _mask_array(mask, shape, "masked_select")
    src = input if input.shape == shape else input.expand(shape)
    return _gather_positions(src, np.flatnonzero(m))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with `source`'s first elements (row-major) written where the bool
    `mask` is True, in order (input and mask broadcast against each other)."""
    shape = tuple(np.broadcast_shapes(input.shape, mask.shape))
    if shape != input.shape:
        input = input.expand(shape)
    m = _mask_array(mask, shape, "masked_scatter").reshape(-1)
    pos = np.flatnonzero(m)
    if numel(source.shape) < pos.size:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements "
                           "as ones in mask")
    values = source.reshape((numel(source.shape),))[:pos.size]
    return write_at(input, pos, values)


def masked_scatter_(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place `masked_scatter` (mask broadcast to input's shape); returns `input`."""
    _mask_array(mask, input.shape, "masked_scatter_")
    return copy_(input, masked_scatter(input, mask, source))


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices of input's nonzero elements: an int64 (n, ndim) tensor, row-major order;
    as_tuple=True: one 1-D tensor per dim. Reads input (a sync)."""
    a = input.detach().numpy()
    found = np.argwhere(a != 0).astype(np.int64)
    if as_tuple:
        if a.ndim == 0:
            return (_tensor_from_data(np.zeros(int(bool(a != 0)), np.int64), dtype="i64"),)
        return tuple(_tensor_from_data(found[:, k].copy(), dtype="i64")
                     for k in range(a.ndim))
    return _tensor_from_data(found.reshape(found.shape[0], a.ndim), dtype="i64")


def argwhere(input: Tensor) -> Tensor:
    """`nonzero(input)`: the (n, ndim) indices of the nonzero elements."""
    return nonzero(input)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """`nonzero(input)` cut or padded (with `fill_value`) to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    a = input.detach().numpy()
    found = np.argwhere(a != 0).astype(np.int64)[:size]
    out = np.full((size, a.ndim), fill_value, np.int64)
    out[:found.shape[0]] = found
    return _tensor_from_data(out, dtype="i64")


@overload
def where(condition: Tensor) -> tuple[Tensor, ...]: ...


@overload
def where(condition: Tensor, input: Tensor | float, other: Tensor | float) -> Tensor: ...


def where(condition: Tensor, input: Tensor | float | None = None,
          other: Tensor | float | None = None) -> Tensor | tuple[Tensor, ...]:
    """`where(condition, input, other)`: elementwise choice (api.elementwise.where); with the
    condition alone, `nonzero(condition, as_tuple=True)`."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes the condition alone or with both input and other")
    return _where3(condition, input, other)


where.__doc__ = _where3.__doc__


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of `shape` of flat (row-major) `indices`: one int64 tensor
    per dim, of indices' shape."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, got {type(indices).__name__}")
    if indices._dtype not in _INT_CODES:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if builtins.any(d < 0 for d in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    idx = indices.detach().numpy().astype(np.int64)
    total = numel(shape)
    if idx.size and (idx.min() < -total or idx.max() >= total):
        raise RuntimeError(f"'indices' must be in range [{-total}, {total - 1}]")
    idx = np.where(idx < 0, idx + total, idx)
    coords = np.unravel_index(idx, shape) if shape else ()
    return tuple(_tensor_from_data(np.asarray(c, np.int64), dtype="i64") for c in coords)
