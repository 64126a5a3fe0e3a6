"""Unrecorded primitive calls: allocate an output tensor, build views, enqueue one op.

This is the only module that turns tensors into dispatcher ``View``s and
calls ``runtime.run``. The Functions (functions/) use these helpers in their
forward and backward; nothing here records autograd history.
"""

import math

import numpy as np

from . import dispatcher, scopes
from .dispatcher import ITEMSIZE, View, runtime, storage_code
from .dtypes import host_values
from .ops import COMPUTE_AS, OUT, SIGNATURES, out_dtype
from .shape import (broadcast_shapes, broadcast_strides, contiguous_strides, matmul_layout,
                    numel, transposed_meta)
from .size import Size
from .tensor import HostScalar, Storage, Tensor, make

def nbytes(rt, shape, code):
    """The heap bytes a contiguous `code` tensor of `shape` takes on runtime rt: numel times
    the itemsize of the code its backend stores it as (TypeError, naming the backend, for a
    code the backend does not hold: dispatcher.storage_code)."""
    return numel(shape) * ITEMSIZE[storage_code(rt.backend, code)]


def new_tensor(shape, dtype="f32"):
    """An uninitialized contiguous tensor of dtype code `dtype` on the current runtime.

    Every op's output is made here. A training step repeats its shapes, so the shape's
    byte size and strides are cached per runtime (a dtype the backend does not hold is
    refused there, never cached), and a recycled block's View is reused when the new
    tensor has its layout (with whatever the backend cached on the View).
    """
    if type(shape) is not tuple:
        shape = tuple(shape)
    rt = dispatcher._runtime or runtime()
    layouts = rt.layouts
    layout = layouts.get((shape, dtype))
    if layout is None:
        if len(layouts) >= 4096:
            layouts.clear()
        layout = layouts[(shape, dtype)] = (nbytes(rt, shape, dtype), contiguous_strides(shape),
                                            Size(shape))
    nbytes_, strides, size = layout
    block = rt.alloc(nbytes_)
    storage = Storage(rt, block)
    if scopes.active:
        scopes.register(storage)
    v = block.view
    if v is None or v.shape != shape or v.dtype != dtype:
        v = block.view = View(block, 0, shape, strides, dtype)
    return make(storage, 0, size, strides, dtype, view=v)


def host_scalar(value, code):
    """A 0-d tensor of integer dtype code `code` holding `value` (a Python int the backend
    stores exactly: known.arith checked), its block made only when needed (HostScalar)."""
    rt = dispatcher._runtime or runtime()
    storage = HostScalar(rt, code, value)
    if scopes.active:
        scopes.register(storage)
    return make(storage, 0, _SCALAR, (), code)


_SCALAR = Size(())


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
    the runtime out lives on (new_tensor made it on the current one). The operands' dtypes
    are checked against the op's row (ops.out_dtype: TypeError naming the op)."""
    ov = out._view or view_of(out)
    codes = tuple([v.dtype for v in inputs])
    if OUT[op].get(codes) != ov.dtype:
        out_dtype(op, codes, ov.dtype)
    out._storage.runtime.run(op, ov, inputs, params)
    return out


def require_float(t, what):
    """TypeError unless t is float32 or float64 (what the floating ops compute in)."""
    if t._dtype not in ("f32", "f64"):
        raise TypeError(f"{what} expects a float32 or float64 tensor, got {t.dtype} "
                        f"(convert with .float() or .double())")


def _computed(fn, op, tensors, *args, **kwargs):
    """fn(op, *tensors, ...) for operands whose dtypes the op's row does not take as they
    are: float16 / bfloat16 computed in float32, uint8 / int8 / int16 / bool in int64
    (ops.COMPUTE_AS, docs/DTYPES.md), the result rounded back to the first operand's dtype
    when it came out in that one's compute dtype (a comparison's bool stays). Combinations
    no compute dtype makes allowed are the TypeError of ops.out_dtype."""
    codes = tuple(t._dtype for t in tensors)
    wide = tuple(COMPUTE_AS.get(c, c) for c in codes)
    if wide == codes or not any(ins == wide for ins, _ in _signatures(op)):
        out_dtype(op, codes)        # raises, naming the dtypes as given
    result = fn(op, *(t if c == w else cast(t, w) for t, c, w in zip(tensors, codes, wide)),
                *args, **kwargs)
    if codes[0] != wide[0] and result._dtype == wide[0]:
        result = cast(result, codes[0])
    return result


