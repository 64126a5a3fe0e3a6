"""Views (zero-copy: new offset / shape / strides over the same storage) and copies."""

from .. import raw
from ..autograd import Function
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
        out = raw.full(self.in_shape, 0.0)
        target = IndexView.apply(out, self.key)
        raw.copy_into(target, g)
        return (out,)


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
