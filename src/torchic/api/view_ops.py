"""View ops (issue 41): narrow, select, movedim, swapaxes, diagonal, unfold,
as_strided, broadcast_to, unflatten, atleast_nd, mT ..., their `_copy` twins, and the flips.

Every view here is zero-copy: a new (offset, shape, strides) over the input's storage, the
stride math in shape.py (diagonal_meta, unfold_meta, slice_meta, permute_meta). Basic slices
go through IndexView (its gradient is the slice of a zero buffer), dim orders through
Permute, the others through StridedView, whose gradient scatters back to where each element
sits in the input (summed where windows overlap). A `_copy` op is its view, cloned. flip /
rot90 copy (as PyTorch's do): one gather of the reversed positions.
"""

import builtins
import numbers
from collections.abc import Sequence

import numpy as np

from ..functions import Clone, IndexView, StridedView
from ..shape import (broadcast_shapes as _broadcast_shapes, diagonal_meta, normalize_axes,
                     normalize_axis, numel, unfold_meta)
from ..tensor import Tensor
from .indexing import _gather_positions
from .shaping import expand, permute, reshape, transpose, view


def _int(x, what):
    if isinstance(x, Tensor):
        if x.ndim != 0 or x._dtype not in ("i8", "i16", "i32", "i64", "u8"):
            raise TypeError(f"{what} must be an int or a 0-d integer tensor")
        return int(x.item())
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{what} must be int, not {type(x).__name__}")
    return int(x)


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def narrow(input: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
    """A view of `input` keeping `length` elements of dim `dim` from `start` (negative:
    counted from the end; a 0-d integer tensor is read).

    Example:
        >>> torchic.arange(6).reshape(2, 3).narrow(1, 1, 2)
        tensor([[1, 2],
                [4, 5]])
    """
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_axis(dim, input.ndim)
    n = input.shape[d]
    start, length = _int(start, "narrow(): start"), _int(length, "narrow(): length")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return IndexView.apply(input, key=(slice(None),) * d +
                           (slice(start, start + length),))


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """`narrow`, copied into new storage."""
    return Clone.apply(narrow(input, dim, start, length))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """A view of `input` at `index` of dim `dim`, that dim removed (`x.select(1, i)` is
    `x[:, i]`)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_axis(dim, input.ndim)
    index, n = _int(index, "select(): index"), input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return IndexView.apply(input, key=(slice(None),) * d + (index,))


def movedim(input: Tensor, source: int | Sequence[int],
            destination: int | Sequence[int]) -> Tensor:
    """A view of `input` with dims `source` moved to positions `destination` (the others keep
    their order)."""
    src = (source,) if isinstance(source, numbers.Integral) else tuple(source)
    dst = (destination,) if isinstance(destination, numbers.Integral) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    n = input.ndim
    src = [normalize_axis(s, n) for s in src]
    dst = [normalize_axis(s, n) for s in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in `source` or `destination`")
    order = [None] * n
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, tuple(order)) if n else input


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """`transpose(input, axis0, axis1)` (NumPy's name)."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """`transpose(input, dim0, dim1)`."""
    return transpose(input, dim0, dim1)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal `offset` (> 0: above the main one) of the 2-D slices over dims
    dim1, dim2; those dims are removed and the diagonal is the last dim.

    Example:
        >>> torchic.arange(9).reshape(3, 3).diagonal(1)
        tensor([1, 5])
    """
    d1, d2 = normalize_axis(dim1, input.ndim), normalize_axis(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    meta = diagonal_meta(input._offset, input.shape, input._strides, int(offset), d1, d2)
    return StridedView.apply(input, *meta)


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """`diagonal`, copied into new storage."""
    return Clone.apply(diagonal(input, offset, dim1, dim2))


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of every window of `size` elements, `step` apart, along `dimension`: that dim
    counts the windows and a new last dim holds each window (windows may overlap).

    Example:
        >>> torchic.arange(5).unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    d = normalize_axis(dimension, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if size < 0 or size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    shape, strides = unfold_meta(input.shape, input._strides, d, size, step)
    return StridedView.apply(input, input._offset, shape, strides)


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """`Tensor.unfold`, copied into new storage."""
    return Clone.apply(unfold(input, dimension, size, step))


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view of `input`'s storage with the given size, stride (in elements) and storage
    offset (default: input's own). Every element it names must lie in the storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides "
                           f"for {len(size)} sizes")
    if builtins.any(s < 0 for s in size) or builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative sizes or strides are not supported, got size "
                           f"{list(size)} and stride {list(stride)}")
    offset = input._offset if storage_offset is None else int(storage_offset)
    extent = _extent(offset, size, stride)
    base = input._view_base
    base = base() if base is not None and not isinstance(base, Tensor) else base
    limit = builtins.max(_extent(t._offset, t.shape, t._strides)
                         for t in (input, base) if t is not None)
    if offset < 0 or extent > limit:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset} require {extent} elements, out of bounds for "
                           f"storage of {limit} elements")
    return StridedView.apply(input, offset, size, stride)


def _extent(offset, shape, strides):
    """One past the last storage element a strided view reads (its offset when empty)."""
    return offset + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) + 1 \
        if numel(shape) else offset


def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],
                    storage_offset: int | None = None) -> Tensor:
    """`as_strided`, copied into new storage."""
    return Clone.apply(as_strided(input, size, stride, storage_offset))


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """`input.expand(size)`, copied into new storage."""
    return Clone.apply(expand(input, tuple(size)))


def view_copy(input: Tensor, *size: int | Sequence[int]) -> Tensor:
    """`input.view(size)`, copied into new storage."""
    return Clone.apply(view(input, *size))


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """`input.permute(dims)`, copied into new storage."""
    return Clone.apply(permute(input, tuple(dims)))


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """`input.transpose(dim0, dim1)`, copied into new storage."""
    return Clone.apply(transpose(input, dim0, dim1))


def squeeze_copy(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """`input.squeeze(dim)`, copied into new storage."""
    from_shape = input.shape
    if dim is None:
        shape = tuple(d for d in from_shape if d != 1)
    else:
        dims = normalize_axes(dim, input.ndim)
        shape = tuple(d for i, d in enumerate(from_shape) if not (i in dims and d == 1))
    return Clone.apply(reshape(input, shape))


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """`input.unsqueeze(dim)`, copied into new storage."""
    d = normalize_axis(dim, input.ndim + 1)
    return Clone.apply(reshape(input, input.shape[:d] + (1,) + input.shape[d:]))


def broadcast_shapes(*shapes: int | Sequence[int]) -> tuple[int, ...]:
    """The shape the given shapes broadcast to (RuntimeError when they do not)."""
    shapes = [(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]
    for s in shapes:
        if builtins.any(d < 0 for d in s):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {list(s)}")
    try:
        return tuple(_broadcast_shapes(*shapes))
    except (ValueError, RuntimeError):
        raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape, "
                           f"got {[list(s) for s in shapes]}") from None


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """A view of `input` broadcast to `size` (`input.expand(size)`)."""
    return expand(input, tuple(size))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Views of the tensors broadcast to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """`input` with dim `dim` split into `sizes` (one may be -1)."""
    d = normalize_axis(dim, input.ndim)
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d]
    if sizes.count(-1) == 1:
        known = numel(tuple(s for s in sizes if s != -1))
        sizes = tuple(n // known if known and s == -1 else (0 if s == -1 else s)
                      for s in sizes)
    if sizes.count(-1) > 1 or numel(sizes) != n:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    return reshape(input, input.shape[:d] + sizes + input.shape[d + 1:])


def ravel(input: Tensor) -> Tensor:
    """`input` as one dim (a view when the strides allow)."""
    return reshape(input, (numel(input.shape),))


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """`input.reshape(other.shape)`."""
    return reshape(input, other.shape)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """`input.view(other.shape)`."""
    return view(input, other.shape)


def _atleast(n, tensors, what):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(n, (t,), what) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(n, (t,), what) for t in tensors)
    t = tensors[0]
    if t.ndim >= n:
        return t
    if n == 3 and t.ndim == 2:
        return reshape(t, t.shape + (1,))
    if n == 3 and t.ndim == 1:
        return reshape(t, (1,) + t.shape + (1,))
    return reshape(t, (1,) * (n - t.ndim) + t.shape)


def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor viewed with at least 1 dim (a 0-d one as shape (1,))."""
    return _atleast(1, tensors, "atleast_1d")


def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor viewed with at least 2 dims (new dims in front)."""
    return _atleast(2, tensors, "atleast_2d")


def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor viewed with at least 3 dims (NumPy's rule: (n,) -> (1, n, 1), (m, n) ->
    (m, n, 1))."""
    return _atleast(3, tensors, "atleast_3d")


def matrix_transpose(input: Tensor) -> Tensor:
    """`x.mT`: a view with the last two dims swapped (a batch of transposed matrices)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {input.ndim}-D tensor.")
    return transpose(input, -2, -1)


def sum_to_size(input: Tensor, *size: int | Sequence[int]) -> Tensor:
    """`input` summed down to `size` (which must broadcast to input's shape): the leading
    dims and the dims where `size` is 1 are summed."""
    size = _sizes(size)
    if not size:            # PyTorch's sum_to: an empty size sums everything
        return input.sum()
    lead = input.ndim - len(size)
    if lead < 0 or builtins.any(s != 1 and s != input.shape[lead + i]
                                for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, input.shape))}}}.")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and input.shape[lead + i] != 1)
    if not axes:
        return input
    out = input.sum(dim=axes, keepdim=True)     # (integers and bools: int64, as PyTorch's)
    return reshape(out, size)


# -- flips ----------------------------------------------------------------------------------
def flip(input: Tensor, dims: int | Sequence[int]) -> Tensor:
    """A copy of `input` with the order of its elements reversed along each dim in `dims`.

    Example:
        >>> torchic.arange(4).reshape(2, 2).flip(0)
        tensor([[2, 3],
                [0, 1]])
    """
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
    axes = [normalize_axis(d, input.ndim) for d in dims]
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(dims)}, but "
                           f"unique flip dims size={len(set(axes))}")
    key = tuple(slice(None, None, -1) if d in axes else slice(None)
                for d in range(input.ndim))
    positions = np.arange(numel(input.shape), dtype=np.int64).reshape(input.shape)[key]
    return _gather_positions(input, positions)


def fliplr(input: Tensor) -> Tensor:
    """`input` flipped along dim 1 (left / right); needs at least 2 dims."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """`input` flipped along dim 0 (up / down); needs at least 1 dim."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """`input` rotated by 90 degrees `k` times in the plane of `dims`, from the first dim
    towards the second."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = normalize_axis(dims[0], input.ndim), normalize_axis(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = int(k) % 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(transpose(input, d0, d1), (d1,))
    return Clone.apply(input)
