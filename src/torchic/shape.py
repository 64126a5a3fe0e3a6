"""Stride and broadcast arithmetic: small pure functions, no tensors, no I/O.

A tensor's element (i0, i1, ...) lives at ``offset + i0*s0 + i1*s1 + ...``
(strides in elements). Every view (reshape, transpose, slice, expand) is just
a new (offset, shape, strides) over the same storage; these functions compute
them and say when a view is impossible.
"""

import math
import operator
import numbers
from typing import NamedTuple

import numpy as np


class ShapeError(ValueError, RuntimeError):
    """Shapes that do not fit (broadcasting, matmul, view / reshape, expand, cat): PyTorch
    raises RuntimeError for these, so ``except RuntimeError`` catches it as it does PyTorch's;
    it stays a ValueError for code written against torchic's earlier class."""


def numel(shape):
    return math.prod(shape)


_strides_cache = {}


def contiguous_strides(shape):
    """Row-major strides of a shape (memoized: the same few shapes recur every step)."""
    cached = _strides_cache.get(shape)
    if cached is not None:
        return cached
    strides = _row_major(shape)
    if len(_strides_cache) < 4096 and type(shape) is tuple:
        _strides_cache[shape] = strides
    return strides


def _row_major(shape):
    strides = [0] * len(shape)
    step = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = step
        step *= max(shape[i], 1)
    return tuple(strides)


def is_contiguous(shape, strides):
    if _strides_cache.get(shape) == strides:     # the common case: row-major strides
        return True
    step = 1
    # (reversed() of a torchic.Size would index it through its Python __getitem__)
    for d, s in zip(reversed(tuple(shape)), reversed(strides)):
        if d != 1 and s != step:
            return False
        step *= d
    return True


def view_extent(offset, shape, strides):
    """(first, last) element index a view touches; None for a 0-size view."""
    if 0 in shape:
        return None
    last = offset + sum((d - 1) * s for d, s in zip(shape, strides))
    return offset, last


def normalize_axis(axis, ndim, what="dim"):
    if axis.__class__ is int and -ndim <= axis < ndim:    # the common case
        return axis % ndim
    if isinstance(axis, bool) or not isinstance(axis, int):
        if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):  # NumPy ints pass
            raise TypeError(f"{what} must be an int, got {type(axis).__name__}")
        axis = int(axis)
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise IndexError(f"{what} {axis} is out of range for a tensor with {ndim} "
                         f"dimension{'s' if ndim != 1 else ''} (expected -{n} <= {what} < {n})")
    return axis % n


def normalize_axes(axes, ndim):
    """None -> all axes; int or sequence -> sorted tuple of distinct non-negative axes."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, numbers.Integral) and not isinstance(axes, bool):
        axes = (axes,)
    out = []
    for a in axes:
        a = normalize_axis(a, ndim)
        if a in out:
            raise ValueError(f"dim {a} appears more than once in {tuple(axes)}")
        out.append(a)
    return tuple(sorted(out)) if ndim else ()   # a 0-d tensor has no axes (dim 0 / -1 ok)


def broadcast_shapes(*shapes):
    """NumPy broadcasting of shapes; ValueError naming the shapes if impossible."""
    if len(shapes) == 2:   # fast path: one shape is a trailing part of the other (x + bias)
        a, b = shapes
        if a == b or not b:       # (a 0-d operand: a scalar's constant)
            return a
        if not a:
            return b
        if len(a) >= len(b) and a[len(a) - len(b):] == b:
            return a
        if len(b) > len(a) and b[len(b) - len(a):] == a:
            return b
    ndim = max(len(s) for s in shapes)
    shapes = [tuple(s) for s in shapes]      # (a torchic.Size indexes through Python)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if -i <= len(s):
                d = s[i]
                if d != 1:
                    if size != 1 and d != size:
                        raise ShapeError(
                            "shapes " + " and ".join(str(tuple(x)) for x in shapes)
                            + f" cannot be broadcast together (dimension {i}: {size} vs {d})")
                    size = d
        out.append(size)
    return tuple(out)


def broadcast_strides(shape, strides, target):
    """Strides that make (shape, strides) read as `target` (0 on broadcast dims)."""
    pad = len(target) - len(shape)
    out = [0] * pad
    for d, s, t in zip(shape, strides, target[pad:]):
        if d == t:
            out.append(s)
        elif d == 1:
            out.append(0)
        else:
            raise ShapeError(f"cannot expand shape {tuple(shape)} to {tuple(target)}")
    return tuple(out)


def transposed_meta(shape, strides):
    """(shape, strides) of the same elements with the last two dims swapped (no copy)."""
    *lead, m, n = shape       # (unpacked: a torchic.Size indexes through Python)
    *slead, sm, sn = strides
    return (*lead, n, m), (*slead, sn, sm)


class MatmulLayout(NamedTuple):
    """How a product (*batch_a, M, K) @ (*batch_b, K, N) reaches the matmul kernel.

    out_shape: the result (*batch, M, N), batch the broadcast of the two batch shapes.
    kernel_shape: what the kernel writes over the contiguous result: (B, M, N) with the
    batch dims flattened into B, or (B1, B2, M, N) when two batch dims stay two.
    operands: per operand (a, b), (shape, strides, copy): the kernel reads the operand
    through (shape, strides) from its own offset; copy True means its strides cannot be
    read that way, so it is first copied, contiguous, from (shape, strides) (the operand
    broadcast to (*batch, rows, cols)) and the kernel reads the copy as
    (B, rows, cols), contiguous."""
    out_shape: tuple
    kernel_shape: tuple
    operands: tuple


_layouts = {}


def matmul_layout(a_shape, a_strides, b_shape, b_strides):
    """The MatmulLayout of a @ b from the operands' shapes and strides (batch dims
    broadcast; operands viewed, not copied, whenever their strides allow: a transposed
    operand is read through swapped strides; two batch dims that do not flatten into one
    stay two, as attention's (B, nh, T, hd) heads of a (B, T, C) tensor). Memoized: a
    training step repeats its products' layouts."""
    key = (a_shape, a_strides, b_shape, b_strides)
    layout = _layouts.get(key)
    if layout is None:
        if len(_layouts) >= 4096:
            _layouts.clear()
        layout = _layouts[key] = _matmul_layout(tuple(a_shape), a_strides, tuple(b_shape),
                                                b_strides)
    return layout


