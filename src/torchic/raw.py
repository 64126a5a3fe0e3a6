"""Unrecorded primitive calls: allocate an output tensor, build views, enqueue one op.

This is the only module that turns tensors into dispatcher ``View``s and
calls ``runtime.run``. The Functions (functions/) use these helpers in their
forward and backward; nothing here records autograd history.
"""

import math

import numpy as np

from . import dispatcher, scopes
from .dispatcher import View, runtime
from .shape import (broadcast_shapes, broadcast_strides, contiguous_strides, matmul_layout,
                    numel, transposed_meta)
from .tensor import Storage, Tensor

ITEMSIZE = 4  # float32 and int32

_layouts = {}   # shape -> (bytes, contiguous strides): a training step repeats its shapes


def new_tensor(shape, dtype="f32"):
    """An uninitialized contiguous tensor on the current runtime.

    Every op's output is made here. A training step repeats its shapes, so the shape's
    byte size and strides are cached, and a recycled block's View is reused when the
    new tensor has its layout (with whatever the backend cached on the View).
    """
    if type(shape) is not tuple:
        shape = tuple(shape)
    layout = _layouts.get(shape)
    if layout is None:
        if len(_layouts) >= 4096:
            _layouts.clear()
        layout = _layouts[shape] = (numel(shape) * ITEMSIZE, contiguous_strides(shape))
    rt = runtime()
    block = rt.alloc(layout[0])
    storage = Storage(rt, block)
    if scopes.active:
        scopes.register(storage)
    v = block.view
    if v is None or v.shape != shape or v.dtype != dtype:
        v = block.view = View(block, 0, shape, layout[1], dtype)
    return Tensor._make(storage, 0, shape, layout[1], dtype, view=v)


def view_of(t):
    """The dispatcher View of a tensor, checked to be usable on the current runtime."""
    st = t._storage
    if st.runtime is not dispatcher._runtime or st.block is None:
        st.check_usable()
    v = t._view
    if v is None:
        v = t._view = View(st.block, t._offset, t.shape, t._strides, t._dtype)
    return v


def broadcast_view(t, shape):
    """A View of t read as `shape` (broadcast dims get stride 0)."""
    v = view_of(t)
    if t.shape == shape:
        return v
    b = t._bview
    if b is not None and b.shape == shape and b.block is v.block:
        return b
    b = t._bview = View(v.block, v.offset, shape, broadcast_strides(t.shape, t._strides, shape),
                        v.dtype)
    return b


def run(op, out, inputs, params=None):
    """Enqueue op into `out` (its View is usually set already: new_tensor does that), on
    the runtime out lives on (new_tensor made it on the current one)."""
    out._storage.runtime.run(op, out._view or view_of(out), inputs, params)
    return out


def require_float(t, what):
    if t._dtype != "f32":
        raise TypeError(f"{what} expects a float32 tensor, got an int32 tensor "
                        f"(convert with .float())")


def unary(op, a):
    require_float(a, op)
    out = new_tensor(a.shape)
    return run(op, out, (view_of(a),))


def binary(op, a, b, out_dtype="f32"):
    if a.shape == b.shape:      # the common case, written out (the hottest path: no run())
        out = new_tensor(a.shape, out_dtype)
        out._storage.runtime.run(op, out._view, (view_of(a), view_of(b)), None)
        return out
    shape = broadcast_shapes(a.shape, b.shape)
    out = new_tensor(shape, out_dtype)
    return run(op, out, (broadcast_view(a, shape), broadcast_view(b, shape)))


def where(cond, a, b):
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    out = new_tensor(shape)
    return run("where", out, (broadcast_view(cond, shape), broadcast_view(a, shape),
                              broadcast_view(b, shape)))


def fill(dst, value):
    value = float(value)
    if dst._dtype == "i32" and not -2.0**31 <= value < 2.0**31:   # False for nan too
        raise RuntimeError(f"value cannot be converted to type int32 without overflow (cannot "
                           f"fill an int32 tensor with {value!r})")
    runtime().run("fill", view_of(dst), (), {"value": value})
    return dst


def copy_into(dst, src):
    """dst[...] = src (src broadcast to dst's shape; dtype cast f32 <-> i32)."""
    runtime().run("copy", view_of(dst), (broadcast_view(src, dst.shape),), None)
    return dst


def contiguous(a):
    if a.is_contiguous():
        return a
    out = new_tensor(a.shape, a._dtype)
    return copy_into(out, a)


