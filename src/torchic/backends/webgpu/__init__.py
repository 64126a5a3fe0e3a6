"""The `webgpu` backend: WGSL compute shaders through wgpu (wgpu-native).

Layout of this package:

    device.py       adapter ranking / override, device creation, ``list_adapters()``
    gpu.py          heap buffers, pipeline + bind-group caches, batched dispatch,
                    uploads, staging reads, status words, GPU timestamps
    wgsl.py         binding layout and helpers every generated shader shares
    elementwise.py  unary / binary / compare / where / copy / fill   (snippet tables)
    casts.py        dtypes: casts, narrow ints, half rounding, int64's overflow checks
    fuse.py         runs of elementwise ops of a recorded program as one dispatch, or as
                    the epilogue of the matmul / softmax_grad before them
    epilogue.py     such a run's WGSL inside the producer's store
    reduce.py       sum / max / min over trailing axes, argmax
    rowwise.py      softmax / log_softmax / cross_entropy (+ grad)
    norm.py         layer_norm (+ grad), softmax_grad
    rows.py         gather_rows / scatter_add_rows
    matmul.py       register-blocked batched matmul
    dropout.py      dropout (x times a Threefry-2x32 mask, one invocation per pair of elements)
    pool.py         max_pool_index (max pooling's window search), col2im
    lstm.py         lstm_cell / lstm_cell_grad (one LSTM step each way, one invocation per
                    element of h)
    adam.py         adam_update (the fused Adam / AdamW step, one invocation per element;
                    a recorded program's run of them as one dispatch)

``KERNEL_TABLE`` maps every primitive op of ops.py to a function
``kernel(backend, out, inputs, params)`` that *encodes* the op; nothing runs
until the batch is submitted (see gpu.py for when). The calling thread does
the encoding itself: unlike the CPU backends there is no coordinator thread,
because encoding is cheap and the GPU queue already gives stream order.
"""

import ctypes
import os
import threading
import weakref

import numpy as np

from ... import ops as _ops
from ...shape import numel
from ...backend import KernelOverflowError
from ...dispatcher import (DTYPES, Backend, BackendUnavailableError, KernelError, _positive_int,
                           env_int, forget, register_backend)
from . import (adam, casts, dropout, elementwise, fuse, lstm, matmul, norm, pool, reduce, replay,
               rows, rowwise, wgsl, windows)
from .device import ENV_ADAPTER, availability, list_adapters  # noqa: F401
from .gpu import RawView

__all__ = ["WebGPUBackend", "KERNEL_TABLE", "list_adapters"]

READ_CHUNK = 64 << 20    # bytes a read copies through the staging buffer at once


def _is_contiguous(view):
    acc = 1
    for n, s in zip(reversed(view.shape), reversed(view.strides)):
        if n != 1 and s != acc:
            return False
        acc *= n
    return True


def _i32_bits(x):
    return int(np.array(x, dtype=np.int64).astype(np.int32).view(np.uint32))


# -- dtypes: host arrays <-> storage words (docs/DTYPES.md; wgsl.STORAGE) -------------------
_WORDS = {"f32": np.dtype(np.float32), "i32": np.dtype(np.int32), "f16": np.dtype(np.float16)}
_HOST = {"b8": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
         "i64": np.int64, "f16": np.float16, "bf16": np.uint16, "f32": np.float32,
         "f64": np.float64}
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _host(code):
    """The NumPy dtype of a `code` host array (dispatcher.DTYPES; bfloat16: its bits)."""
    dt = DTYPES.get(code)
    return dt if dt is not None else np.dtype(_HOST[code])


def _int64_refusal(lo, hi):
    return OverflowError(casts.INT64_WRITE.format(lo=lo, hi=hi))


