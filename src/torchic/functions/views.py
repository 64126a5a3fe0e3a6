"""Views (zero-copy: new offset / shape / strides over the same storage) and copies.

A view remembers its base (`mark_view`), so that an in-place op on the view is recorded on
the base as PyTorch records it (`CopySlices`, api/inplace.py).
"""

import functools
import operator
import weakref

import numpy as np

from .. import raw
from ..ops import OUT
from ..autograd import LazyGrad, Primitive, create_graph_on, is_grad_enabled
from ..shape import (broadcast_strides, contiguous_strides, inverse_permutation,
                     logical_positions, numel, permute_meta, slice_meta)
from .common import as_strided, reshape_raw, sum_to_shape


def mark_view(node, a, out):
    """out (when it shares a's storage) is a view of a's base, the tensor that owns the
    elements (PyTorch's `._base`): `out._view_base`. A view made with grad mode on is also
    listed, weakly, in its base's `_views`, so that an in-place op recorded on the base (or
    on another of its views) gives it a new grad_fn (api/inplace.py's `regenerate_views`);
    a view of a leaf that requires grad is not listed (no in-place op may be recorded on
    that leaf). A view made under no_grad (or of such a view) holds a weak reference to its
    base instead: PyTorch refuses to record an in-place op on it, as its base's graph would
    not see the change. Returns out."""
    if out._storage is not a._storage:
        return out          # reshape copied
    base = a._view_base
    if type(base) is weakref.ref:
        out._view_base = base
        return out
    base = a if base is None else base
    if not (node.needs_grad or is_grad_enabled()):     # (apply records with grad mode off)
        out._view_base = weakref.ref(base)     # (one per base: weakref reuses it)
        return out
    out._view_base = base
    if base.requires_grad and base.grad_fn is None:
        return out
    views = base._views
    if views is None:
        base._views = [weakref.ref(out)]
        return out
    views.append(weakref.ref(out))
    if len(views) % 64 == 0:             # drop the dead ones now and then
        base._views = [r for r in views if r() is not None]
    return out


class Reshape(Primitive):
    def forward(self, a, shape, strides=None):
        self.in_shape = a.shape
        if strides is not None:   # already worked out by view()
            return mark_view(self, a, as_strided(a, a._offset, shape, strides))
        return mark_view(self, a, reshape_raw(a, shape))

    def backward(self, g):
        return (g.reshape(self.in_shape),)


class Permute(Primitive):
    def forward(self, a, dims):
        self.dims = dims
        shape, strides, _ = permute_meta(a.shape, a._strides, dims)
        return mark_view(self, a, as_strided(a, a._offset, shape, strides))

    def backward(self, g):
        return (g.permute(inverse_permutation(self.dims)),)


class Expand(Primitive):
    def forward(self, a, shape):
        self.in_shape = a.shape
        return mark_view(self, a, as_strided(a, a._offset, shape,
                                             broadcast_strides(a.shape, a._strides, shape)))

    def backward(self, g):
        return (sum_to_shape(g, self.in_shape),)


class IndexView(Primitive):
    """Basic indexing (ints, slices, None, ...): a strided view of the input."""

    def forward(self, a, key, meta=None):
        """meta: (offset, shape, strides) when the caller already worked them out for
        this key (unbind: one int per element, no key parsing)."""
        self.in_shape, self.key = a.shape, key
        offset, shape, strides = meta or slice_meta(a._offset, a.shape, a._strides, key)
        return mark_view(self, a, as_strided(a, offset, shape, strides))

    def backward(self, g):
        if create_graph_on():      # recorded: g placed in zeros, whose derivative slices
            return (SliceBackward.apply(g, self.in_shape, self.key),)
        return (SliceGrad(self.in_shape, self.key, g),)


class SliceBackward(Primitive):
    """IndexView's gradient as a recorded op (create_graph): g in the region `key` selects
    of zeros of shape `shape`; its own gradient is that region of the incoming one."""

    def forward(self, g, shape, key):
        self.key = key
        buf = raw.new_tensor(shape, g._dtype)
        raw.fill(buf, 0.0)
        offset, rshape, strides = slice_meta(0, shape, contiguous_strides(shape), key)
        if numel(rshape):
            raw.copy_into(as_strided(buf, offset, rshape, strides), g)
        return buf

    def backward(self, gg):
        return IndexView.apply(gg, self.key), None, None


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
            if g._dtype != buf._dtype:
                g = raw.cast(g, buf._dtype)
            # in place: exact aliasing of out and a (ops.py); float16 / bfloat16 / narrow
            # ints (no add row: computed wider) through raw.binary and a copy back
            if region.is_contiguous() and (buf._dtype, buf._dtype) in OUT["add"]:
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


