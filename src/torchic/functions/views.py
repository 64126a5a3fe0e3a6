"""Views (zero-copy: new offset / shape / strides over the same storage) and copies."""

import operator

from .. import raw
from ..autograd import Function, LazyGrad
from ..shape import (broadcast_strides, contiguous_strides, inverse_permutation, numel,
                     permute_meta, slice_meta)
from .common import as_strided, reshape_raw, sum_to_shape


class Reshape(Function):
    def forward(self, a, shape, strides=None):
        self.in_shape = a.shape
        if strides is not None:   # already worked out by view()
            return as_strided(a, a._offset, shape, strides)
        return reshape_raw(a, shape)

    def backward(self, g):
        return (g.reshape(self.in_shape),)


class Permute(Function):
    def forward(self, a, dims):
        self.dims = dims
        shape, strides, _ = permute_meta(a.shape, a._strides, dims)
        return as_strided(a, a._offset, shape, strides)

    def backward(self, g):
        return (g.permute(inverse_permutation(self.dims)),)


class Expand(Function):
    def forward(self, a, shape):
        self.in_shape = a.shape
        return as_strided(a, a._offset, shape, broadcast_strides(a.shape, a._strides, shape))

    def backward(self, g):
        return (sum_to_shape(g, self.in_shape),)


class IndexView(Function):
    """Basic indexing (ints, slices, None, ...): a strided view of the input."""

    def forward(self, a, key):
        self.in_shape, self.key = a.shape, key
        offset, shape, strides = slice_meta(a._offset, a.shape, a._strides, key)
        return as_strided(a, offset, shape, strides)

    def backward(self, g):
        return (SliceGrad(self.in_shape, self.key, g),)


class SliceGrad(LazyGrad):
    """IndexView's gradient, lazy: g in the region `key` selects of zeros of the input's
    shape. The engine writes the slices' gradients of one tensor into one buffer
    (`write_all`): a 3-way split's backward is 3 copies, not 3 zero fills, 3 copies and 2
    adds of the whole tensor."""

    __slots__ = ("shape", "g", "meta", "numel", "key")

    def __init__(self, shape, key, g):
        self.shape, self.g, self.key = shape, g, key
        self.meta = slice_meta(0, shape, contiguous_strides(shape), key)  # in a contiguous buf
        self.numel = numel(self.meta[1])

    def ranges(self):
        """The input's indices the region holds, one range per input dim."""
        key, shape, out = self.key, self.shape, []
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        for k in key:
            if k is Ellipsis:
                out.extend(range(n) for n in shape[len(out):len(out) + len(shape) - n_real])
            elif isinstance(k, slice):
                out.append(range(*k.indices(shape[len(out)])))
            elif k is not None:
                i = operator.index(k) % shape[len(out)]
                out.append(range(i, i + 1))
        return tuple(out) + tuple(range(n) for n in shape[len(out):])

    @staticmethod
    def write_all(buf, parts, fresh):
        """Add each part into its region of buf. Fresh (buf uninitialized): a part whose
        region no earlier part touched is copied instead, and buf is zero-filled first
        unless the parts cover it exactly (disjoint, as many elements as buf)."""
        first = _first_writers(parts) if fresh else [False] * len(parts)
        if fresh and not (all(first) and sum(p.numel for p in parts) == numel(buf.shape)):
            raw.fill(buf, 0.0)
        for p, copy in zip(parts, first):
            if not p.numel:
                continue
            region, g = as_strided(buf, *p.meta), p.g
            if copy:
                raw.copy_into(region, g)
                continue
            if g._dtype != "f32":
                g = raw.cast(g, "f32")
            if region.is_contiguous():     # in place: exact aliasing of out and a (ops.py)
                v = raw.view_of(region)
                raw.run("add", region, (v, raw.broadcast_view(g, region.shape)))
            else:                          # out must be contiguous: add, then copy back
                raw.copy_into(region, raw.binary("add", region, g))


