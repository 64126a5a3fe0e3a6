"""Shape op functions: matmul's 1-D rules, reshape / view / permute / expand ..., indexing, cat."""

import builtins
from collections.abc import Iterator, Sequence

import numpy as np

from ..formats import check_memory_format
from ..grad_mode import is_grad_enabled
from ..functions import (Cat, Contiguous, Expand, IndexView, MatMul, Permute, Reshape,
                         as_operand)
from ..shape import (broadcast_strides, infer_shape, normalize_axes, normalize_axis, numel,
                     permute_meta, reshape_strides)
from ..functions.views import mark_view
from ..shape import ShapeError   # issue 44: shape errors are RuntimeErrors too
from ..size import Size
from ..tensor import Tensor, make
from .elementwise import promote
from .indexing import getitem  # noqa: F401  (re-exported: other api modules import it here)
from .indexing import UNRECORDED_NODE


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product of two tensors, as PyTorch's matmul: 2-D @ 2-D is the matrix
    product; a 1-D first operand is a row vector and a 1-D second one a column vector (the
    added dim removed from the result); more dims are batches, broadcast. Integer tensors
    multiply exactly in their dtype; bool is refused.

    Example::

        >>> torchic.matmul(torchic.ones(5, 2, 3), torchic.ones(3)).shape
        torchic.Size([5, 2])
    """
    a, b = input, other
    if a.__class__ is Tensor and b.__class__ is Tensor and len(a.shape) >= 2 and \
            len(b.shape) >= 2:
        if a.requires_grad or b.requires_grad:
            return MatMul.apply(a, b)
        return MatMul.compute(a, b)       # nothing to record: no node (one Python call)
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        if isinstance(a, (bool, int, float, np.number)) or \
                isinstance(b, (bool, int, float, np.number)):
            raise TypeError(f"matmul needs two tensors, got {type(a).__name__} and "
                            f"{type(b).__name__} (use * to scale by a number)")
        a, b = as_operand(a), as_operand(b)     # array-likes (x @ ndarray) become tensors
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                         f"{list(a.shape)} and {list(b.shape)}")
    squeeze_first = a.ndim == 1
    squeeze_last = b.ndim == 1
    if squeeze_first:
        a = reshape(a, (1, a.shape[0]))
    if squeeze_last:
        b = reshape(b, (b.shape[0], 1))
    out = MatMul.apply(a, b)
    if squeeze_first or squeeze_last:
        shape = out.shape[:-2] + ((out.shape[-2],) if not squeeze_first else ()) + \
            ((out.shape[-1],) if not squeeze_last else ())
        out = reshape(out, shape)
    return out


def _target_shape(a, shape):
    """reshape(2, 3) / reshape((2, 3)) / reshape([2, -1]) -> the full shape for a."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return infer_shape(shape, numel(a.shape))