class AsStrided(Primitive):
    """The elements of base's storage at (offset, shape, strides), as a view: the grad_fn a
    view gets from its base after an in-place op (PyTorch's AsStridedBackward). Its
    gradient is g placed in that region of zeros of base's layout (summed over the
    broadcast dims of an expanded view)."""

    def forward(self, base, offset, shape, strides):
        self.base_meta, self.meta = _meta(base), (offset, shape, strides)
        return as_strided(base, offset, shape, strides)

    def backward(self, g):
        offset, shape, strides = self.meta
        repeated = tuple(d for d, (n, s) in enumerate(zip(shape, strides)) if s == 0 and n > 1)
        if repeated:       # one storage element seen many times: its gradient is their sum
            g = g.sum(dim=repeated, keepdim=True)
            shape = g.shape
        if create_graph_on():
            return (StridedScatter.apply(g, self.base_meta, (offset, shape, strides)),)
        return (StridedScatter.scatter(g, self.base_meta, (offset, shape, strides)),)


class StridedScatter(Primitive):
    """g placed in the region `meta` (offset, shape, strides in a base's storage, no
    repeated elements) of zeros laid out as the base (`base_meta`): AsStrided's gradient,
    recorded (create_graph); its own gradient is StridedGather's."""

    def forward(self, g, base_meta, meta):
        self.metas = base_meta, meta
        return self.scatter(g, base_meta, meta)

    @staticmethod
    def scatter(g, base_meta, meta):
        buf, whole, region = _laid_out(base_meta, meta, g._dtype)
        raw.fill(buf, 0.0)
        raw.copy_into(region, g)
        return whole

    def backward(self, gg):
        return StridedGather.apply(gg, *self.metas), None, None


class StridedGather(Primitive):
    """The region `meta` of t (a tensor of the base's shape, any layout) as a contiguous
    tensor: StridedScatter's gradient, and CopySlices' value gradient when recorded."""

    def forward(self, t, base_meta, meta):
        self.metas = base_meta, meta
        buf, whole, region = _laid_out(base_meta, meta, t._dtype)
        raw.copy_into(whole, t)
        return raw.copy_into(raw.new_tensor(region.shape, t._dtype), region)

    def backward(self, gg):
        return StridedScatter.apply(gg, *self.metas), None, None


class CopySlices(Primitive):
    """An in-place op on a view of `base` (PyTorch's CopySlices): `value`, the view's new
    contents, is written into base's storage at (offset, shape, strides); the result stands
    for base's new contents. Base's gradient goes to the old base outside that region and
    to `value` inside it."""

    def forward(self, base, value, offset, shape, strides):
        self.base_meta, self.meta = _meta(base), (offset, shape, strides)
        raw.copy_into(as_strided(base, offset, shape, strides), value)
        return as_strided(base, *self.base_meta)

    def backward(self, g):
        need_base, need_value = self.needs_grad[:2]
        if create_graph_on():      # recorded: the region's gradient, and g without it
            region_g = StridedGather.apply(g, self.base_meta, self.meta)
            g_base = g - StridedScatter.apply(region_g, self.base_meta, self.meta) \
                if need_base else None
            return g_base, (region_g if need_value else None)
        buf, whole, region = _laid_out(self.base_meta, self.meta, g._dtype)
        raw.copy_into(whole, g)
        g_value = raw.copy_into(raw.new_tensor(region.shape, g._dtype), region) if need_value \
            else None
        if need_base:
            raw.fill(region, 0.0)      # issued after the copy above: stream order
        return (whole if need_base else None), g_value


def _meta(t):
    return t._offset, t.shape, t._strides


def _laid_out(base_meta, meta, dtype):
    """A new `dtype` buffer laid out as the base was (its strides over a span of its own:
    PyTorch's new_empty_strided), the base's place in it and the region `meta` (offset,
    shape, strides in the base's storage) names in it."""
    b_offset, b_shape, b_strides = base_meta
    span = 1 + sum((n - 1) * s for n, s in zip(b_shape, b_strides)) if numel(b_shape) else 0
    buf = raw.new_tensor((span,), dtype)
    offset, shape, strides = meta
    return buf, as_strided(buf, 0, b_shape, b_strides), as_strided(buf, offset - b_offset,
                                                                     shape, strides)


