"""One Function per differentiable op, forward and backward side by side.

``forward`` computes with raw (unrecorded) primitive calls from raw.py;
``backward`` receives the gradient of the output and returns one gradient
per forward argument (None where no gradient is needed). Backward runs
under no_grad and is written with ordinary tensor ops.

Below the Functions are the op functions the Tensor methods call: they parse
PyTorch-style arguments (dim / axis / keepdim, Python scalars) and apply the
Functions.
"""

import builtins
import numbers

import numpy as np

from . import raw
from .autograd import Function, is_grad_enabled
from .shape import (broadcast_shapes, inverse_permutation, normalize_axes, normalize_axis,
                    numel, permute_meta, reshape_strides, slice_meta, infer_shape,
                    broadcast_strides, contiguous_strides)
from .tensor import Tensor, dtype_code


# ---------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------
_constants = {}
MAX_CONSTANTS = 256


def constant(value, dtype="f32"):
    """A cached 0-d tensor holding a Python scalar (so `x * 2` costs no upload).

    The cache keeps the MAX_CONSTANTS most recently created values (first in, first
    out), so a value that changes every step (a decaying learning rate) costs one
    small upload per step and no growth.
    """
    rt = raw.current_runtime()
    key = (value, dtype)
    t = _constants.get(key)
    if t is None or t._storage.runtime is not rt or t._storage.block is None:
        while len(_constants) >= MAX_CONSTANTS:
            del _constants[next(iter(_constants))]
        from . import scopes
        active, scopes.active = scopes.active, 0   # never disposed by a scope
        try:
            arr = np.array(value, dtype=np.float32 if dtype == "f32" else np.int32)
            t = raw.write(raw.new_tensor((), dtype), arr)
        finally:
            scopes.active = active
        _constants[key] = t
    return t


def as_operand(x, like=None):
    """Tensors pass through; Python / NumPy numbers become cached constants."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.number)):
        if like is not None and like._dtype == "i32" and isinstance(x, (int, np.integer)) \
                and not isinstance(x, bool):
            return constant(int(x), "i32")
        return constant(float(x))
    if isinstance(x, (list, tuple, np.ndarray)):
        from .creation import tensor
        # `x + [1, 2]` means float data, unless the other operand holds integers
        return tensor(x, dtype=None if like is not None and like._dtype == "i32" else "f32")
    raise TypeError(f"unsupported operand type {type(x).__name__}; expected a Tensor or a number")


def sum_to_shape(g, shape):
    """Reduce a broadcast gradient back to the shape of the input it came from."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
    if axes:
        g = Sum.apply(g, axes=axes, keepdim=False)
    return reshape(g, shape)


def _view(t, offset, shape, strides):
    return Tensor._make(t._storage, offset, tuple(shape), tuple(strides), t._dtype)


def _require_float(*tensors, op):
    for t in tensors:
        if t._dtype != "f32":
            raise TypeError(f"{op} expects float32 tensors, got an int32 tensor "
                            f"(convert with .float())")


# ---------------------------------------------------------------------------------
# elementwise unary
# ---------------------------------------------------------------------------------
class Neg(Function):
    op = "neg"

    def forward(self, a):
        return raw.unary(self.op, a)

    def backward(self, g):
        return (-g,)


class Exp(Function):
    op = "exp"

    def forward(self, a):
        y = raw.unary(self.op, a)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return (g * y,)


class Log(Function):
    op = "log"

    def forward(self, a):
        self.save(a)
        return raw.unary(self.op, a)

    def backward(self, g):
        (a,) = self.saved
        return (g / a,)


class Relu(Function):
    op = "relu"

    def forward(self, a):
        y = raw.unary(self.op, a)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return (g * (y > 0),)


class Tanh(Function):
    op = "tanh"

    def forward(self, a):
        y = raw.unary(self.op, a)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return (g * (1 - y * y),)


class Sigmoid(Function):
    op = "sigmoid"

    def forward(self, a):
        y = raw.unary(self.op, a)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return (g * y * (1 - y),)


class Sqrt(Function):
    op = "sqrt"

    def forward(self, a):
        y = raw.unary(self.op, a)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return (g / (2 * y),)


class Abs(Function):
    op = "abs"

    def forward(self, a):
        self.save(a)
        return raw.unary(self.op, a)

    def backward(self, g):
        (a,) = self.saved
        return (g * ((a > 0) - (a < 0)),)


