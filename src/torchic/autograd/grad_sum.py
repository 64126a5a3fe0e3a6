"""Where the engine sums the gradients one tensor gets in one pass (`_GradSum`), and the
gradients a backward may hand it unmaterialized (`LazyGrad`)."""

from .. import raw
from ..grad_mode import _grad_enabled
from ..shape import numel


class LazyGrad:
    """A gradient a backward returns unmaterialized (views.py's SliceGrad: g in a region of
    zeros of the input's shape). Only the engine sees one: `_GradSum` writes those of one
    tensor into one buffer; .grad, hooks and backward get ordinary tensors. A subclass has
    `shape` (the input's), `numel` (the elements it holds) and `write_all(buf, parts,
    fresh)`: add `parts` (of its class) into `buf`, a contiguous tensor (the gradients' dtype) of `shape`
    only the engine holds; `fresh`: buf is uninitialized, to become exactly their sum.
    """

    __slots__ = ()


class _GradSum:
    """The gradients one node (or, lazy ones, one leaf) gets in one backward pass.

    A tensor is added as it comes: the first is kept as it is (not ours: a backward may
    hand one tensor to several inputs), the sum of two is a new tensor the engine owns,
    later ones are added into that in place. Lazy gradients are kept until the sum is
    needed (or until they hold more elements than it), then written into one buffer: the
    owned sum, a copy of a sum not ours, or a fresh one.

    Writes in place go only into an owned buffer: allocated here, held by nobody else
    until `total` hands it on, so no saved tensor (version counter), view or user
    reference sees them. They are stream ops like any other (ordered after the ops that
    made their operands; torchic.compile records them as such).
    """

    __slots__ = ("base", "owned", "lazy", "held")

    def __init__(self, first=None):
        self.base, self.owned, self.lazy, self.held = first, False, [], 0

    def add(self, g):
        if isinstance(g, LazyGrad):
            self.lazy.append(g)
            self.held += g.numel
            if self.held > numel(g.shape):    # bound what is held to one sum's size
                self.total()
            return
        base = self.base
        if base is None:
            self.base = g
        elif _grad_enabled.get():          # create_graph: a recorded sum
            self.base, self.owned = base + g, False
        elif (self.owned and g.shape == base.shape and g._dtype == base._dtype
              and g._storage is not base._storage):
            v = raw.view_of(base)      # exact aliasing of out and a: ops.py allows it
            base._storage.runtime.run("add", v, (v, raw.view_of(g)), None)
        else:
            self.base, self.owned = base + g, True

    def total(self):
        """The sum, lazy gradients written out: (tensor, owned by the engine)."""
        if self.lazy:
            base, shape = self.base, self.lazy[0].shape
            dtype = self.lazy[0].g._dtype if base is None else base._dtype
            if base is None:
                buf = raw.new_tensor(shape, dtype)
            elif (self.owned and base.shape == shape and base._offset == 0
                  and base.is_contiguous()):
                buf = base
            else:
                buf = raw.copy_into(raw.new_tensor(shape, dtype), base)
            fresh, kinds = base is None, {}
            for g in self.lazy:
                kinds.setdefault(type(g), []).append(g)
            for kind, parts in kinds.items():
                kind.write_all(buf, parts, fresh)
                fresh = False
            self.base, self.owned, self.lazy, self.held = buf, True, [], 0
        return self.base, self.owned


class _Slot(LazyGrad):
    """The gradient of output `i` of a node with several outputs (a custom Function's):
    the engine files it in that node's list of per-output gradients."""

    __slots__ = ("i", "g")

    def __init__(self, i, g):
        self.i, self.g = i, g