class Contiguous(Primitive):
    def forward(self, a):
        return raw.contiguous(a)

    def backward(self, g):
        return (g,)


class Clone(Primitive):
    def forward(self, a):
        return raw.copy_into(raw.new_tensor(a.shape, a._dtype), a)

    def backward(self, g):
        return (g,)


class GatherRows(Primitive):
    """table[idx] for an integer tensor idx: rows of table picked along axis 0."""

    def forward(self, table, idx):
        self.table_shape = table.shape
        self.save(idx)
        row = numel(table.shape[1:])
        t2 = table if table.ndim == 2 else reshape_raw(table, (table.shape[0], row))
        i1 = idx if idx.ndim == 1 else reshape_raw(idx, (numel(idx.shape),))
        out = raw.gather_rows(t2, raw.contiguous(i1))
        shape = idx.shape + table.shape[1:]
        out = out if shape == out.shape else as_strided(out, 0, shape, contiguous_strides(shape))
        return out

    def backward(self, g):
        (idx,) = self.saved
        if create_graph_on():
            return ScatterAddRows.apply(g, idx, self.table_shape), None
        return self.scatter(g, idx, self.table_shape), None

    @staticmethod
    def scatter(g, idx, table_shape):
        row = numel(table_shape[1:])
        n = numel(idx.shape)
        g2 = raw.contiguous(g.reshape((n, row)))
        i1 = raw.contiguous(reshape_raw(idx, (n,)))
        out = raw.scatter_add_rows(g2, i1, table_shape[0])
        return reshape_raw(out, table_shape)


class ScatterAddRows(Primitive):
    """GatherRows' gradient as a recorded op (create_graph): g's rows added into the rows
    of a zero table that idx names; its own gradient gathers those rows again."""

    def forward(self, g, idx, table_shape):
        self.save(idx)
        return GatherRows.scatter(g, idx, table_shape)

    def backward(self, gg):
        (idx,) = self.saved
        return GatherRows.apply(gg, idx), None, None


# a stack of this many views of one tensor is one gather (below: one op, not one per part)
STACK_GATHER_PARTS = 8


@functools.lru_cache(maxsize=256)
def _part_positions(shape, strides):
    """Each element's position within a part of `shape` and `strides` (int32, read-only:
    cached, a training loop stacks the same parts every step)."""
    grid = np.zeros((), np.int32)
    for size, stride in zip(shape, strides):
        grid = np.add.outer(grid, np.arange(size, dtype=np.int32) * np.int32(stride))
    grid.flags.writeable = False
    return grid


def _stack_gathered(tensors, dim):
    """torch.stack of views of one storage with one layout (`[data[i:i + 8] for i in ix]`)
    as one gather (one upload and one op, where the copies cost one op per part); None when
    the parts are not such views. Parts whose elements are evenly spaced (1-D, or
    row-major) stacked along dim 0 gather whole rows of an overlapping view of the storage
    (row r: the part that starts at element r), so only their offsets are uploaded; other
    layouts gather each element's position."""
    first = tensors[0]
    storage, strides, shape = first._storage, first._strides, first.shape
    offsets = []
    for t in tensors:
        if t._storage is not storage or t._strides != strides:
            return None
        offsets.append(t._offset)
    count = numel(shape)
    if not count:
        return None
    spans = [(size - 1) * stride for size, stride in zip(shape, strides)]
    last_start = max(offsets)
    lo = min(offsets) + sum(s for s in spans if s < 0)
    hi = last_start + sum(s for s in spans if s > 0)     # the last position read
    if lo < 0 or hi >= 2 ** 31:
        return None
    starts = np.array(offsets, np.int32)
    step = _even_step(shape, strides)
    if dim == 0 and step is not None and step >= 0:
        idx = raw.write(raw.new_tensor((len(offsets),), "i32"), starts)
        table = as_strided(first, 0, (last_start + 1, count), (1, step))
        return reshape_raw(raw.gather_rows(table, idx), (len(offsets),) + tuple(shape))
    positions = np.add.outer(starts, _part_positions(tuple(shape), strides))
    if dim:
        positions = np.moveaxis(positions, 0, dim)
    idx = raw.write(raw.new_tensor((positions.size,), "i32"), positions.ravel())
    table = as_strided(first, 0, (hi + 1, 1), (1, 1))
    return reshape_raw(raw.gather_rows(table, idx), positions.shape)