def _matmul_layout(a_shape, a_strides, b_shape, b_strides):
    m, n = a_shape[-2], b_shape[-1]
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    out_shape = batch + (m, n)
    if not batch:       # a batch of one
        return MatmulLayout(out_shape, (1, m, n), ((
            (1,) + a_shape, (0,) + a_strides, False), ((1,) + b_shape, (0,) + b_strides, False)))
    full = [(batch + s[-2:], broadcast_strides(s, st, batch + s[-2:]))
            for s, st in ((a_shape, a_strides), (b_shape, b_strides))]
    b_total = numel(batch)
    flat = [reshape_strides(shape, strides, (b_total,) + shape[-2:]) for shape, strides in full]
    if len(batch) == 2 and None in flat:
        return MatmulLayout(out_shape, out_shape, tuple((s, st, False) for s, st in full))
    operands = tuple((shape, strides, True) if f is None else
                     ((b_total,) + shape[-2:], f, False)
                     for (shape, strides), f in zip(full, flat))
    return MatmulLayout(out_shape, (b_total, m, n), operands)


def infer_shape(shape, total):
    """Resolve one -1 in a requested shape; ValueError if it cannot hold `total` elements."""
    shape = tuple(shape)
    known, unknown = 1, -1
    for i, d in enumerate(shape):
        if d.__class__ is not int:
            if isinstance(d, bool) or not isinstance(d, int):
                raise TypeError(f"shape entries must be ints, got {shape}")
        if d >= 0:
            known *= d
        elif d == -1 and unknown < 0:
            unknown = i
        elif d == -1:
            raise ValueError(f"only one dimension can be -1, got shape {shape}")
        else:
            raise ValueError(f"invalid shape {shape}: negative dimension")
    if unknown >= 0:
        if known == 0 or total % known:
            raise ShapeError(f"shape {shape} is invalid for input of size {total}")
        return shape[:unknown] + (total // known,) + shape[unknown + 1:]
    if known != total:
        raise ShapeError(f"shape {shape} is invalid for input of size {total}")
    return shape


def reshape_strides(shape, strides, new_shape):
    """Strides viewing (shape, strides) as new_shape without a copy, or None if impossible.

    Old dims are walked from the innermost outwards in *chunks*: runs of dims
    laid out back to back (stride[d-1] == size[d] * stride[d]). A chunk may be
    re-split into any new dims covering the same number of elements; a new dim
    that would straddle two chunks makes the view impossible.
    """
    # (a torchic.Size indexes through a Python-level __getitem__: walk plain tuples)
    shape, new_shape = tuple(shape), tuple(new_shape)
    if numel(shape) == 0 or len(shape) == 0:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    nd = len(new_shape) - 1
    base = strides[-1]
    chunk_elems = 1
    new_elems = 1
    for od in range(len(shape) - 1, -1, -1):
        chunk_elems *= shape[od]
        chunk_ends = od == 0 or (shape[od - 1] != 1
                                 and strides[od - 1] != chunk_elems * base)
        if chunk_ends:
            while nd >= 0 and (new_elems < chunk_elems or new_shape[nd] == 1):
                new_strides[nd] = new_elems * base
                new_elems *= new_shape[nd]
                nd -= 1
            if new_elems != chunk_elems:
                return None
            if od > 0:
                base = strides[od - 1]
                chunk_elems = 1
                new_elems = 1
    if nd != -1:
        return None
    return tuple(new_strides)


def permute_meta(shape, strides, dims):
    ndim = len(shape)
    if len(dims) != ndim:
        raise ValueError(f"permute needs {ndim} dims for a tensor of shape {tuple(shape)}, "
                         f"got {tuple(dims)}")
    dims = tuple(normalize_axis(d, ndim) for d in dims)
    if sorted(dims) != list(range(ndim)):
        raise ValueError(f"permute dims {dims} are not a permutation of 0..{ndim - 1}")
    shape, strides = tuple(shape), tuple(strides)     # (a Size indexes through Python)
    return tuple([shape[d] for d in dims]), tuple([strides[d] for d in dims]), dims


def inverse_permutation(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def slice_meta(offset, shape, strides, key):
    """Basic indexing (ints, slices with positive steps, None, Ellipsis) -> (offset, shape, strides).

    `key` is a tuple. Raises IndexError / TypeError naming the problem.
    """
    shape = tuple(shape)      # (a torchic.Size indexes through Python)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} "
                         f"(got {n_real} indices)")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - n_real))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for k in expanded if k is not None)))
    new_shape, new_strides = [], []
    dim = 0
    for k in expanded:
        if k is None:
            new_shape.append(1)
            new_strides.append(0)
            continue
        size, stride = shape[dim], strides[dim]
        if isinstance(k, slice):
            bounds = []
            for name, v in (("start", k.start), ("stop", k.stop), ("step", k.step)):
                # anything with __index__ bounds a slice (NumPy ints, bools, one-element int
                # tensors: data[i:i + block_size] for a 0-d index tensor i), as in PyTorch
                if v is not None:
                    try:
                        v = operator.index(v)
                    except TypeError:
                        v = None
                    if v is None:
                        raise TypeError(f"slice {name} must be an int or None, got "
                                        f"{getattr(k, name)!r}")
                bounds.append(v)
            start, stop, step = bounds
            k = slice(start, stop, step)
            if step is not None and step <= 0:
                raise ValueError(f"slice step must be positive, got {step}")
            start, stop, step = k.indices(size)
            length = max(0, math.ceil((stop - start) / step))
            if length:
                offset += start * stride
            new_shape.append(length)
            new_strides.append(stride * step)
        else:
            if isinstance(k, bool) or not isinstance(k, numbers.Integral):
                raise TypeError(f"invalid index of type {type(k).__name__}: only ints, slices, "
                                f"None, ..., and integer tensors are valid indices")
            k = int(k)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
            offset += (k % size) * stride
        dim += 1
    return offset, tuple(new_shape), tuple(new_strides)