def cast(a, dtype):
    out = new_tensor(a.shape, dtype)
    return copy_into(out, a)


def full(shape, value, dtype="f32"):
    return fill(new_tensor(shape, dtype), value)


def reduce(op, a, axes):
    """Reduce `axes` (sorted, distinct) of a; result has the kept dims and a's dtype."""
    kept = [d for d in range(a.ndim) if d not in axes]
    perm = kept + list(axes)
    shape = tuple(a.shape[d] for d in perm)
    strides = tuple(a._strides[d] for d in perm)
    v = view_of(a)
    out = new_tensor(tuple(a.shape[d] for d in kept), a._dtype)
    return run(op, out, (View(v.block, v.offset, shape, strides, v.dtype),),
               {"naxes": len(axes)})


def rows_op(op, a2d, *extra, out_shape=None, out_dtype="f32"):
    """Row-wise ops on a 2-D (rows, cols) view: softmax, log_softmax, cross_entropy..."""
    out = new_tensor(out_shape if out_shape is not None else a2d.shape, out_dtype)
    return run(op, out, (view_of(a2d),) + tuple(view_of(e) for e in extra))


def matmul(a, b, bias=None, *, transpose_a=False, transpose_b=False):
    """(..., M, K) @ (..., K, N) -> a new contiguous (..., M, N), batch dims broadcast; with
    a (N,) `bias`, + bias in the same op (matmul_bias: PyTorch's addmm). transpose_a /
    transpose_b: use that operand with its last two dims swapped (read through swapped
    strides: what a backward needs, a^T and b^T, without building a tensor for them).

    One descent: shape.matmul_layout plans the kernel's operands from shapes and strides
    alone, the Views are built once from it, and the op goes down to the runtime. A 2-D
    product is a batch of one whose (1, rows, cols) Views are cached on the operands' and
    the output's Views (`_batch_of_one`), so a training step that repeats its products
    makes no View and packs nothing.
    """
    op, extra = ("matmul", ()) if bias is None else ("matmul_bias", (view_of(bias),))
    va, vb = view_of(a), view_of(b)
    if len(a.shape) == 2 and len(b.shape) == 2:     # the common case: nothing to plan
        out = new_tensor((a.shape[1] if transpose_a else a.shape[0],
                          b.shape[0] if transpose_b else b.shape[1]))
        out._storage.runtime.run(op, _batch_of_one(out._view),
                                 (_batch_of_one(va, transpose_a),
                                  _batch_of_one(vb, transpose_b)) + extra, None)
        return out
    metas = [transposed_meta(v.shape, v.strides) if t else (v.shape, v.strides)
             for v, t in ((va, transpose_a), (vb, transpose_b))]
    layout = matmul_layout(*metas[0], *metas[1])
    out = new_tensor(layout.out_shape)
    kernel_out = out._view if layout.kernel_shape == layout.out_shape else View(
        out._view.block, 0, layout.kernel_shape, contiguous_strides(layout.kernel_shape), "f32")
    views, copies = [], []
    for v, (shape, strides, copy) in zip((va, vb), layout.operands):
        if copy:    # strides that do not flatten: a contiguous copy (kept until issued)
            tmp = new_tensor(shape, v.dtype)
            run("copy", tmp, (View(v.block, v.offset, shape, strides, v.dtype),))
            copies.append(tmp)
            views.append(View(tmp._view.block, 0, (numel(shape[:-2]),) + shape[-2:],
                              contiguous_strides((numel(shape[:-2]),) + shape[-2:]), v.dtype))
        else:
            views.append(View(v.block, v.offset, shape, strides, v.dtype))
    out._storage.runtime.run(op, kernel_out, tuple(views) + extra, None)
    return out


def _batch_of_one(v, transposed=False):
    """A (rows, cols) View read as the batch (1, rows, cols), or transposed as
    (1, cols, rows), cached on the View."""
    cache = v.as_batch
    if cache is None:
        cache = v.as_batch = [None, None]
    batch = cache[transposed]
    if batch is None:
        shape, strides = transposed_meta(v.shape, v.strides) if transposed else \
            (v.shape, v.strides)
        batch = cache[transposed] = View(v.block, v.offset, (1,) + shape, (0,) + strides,
                                         v.dtype)
    return batch


def gather_rows(table2d, idx1d):
    out = new_tensor((idx1d.shape[0], table2d.shape[1]), table2d._dtype)
    return run("gather_rows", out, (view_of(table2d), view_of(idx1d)))