def _signatures(op):
    return SIGNATURES[op]


def unary(op, a):
    code = OUT[op].get((a._dtype,))
    if code is None:
        return _computed(unary, op, (a,))
    out = new_tensor(a.shape, code)
    return run(op, out, (view_of(a),))


def binary(op, a, b, out_dtype=None):
    """op(a, b), broadcast; the out dtype is the op row's for the operands' (one) dtype
    (`out_dtype` is ignored: the row says it)."""
    code = OUT[op].get((a._dtype, b._dtype))
    if code is None:
        return _computed(binary, op, (a, b))
    if a.shape == b.shape:      # the common case, written out (the hottest path: no run())
        out = new_tensor(a.shape, code)
        out._storage.runtime.run(op, out._view, (view_of(a), view_of(b)), None)
        return out
    shape = broadcast_shapes(a.shape, b.shape)
    out = new_tensor(shape, code)
    return run(op, out, (broadcast_view(a, shape), broadcast_view(b, shape)))


def where(cond, a, b):
    """cond ? a : b, broadcast; a and b of one dtype; a cond of another dtype than bool is
    read as cond != 0."""
    if cond._dtype != "b8":
        cond = cast(cond, "b8")
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    out = new_tensor(shape, out_dtype("where", ("b8", a._dtype, b._dtype)))
    return run("where", out, (broadcast_view(cond, shape), broadcast_view(a, shape),
                              broadcast_view(b, shape)))


_TYPE_NAMES = {"b8": "bool", "u8": "uint8_t", "i8": "int8_t", "i16": "short", "i32": "int",
               "i64": "long", "f16": "c10::Half", "bf16": "c10::BFloat16", "f32": "float",
               "f64": "double"}


def fill_value(code, value):
    """`value` as a fill of a `code` tensor: a Python int for an integer or bool code (a
    float truncated toward zero; a negative one wraps into an unsigned code, as PyTorch's
    c10::checked_convert allows), a float for a floating one; PyTorch's RuntimeError for a
    number the dtype cannot hold (NaN / inf or out of range for an integer code, a finite
    value past a float dtype's largest)."""
    if code == "b8":
        return int(bool(value))
    exact = isinstance(value, (bool, int, np.integer))
    v = int(value) if exact else float(value)
    if code in dispatcher.INT_CODES:
        lowest, highest = dispatcher.INT_LIMITS[code]
        low = -highest if lowest == 0 else lowest       # (unsigned: -255 wraps to 1)
        if exact or math.isfinite(v):
            if low <= v <= highest:
                return int(v) % (highest + 1) if v < 0 and lowest == 0 else int(v)
    elif not exact and (not math.isfinite(v) or abs(v) <= _FLOAT_MAX[code]):
        return v
    elif exact and abs(v) <= _FLOAT_MAX[code]:
        return float(v)
    raise RuntimeError(f"value cannot be converted to type {_TYPE_NAMES[code]} without "
                       f"overflow (cannot fill a tensor of dtype {dispatcher._NAMES[code]} "
                       f"with {value!r})")


_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e+38,
              "f32": 3.4028234663852886e+38, "f64": math.inf}


def fill(dst, value):
    runtime().run("fill", view_of(dst), (), {"value": fill_value(dst._dtype, value)})
    return dst