def reshape(input: Tensor, *sizes: int | Sequence[int],
            shape: Sequence[int] | None = None) -> Tensor:
    """The elements of `a` in a new shape: a view when the strides allow, else a copy.

    Args:
        input (Tensor): the input.
        *sizes (int or tuple of int): the new shape, as ints or one tuple / list; one
            size may be -1 (inferred from the others). shape= (PyTorch's keyword) instead.

    Example:
        >>> torchic.arange(6).reshape(2, -1)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    a = input
    shape = _target_shape(a, sizes if shape is None else _keyword_shape(sizes, shape))
    if shape == a.shape:
        return a
    return Reshape.apply(a, shape=shape)


def _keyword_shape(sizes, shape, name="shape"):
    """The sizes given as a keyword (reshape(x, shape=...), x.view(size=...)), as a 1-tuple."""
    if sizes:
        raise TypeError(f"got the sizes both positionally and as {name}=")
    return (shape,)


def view(input: Tensor, *sizes: int | Sequence[int],
         size: Sequence[int] | None = None) -> Tensor:
    """`a` in a new shape sharing its storage (always a view); RuntimeError when the
    strides do not allow one (use `reshape`). Arguments as `reshape`."""
    a = input
    shape = _target_shape(a, sizes if size is None else _keyword_shape(sizes, size, "size"))
    if shape == a.shape:
        return a
    strides = reshape_strides(a.shape, a._strides, shape)
    if strides is None:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride "
                           f"(shape {list(a.shape)}, strides {list(a._strides)}); use "
                           f".reshape(...) instead")
    return Reshape.apply(a, shape=shape, strides=strides)


def permute(input: Tensor, *order: int | Sequence[int],
            dims: Sequence[int] | None = None) -> Tensor:
    """A view of `a` with its dims reordered: dim `i` of the result is dim `dims[i]` of `a`.

    Example:
        >>> torchic.zeros(2, 3, 4).permute(2, 0, 1).shape
        (4, 2, 3)
    """
    a = input
    dims = order if dims is None else _keyword_shape(order, dims, "dims")
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    dims = permute_meta(a.shape, a._strides, dims)[2]   # validated and normalized
    if dims == tuple(range(a.ndim)):
        return a
    return Permute.apply(a, dims=dims)


def transpose(input: Tensor, dim0: int | None = None, dim1: int | None = None) -> Tensor:
    """A view of `a` with dims `dim0` and `dim1` swapped; without dims (`x.t()`), the
    transpose of a tensor of at most 2 dims."""
    a = input
    if dim0 is None and dim1 is None:
        if a.ndim > 2:
            raise ValueError(f"transpose() without dims needs a tensor of at most 2 dims, "
                             f"got shape {list(a.shape)}; give transpose(dim0, dim1)")
        return permute(a, tuple(reversed(range(a.ndim))))
    if dim0 is None or dim1 is None:
        raise TypeError("transpose needs both dim0 and dim1 (or neither, for 2-D)")
    d0, d1 = normalize_axis(dim0, a.ndim), normalize_axis(dim1, a.ndim)
    if a.ndim == 0 or d0 == d1:
        return a
    dims = list(range(a.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return Permute.apply(a, dims=tuple(dims))     # (a permutation by construction)


def expand(input: Tensor, *sizes: int | Sequence[int],
           size: Sequence[int] | None = None) -> Tensor:
    """A view of `a` broadcast to `shape` (size-1 dims repeated with stride 0, new dims in
    front; -1 keeps a size). No memory is copied.

    Example:
        >>> torchic.tensor([[1.0], [2.0]]).expand(2, 3)
        tensor([[1., 1., 1.],
                [2., 2., 2.]])
    """
    a = input
    shape = sizes if size is None else _keyword_shape(sizes, size, "size")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(shape)
    if len(shape) < a.ndim:
        raise ValueError(f"expand: the number of sizes ({len(shape)}) must be at least the "
                         f"tensor's dims ({a.ndim})")
    lead = len(shape) - a.ndim
    shape = tuple(a.shape[i - lead] if d == -1 and i >= lead else d
                  for i, d in enumerate(shape))
    if shape == a.shape:
        return a
    broadcast_strides(a.shape, a._strides, shape)  # validates
    return Expand.apply(a, shape=shape)


def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """`a` without its size-1 dims (only those in `dim`, an int or a tuple, when given)."""
    a = input
    if dim is None:
        shape = tuple(d for d in a.shape if d != 1)
    else:
        dims = normalize_axes(dim, a.ndim)
        shape = tuple(d for i, d in enumerate(a.shape) if not (i in dims and d == 1))
    return reshape(a, shape)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """`a` with a new size-1 dim inserted at position `dim` (-1: at the end)."""
    a = input
    d = normalize_axis(dim, a.ndim + 1)
    return reshape(a, a.shape[:d] + (1,) + a.shape[d:])


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """`a` with dims `start_dim` to `end_dim` (inclusive) merged into one; a 0-d tensor
    becomes 1-D."""
    a = input
    if a.ndim == 0:
        return reshape(a, (1,))
    s = normalize_axis(start_dim, a.ndim)
    e = normalize_axis(end_dim, a.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(a, a.shape[:s] + (numel(a.shape[s:e + 1]),) + a.shape[e + 1:])


def contiguous(input: Tensor, memory_format: object = None) -> Tensor:
    """`a` itself when its elements are row-major without gaps, else a row-major copy
    (memory_format= is accepted: torchic's layout is row-major whatever it says)."""
    a = input
    check_memory_format(memory_format, "contiguous()")
    if a.is_contiguous():
        return a
    return Contiguous.apply(a)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices of a along dim, as a tuple of views."""
    a = input
    d = normalize_axis(dim, a.ndim)
    shape, strides, offset = a.shape, a._strides, a._offset
    part_shape, part_strides, step = shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:], \
        strides[d]
    lead = (slice(None),) * d       # (the key each view's gradient places its slice with)
    if a.requires_grad and is_grad_enabled():
        return tuple([IndexView.apply(a, key=lead + (i,),
                                      meta=(offset + i * step, part_shape, part_strides))
                      for i in range(shape[d])])
    # nothing to record (`for i in ix` in a script's get_batch): the views made directly
    # (IndexView.forward's, without a node and frames per view; mark_view links each to the
    # base as a view made outside a graph)
    st, code, part_shape = a._storage, a._dtype, Size(part_shape)
    return tuple([mark_view(UNRECORDED_NODE, a,
                            make(st, offset + i * step, part_shape, part_strides, code))
                  for i in range(shape[d])])


def iter_rows(a: Tensor) -> Iterator[Tensor]:
    """iter(t): the slices along dim 0, as views (unbind's: no key parsing per element)."""
    if not a.shape:
        raise TypeError("iteration over a 0-d tensor")
    return iter(unbind(a))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along an existing dim (their shapes equal elsewhere).

    Args:
        tensors (sequence of Tensor): the tensors (of several dtypes: promoted as `add`'s).
        dim (int): the dim to join along.

    Example:
        >>> torchic.cat([torchic.zeros(1, 2), torchic.ones(2, 2)]).shape
        (3, 2)
    """
    tensors = [as_operand(t) for t in tensors]
    if not tensors:
        raise ValueError("cat needs a non-empty sequence of tensors")
    if builtins.any(t.shape == (0,) for t in tensors) and \
            builtins.any(t.shape != (0,) for t in tensors):   # PyTorch's legacy rule: a 1-D
        if builtins.any(t._dtype != tensors[0]._dtype for t in tensors):  # empty tensor is
            tensors, _ = promote(*tensors)                                # skipped
        skipped = [t for t in tensors if t.shape == (0,) and t.requires_grad]
        out = cat([t for t in tensors if t.shape != (0,)], dim)
        for t in skipped:          # each still gets its (empty) gradient
            out = out + t.sum()
        return out
    ref = tensors[0]
    d = normalize_axis(dim, ref.ndim)
    for t in tensors:
        if t.ndim != ref.ndim or builtins.any(
                i != d and x != y for i, (x, y) in enumerate(zip(t.shape, ref.shape))):
            raise ShapeError(f"cat: shapes {[list(t.shape) for t in tensors]} differ outside "
                             f"dim {d}")
    if builtins.any(t._dtype != ref._dtype for t in tensors):
        tensors, _ = promote(*tensors)
    return Cat.apply(*tensors, dim=d)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors (of one shape) joined along a new dim `dim`.

    Example:
        >>> torchic.stack([torchic.zeros(2), torchic.ones(2)], dim=1)
        tensor([[0., 1.],
                [0., 1.]])
    """
    if tensors.__class__ is not list and tensors.__class__ is not tuple:
        tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]
    if first.__class__ is not Tensor:
        tensors = _stack_operands(tensors)
    else:
        shape, code = first.shape, first._dtype
        for t in tensors:   # (one pass for the common case: tensors of one shape and dtype)
            if t.__class__ is not Tensor or t._dtype != code or t.shape != shape:
                tensors = _stack_operands(tensors)
                break
    return Cat.apply(*tensors, dim=normalize_axis(dim, tensors[0].ndim + 1), stack=True)


def _stack_operands(tensors):
    """stack's parts as tensors of one dtype (promoted), or PyTorch's error for parts of
    several shapes."""
    tensors = [as_operand(t) for t in tensors]
    shape = tensors[0].shape
    for i, t in enumerate(tensors):      # PyTorch's error class and message
        if t.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t.shape)} at "
                               f"entry {i}")
    if builtins.any(t._dtype != tensors[0]._dtype for t in tensors):
        tensors, _ = promote(*tensors)
    return tensors