def _first_writers(parts):
    """For each part, whether no earlier part's region meets its region. A sweep along
    the dim where the regions differ most: only regions whose ranges there overlap
    are compared (x[:, t] for each t: no pair)."""
    first = [True] * len(parts)
    live = [(i, p.ranges()) for i, p in enumerate(parts) if p.numel]
    if len(live) < 2:
        return first
    if not live[0][1]:     # 0-d: every region is the one element
        return [i == live[0][0] or not p.numel for i, p in enumerate(parts)]
    d = max(range(len(live[0][1])), key=lambda d: len({r[d] for _, r in live}))
    active = []
    for i, r in sorted(live, key=lambda x: x[1][d][0]):
        active = [(j, q) for j, q in active if q[d][-1] >= r[d][0]]
        for j, q in active:
            if all(_ranges_meet(a, b) for a, b in zip(r, q)):
                first[max(i, j)] = False
        active.append((i, r))
    return first


def _ranges_meet(a, b):
    """Whether two non-empty ranges (positive steps) share an element."""
    lo, hi = max(a[0], b[0]), min(a[-1], b[-1])
    if lo > hi:
        return False
    if a.step < b.step:
        a, b = b, a
    k = -(-(lo - a[0]) // a.step)      # a's first element >= lo
    # a's elements cycle through b.step residues mod b.step: b.step of them decide
    for x in a[k:k + b.step]:
        if x > hi:
            return False
        if x in b:
            return True
    return False


class Contiguous(Function):
    def forward(self, a):
        return raw.contiguous(a)

    def backward(self, g):
        return (g,)


class Clone(Function):
    def forward(self, a):
        return raw.copy_into(raw.new_tensor(a.shape, a._dtype), a)

    def backward(self, g):
        return (g,)


class GatherRows(Function):
    """table[idx] for an integer tensor idx: rows of table picked along axis 0."""

    def forward(self, table, idx):
        self.table_shape = table.shape
        self.save(idx)
        row = numel(table.shape[1:])
        t2 = table if table.ndim == 2 else reshape_raw(table, (table.shape[0], row))
        i1 = idx if idx.ndim == 1 else reshape_raw(idx, (numel(idx.shape),))
        out = raw.gather_rows(t2, raw.contiguous(i1))
        shape = idx.shape + table.shape[1:]
        return out if shape == out.shape else as_strided(out, 0, shape, contiguous_strides(shape))

    def backward(self, g):
        (idx,) = self.saved
        row = numel(self.table_shape[1:])
        n = numel(idx.shape)
        g2 = raw.contiguous(g.reshape((n, row)))
        i1 = raw.contiguous(reshape_raw(idx, (n,)))
        out = raw.scatter_add_rows(g2, i1, self.table_shape[0])
        return reshape_raw(out, self.table_shape), None


class Cat(Function):
    def forward(self, *tensors, dim):
        self.dim = dim
        self.sizes = [t.shape[dim] for t in tensors]
        shape = list(tensors[0].shape)
        shape[dim] = sum(self.sizes)
        out = raw.new_tensor(tuple(shape), tensors[0]._dtype)   # int32 stays int32
        start = 0
        for t, size in zip(tensors, self.sizes):
            raw.copy_into(narrow(out, dim, start, size), t)
            start += size
        return out

    def backward(self, g):
        grads, start = [], 0
        for size, need in zip(self.sizes, self.needs_grad):
            grads.append(narrow(g, self.dim, start, size) if need else None)
            start += size
        return tuple(grads)


def narrow(t, dim, start, length):
    key = (slice(None),) * dim + (slice(start, start + length),)
    offset, shape, strides = slice_meta(t._offset, t.shape, t._strides, key)
    return as_strided(t, offset, shape, strides)


class Cast(Function):
    """float <-> int copies; only float -> float carries a gradient (identity)."""

    def forward(self, a, dtype):
        return raw.cast(a, dtype)

    def backward(self, g):
        return (g,)