def _even_step(shape, strides):
    """The distance between consecutive elements of a view read in row-major order when it
    is one for all of them (a 1-D view's stride; 1 for a contiguous one), else None."""
    step = None
    inner = 1                      # the elements of the dims after this one
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if step is None:
            step = stride
        elif stride != step * inner:
            return None
        inner *= size
    return 1 if step is None else step


class Cat(Primitive):
    """The tensors joined along `dim` (stack=True: along a new dim `dim`, each input one
    index of it). One output block; each input copied into its part by stride arithmetic
    (no per-input view op: a stack of 32 small rows is 32 copies and nothing else)."""

    def forward(self, *tensors, dim, stack=False):
        self.dim, self.stack = dim, stack
        first = tensors[0]
        if stack:
            self.sizes = [1] * len(tensors)
            if len(tensors) >= STACK_GATHER_PARTS:
                out = _stack_gathered(tensors, dim)
                if out is not None:
                    return out
            shape = first.shape[:dim] + (len(tensors),) + first.shape[dim:]
        else:
            self.sizes = [t.shape[dim] for t in tensors]
            shape = first.shape[:dim] + (sum(self.sizes),) + first.shape[dim + 1:]
        out = raw.new_tensor(shape, first._dtype)   # (one dtype: api.cat promotes)
        strides = out._strides
        step = strides[dim]
        part_strides = strides[:dim] + strides[dim + 1:] if stack else strides
        start = 0
        for t, size in zip(tensors, self.sizes):
            raw.copy_into(as_strided(out, out._offset + start * step, t.shape, part_strides), t)
            start += size
        return out

    def backward(self, g):
        grads, start = [], 0
        record = create_graph_on()
        dim, stack = self.dim, self.stack
        if not record:
            shape, strides = list(g.shape), g._strides
            if stack:
                del shape[dim]
                part_strides = strides[:dim] + strides[dim + 1:]
            else:
                part_strides = strides
        for size, need in zip(self.sizes, self.needs_grad):
            if not need:
                grads.append(None)
            elif record:
                key = (slice(None),) * dim + ((start,) if stack else
                                              (slice(start, start + size),))
                grads.append(IndexView.apply(g, key))
            else:
                if not stack:
                    shape[dim] = size
                grads.append(as_strided(g, g._offset + start * strides[dim], shape,
                                        part_strides))
            start += size
        return tuple(grads)


def narrow(t, dim, start, length):
    key = (slice(None),) * dim + (slice(start, start + length),)
    offset, shape, strides = slice_meta(t._offset, t.shape, t._strides, key)
    return as_strided(t, offset, shape, strides)


class Cast(Primitive):
    """A copy in another dtype; only float -> float carries a gradient: the gradient cast
    back to the input's dtype (a float32 input of a float64 op gets a float32 gradient)."""

    def forward(self, a, dtype):
        self.in_dtype = a._dtype
        return raw.cast(a, dtype)

    def backward(self, g):
        return (g if g._dtype == self.in_dtype else Cast.apply(g, dtype=self.in_dtype),)


# -- shaping and indexing ops (issue 41) -------------------------------------------------------
class StridedView(Primitive):
    """Any strided view of `a` (diagonal, unfold, as_strided): (offset, shape, strides) in
    a's storage. Its gradient is g scattered back to where each element sits in `a` (summed
    where the view sees an element more than once: overlapping windows, stride 0)."""

    def forward(self, a, offset, shape, strides):
        self.base_meta, self.meta = _meta(a), (offset, shape, strides)
        return mark_view(self, a, as_strided(a, offset, shape, strides))

    def backward(self, g):
        pos = logical_positions(self.base_meta, self.meta).reshape(-1)
        n = numel(self.base_meta[1])
        keep = pos >= 0
        g2 = g.reshape((numel(g.shape), 1))
        if not keep.all():                 # storage elements outside a: no gradient to a
            g2 = GatherRows.apply(g2, _index(np.nonzero(keep)[0]))
            pos = pos[keep]
        out = ScatterAddRows.apply(g2, _index(pos), (n, 1))
        return (out.reshape(self.base_meta[1]),)


def _index(positions):
    return raw.write(raw.new_tensor(positions.shape, "i64"), positions.astype(np.int64))