# ---------------------------------------------------------------------------------
# elementwise binary (broadcasting; gradients summed back to each input's shape)
# ---------------------------------------------------------------------------------
class _Binary(Function):
    def shapes(self, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape


class Add(_Binary):
    op = "add"

    def forward(self, a, b):
        self.shapes(a, b)
        return raw.binary(self.op, a, b)

    def backward(self, g):
        return sum_to_shape(g, self.a_shape), sum_to_shape(g, self.b_shape)


class Sub(_Binary):
    op = "sub"

    def forward(self, a, b):
        self.shapes(a, b)
        return raw.binary(self.op, a, b)

    def backward(self, g):
        gb = sum_to_shape(-g, self.b_shape) if self.needs_grad[1] else None
        return sum_to_shape(g, self.a_shape), gb


class Mul(_Binary):
    op = "mul"

    def forward(self, a, b):
        self.shapes(a, b)
        self.save(a, b)
        return raw.binary(self.op, a, b)

    def backward(self, g):
        a, b = self.saved
        ga = sum_to_shape(g * b, self.a_shape) if self.needs_grad[0] else None
        gb = sum_to_shape(g * a, self.b_shape) if self.needs_grad[1] else None
        return ga, gb


class Div(_Binary):
    op = "div"

    def forward(self, a, b):
        self.shapes(a, b)
        self.save(a, b)
        return raw.binary(self.op, a, b)

    def backward(self, g):
        a, b = self.saved
        ga = sum_to_shape(g / b, self.a_shape) if self.needs_grad[0] else None
        gb = sum_to_shape(-g * a / (b * b), self.b_shape) if self.needs_grad[1] else None
        return ga, gb


class Pow(_Binary):
    op = "pow"

    def forward(self, a, b):
        self.shapes(a, b)
        y = raw.binary(self.op, a, b)
        self.save(a, b, y)
        return y

    def backward(self, g):
        # PyTorch's derivatives.yaml: d/da is 0 where b == 0 (so x**0 at x = 0 gives 0, not
        # 0 * inf); d/db is 0 where a == 0 and b >= 0 (not 0 * log 0 = nan)
        a, b, y = self.saved
        zero = constant(0.0)
        ga = sum_to_shape(where(b == 0, zero, g * b * a ** (b - 1)), self.a_shape) \
            if self.needs_grad[0] else None
        gb = sum_to_shape(where((a == 0) * (b >= 0), zero, g * y * log(a)), self.b_shape) \
            if self.needs_grad[1] else None
        return ga, gb


class Maximum(_Binary):
    """Ties send half the gradient to each side (as PyTorch does)."""
    op = "maximum"

    def forward(self, a, b):
        self.shapes(a, b)
        self.save(a, b)
        return raw.binary(self.op, a, b)

    def backward(self, g):
        a, b = self.saved
        wins = (a > b) if self.op == "maximum" else (a < b)
        share = wins + 0.5 * (a == b)
        ga = sum_to_shape(g * share, self.a_shape) if self.needs_grad[0] else None
        gb = sum_to_shape(g * (1 - share), self.b_shape) if self.needs_grad[1] else None
        return ga, gb


class Minimum(Maximum):
    op = "minimum"


class Where(Function):
    def forward(self, cond, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape
        self.save(cond)
        return raw.where(cond, a, b)

    def backward(self, g):
        (cond,) = self.saved
        zero = constant(0.0)
        ga = sum_to_shape(where(cond, g, zero), self.a_shape) if self.needs_grad[1] else None
        gb = sum_to_shape(where(cond, zero, g), self.b_shape) if self.needs_grad[2] else None
        return None, ga, gb


# ---------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------
def _keepdim_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


class Sum(Function):
    def forward(self, a, axes, keepdim):
        self.in_shape, self.axes = a.shape, axes
        y = raw.reduce("sum", a, axes)
        return _reshape_raw(y, _keepdim_shape(a.shape, axes)) if keepdim else y

    def backward(self, g):
        g = reshape(g, _keepdim_shape(self.in_shape, self.axes))
        return (expand(g, self.in_shape),)


class MaxMin(Function):
    """max / min over axes; the gradient is shared evenly among tied extremes."""

    def forward(self, a, axes, keepdim, op):
        self.in_shape, self.axes = a.shape, axes
        y = raw.reduce(op, a, axes)
        y_keep = _reshape_raw(y, _keepdim_shape(a.shape, axes))
        self.save(a, y_keep)
        return y_keep if keepdim else y

    def backward(self, g):
        a, y_keep = self.saved
        mask = a == y_keep
        count = Sum.apply(mask, axes=self.axes, keepdim=True)
        g = reshape(g, _keepdim_shape(self.in_shape, self.axes))
        return (g * mask / count,)


class MaxMinDim(Function):
    """max / min over one dim with indices: the whole gradient goes to the returned index
    (PyTorch's rule for max(dim) / min(dim); amax / amax and max() share it among ties)."""

    def forward(self, a, indices, axis, keepdim, op):
        self.in_shape, self.axis = a.shape, axis
        keep = _keepdim_shape(a.shape, (axis,))
        self.save(indices if keepdim else _reshape_raw(indices, keep))
        y = raw.reduce(op, a, (axis,))
        return _reshape_raw(y, keep) if keepdim else y

    def backward(self, g):
        from .creation import arange
        (idx_keep,) = self.saved
        n = self.in_shape[self.axis]
        pos = reshape(arange(n, dtype="i32"),
                      tuple(n if i == self.axis else 1 for i in range(len(self.in_shape))))
        hit = eq(pos, idx_keep)      # 1.0 exactly at the returned index along the axis
        return reshape(g, _keepdim_shape(self.in_shape, (self.axis,))) * hit, None


class _RowsOnLastAxis:
    """Softmax-like ops run on a (rows, n) matrix with the axis last."""

    @staticmethod
    def to_rows(a, axis):
        perm = [d for d in range(a.ndim) if d != axis] + ([axis] if a.ndim else [])
        moved = permute(a, perm) if a.ndim and axis != a.ndim - 1 else a   # 0-d: one row
        n = a.shape[axis] if a.ndim else 1
        rows = numel(moved.shape) // n if n else numel(moved.shape[:-1])
        return _reshape_raw(moved, (rows, n)), moved.shape, perm

    @staticmethod
    def from_rows(y2d, moved_shape, perm):
        y = _reshape_raw(y2d, moved_shape)
        return permute(y, inverse_permutation(perm)) if perm != sorted(perm) else y


class Softmax(Function):
    def forward(self, a, axis):
        _require_float(a, op="softmax")
        self.axes = (axis,) if a.ndim else ()
        a2, moved_shape, perm = _RowsOnLastAxis.to_rows(a, axis)
        y = _RowsOnLastAxis.from_rows(raw.rows_op("softmax", a2), moved_shape, perm)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        gy = g * y
        return (gy - y * Sum.apply(gy, axes=self.axes, keepdim=True),)


class LogSoftmax(Function):
    def forward(self, a, axis):
        _require_float(a, op="log_softmax")
        self.axes = (axis,) if a.ndim else ()
        a2, moved_shape, perm = _RowsOnLastAxis.to_rows(a, axis)
        y = _RowsOnLastAxis.from_rows(raw.rows_op("log_softmax", a2), moved_shape, perm)
        self.save(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return (g - exp(y) * Sum.apply(g, axes=self.axes, keepdim=True),)


class CrossEntropy(Function):
    """Fused, stable log-softmax + negative log-likelihood over (N, C) logits."""

    def forward(self, logits, target, reduction):
        self.reduction = reduction
        self.save(logits, target)
        losses = raw.rows_op("cross_entropy", logits, target, out_shape=(logits.shape[0],))
        if reduction == "none":
            return losses
        total = raw.reduce("sum", losses, (0,))
        if reduction == "sum":
            return total
        return raw.binary("mul", total, constant(1.0 / logits.shape[0]) if logits.shape[0]
                          else constant(float("nan")))

    def backward(self, g):
        logits, target = self.saved
        n = logits.shape[0]
        if self.reduction == "mean":
            g = g * (1.0 / n) if n else g
        out = raw.new_tensor(logits.shape)
        # the per-row gradient is g read with stride 0 when the loss was reduced: no copy
        raw.run("cross_entropy_grad", out,
                (raw.view_of(logits), raw.view_of(target), raw.broadcast_view(g, (n,))))
        return out, None


# ---------------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------------
def _as_batch3(t, batch, rows, cols):
    """View (*batch, rows, cols) [expanded] as (B, rows, cols), copying only if needed."""
    full_shape = tuple(batch) + (rows, cols)
    strides = broadcast_strides(t.shape, t._strides, full_shape)
    b = numel(batch)
    flat = reshape_strides(full_shape, strides, (b, rows, cols))
    if flat is None:
        e = _view(t, t._offset, full_shape, strides)
        c = raw.contiguous(e)
        return _view(c, c._offset, (b, rows, cols), contiguous_strides((b, rows, cols)))
    return _view(t, t._offset, (b, rows, cols), flat)


class MatMul(Function):
    """(..., M, K) @ (..., K, N) with broadcast batch dims; operands keep their strides."""

    def forward(self, a, b):
        _require_float(a, b, op="matmul")
        self.a_shape, self.b_shape = a.shape, b.shape
        self.save(a, b)
        m, k = a.shape[-2:]
        k2, n = b.shape[-2:]
        if k != k2:
            raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                             f"multiplied ({k} columns vs {k2} rows)")
        if a.ndim == 2 and b.ndim == 2:   # the common case: a batch of one, no reshapes
            return raw.matmul2d(a, b)
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        out = raw.matmul3(_as_batch3(a, batch, m, k), _as_batch3(b, batch, k, n))
        return _reshape_raw(out, tuple(batch) + (m, n))

    def backward(self, g):
        a, b = self.saved
        if a.ndim == 2 and b.ndim == 2:   # g @ b^T and a^T @ g on transposed views, no copies
            ga = raw.matmul2d(g, b, transpose_b=True) if self.needs_grad[0] else None
            gb = raw.matmul2d(a, g, transpose_a=True) if self.needs_grad[1] else None
            return ga, gb
        ga = sum_to_shape(matmul(g, b.transpose(-1, -2)), self.a_shape) \
            if self.needs_grad[0] else None
        gb = sum_to_shape(matmul(a.transpose(-1, -2), g), self.b_shape) \
            if self.needs_grad[1] else None
        return ga, gb


# ---------------------------------------------------------------------------------
# views (zero-copy) and copies
# ---------------------------------------------------------------------------------
def _reshape_raw(t, shape):
    strides = reshape_strides(t.shape, t._strides, shape)
    if strides is None:
        t = raw.contiguous(t)
        strides = contiguous_strides(shape)
    return _view(t, t._offset, shape, strides)


class Reshape(Function):
    def forward(self, a, shape, strides=None):
        self.in_shape = a.shape
        if strides is not None:   # already worked out by view()
            return _view(a, a._offset, shape, strides)
        return _reshape_raw(a, shape)

    def backward(self, g):
        return (reshape(g, self.in_shape),)


class Permute(Function):
    def forward(self, a, dims):
        self.dims = dims
        shape, strides, _ = permute_meta(a.shape, a._strides, dims)
        return _view(a, a._offset, shape, strides)

    def backward(self, g):
        return (permute(g, inverse_permutation(self.dims)),)


class Expand(Function):
    def forward(self, a, shape):
        self.in_shape = a.shape
        return _view(a, a._offset, shape, broadcast_strides(a.shape, a._strides, shape))

    def backward(self, g):
        return (sum_to_shape(g, self.in_shape),)


class IndexView(Function):
    """Basic indexing (ints, slices, None, ...): a strided view of the input."""

    def forward(self, a, key):
        self.in_shape, self.key = a.shape, key
        offset, shape, strides = slice_meta(a._offset, a.shape, a._strides, key)
        return _view(a, offset, shape, strides)

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
        t2 = table if table.ndim == 2 else _reshape_raw(table, (table.shape[0], row))
        i1 = idx if idx.ndim == 1 else _reshape_raw(idx, (numel(idx.shape),))
        out = raw.gather_rows(t2, raw.contiguous(i1))
        shape = idx.shape + table.shape[1:]
        return out if shape == out.shape else _view(out, 0, shape, contiguous_strides(shape))

    def backward(self, g):
        (idx,) = self.saved
        row = numel(self.table_shape[1:])
        n = numel(idx.shape)
        g2 = raw.contiguous(reshape(g, (n, row)))
        i1 = raw.contiguous(_reshape_raw(idx, (n,)))
        out = raw.scatter_add_rows(g2, i1, self.table_shape[0])
        return _reshape_raw(out, self.table_shape), None


class Cat(Function):
    def forward(self, *tensors, dim):
        self.dim = dim
        self.sizes = [t.shape[dim] for t in tensors]
        shape = list(tensors[0].shape)
        shape[dim] = builtins.sum(self.sizes)
        out = raw.new_tensor(tuple(shape), tensors[0]._dtype)   # int32 stays int32
        start = 0
        for t, size in zip(tensors, self.sizes):
            raw.copy_into(_narrow(out, dim, start, size), t)
            start += size
        return out

    def backward(self, g):
        grads, start = [], 0
        for size, need in zip(self.sizes, self.needs_grad):
            grads.append(_narrow(g, self.dim, start, size) if need else None)
            start += size
        return tuple(grads)


def _narrow(t, dim, start, length):
    key = (slice(None),) * dim + (slice(start, start + length),)
    offset, shape, strides = slice_meta(t._offset, t.shape, t._strides, key)
    return _view(t, offset, shape, strides)


class Cast(Function):
    """float <-> int copies; only float -> float carries a gradient (identity)."""

    def forward(self, a, dtype):
        return raw.cast(a, dtype)

    def backward(self, g):
        return (g,)


# ---------------------------------------------------------------------------------
# op functions (what Tensor methods and torchic.* call)
# ---------------------------------------------------------------------------------
# The elementwise Functions compute one primitive (their `op`). When no input requires
# grad there is nothing to record, so the op functions below call that primitive
# directly and skip making the Function node: that is the whole per-op cost of a
# no-grad op in Python (see the overhead bench).
def _binary_fn(cls, name):
    apply, primitive = cls.apply, cls.op

    def op(a, b):
        if a.__class__ is not Tensor or b.__class__ is not Tensor:
            a = as_operand(a, like=b if isinstance(b, Tensor) else None)
            b = as_operand(b, like=a)
        if a._dtype != "f32" or b._dtype != "f32":
            _require_float(a, b, op=name)
        if a.requires_grad or b.requires_grad:
            return apply(a, b)
        return raw.binary(primitive, a, b)
    op.__name__ = name
    return op


add = _binary_fn(Add, "add")
sub = _binary_fn(Sub, "sub")
mul = _binary_fn(Mul, "mul")
div = _binary_fn(Div, "div")
pow = _binary_fn(Pow, "pow")
maximum = _binary_fn(Maximum, "maximum")
minimum = _binary_fn(Minimum, "minimum")


def _compare(name, a, b):
    a = as_operand(a)
    b = as_operand(b, like=a)
    if a._dtype != b._dtype:
        a = raw.cast(a, "f32") if a._dtype != "f32" else a
        b = raw.cast(b, "f32") if b._dtype != "f32" else b
    return raw.binary(name, a, b)


def eq(a, b):
    return _compare("eq", a, b)


def ne(a, b):
    return _compare("ne", a, b)


def lt(a, b):
    return _compare("lt", a, b)


def le(a, b):
    return _compare("le", a, b)


def gt(a, b):
    return _compare("gt", a, b)


def ge(a, b):
    return _compare("ge", a, b)


def where(cond, a, b):
    cond = as_operand(cond)
    a = as_operand(a)
    b = as_operand(b)
    if cond._dtype != "f32":
        cond = raw.cast(cond, "f32")
    _require_float(a, b, op="where")
    return Where.apply(cond, a, b)


def _unary_fn(cls, name):
    apply, primitive = cls.apply, cls.op

    def op(a):
        if a.__class__ is not Tensor:
            a = as_operand(a)
        if a._dtype != "f32":
            _require_float(a, op=name)
        if a.requires_grad:
            return apply(a)
        return raw.unary(primitive, a)
    op.__name__ = name
    return op


neg = _unary_fn(Neg, "neg")
exp = _unary_fn(Exp, "exp")
log = _unary_fn(Log, "log")
relu = _unary_fn(Relu, "relu")
tanh = _unary_fn(Tanh, "tanh")
sigmoid = _unary_fn(Sigmoid, "sigmoid")
sqrt = _unary_fn(Sqrt, "sqrt")
abs = _unary_fn(Abs, "abs")


def _keep(keepdim, keepdims):
    """PyTorch's keepdim, with NumPy's spelling keepdims accepted too."""
    return keepdim if keepdims is None else keepdims


def _pick_axis(dim, axis, name="dim"):
    if dim is not None and axis is not None:
        raise TypeError("give either dim= or axis=, not both")
    return dim if dim is not None else axis


def sum(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    keepdim = _keep(keepdim, keepdims)
    _require_float(a, op="sum")
    axes = normalize_axes(_pick_axis(dim, axis), a.ndim)
    return Sum.apply(a, axes=axes, keepdim=keepdim)


def mean(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    keepdim = _keep(keepdim, keepdims)
    _require_float(a, op="mean")
    axes = normalize_axes(_pick_axis(dim, axis), a.ndim)
    count = numel(a.shape[i] for i in axes)
    s = Sum.apply(a, axes=axes, keepdim=keepdim)
    return s * (1.0 / count) if count else s * float("nan")


def var(a, dim=None, keepdim=False, *, axis=None, unbiased=True, correction=None,
        keepdims=None):
    keepdim = _keep(keepdim, keepdims)
    axes = normalize_axes(_pick_axis(dim, axis), a.ndim)
    count = numel(a.shape[i] for i in axes)
    ddof = (1 if unbiased else 0) if correction is None else correction
    centered = a - mean(a, axes, keepdim=True)
    return sum(centered * centered, axes, keepdim=keepdim) * (1.0 / builtins.max(count - ddof, 0)
                                                              if count - ddof > 0
                                                              else float("nan"))


def _max_min(a, dim, keepdim, axis, op):
    _require_float(a, op=op)
    d = _pick_axis(dim, axis)
    if d is None:
        if a.numel() == 0:
            raise ValueError(f"{op}() of an empty tensor: the operation has no identity")
        return MaxMin.apply(a, axes=tuple(range(a.ndim)), keepdim=False, op=op)
    if isinstance(d, int):
        ax = normalize_axis(d, a.ndim)
        if a.ndim and a.shape[ax] == 0:
            raise ValueError(f"{op}(dim={d}) over an empty dimension of shape {list(a.shape)}")
        indices = (argmax if op == "max" else argmin)(a, ax, keepdim=keepdim)
        if not a.ndim:
            return MaxResult(MaxMin.apply(a, axes=(), keepdim=keepdim, op=op), indices)
        values = MaxMinDim.apply(a, indices, axis=ax, keepdim=keepdim, op=op)
        return MaxResult(values, indices)
    axes = _nonempty_axes(a, normalize_axes(d, a.ndim), op)
    return MaxMin.apply(a, axes=axes, keepdim=keepdim, op=op)


class MaxResult(tuple):
    """(values, indices) of max/min over one dim, like PyTorch's named tuple."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def std(a, dim=None, keepdim=False, *, axis=None, unbiased=True, correction=None,
        keepdims=None):
    return sqrt(var(a, dim, keepdim, axis=axis, unbiased=unbiased, correction=correction,
                    keepdims=keepdims))


def max(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    keepdim = _keep(keepdim, keepdims)
    if isinstance(dim, Tensor):
        return maximum(a, dim)
    return _max_min(a, dim, keepdim, axis, "max")


def min(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    keepdim = _keep(keepdim, keepdims)
    if isinstance(dim, Tensor):
        return minimum(a, dim)
    return _max_min(a, dim, keepdim, axis, "min")


def _nonempty_axes(a, axes, op):
    """max / min over a 0-size dim has no identity: raise (as PyTorch does) instead of -inf."""
    if builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"{op}(): cannot reduce over an empty dimension (dims {list(axes)} of "
                         f"shape {list(a.shape)}): the operation has no identity")
    return axes


def amax(a, dim=None, keepdim=False):
    return MaxMin.apply(a, axes=_nonempty_axes(a, normalize_axes(dim, a.ndim), "amax"),
                        keepdim=keepdim, op="max")


def amin(a, dim=None, keepdim=False):
    return MaxMin.apply(a, axes=_nonempty_axes(a, normalize_axes(dim, a.ndim), "amin"),
                        keepdim=keepdim, op="min")


def argmax(a, dim=None, keepdim=False, *, axis=None):
    _require_float(a, op="argmax")
    d = _pick_axis(dim, axis)
    if d is None:
        if a.numel() == 0:
            raise ValueError("argmax() of an empty tensor")
        flat = _reshape_raw(a, (a.numel(),))
        return raw.rows_op("argmax", flat, out_shape=(), out_dtype="i32")
    ax = normalize_axis(d, a.ndim)
    if a.ndim == 0:
        return raw.full((), 0, "i32")
    if a.shape[ax] == 0:
        raise ValueError(f"argmax(dim={d}) over an empty dimension of shape {list(a.shape)}")
    perm = [i for i in range(a.ndim) if i != ax] + [ax]
    moved = _view(a, a._offset, *permute_meta(a.shape, a._strides, perm)[:2])
    out = raw.new_tensor(moved.shape[:-1], "i32")
    raw.run("argmax", out, (raw.view_of(moved),))
    if keepdim:
        out = _reshape_raw(out, _keepdim_shape(a.shape, (ax,)))
    return out


def argmin(a, dim=None, keepdim=False, *, axis=None):
    with_no_grad = neg(a.detach())
    return argmax(with_no_grad, dim, keepdim, axis=axis)


def softmax(a, dim=None, *, axis=None):
    d = _pick_axis(dim, axis)
    if d is None:
        d = -1
    return Softmax.apply(a, axis=normalize_axis(d, a.ndim))


def log_softmax(a, dim=None, *, axis=None):
    d = _pick_axis(dim, axis)
    if d is None:
        d = -1
    return LogSoftmax.apply(a, axis=normalize_axis(d, a.ndim))


def cross_entropy(logits, target, reduction="mean"):
    """Mean negative log-likelihood of integer class targets under softmax(logits)."""
    if not isinstance(logits, Tensor) or not isinstance(target, Tensor):
        raise TypeError("cross_entropy(logits, target) takes two tensors")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    _require_float(logits, op="cross_entropy logits")
    if target._dtype != "i32":
        raise TypeError("cross_entropy target must hold integer class indices "
                        "(an int tensor, e.g. .long()), got a float32 tensor")
    if logits.ndim == 1 and target.ndim == 0:
        logits, target = reshape(logits, (1, logits.shape[0])), _reshape_raw(target, (1,))
    if logits.ndim != 2 or target.ndim != 1 or target.shape[0] != logits.shape[0]:
        raise ValueError(f"cross_entropy expects logits (N, C) and target (N,), got "
                         f"{list(logits.shape)} and {list(target.shape)}")
    if logits.shape[1] == 0:
        raise ValueError("cross_entropy needs at least one class (logits have 0 columns)")
    if not logits.is_contiguous():
        logits = contiguous(logits)
    return CrossEntropy.apply(logits, raw.contiguous(target), reduction=reduction)


def mse_loss(input, target, reduction="mean"):
    diff = input - target
    sq = diff * diff
    if reduction == "mean":
        return mean(sq)
    if reduction == "sum":
        return sum(sq)
    if reduction == "none":
        return sq
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def matmul(a, b):
    if a.__class__ is Tensor and b.__class__ is Tensor and not (a.requires_grad or
                                                                b.requires_grad):
        # the common no-grad case, written out: 2-D float32 operands that fit
        a_shape, b_shape = a.shape, b.shape
        if len(a_shape) == 2 and len(b_shape) == 2 and a_shape[1] == b_shape[0] and \
                a._dtype == "f32" and b._dtype == "f32":
            return raw.matmul2d(a, b)
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        if isinstance(a, (bool, int, float, np.number)) or \
                isinstance(b, (bool, int, float, np.number)):
            raise TypeError(f"matmul needs two tensors, got {type(a).__name__} and "
                            f"{type(b).__name__} (use * to scale by a number)")
        a, b = as_operand(a), as_operand(b)     # array-likes (x @ ndarray) become tensors
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both arguments need at least 1 dimension, got shapes "
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


def reshape(a, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = infer_shape(shape, numel(a.shape))
    if shape == a.shape:
        return a
    return Reshape.apply(a, shape=shape)


def view(a, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = infer_shape(shape, numel(a.shape))
    if shape == a.shape:
        return a
    strides = reshape_strides(a.shape, a._strides, shape)
    if strides is None:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride "
                           f"(shape {list(a.shape)}, strides {list(a._strides)}); use "
                           f".reshape(...) instead")
    return Reshape.apply(a, shape=shape, strides=strides)


def permute(a, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    permute_meta(a.shape, a._strides, dims)   # validates
    dims = tuple(normalize_axis(d, a.ndim) for d in dims)
    if dims == tuple(range(a.ndim)):
        return a
    return Permute.apply(a, dims=dims)


def transpose(a, dim0=None, dim1=None):
    if dim0 is None and dim1 is None:
        if a.ndim > 2:
            raise ValueError(f"transpose() without dims needs a tensor of at most 2 dims, "
                             f"got shape {list(a.shape)}; give transpose(dim0, dim1)")
        return permute(a, tuple(reversed(range(a.ndim))))
    if dim0 is None or dim1 is None:
        raise TypeError("transpose needs both dim0 and dim1 (or neither, for 2-D)")
    d0, d1 = normalize_axis(dim0, a.ndim), normalize_axis(dim1, a.ndim)
    dims = list(range(a.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(a, dims)


def expand(a, *shape):
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


def squeeze(a, dim=None):
    if dim is None:
        shape = tuple(d for d in a.shape if d != 1)
    else:
        dims = normalize_axes(dim, a.ndim)
        shape = tuple(d for i, d in enumerate(a.shape) if not (i in dims and d == 1))
    return reshape(a, shape)


def unsqueeze(a, dim):
    d = normalize_axis(dim, a.ndim + 1)
    return reshape(a, a.shape[:d] + (1,) + a.shape[d:])


def flatten(a, start_dim=0, end_dim=-1):
    if a.ndim == 0:
        return reshape(a, (1,))
    s = normalize_axis(start_dim, a.ndim)
    e = normalize_axis(end_dim, a.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(a, a.shape[:s] + (numel(a.shape[s:e + 1]),) + a.shape[e + 1:])


def contiguous(a):
    if a.is_contiguous():
        return a
    return Contiguous.apply(a)


def _is_index_tensor(k):
    return (isinstance(k, Tensor) and k._dtype == "i32") or \
        (isinstance(k, np.ndarray) and k.dtype.kind in "iu") or \
        (isinstance(k, list) and builtins.all(isinstance(x, numbers.Integral) and
                                              not isinstance(x, bool) for x in k) and len(k) > 0)


def getitem(a, key):
    if not isinstance(key, tuple):
        key = (key,)
    advanced = [i for i, k in enumerate(key) if _is_index_tensor(k)]
    if not advanced:
        for k in key:
            if isinstance(k, Tensor):
                raise TypeError("float tensors cannot be used as indices; use an int tensor "
                                "(.long()) to gather rows")
        return IndexView.apply(a, key=key)
    if advanced == [0]:
        idx = key[0]
        if not isinstance(idx, Tensor):
            from .creation import tensor as make
            idx = make(np.asarray(idx), dtype="i32")
        if a.ndim == 0:
            raise IndexError("cannot index a 0-d tensor with an integer tensor")
        rest = key[1:]
        rows = GatherRows.apply(a, idx)
        if rest:
            rows = IndexView.apply(rows, key=(slice(None),) * idx.ndim + rest)
        return rows
    if len(advanced) == len(key) and builtins.all(i == n for n, i in enumerate(advanced)):
        return _gather_points(a, key)
    raise IndexError("integer-tensor indexing is supported on the leading axes only "
                     "(t[idx], t[idx, ...] or t[i0, i1, ...] with index tensors)")


def _gather_points(a, key):
    """a[i0, i1, ...] with k index tensors on the leading k axes (PyTorch advanced indexing).

    The flat row index i0*size1*... + i1*... is computed on the host, so this
    path reads the index tensors (a sync); C[X] with one index tensor does not.
    """
    from .creation import tensor as make
    arrays = [k.numpy() if isinstance(k, Tensor) else np.asarray(k) for k in key]
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError("shape mismatch: index tensors could not be broadcast together "
                         f"with shapes {[list(x.shape) for x in arrays]}") from None
    k = len(arrays)
    lead = a.shape[:k]
    for axis, (arr, size) in enumerate(zip(arrays, lead)):
        if arr.size and (arr.min() < -size or arr.max() >= size):
            raise IndexError(f"index {int(arr[(arr < -size) | (arr >= size)][0])} is out of "
                             f"bounds for dimension {axis} with size {size}")
    flat = np.ravel_multi_index(tuple(np.where(x < 0, x + s, x) for x, s in zip(arrays, lead)),
                                lead) if arrays[0].size else np.zeros(arrays[0].shape, np.int64)
    base = reshape(a, (numel(lead),) + a.shape[k:])
    return GatherRows.apply(base, make(flat.astype(np.int32), dtype="i32"))


def unbind(a, dim=0):
    """The slices of a along dim, as a tuple of views."""
    d = normalize_axis(dim, a.ndim)
    return tuple(getitem(a, (slice(None),) * d + (i,)) for i in range(a.shape[d]))


def log10(a):
    return log(a) * (1.0 / np.log(10.0))


def log2(a):
    return log(a) * (1.0 / np.log(2.0))


def cat(tensors, dim=0):
    tensors = [as_operand(t) for t in tensors]
    if not tensors:
        raise ValueError("cat needs a non-empty sequence of tensors")
    ref = tensors[0]
    d = normalize_axis(dim, ref.ndim)
    for t in tensors:
        if t.ndim != ref.ndim or builtins.any(
                i != d and x != y for i, (x, y) in enumerate(zip(t.shape, ref.shape))):
            raise ValueError(f"cat: shapes {[list(t.shape) for t in tensors]} differ outside "
                             f"dim {d}")
        if t._dtype != ref._dtype:
            raise TypeError("cat: all tensors must have the same dtype")
    return Cat.apply(*tensors, dim=d)


def stack(tensors, dim=0):
    tensors = [as_operand(t) for t in tensors]
    if not tensors:
        raise ValueError("stack needs a non-empty sequence of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack expects tensors of equal shape, got "
                         f"{[list(t.shape) for t in tensors]}")
    d = normalize_axis(dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t, d) for t in tensors], d)


def to_dtype(a, dtype):
    code = dtype_code(dtype)      # (raises TypeError naming an unknown dtype, before any op)
    if a._dtype == code:
        return a
    if code == "f32":
        return Cast.apply(a, dtype="f32")
    return raw.cast(a, code)


# ---------------------------------------------------------------------------------
# in-place ops (host-visible writes go through the stream like any op)
# ---------------------------------------------------------------------------------
def _check_inplace(t, other=None):
    t._storage.check_usable() if t._storage.block is None else None
    if is_grad_enabled():
        if t.requires_grad and t.grad_fn is None:
            raise RuntimeError("a leaf tensor that requires grad is being used in an in-place "
                               "operation; wrap the update in torchic.no_grad() or use .data")
        if t.requires_grad or (isinstance(other, Tensor) and other.requires_grad):
            raise RuntimeError("in-place operations on tensors that are part of the autograd "
                               "graph are not differentiable in torchic; use the out-of-place op "
                               "(e.g. x = x + y) or torchic.no_grad()")


def _write_back(t, value):
    raw.copy_into(t, value)
    t._storage.version += 1
    return t


def inplace_binary(op, t, other):
    _check_inplace(t, other)
    _require_float(t, op=op + "_")
    other = as_operand(other, like=t)
    _require_float(other, op=op + "_")
    shape = broadcast_shapes(t.shape, other.shape)
    if shape != t.shape:
        raise ValueError(f"{op}_: the result shape {list(shape)} of broadcasting "
                         f"{list(t.shape)} with {list(other.shape)} does not match the "
                         f"in-place target's shape {list(t.shape)}")
    if t.is_contiguous() and other._storage is not t._storage:
        # one op: the kernel writes its result over its own input (ops.py allows exact aliasing)
        raw.run(op, t, (raw.view_of(t), raw.broadcast_view(other, t.shape)))
        t._storage.version += 1
        return t
    return _write_back(t, raw.binary(op, t, other))


def fill_(t, value):
    _check_inplace(t)
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError("fill_ takes a number or a one-element tensor")
        return _write_back(t, value.reshape(()))
    raw.fill(t, _number(value, "fill_"))
    t._storage.version += 1
    return t


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{what} takes a number, got {type(value).__name__}")
    return float(value)


def copy_(t, src):
    _check_inplace(t, src)
    src = as_operand(src, like=t)
    broadcast_strides(src.shape, src._strides, t.shape) if src.shape != t.shape else None
    return _write_back(t, src)


def setitem(t, key, value):
    """t[key] = value (scalar, or a tensor broadcast to the selected region)."""
    _check_inplace(t, value)
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(_is_index_tensor(k) for k in key):
        raise IndexError("assignment through integer-tensor indices is not supported; "
                         "use slices / ints, or build the tensor with where()")
    offset, shape, strides = slice_meta(t._offset, t.shape, t._strides, key)
    target = _view(t, offset, shape, strides)
    if isinstance(value, Tensor):
        if value.shape != shape:
            broadcast_strides(value.shape, value._strides, shape)  # clear error if impossible
        raw.copy_into(target, value)
    elif isinstance(value, (list, tuple, np.ndarray)):
        from .creation import tensor as make
        raw.copy_into(target, make(value, dtype=t._dtype))
    else:
        raw.fill(target, _number(value, "assignment"))
    t._storage.version += 1
    return t