def copy_into(dst, src):
    """dst[...] = src (src broadcast to dst's shape; cast to dst's dtype as the copy op's
    row says)."""
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
    code = OUT[op].get((a._dtype,))
    if code is None:
        return _computed(reduce, op, (a,), axes)
    a_shape, a_strides = tuple(a.shape), a._strides    # (a Size indexes through Python)
    kept = [d for d in range(len(a_shape)) if d not in axes]
    perm = kept + list(axes)
    shape = tuple(a_shape[d] for d in perm)
    strides = tuple(a_strides[d] for d in perm)
    v = view_of(a)
    out = new_tensor(tuple(a_shape[d] for d in kept), code)
    return run(op, out, (View(v.block, v.offset, shape, strides, v.dtype),),
               {"naxes": len(axes)})


def rows_op(op, a2d, *extra, out_shape=None, out_dtype=None):
    """Row-wise ops on a 2-D (rows, cols) view: softmax, log_softmax, cross_entropy...
    (the out dtype is the row's; `out_dtype` is ignored)."""
    code = OUT[op].get((a2d._dtype,) + tuple(e._dtype for e in extra))
    if code is None:
        return _computed(_rows_op, op, (a2d,) + extra, out_shape)
    out = new_tensor(out_shape if out_shape is not None else a2d.shape, code)
    return run(op, out, (view_of(a2d),) + tuple(view_of(e) for e in extra))


def _rows_op(op, a2d, *rest):
    *extra, out_shape = rest
    return rows_op(op, a2d, *extra, out_shape=out_shape)


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
    code = OUT[op].get((a._dtype, b._dtype) + ((bias._dtype,) if extra else ()))
    if code is None:
        operands = (a, b) if bias is None else (a, b, bias)
        return _computed(lambda _, x, y, *z: matmul(x, y, *z, transpose_a=transpose_a,
                                                    transpose_b=transpose_b), op, operands)
    va, vb = view_of(a), view_of(b)
    if len(a.shape) == 2 and len(b.shape) == 2:     # the common case: nothing to plan
        (m, k), (k2, n) = a.shape, b.shape
        out = new_tensor((k if transpose_a else m, k2 if transpose_b else n), code)
        out._storage.runtime.run(op, _batch_of_one(out._view),
                                 (_batch_of_one(va, transpose_a),
                                  _batch_of_one(vb, transpose_b)) + extra, None)
        return out
    metas = [transposed_meta(v.shape, v.strides) if t else (v.shape, v.strides)
             for v, t in ((va, transpose_a), (vb, transpose_b))]
    layout = matmul_layout(*metas[0], *metas[1])
    out = new_tensor(layout.out_shape, code)
    kernel_out = out._view if layout.kernel_shape == layout.out_shape else View(
        out._view.block, 0, layout.kernel_shape, contiguous_strides(layout.kernel_shape), code)
    views, copies = [], []
    for v, (shape, strides, copy) in zip((va, vb), layout.operands):
        if copy:    # strides that do not flatten: a contiguous copy (kept until issued)
            tmp = new_tensor(shape, v.dtype)
            run("copy", tmp, (View(v.block, v.offset, shape, strides, v.dtype),))
            copies.append(tmp)
            views.append(View(tmp._view.block, 0, (numel(shape[:-2]),) + shape[-2:],
                              contiguous_strides((numel(shape[:-2]),) + shape[-2:]), v.dtype))
        elif shape == v.shape and strides == v.strides:    # read as it is (packed once)
            views.append(v)
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
    out = full((rows, src2d.shape[1]), 0.0, src2d._dtype)
    return run("scatter_add_rows", out, (view_of(src2d), view_of(idx1d)))


def check_dropout_size(shape):
    """Raise unless dropout can number the elements of `shape` (F.dropout checks it before
    drawing the key, so a refused call leaves the generator where it was)."""
    if numel(shape) >= 2 ** 32:
        raise ValueError(f"dropout: a tensor of {numel(shape)} elements (shape {list(shape)}) "
                         f"is too large: the counter-based generator numbers at most 2^32 - 1")


