"""Reductions and row-wise Functions: sum, max / min, softmax, log_softmax, cross_entropy."""

from .. import raw
from ..autograd import Primitive, create_graph_on
from ..creation import arange
from ..shape import inverse_permutation, numel, permute_meta
from .common import as_strided, keepdim_shape, require_float, reshape_raw


def _permuted(t, perm):
    shape, strides, _ = permute_meta(t.shape, t._strides, perm)
    return as_strided(t, t._offset, shape, strides)


class Sum(Primitive):
    def forward(self, a, axes, keepdim):
        self.in_shape, self.axes = a.shape, axes
        y = raw.reduce("sum", a, axes)
        return reshape_raw(y, keepdim_shape(a.shape, axes)) if keepdim else y

    def backward(self, g):
        g = g.reshape(keepdim_shape(self.in_shape, self.axes))
        return (g.expand(self.in_shape),)


class MaxMin(Primitive):
    """max / min over axes; the gradient is shared evenly among tied extremes."""

    def forward(self, a, axes, keepdim, op):
        self.in_shape, self.axes = a.shape, axes
        y = raw.reduce(op, a, axes)
        y_keep = reshape_raw(y, keepdim_shape(a.shape, axes))
        self.save(a, y_keep)
        return y_keep if keepdim else y

    def backward(self, g):
        a, y_keep = self.saved
        mask = raw.cast(a == y_keep, g._dtype)          # 1 at the tied extremes
        count = raw.reduce("sum", mask, self.axes)
        g = g.reshape(keepdim_shape(self.in_shape, self.axes))
        return (g * mask / reshape_raw(count, keepdim_shape(self.in_shape, self.axes)),)


class MaxMinDim(Primitive):
    """max / min over one dim with indices: the whole gradient goes to the returned index
    (PyTorch's rule for max(dim) / min(dim); amax / amax and max() share it among ties)."""

    def forward(self, a, indices, axis, keepdim, op):
        self.in_shape, self.axis = a.shape, axis
        keep = keepdim_shape(a.shape, (axis,))
        self.save(indices if keepdim else reshape_raw(indices, keep))
        y = raw.reduce(op, a, (axis,))
        return reshape_raw(y, keep) if keepdim else y

    def backward(self, g):
        (idx_keep,) = self.saved
        n = self.in_shape[self.axis]
        pos = arange(n, dtype="i32").reshape(
            tuple(n if i == self.axis else 1 for i in range(len(self.in_shape))))
        hit = pos == idx_keep      # 1.0 exactly at the returned index along the axis
        return g.reshape(keepdim_shape(self.in_shape, (self.axis,))) * hit, None


class _RowsOnLastAxis(Primitive):
    """Softmax-like ops: the primitive (`op`) runs on a (rows, n) matrix with the axis
    last; the input is permuted and flattened to that (a view when the strides allow),
    the output moved back. A subclass gives its `op` and `grad(g, y)`."""
    op = None

    def forward(self, a, axis):
        require_float(a, op=self.op)
        self.axes = (axis,) if a.ndim else ()
        self.perm = [d for d in range(a.ndim) if d != axis] + ([axis] if a.ndim else [])
        y = self._from_rows(raw.rows_op(self.op, self._rows(a)), a.shape)
        self.save(y)
        return y

    def _rows(self, t):
        """t (the input's shape) with the axis moved last, as (rows, n); 0-d: one row."""
        moved = _permuted(t, self.perm) if self.perm != sorted(self.perm) else t
        shape = tuple(moved.shape)       # (a torchic.Size indexes through Python)
        return reshape_raw(moved, (numel(shape[:-1]), shape[-1] if shape else 1))

    def _from_rows(self, t2d, shape):
        """The inverse of _rows: a (rows, n) result back to `shape` (a view)."""
        moved = reshape_raw(t2d, tuple(shape[d] for d in self.perm))
        if self.perm != sorted(self.perm):
            return _permuted(moved, inverse_permutation(self.perm))
        return moved

    def backward(self, g):
        (y,) = self.saved
        return (self.grad(g, y),)


class Softmax(_RowsOnLastAxis):
    op = "softmax"

    def grad(self, g, y):
        if create_graph_on():
            return y * (g - Sum.apply(g * y, axes=self.axes, keepdim=True))
        # y * (g - sum(g * y)) in one kernel (the composite took 4 ops): y and g moved alike
        return self._from_rows(raw.rows_op("softmax_grad", self._rows(y), self._rows(g)),
                               y.shape)


class LogSoftmax(_RowsOnLastAxis):
    op = "log_softmax"

    def grad(self, g, y):
        return g - y.exp() * Sum.apply(g, axes=self.axes, keepdim=True)


class CrossEntropy(Primitive):
    """Fused, stable log-softmax + negative log-likelihood over (N, C) logits.

    A row whose target is ignore_index (None: none is) adds loss 0 and gradient 0, and
    the mean divides by the rows counted: the kernel writes each row's 0/1 count beside
    its loss (out (N, 2)), so one sum gives (total, count) and the mean costs the old
    three ops (cross_entropy, sum, div). Every target ignored: 0 / 0 = nan, gradient 0.
    """

    def forward(self, logits, target, reduction, ignore_index):
        self.reduction = reduction
        self.params = params = {"ignore_index": ignore_index}
        self.save(logits, target)
        n = logits.shape[0]
        ins = (raw.view_of(logits), raw.view_of(target))
        if reduction != "mean":
            losses = raw.run("cross_entropy", raw.new_tensor((n,), logits._dtype), ins, params)
            return losses if reduction == "none" else raw.reduce("sum", losses, (0,))
        pairs = raw.run("cross_entropy", raw.new_tensor((n, 2), logits._dtype), ins, params)
        sums = raw.reduce("sum", pairs, (0,))         # (total loss, rows counted)
        self.count = as_strided(sums, sums._offset + 1, (), ())
        return raw.binary("div", as_strided(sums, sums._offset, (), ()), self.count)

    def backward(self, g):
        logits, target = self.saved
        n = logits.shape[0]
        if self.reduction == "mean":
            g = g / self.count     # (1 / 0 when every row is ignored: the kernel writes 0)
        if create_graph_on():
            return self.recorded_grad(g, logits, target), None
        out = raw.new_tensor(logits.shape, logits._dtype)
        # the per-row gradient is g read with stride 0 when the loss was reduced: no copy
        raw.run("cross_entropy_grad", out,
                (raw.view_of(logits), raw.view_of(target), raw.broadcast_view(g, (n,))),
                self.params)
        return out, None

    def recorded_grad(self, g, logits, target):
        """The kernel's gradient as recorded ops: (softmax - one_hot) * g per counted row."""
        n, c = logits.shape
        p = LogSoftmax.apply(logits, 1).exp()
        picked = arange(c, dtype=target._dtype).reshape((1, c)) == target.reshape((n, 1))
        ignore = self.params["ignore_index"]
        rows = g.reshape((n, 1)) if self.reduction == "none" else g
        d = (p - raw.cast(picked, p._dtype)) * rows
        if ignore is not None:
            d = d * raw.cast(target.reshape((n, 1)) != ignore, p._dtype)
        return d