def _to_words(array, code, storage=wgsl.STORAGE):
    """A host array of `code` as a contiguous array of its storage words (`storage`: the
    device's memory types, GPU.storage)."""
    wgsl.storage(code)      # (a code webgpu does not hold: TypeError)
    words = _WORDS[storage[code]]
    array = np.asarray(array)
    if code == "bf16":      # (its bits, uint16: the high half of a float32)
        bits = np.ascontiguousarray(array, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    if code == "i64" and array.size and array.dtype.kind in "iu":
        lo, hi = int(array.min()), int(array.max())
        if lo < INT32_MIN or hi > INT32_MAX:
            raise _int64_refusal(lo, hi)
    return np.ascontiguousarray(array, dtype=words)


def _round_bf16_bits(values):
    """float32 values -> the bits (uint16) of the nearest bfloat16, ties to even."""
    b = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((b + np.uint32(0x7FFF) + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    if nan.any():
        rounded[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def _from_words(words, code):
    """Storage words read from a `code` view -> a host array of code's NumPy dtype."""
    if code == "bf16":
        return _round_bf16_bits(words)
    if code == "b8":
        return words != 0
    return words.astype(_host(code), copy=False)


def _fill_word(code, value):
    """The 32-bit word (u32) fill writes into a `code` tensor: value as the dtype holds it
    (ints wrapped to a narrow type, bool != 0, halves rounded to nearest even); an int64
    value outside int32 raises OverflowError (the int64 rule), at the fill."""
    st = wgsl.storage(code)
    if st == "f32":
        with np.errstate(over="ignore"):    # (past the type's range: inf, as PyTorch)
            x = np.float32(value)
            if code == "f16":
                x = np.float32(np.float16(x))
            elif code == "bf16":
                x = (np.array([_round_bf16_bits(np.array([x]))[0]], np.uint32) << 16).view(
                    np.float32)[0]
        return wgsl.f32_bits(x)
    if code == "b8":
        return int(value != 0)      # (NaN != 0: True, as PyTorch's bool(nan))
    try:
        v = int(value)
    except (ValueError, OverflowError):     # NaN / inf into an int: saturated, NaN -> 0
        v = 0 if value != value else (INT32_MAX if value > 0 else INT32_MIN)
    if code == "i64" and not INT32_MIN <= v <= INT32_MAX:
        raise KernelOverflowError(f"fill: {_int64_refusal(v, v)}")
    bits = _NARROW_BITS.get(code)
    if bits is not None:        # wrapped, as the cast into it wraps
        v &= (1 << bits) - 1
        if code != "u8" and v >> (bits - 1):
            v -= 1 << bits
        return _i32_bits(v)
    return _i32_bits(max(INT32_MIN, min(INT32_MAX, v)))


_NARROW_BITS = {"u8": 8, "i8": 8, "i16": 16}
# what `python -m torchic info` says of them (docs/DTYPES.md, "Per backend")
DTYPES_TEXT = ("float32, int32; bool, uint8, int8, int16 and int64 as int32 words (int64 "
               "within int32: OverflowError outside); float16 natively (2 bytes) where the "
               "adapter has shader-f16, else as float32 words; bfloat16 as float32 words; "
               "no float64")


# -- the kernel table: one encoder function per primitive op ------------------------------
def _unary(expr):
    def kernel(be, out, ins, params):
        elementwise.run(be.gpu, "", expr, out, ins, buffers=be.buffers)
    return kernel


def _binary(op):
    f32 = elementwise.BINARY[op]

    def kernel(be, out, ins, params):
        if out.dtype == "f32":
            elementwise.run(be.gpu, op, f32, out, ins, buffers=be.buffers)
        else:
            elementwise.binary(be.gpu, op, out, ins, buffers=be.buffers)
    return kernel


def _int_only(op, expr):
    """An integer-only binary op (the bitwise ones): i32 words, narrow ints narrowed; int64's
    left shift checked for a result outside int32 (the int64 rule: OverflowError)."""
    def kernel(be, out, ins, params):
        if out.dtype == "i64" and op == "shift_left":
            elementwise.run(be.gpu, op, "ck_shl(a, b, {p0})", out, ins, buffers=be.buffers,
                            extra=(elementwise.overflow_tag(be.gpu, op),))
            return
        elementwise.run(be.gpu, "", casts.narrow(out.dtype, expr), out, ins, buffers=be.buffers)
    return kernel


def _compare(op):
    """a, b (one dtype: f32 words compared as floats, NaN unequal to all; i32 words as
    ints) -> out: bool (i32 words 0 / 1), or f32 0.0 / 1.0."""
    conds = {"f32": elementwise.COMPARE_F32[op], "i32": elementwise.COMPARE[op]}
    exprs = {(a, o): f"select(IT(0), IT(1), {c})" if o == "i32" else f"select(T(0.0), T(1.0), {c})"
             for a, c in conds.items() for o in ("f32", "i32")}
    elementwise.V4_ANY.update(exprs.values())       # (vec4s: contiguous operands)
    storage = wgsl.STORAGE

    def kernel(be, out, ins, params):
        elementwise.run(be.gpu, op, exprs[storage[ins[0].dtype], storage[out.dtype]], out, ins,
                        buffers=be.buffers)
    return kernel


def _fill(be, out, ins, params):
    be.fill(out, params["value"])


def _copy(be, out, ins, params):
    expr, checked = casts.CASTS[ins[0].dtype, out.dtype]
    extra = (elementwise.overflow_tag(be.gpu, "copy"),) if checked else ()
    elementwise.run(be.gpu, "copy", expr, out, ins, buffers=be.buffers, extra=extra)


WHERE_BOOL = "select(c, b, a != IT(0))"      # (a bool condition: i32 words 0 / 1)
elementwise.V4_ANY.add(WHERE_BOOL)


def _where(be, out, ins, params):
    """cond (bool: i32 words; or an f32 0 / 1 mask, NaN true), a, b of out's dtype."""
    expr = WHERE_BOOL if wgsl.STORAGE[ins[0].dtype] == "i32" else elementwise.WHERE
    elementwise.run(be.gpu, "where", expr, out, ins, buffers=be.buffers)


def _reduce(mode):
    def kernel(be, out, ins, params):
        reduce.run(be.gpu, mode, out, ins[0], params["naxes"], buffers=be.buffers,
                   fill=be.fill)
    return kernel


def _argmax(be, out, ins, params):
    reduce.run(be.gpu, "argmax", out, ins[0], 1, buffers=be.buffers, fill=be.fill)


def _rowwise(mode):
    def kernel(be, out, ins, params):
        rowwise.run(be.gpu, mode, out, ins, params, buffers=be.buffers)
    return kernel


def _matmul(be, out, ins, params, epilogue=None):
    """-> True when `epilogue` (fuse.Epilogue) was applied in the matmul's store."""
    done = matmul.run(be.gpu, out, ins, buffers=be.buffers, stages=epilogue)
    if done != "zero":
        return done is True
    if len(ins) == 2:
        be.fill(out, 0.0)
    else:       # matmul_bias with K == 0: every row is the bias
        _copy(be, out, (matmul.bias_rows(ins[2], out.shape),), None)
    return False


def _with_stages(be, record, stages):
    """Issue a producer record (fuse.PRODUCERS) with `stages` (a fuse.Epilogue, or None)
    fused into its store -> True when they were (else the record ran alone)."""
    op, out, ins, params = record
    if op == "softmax_grad":
        return norm.run(be.gpu, op, out, ins, params, buffers=be.buffers, stages=stages)
    return _matmul(be, out, ins, params, epilogue=stages)


def _gather(be, out, ins, params):
    rows.gather(be.gpu, out, ins, buffers=be.buffers)


def _scatter(be, out, ins, params):
    rows.scatter_add(be.gpu, out, ins, buffers=be.buffers)


# one encoder maker per family of ops.py (an elementwise op's WGSL expression is its
# row in elementwise.py); the ops of family "other" have a function each
_FAMILY_KERNELS = {
    "unary": lambda op: _unary(elementwise.UNARY[op]),
    "binary": _binary,
    "compare": _compare,
    "reduce": _reduce,
    "rowwise": _rowwise,
}
KERNEL_TABLE = {op.name: _FAMILY_KERNELS[op.family](op.name)
                for op in _ops.OPS if op.family in _FAMILY_KERNELS}
KERNEL_TABLE.update({
    "fill": _fill, "copy": _copy, "where": _where, "argmax": _argmax,
    "matmul": _matmul, "matmul_bias": _matmul, "gather_rows": _gather, "scatter_add_rows": _scatter,
    # fused transformer ops: GELU's gradients are elementwise, layer norm and softmax's
    # gradient have norm.py
    **{op: _unary(expr) for op, expr in elementwise.GELU_GRAD.items()},
    "layer_norm": norm.kernel("layer_norm"), "layer_norm_grad": norm.kernel("layer_norm_grad"),
    "softmax_grad": norm.kernel("softmax_grad"),
    "dropout": dropout.kernel, "adam_update": adam.kernel,
    # elementwise math: integer bitwise ops (i32 words; int64's values are int32's here)
    **{op: _int_only(op, expr) for op, expr in elementwise.BITWISE.items()},
    "max_pool_index": pool.kernel, "col2im": pool.col2im,     # convolution / pooling (issue 42)
    "lstm_cell": lstm.cell, "lstm_cell_grad": lstm.cell_grad,   # lstm cell (issue 42)
})


class WebGPUBackend(Backend):
    """GPU backend. Options: ``adapter`` (name / backend / type substring, or env
    TORCHIC_WEBGPU_ADAPTER), ``batch_ops`` (ops per submit at most, default 1024),
    ``max_binding`` (bytes of a heap arena one kernel binds at most, below the adapter's
    limit: tests of tensors larger than a binding at small sizes; env
    TORCHIC_WEBGPU_MAX_BINDING)."""

    name = "webgpu"
    alignment = 256
    # dtypes (docs/DTYPES.md, "Per backend"; wgsl.STORAGE): one 32-bit word per element, f32
    # or i32, but float16 natively where the device has shader-f16 (the instance's
    # `storage`, from GPU.storage); float64 refused (raw.py raises the TypeError when a
    # tensor is made)
    dtypes = tuple(wgsl.STORAGE)
    storage = {code: st for code, st in wgsl.STORAGE.items() if code != st}
    refusals = {"f64": wgsl.F64_REFUSAL}
    slow_scatter = True      # (its scatter of single elements: seconds for a LeNet batch)

    @classmethod
    def available(cls):
        global _touched
        if _forked_child:
            return False, FORK_MESSAGE
        _touched = True
        return availability()

    def __init__(self, threads=None, adapter=None, batch_ops=None, max_binding=None,
                 **options):
        super().__init__(threads)
        if options:
            raise TypeError(f"backend 'webgpu' got unknown options {sorted(options)}; "
                            "known: adapter, batch_ops, max_binding")
        if max_binding is None:
            max_binding = env_int("TORCHIC_WEBGPU_MAX_BINDING", None,
                                  meaning="a positive number of bytes (an integer)")
        else:
            max_binding = _positive_int(max_binding, "max_binding must be a positive number "
                                                     "of bytes")
        from .gpu import GPU
        if _forked_child:
            raise BackendUnavailableError(FORK_MESSAGE)
        global _touched, _made_device
        _touched = _made_device = True
        want = adapter if adapter is not None else (os.environ.get(ENV_ADAPTER) or None)
        self.gpu = GPU(want, batch_ops)
        self.storage = {code: st for code, st in self.gpu.storage.items() if code != st}
        self._item = self.gpu.item
        if max_binding is not None:
            self.gpu.set_window(max_binding)
        # the allocator's arenas: usually within one storage binding; a larger tensor gets
        # an arena of its own, up to the largest buffer, bound in windows (windows.py)
        window = self.gpu.window
        self.max_arena_bytes = self.gpu.max_buffer // self.alignment * self.alignment
        self.default_arena_bytes = min(window, (256 << 20) if window >= (1 << 30)
                                       else (64 << 20))
        self.kernels = KERNEL_TABLE
        self._lock = threading.RLock()
        self._closed = False
        _backends.add(self)

    # heap -------------------------------------------------------------------------
    def new_arena(self, nbytes):
        with self._lock:
            if self._closed:
                raise self.closed_error()
            self.gpu.new_arena(nbytes)

    def buffers(self, view):
        """(GPU buffer or Window to bind, element offset of the view's origin in it: in
        elements of its memory type, GPU.item)."""
        blk = view.block
        if blk.arena is None:           # an internal buffer (gpu.RawView)
            return blk.buffer, blk.offset // self._item[view.dtype] + view.offset
        if self.gpu.big[blk.arena]:     # an arena larger than a binding: a window of it
            return windows.buffers(self.gpu, view)
        return self.gpu.arenas[blk.arena], blk.offset // self._item[view.dtype] + view.offset

    def _location(self, view):
        """(GPU buffer, byte offset) of a view, for copies (no binding: whole arenas)."""
        blk = view.block
        buf = blk.buffer if blk.arena is None else self.gpu.arenas[blk.arena]
        return buf, blk.offset + view.offset * self._item[view.dtype]

    # stream -----------------------------------------------------------------------
    # Every entry point checks _closed under _lock, which close() takes: another thread's
    # shutdown() cannot empty the GPU's arena list between the check and the op
    # (Backend's docstring).
    def run(self, op, out, inputs, params):
        if out.block.known is not None or op in _ops.WRITES:
            forget(op, out, inputs)
        with self._lock:
            if self._closed:
                raise self.closed_error()
            try:
                if self.gpu.any_big:    # an operand may be larger than a binding
                    windows.run(self, op, out, inputs, params)
                else:
                    self.kernels[op](self, out, inputs, params)
            except KernelError:
                raise
            except Exception as exc:
                self.record_error(op, exc)

    # recorded programs (torchic.compile; replay.py) --------------------------------
    program_slots = True     # pack / push_packed take slots (torchic.compile's arguments)

    def pack(self, records, slots=(), frees=None):
        """The records' dispatches, prepared once (None: replay them one by one), runs of
        elementwise ops and of adam_update records fused (fuse.py, adam.py). `slots`: blocks
        whose views a push may move to other blocks (replay.py, "Slots")."""
        if self.gpu.any_big:        # (windowed operands re-plan their windows per op)
            return None
        runs = (fuse.epilogues(fuse.plan(records, {id(b) for b in slots})) if fuse.enabled()
                else [[r] for r in records])
        dead = fuse.dead_stores(runs, records, frees) if fuse.enabled() else {}

        def issue(moved):           # moved: a block whose offsets go replay.SHIFT further
            if moved is not None:     # (SHIFT 32-bit words: 2 SHIFT halves of a float16)
                def buffers(view, real=self.buffers, item=self._item):
                    buf, base = real(view)
                    return buf, (base + replay.SHIFT * 4 // item[view.dtype]
                                 if view.block is moved else base)
                self.buffers = buffers
            try:
                for k, run in enumerate(runs):
                    skip = dead.get(k, ())
                    if k in tables.parts:       # (no operand on a slot: fuse.plan)
                        tables.issue(self.gpu, k)
                        continue
                    if run[0][0] in fuse.PRODUCERS and len(run) > 1:
                        if _with_stages(self, run[0], fuse.epilogue(run, skip)):
                            continue
                        run, skip = run[1:], {s - 1 for s in skip if s > 0}   # (not applied)
                    if len(run) == 1 or not fuse.fusable(run) or \
                            not fuse.run(self.gpu, run, self.buffers, skip):
                        for r in run:
                            self.kernels[r[0]](self, *r[1:])
            finally:
                self.__dict__.pop("buffers", None)
        with self._lock:
            if self._closed:
                raise self.closed_error()
            tables = adam.Tables(self.gpu, runs, self.buffers)
            return tables.attach(replay.capture(self.gpu, issue, slots))

    def slot_fits(self, packed, k, block, skip):
        """Can a push run slot k of packed at byte `skip` of block? (replay.fits)"""
        return replay.fits(packed, k, block, skip)

    def push_packed(self, packed, blocks=None):
        """Replay a packed recording; `blocks`: one (block, byte skip) per slot, where this
        run's slot views lie (each one slot_fits)."""
        with self._lock:
            if self._closed:
                raise self.closed_error()
            if blocks:
                replay.move(self.gpu, packed, blocks)
            replay.replay(self.gpu, packed)

    def release_packed(self, packed):
        with self._lock:
            if not self._closed:
                replay.release(self.gpu, packed)

    def fill(self, out, value):
        bits = _fill_word(out.dtype, value)
        expr = ("bitcast<i32>({p0})" if wgsl.storage(out.dtype) == "i32"
                else "T(bitcast<f32>({p0}))")
        elementwise.run(self.gpu, "fill", expr, out, (), buffers=self.buffers, extra=(bits,))

    # host conversions (Backend's dtype hook): logical host arrays <-> the storage words
    def to_storage(self, array, code):
        """A host array of `code` (its NumPy dtype, dispatcher.DTYPES) as storage words:
        int64 outside int32 raises OverflowError (the int64 rule), bfloat16's bits widen
        to float32, float16 converts exactly (or stays float16: native storage)."""
        return _to_words(array, code, self.gpu.storage)

    def from_storage(self, array, code):
        """Storage words read from a `code` view, back in code's NumPy dtype (float16 /
        bfloat16 rounded to nearest even: exact for every value a kernel stores)."""
        return _from_words(array, code)

    def write(self, view, array):
        view.block.known = None
        with self._lock:
            if self._closed:
                raise self.closed_error()
            array = _to_words(array, view.dtype, self.gpu.storage)
            if array.size == 0:
                return
            buf, at = self._location(view)
            # (buffer copies move 4-byte units: a native float16 view at an odd half, or of
            # an odd length, is written by the kernel below)
            if _is_contiguous(view) and at % 4 == 0 and array.nbytes % 4 == 0:
                self.gpu.write(buf, at, array)
                return
            if self.gpu.any_big and windows.too_big(self.gpu, view):
                _, _, parts = windows.plan(self.gpu, "write", (view,), None)
                for (sub,), (axis, r0, n) in parts:
                    self.write(sub, array[(slice(None),) * axis + (slice(r0, r0 + n),)])
                return
            if array.nbytes % 4:        # (an upload too: one more half, unread)
                array = np.append(array.reshape(-1), array.dtype.type(0))
            buf, at = self.gpu.stage_upload(array)
            src = RawView(buf, at, view.shape, self.gpu.storage[view.dtype])
            elementwise.run(self.gpu, "write", "a", view, (src,), buffers=self.buffers)

    def read(self, view):
        with self._lock:
            if self._closed:
                raise self.closed_error()
            shape = tuple(view.shape)
            n = numel(shape)
            dtype = _WORDS[self.gpu.storage[view.dtype]]
            nbytes = n * dtype.itemsize
            if n == 0:
                self.gpu.read(self.gpu.status, 0, 0)
            elif _is_contiguous(view):
                data = self._read_bytes(*self._location(view), nbytes)
            elif nbytes > READ_CHUNK or (self.gpu.any_big and windows.too_big(self.gpu, view)):
                return self._read_in_parts(view, n)
            else:   # gather the view into a contiguous scratch area first
                scratch = self.gpu.scratch_buffer("readback", nbytes)
                dst = RawView(scratch, 0, shape, view.dtype)
                elementwise.run(self.gpu, "read", "a", dst, (view,), buffers=self.buffers)
                data = self._read_bytes(scratch, 0, nbytes)
            self._check()
            if n == 0:
                return np.zeros(shape, _host(view.dtype))
            return _from_words(data.view(dtype).reshape(shape), view.dtype)

    def _read_bytes(self, buf, at, nbytes):
        """Bytes [at, at + nbytes) of a buffer, through a staging buffer of at most READ_CHUNK
        bytes a copy (copies move 4-byte units: a native float16 view's range is widened to
        them, the extra bytes dropped)."""
        lo, hi = at // 4 * 4, -(-(at + nbytes) // 4) * 4
        if hi - lo <= READ_CHUNK:
            data = self.gpu.read(buf, lo, hi - lo)
        else:
            data = np.empty(hi - lo, np.uint8)
            for k in range(lo, hi, READ_CHUNK):
                data[k - lo:k - lo + READ_CHUNK] = self.gpu.read(buf, k, min(READ_CHUNK, hi - k))
        return data[at - lo:at - lo + nbytes]

    def _read_in_parts(self, view, n):
        """A large strided view (more than READ_CHUNK bytes, or than a binding), in parts."""
        data = np.empty(view.shape, _host(view.dtype))
        item = self._item[view.dtype]
        if n * item > READ_CHUNK:   # rows of the first axis longer than 1, READ_CHUNK a part
            axis = next(d for d, k in enumerate(view.shape) if k > 1)
            rows = max(1, READ_CHUNK // item // (n // view.shape[axis]))
            parts = [((windows.narrow(view, axis, r0, min(rows, view.shape[axis] - r0)),),
                      (axis, r0, min(rows, view.shape[axis] - r0)))
                     for r0 in range(0, view.shape[axis], rows)]
        else:
            _, _, parts = windows.plan(self.gpu, "read", (view,), None)
        for (sub,), (axis, r0, k) in parts:
            data[(slice(None),) * axis + (slice(r0, r0 + k),)] = self.read(sub)
        return data

    def sync(self):
        with self._lock:
            if self._closed:
                raise self.closed_error()
            self.gpu.read(self.gpu.status, 0, 0)
            self._check()

    def _check(self):
        failed = self.gpu.take_failures()
        if failed:
            op, msg, error = failed[0]
            if len(failed) > 1:   # name every failed op (their outputs are all garbage)
                msg += "; also failed: " + "; ".join(f"op {o!r}: {m}" for o, m, _ in failed[1:])
            self.record_error(op, error(msg))
        self.raise_pending_error()

    def close(self):
        with self._lock:
            if not self._closed:
                self._closed = True
                self.gpu.close()

    # introspection ----------------------------------------------------------------
    @classmethod
    def describe_platform(cls):
        """Every adapter with its limits and features; "* " marks the one init() picks."""
        lines = []
        for a in list_adapters():
            limits = a.get("limits", {})
            lines.append(
                f"{'* ' if a.get('selected') else ''}{a.get('name')} ({a.get('backend_type')}, "
                f"{a.get('adapter_type')}): max storage binding "
                f"{limits.get('max-storage-buffer-binding-size')}, max buffer "
                f"{limits.get('max-buffer-size')}, workgroup storage "
                f"{limits.get('max-compute-workgroup-storage-size')}; features: "
                f"{', '.join(sorted(a.get('features', [])))}")
        return {"kernels": "WGSL compute shaders through wgpu-native", "adapters": lines,
                "choose": f"init('webgpu', adapter=NAME) or {ENV_ADAPTER}=NAME",
                "dtypes": DTYPES_TEXT}

    def describe(self):
        from .device import describe_adapter
        with self.gpu.guard:      # (wgpu-py's Python properties: see GPU)
            a = describe_adapter(self.gpu.adapter)
        return {"backend": self.name, "adapter": a["name"], "vendor": a["vendor"],
                "backend_type": a["backend_type"], "adapter_type": a["adapter_type"],
                "max_arena_bytes": self.max_arena_bytes,
                "features": list(self.gpu.features),
                "float16": "native" if self.gpu.storage["f16"] == "f16" else "float32 words",
                "pipelines": len(self.gpu.pipelines), **self.gpu.stats}

    def timed(self, fn):
        """GPU nanoseconds of the ops fn() issues (one pass between timestamps); benchmarks."""
        with self._lock:
            ns = self.gpu.timed(fn)
            self._check()
            return ns

    def profiled(self, fn):
        """[(kernel key, GPU ns)] of the dispatches fn() issues, one timed pass each; benchmarks."""
        with self._lock:
            times = self.gpu.profiled(fn)
            self._check()
            return times

    def reopen_in_child(self):     # (fork: see the fork guard below)
        raise BackendUnavailableError(FORK_MESSAGE)


# -- fork guard --------------------------------------------------------------------------
# A forked child cannot use the parent's GPU device (nor make a new one: the driver's
# threads and state are the parent's), so there the backend is unavailable and first use
# of an inherited runtime raises BackendUnavailableError. The child must also never
# release the parent's device objects: on a real GPU the driver's handles are shared with
# the parent (releasing them in the child broke the parent's later results), and on Mesa
# releasing the device joins driver threads that do not exist in the child (a hang). So
# every backend object the child inherits is kept alive for good, and a child of a
# process that made a device leaves through _exit() right after Python's own exit (its C
# atexit handlers are the driver's, which would join its parent's threads too).
FORK_MESSAGE = ("the webgpu backend cannot be used in a process forked (os.fork, "
                "multiprocessing's 'fork' start method) from one that used it: start "
                "the worker processes with multiprocessing.get_context('spawn') (or "
                "'forkserver'), or use a CPU backend in the child: torchic.init('workers')")
_touched = False         # this process asked the driver for adapters
_made_device = False     # this process made a device
_forked_child = False    # this process is a fork of one that did
_backends = weakref.WeakSet()


def _after_fork_in_child():
    global _forked_child
    if not _touched:
        return
    _forked_child = True
    for backend in list(_backends):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(backend))    # never released here
    if not _made_device:
        return
    libc = ctypes.CDLL(None)
    on_exit = getattr(libc, "on_exit", None)     # (glibc; registered last, so runs first)
    if on_exit is not None:
        on_exit.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        on_exit(ctypes.cast(libc["_exit"], ctypes.c_void_p), None)   # _exit(status)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

register_backend(WebGPUBackend, KERNEL_TABLE)