def scatter_add_rows(src2d, idx1d, rows):
    out = full((rows, src2d.shape[1]), 0.0)
    return run("scatter_add_rows", out, (view_of(src2d), view_of(idx1d)))


def check_dropout_size(shape):
    """Raise unless dropout can number the elements of `shape` (F.dropout checks it before
    drawing the key, so a refused call leaves the generator where it was)."""
    if numel(shape) >= 2 ** 32:
        raise ValueError(f"dropout: a tensor of {numel(shape)} elements (shape {list(shape)}) "
                         f"is too large: the counter-based generator numbers at most 2^32 - 1")


def dropout(x, key, p):
    """ops.py's dropout: x (float32, any strides) times dropout's mask for probability p in
    (0, 1) from an int32 (2,) key, the mask never stored: float32(1 / (1 - p)) where
    threefry2x32_20(key, (i >> 1, 0))[i & 1] >> 8 >= ceil(p 2^24) for flat index i (both
    words of each evaluation used), else 0 (the same bits on every backend; dropout(ones,
    key, p) is the bare mask)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"dropout: p must be in (0, 1), got {p!r}")
    if key._dtype != "i32" or key.shape != (2,):
        raise TypeError(f"dropout: the key must be an int32 tensor of shape (2,), got "
                        f"{'float32' if key._dtype == 'f32' else 'int32'} {list(key.shape)}")
    require_float(x, "dropout")
    check_dropout_size(x.shape)
    params = {"threshold": math.ceil(p * 2 ** 24),          # exact: p * 2^24 is exact
              "scale": float(np.float32(1.0 / (1.0 - p)))}
    return run("dropout", new_tensor(x.shape), (view_of(x), view_of(key)), params)


def adam_update(p, g, m, v, scalars):
    """ops.py's adam_update: p, m and v (exp_avg, exp_avg_sq) updated in place from the
    gradient g with the step's 10 float32 scalars (its row lists them). All four are float32
    tensors of one shape, contiguous, in separate storages; a RuntimeError says which is not."""
    for name, t in (("grad", g), ("exp_avg", m), ("exp_avg_sq", v)):
        if t.shape != p.shape:
            raise RuntimeError(f"adam_update: {name} has shape {list(t.shape)}, the parameter "
                               f"has {list(p.shape)}")
    for name, t in (("param", p), ("grad", g), ("exp_avg", m), ("exp_avg_sq", v)):
        if t._dtype != "f32" or not t.is_contiguous():
            raise RuntimeError(f"adam_update: {name} must be a contiguous float32 tensor")
    if len({id(t._storage) for t in (p, g, m, v)}) != 4:
        raise RuntimeError("adam_update: the parameter, its grad and its two state tensors "
                           "must not share memory")
    if scalars._dtype != "f32" or scalars.shape != (10,):
        raise RuntimeError(f"adam_update: the scalars must be a float32 (10,) tensor, got "
                           f"{list(scalars.shape)}")
    p._storage.runtime.run("adam_update", view_of(p),
                           (view_of(g), view_of(m), view_of(v), view_of(scalars)), None)
    for t in (p, m, v):     # written in place (autograd's saved-tensor check)
        t._storage.version += 1
    return p


def write(t, array, source=None):
    """Host -> heap copy, ordered in the stream with the ops around it. `source` makes the
    array again (a random draw, a step's scalars): torchic.compile calls it at each replay."""
    if source is None:
        runtime().write(view_of(t), array)
    else:
        runtime().write(view_of(t), array, source)
    return t


def numpy(t: Tensor) -> np.ndarray:
    """`Tensor.numpy()`: the tensor's values as a new NumPy array (float32 or int32) of its
    shape. Waits for every op queued before it (a sync point); `to_array` is the same.

    As in PyTorch, a tensor that requires grad is refused (RuntimeError): read
    `t.detach().numpy()` (`item()`, `tolist()` and printing read it as they are).

    Example:
        >>> torchic.arange(3).numpy()
        array([0, 1, 2], dtype=int32)
    """
    if t.requires_grad:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                           "tensor.detach().numpy() instead.")
    return read(t)


def read(t: Tensor) -> np.ndarray:
    """The tensor's values as a new NumPy array, whether or not it requires grad (the
    library's own reads; users call `numpy`). A sync point."""
    return runtime().read(view_of(t))