def dropout(x, key, p):
    """ops.py's dropout: x (float32 or float64, any strides; float16 / bfloat16 through
    float32) times dropout's mask for probability p in (0, 1) from an int32 (2,) key, the
    mask never stored: (1 / (1 - p)) rounded to x's dtype where
    threefry2x32_20(key, (i >> 1, 0))[i & 1] >> 8 >= ceil(p 2^24) for flat index i (both
    words of each evaluation used), else 0 (the same bits on every backend; dropout(ones,
    key, p) is the bare mask)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"dropout: p must be in (0, 1), got {p!r}")
    if key._dtype != "i32" or key.shape != (2,):
        raise TypeError(f"dropout: the key must be an int32 tensor of shape (2,), got "
                        f"{key.dtype} {list(key.shape)}")
    if x._dtype in ("f16", "bf16"):
        return cast(dropout(cast(x, "f32"), key, p), x._dtype)
    require_float(x, "dropout")
    check_dropout_size(x.shape)
    params = {"threshold": math.ceil(p * 2 ** 24),          # exact: p * 2^24 is exact
              "scale": float(dispatcher.DTYPES[x._dtype].type(1.0 / (1.0 - p)))}
    return run("dropout", new_tensor(x.shape, x._dtype), (view_of(x), view_of(key)), params)


def adam_update(p, g, m, v, scalars):
    """ops.py's adam_update: p, m and v (exp_avg, exp_avg_sq) updated in place from the
    gradient g with the step's 10 scalars (its row lists them). All four are float32 or
    float64 tensors of one dtype and shape (the scalars too), contiguous, in separate
    storages; a RuntimeError says which is not."""
    for name, t in (("grad", g), ("exp_avg", m), ("exp_avg_sq", v)):
        if t.shape != p.shape:
            raise RuntimeError(f"adam_update: {name} has shape {list(t.shape)}, the parameter "
                               f"has {list(p.shape)}")
    for name, t in (("param", p), ("grad", g), ("exp_avg", m), ("exp_avg_sq", v)):
        if t._dtype != p._dtype or p._dtype not in ("f32", "f64") or not t.is_contiguous():
            raise RuntimeError(f"adam_update: {name} must be a contiguous float32 or float64 "
                               f"tensor of the parameter's dtype")
    if len({id(t._storage) for t in (p, g, m, v)}) != 4:
        raise RuntimeError("adam_update: the parameter, its grad and its two state tensors "
                           "must not share memory")
    if scalars._dtype != p._dtype or scalars.shape != (10,):
        raise RuntimeError(f"adam_update: the scalars must be a (10,) tensor of the "
                           f"parameter's dtype, got {scalars.dtype} {list(scalars.shape)}")
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
    """`Tensor.numpy()`: the tensor's values as a new NumPy array of its dtype and shape
    (bfloat16, which NumPy has not, is a TypeError as in PyTorch). Waits for every op queued before it (a sync point); `to_array` is the same.

    As in PyTorch, a tensor that requires grad is refused (RuntimeError): read
    `t.detach().numpy()` (`item()`, `tolist()` and printing read it as they are).

    Example:
        >>> torchic.arange(3).numpy()
        array([0, 1, 2])
    """
    if t._dtype == "bf16":
        raise TypeError("Got unsupported ScalarType BFloat16")
    if t.requires_grad:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                           "tensor.detach().numpy() instead.")
    return read(t)


def values(t: Tensor) -> np.ndarray:
    """The tensor's values as a new NumPy array (bf16 as float32), whether or not it
    requires grad: `Tensor._read` (item, tolist, printing). A sync point."""
    arr = (dispatcher._runtime or runtime()).read(view_of(t))    # (read's, written out)
    return arr if t._dtype != "bf16" else host_values(arr, "bf16")


def read(t: Tensor) -> np.ndarray:
    """The tensor's values as a new NumPy array, whether or not it requires grad (the
    library's own reads; users call `numpy`). A sync point."""
    return runtime().read(view_of(t))