# -- shaping and indexing ops (issue 41): the strided views diagonal / unfold, and where a
#    view's elements sit in its input (what a general view's gradient scatters back to)
def diagonal_meta(offset, shape, strides, diag, d1, d2):
    """(offset, shape, strides) of the diagonal `diag` of dims d1, d2 (normalized, distinct):
    those dims dropped, the diagonal's length last (0 when it lies outside)."""
    n1, n2 = shape[d1], shape[d2]
    length = max(0, min(n1 - max(0, -diag), n2 - max(0, diag)))
    if length:
        offset += diag * strides[d2] if diag >= 0 else -diag * strides[d1]
    keep = [d for d in range(len(shape)) if d not in (d1, d2)]
    return (offset, tuple(shape[d] for d in keep) + (length,),
            tuple(strides[d] for d in keep) + (strides[d1] + strides[d2],))


def unfold_meta(shape, strides, dim, size, step):
    """(shape, strides) of Tensor.unfold(dim, size, step): windows of `size` every `step`
    along dim (normalized), the window's elements as a new last dim. 0-d: one window."""
    if not shape:
        return (size,), (1,)
    n = shape[dim]
    count = (n - size) // step + 1
    return (shape[:dim] + (count,) + shape[dim + 1:] + (size,),
            strides[:dim] + (strides[dim] * step,) + strides[dim + 1:] + (strides[dim],))


def strided_positions(offset, shape, strides):
    """The storage positions of a strided view's elements, row-major (NumPy int64)."""
    pos = np.full((), offset, np.int64)
    for n, s in zip(shape, strides):
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * s
    return pos.reshape(shape)


def logical_positions(base_meta, view_meta):
    """For each element of the view `view_meta` (offset, shape, strides in a storage), the
    flat row-major index of the same storage element in the tensor `base_meta`, or -1 where
    the base does not hold it (NumPy int64 of the view's shape)."""
    base = strided_positions(*base_meta).reshape(-1)
    view = strided_positions(*view_meta)
    if not base.size or not view.size:
        return np.full(view.shape, -1, np.int64)
    lo = min(int(base.min()), int(view.min()))
    table = np.full(max(int(base.max()), int(view.max())) - lo + 1, -1, np.int64)
    table[base - lo] = np.arange(base.size)
    return table[view - lo]
