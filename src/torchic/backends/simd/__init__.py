"""The `simd` backend: hand-written SIMD Rust kernels, op stream and worker pool in Rust.

Where the op queue and the worker pool live: a Python thread hand-off costs
5-40 us, a small kernel ~0.1 us, so a Python coordinator would spend almost all
of its time handing off; the queue, the coordinator and the pool are Rust
(kernels/src/runtime.rs; measurements: docs/perf/simd_handoff.md).
The calling thread packs each op into a record (cached ``struct.pack``
pieces: a view's words are cached on the View) and appends it to a pending
list; one ctypes call pushes the whole list as one batch when BATCH_OPS
records wait, when an operand view spans EAGER_BYTES or more (big work
starts at once), and before every read, sync and host write (batching cuts
the per-op cost of the push about tenfold). The coordinator runs the records
in issue order; large ops are split over ``threads`` workers (the coordinator +
threads-1 helpers) with a spin-then-yield-then-sleep handshake. ``read`` waits on the
last pushed op in Rust with the GIL released.

Validation: the coordinator decodes every record just before it runs it and
checks everything in Rust (kernels/src/record.rs): op code, dtypes and shapes
against the op contract, every block inside its registered arena, every view
(offset and strides, negative ones included, in i128) inside its block. An
invalid record never runs: its error is recorded with the op's name, like a
kernel error (a bad gather index), and raised as ``KernelError`` at the next
read or sync; the stream keeps running, so the runtime stays usable. The
Python side checks that every field is an int that fits int64
(``struct.pack`` does, for free) and raises ``ValueError`` at the call when
one does not. Invalid records only come from a bug in torchic itself: the
frontend checks user input (shapes, axes, dtypes) before it issues anything.

Memory is the same as the ``workers`` backend: ``HostHeap`` arenas (NumPy
buffers) under the shared allocator. Each arena's address is registered with
the Rust side before the first push that can name it. Host writes go through
their own call (``tk_write``), which copies the data into the queue, so no
Python array has to be kept alive until the write runs (nothing to get wrong
when a KeyboardInterrupt lands between two statements of the issue path).
"""

import ctypes
import math
import os
import struct
import threading
import weakref

import numpy as np

from ... import ops as _ops
from ...dispatcher import DTYPES, Backend, KernelError, forget, register_backend, share
from ...interrupts import sigint_held
from ..cpu.heap import HostHeap
from . import native

_WRITES = _ops.WRITES
# ops whose first input is a table read only at the rows an index names (a gather): its
# span is not the op's work, so it never makes the op EAGER_BYTES (see run)
_INDEXED_TABLE = frozenset(op.name for op in _ops.OPS if op.split == _ops.INDEX_ROWS)

# op name (ops.py) -> the Rust library's code for it: the library lists its op names
# (tk_op_name), and _check_table fills in the codes when it loads, after checking that
# the library implements exactly ops.py's ops. No op is identified by its position.
KERNEL_TABLE = dict.fromkeys(_ops.ALL_OPS)
OP_WRITE = 100
# dtype code (docs/DTYPES.md) -> the record's dtype word (kernels/src/view.rs DType)
_DTYPE_CODES = {"f32": 0, "i32": 1, "f64": 2, "i64": 3, "b8": 4, "u8": 5, "i8": 6, "i16": 7,
                "f16": 8, "bf16": 9}
_ITEMSIZE = {"f32": 4, "i32": 4, "f64": 8, "i64": 8, "b8": 1, "u8": 1, "i8": 1, "i16": 2,
             "f16": 2, "bf16": 2}
# the kind of a kernel's error (KernelError in kernels/src/runtime.rs) -> the built-in
# class the KernelError raised for it also derives from (dispatcher.kernel_error_class)
_ERROR_KINDS = {1: IndexError, 2: ValueError, 3: RuntimeError}
_ISA_NAMES = ("scalar", "avx2", "avx2+fma", "avx512", "avx512f", "neon")
_KERNELS = "Rust (kernels/, std + core::arch)"
# Op records are pushed in batches (see SimdBackend.run): at most BATCH_OPS wait,
# and an op with an operand view of EAGER_BYTES or more (its elements, not its block's:
# an LSTM step's ops on one row of the sequence's (T, N, H) buffers are small work) is
# pushed at once, with the records before it, so large work starts as soon as it is
# issued. (Sized by the block, every op of the LSTM recurrence was pushed alone: a
# ctypes call and a coordinator wake-up per op, 6.7k pushes for 7.2k ops a step.)
# A batch of small ops (BATCH_OPS full, or before a read, sync or host write) runs on the
# calling thread when the stream is idle (kernels/src/runtime.rs Stream::push_or_inline;
# the GIL is released meanwhile), the calling thread being the pool's first worker, as
# NumPy's and PyTorch's callers are: small programs (a lecture script's get_batch, a
# makemore step) never wait for the coordinator to wake, which costs 20 us to milliseconds
# on a busy machine for work it would finish in a few us (docs/perf/eager_overhead.md,
# simd_kernel_rows.md). A batch ending in an EAGER_BYTES op is queued instead: the
# coordinator runs it while this thread issues the next ops (a LeNet step's issue overlaps
# its kernels), and a reader that then waits works on the coordinator's split ops itself
# (Stream::wait, Pool::help), so a lone product read at once loses nothing to the hand-off
# (docs/perf/conv.md, "Issue beside the kernels").
BATCH_OPS = 16
BATCH_PARTS = 4 * BATCH_OPS     # pending holds a header + one packed view per operand
EAGER_BYTES = 1 << 16

# the record header: op code, view count, i0, i1, i2 (int64), value (f64): each param
# goes where its op's row in ops.py says (`record`: i0, i1 or value; i1's param may be
# None: i2 = 0, else 1), e.g. naxes in i0, eps in value (kernels/src/record.rs)
_HEADER = struct.Struct("<5qd")
_HEADERS = {}   # (op, number of inputs) -> packed header of a param-less op
_RECORD = {op.name: op.record for op in _ops.OPS}   # op -> ((param, header slot), ...)
# one struct per ndim for a view: arena, block offset, block bytes, offset, dtype, ndim,
# shape, strides
_VIEW_STRUCTS = [struct.Struct(f"<{6 + 2 * nd}q") for nd in range(17)]


_SLOT = struct.Struct("<2q")      # a program slot at prepare: arena, block byte offset
_BLOCK = struct.Struct("<3q")     # a slot's block at push: arena, byte offset, bytes


def _pack_view(v):
    """(a view's words of the op record, whether it spans EAGER_BYTES or more), cached on
    the view (see run)."""
    b = v.block
    shape = v.shape
    nd = len(shape)
    if nd > 16:
        raise ValueError(f"the simd backend supports up to 16 dims, got shape {shape}")
    packed = (_VIEW_STRUCTS[nd].pack(b.arena, b.offset, b.size, v.offset,
                                     _DTYPE_CODES[v.dtype], nd, *shape, *v.strides),
              math.prod(shape) * _ITEMSIZE[v.dtype] >= EAGER_BYTES)
    if v.resolved is None:
        v.resolved = packed
    return packed


def _address(arr):
    """The address of a C-contiguous array's first byte. (ctypes' view of a writable array,
    ~0.8 us; `arr.ctypes.data` builds NumPy's ctypes helper, ~2.5 us: paid per host write.)"""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(arr))
    except (TypeError, ValueError):     # read-only or empty: NumPy's way
        return arr.ctypes.data


def _plain_header(op, inputs):
    header = _HEADERS[op, inputs] = _HEADER.pack(KERNEL_TABLE[op], inputs + 1, 0, 0, 0, 0.0)
    return header


def _param_header(op, inputs, params):
    """The header of an op record with params, each in the slot its ops.py row names."""
    if op == "fill":    # an int also goes exactly in i1 (i2 = 1): int64 beyond 2^53
        v = params["value"]
        if isinstance(v, (int, np.integer)) and -2**63 <= v < 2**63:
            return _HEADER.pack(KERNEL_TABLE[op], inputs + 1, 0, int(v), 1, float(v))
    slot = {"i0": 0, "i1": 0, "value": 0.0}
    present = 0
    for name, where in _RECORD[op]:
        value = params[name]
        if where == "i1":       # (None: absent, i2 = 0)
            present, value = value is not None, 0 if value is None else value
        slot[where] = value
    return _HEADER.pack(KERNEL_TABLE[op], inputs + 1, slot["i0"], slot["i1"], present,
                        slot["value"])


def describe_isa():
    """The instruction set the kernels use: "avx512f", "avx2+fma", "neon" or "scalar"."""
    lib = native.load()
    return lib.isa() if lib is not None else "unavailable"


def _check_table(lib):
    """"" when the library's op names are exactly ops.py's and it fuses the ops whose rows
    say "stage" or "apart" as they say (then KERNEL_TABLE gets the library's codes), else
    why not."""
    names = lib.op_names()
    if len(set(names)) != len(names) or set(names) != set(_ops.ALL_OPS):
        missing = sorted(set(_ops.ALL_OPS) - set(names))
        unknown = sorted(set(names) - set(_ops.ALL_OPS))
        twice = sorted({n for n in names if names.count(n) > 1})
        return (f"the compiled kernels ({lib.path}) do not implement ops.py's ops (missing "
                f"{missing}, unknown {unknown}, listed twice {twice}): rebuild with "
                f"python -m torchic.backends.simd.build")
    for kind, code_of in ((_ops.STAGE, 1), (_ops.APART, 2)):
        mine = {name for code, name in enumerate(names) if lib.op_fuses(code) == code_of}
        rows = {op.name for op in _ops.OPS if op.fuse == kind}
        if mine != rows:      # (fusion legality is the op rows' to decide)
            return (f"the compiled kernels ({lib.path}) fuse {sorted(mine ^ rows)} "
                    f"otherwise than ops.py's rows say (fuse == {kind!r}): rebuild with "
                    f"python -m torchic.backends.simd.build")
    writes = {name: lib.op_writes(code) for code, name in enumerate(names)}
    rows = {op.name: sum(1 << k for k in op.writes) for op in _ops.OPS}
    if writes != rows:    # (fuse.rs's multi-tensor pass relies on them)
        wrong = sorted(n for n in rows if writes.get(n) != rows[n])
        return (f"the compiled kernels ({lib.path}) write inputs of {wrong} in place "
                f"otherwise than ops.py's rows say (`writes`): rebuild with "
                f"python -m torchic.backends.simd.build")
    KERNEL_TABLE.update((name, code) for code, name in enumerate(names))
    return ""


class _Prepared:
    """A program prepared by the Rust context `ctx` (pack): its handle there, its records
    and slot blocks (a forked child has a context of its own and prepares them again)."""

    __slots__ = ("data", "slots", "handle", "ctx")

    def __init__(self, data, slots, handle, ctx):
        self.data, self.slots, self.handle, self.ctx = data, slots, handle, ctx


class SimdBackend(Backend):
    name = "simd"
    dtypes = tuple(DTYPES)   # every code of docs/DTYPES.md, stored natively
    program_slots = True     # pack / push_packed take slots (torchic.compile's arguments)

    @classmethod
    def available(cls):
        lib = native.load()
        if lib is None:
            return False, native.load_error()
        why = _check_table(lib)
        return (not why), why

    def __init__(self, threads=None, **options):
        super().__init__(threads)
        if options:
            raise TypeError(f"backend 'simd' got unknown options {sorted(options)}")
        isa = os.environ.get("TORCHIC_SIMD_ISA", "").strip()
        if isa and isa.lower() not in _ISA_NAMES:      # (kernels/src/arch/mod.rs reads it)
            raise ValueError(f"environment variable TORCHIC_SIMD_ISA must be one of "
                             f"{', '.join(_ISA_NAMES)}, got {isa!r}")
        fuse = os.environ.get("TORCHIC_SIMD_FUSE", "").strip()
        if fuse not in ("", "0", "1"):      # (kernels/src/record.rs reads it)
            raise ValueError(f"environment variable TORCHIC_SIMD_FUSE must be 0 (compiled "
                             f"programs run elementwise ops one by one) or 1, got {fuse!r}")
        lib = native.load()
        why = native.load_error() if lib is None else _check_table(lib)
        if why:
            raise RuntimeError(why)
        self._lib = lib
        self.heap = HostHeap()
        self._ctx = lib.new(self.threads)
        self._push = lib.push
        self._wait = lib.wait
        self._pending = []       # op records not pushed yet (see run)
        self._flush_lock = threading.Lock()
        self._registered = 0     # arenas registered with the Rust side
        self._errbuf = ctypes.create_string_buffer(4096)
        self._closed = False
        # runs on close(), on garbage collection, or at interpreter exit (before
        # NumPy frees the arenas the Rust threads may still be writing)
        self._finalizer = weakref.finalize(self, _free_ctx, lib, self._ctx, self.heap,
                                           os.getpid())

    # heap ------------------------------------------------------------------
    def new_arena(self, nbytes):
        # (registered with the Rust side before the next push that can name it: under
        # _flush_lock, see "Closing and threads" below)
        if self._closed:
            raise self.closed_error()
        self.heap.new_arena(nbytes)

    def host_array(self, view):
        share(view.block)
        return self.heap.alias(view)

    def _register_arenas(self):
        # (under _flush_lock: two threads registering at once would give one arena two
        # indices) before every push that can name a new arena
        heap = self.heap
        while self._registered < len(heap.addresses):
            i = self._registered
            with sigint_held:    # registered in Rust and counted here, or neither
                index = self._lib.add_arena(self._ctx, heap.addresses[i],
                                            heap.arenas[i].nbytes)
                assert index == i, (index, i)
                self._registered += 1

    # stream ----------------------------------------------------------------
    # Closing and threads: every push to the Rust stream (records, writes, programs, arena
    # registrations) and close() itself run under _flush_lock, and each push first checks
    # _closed there, so another thread's shutdown() can never come between the check and
    # the push; a read copies out of the heap under the lock too (close empties the heap's
    # arena list). A use after close raises Backend.closed_error() (dispatcher.py).
    def run(self, op, out, inputs, params):
        if out.block.known is not None or op in _WRITES:
            forget(op, out, inputs)
        parts, eager = self._record_parts(op, out, inputs, params)
        pending = self._pending
        pending.extend(parts)     # one call: atomic under the GIL, so records never interleave
        if eager or len(pending) >= BATCH_PARTS:
            with self._flush_lock:    # (flush() without its check: pending is not empty)
                self._push_pending(inline=not eager)

    def pack(self, records, slots=(), frees=None):
        """(op, out, inputs, params) records decoded and validated once by the Rust side
        into a prepared program (torchic.compile); push_packed queues it with one call.
        `slots`: blocks whose views a push may move to other blocks (see push_packed);
        `frees` is not used (fuse.rs plans its runs from the views alone)."""
        data = b"".join(b"".join(self._record_parts(*r)[0]) for r in records)
        slot_words = b"".join(_SLOT.pack(b.arena, b.offset) for b in slots)
        return _Prepared(data, slot_words, self._prepare(data, slot_words),
                         self._ctx) if data else None

    def _prepare(self, data, slot_words):
        with self._flush_lock:
            if self._closed:
                raise self.closed_error()
            if self._registered != len(self.heap.addresses):
                self._register_arenas()
            handle = self._lib.prepare(self._ctx, data, len(data) >> 3, slot_words,
                                       len(slot_words) >> 4)
        if handle < 0:
            self._push_failed()
        return handle

    def push_packed(self, packed, blocks=None):
        """Queue a program made by pack(), behind every pending record. `blocks`: one
        (block, byte offset into it) per slot, the memory this run's slot views use
        instead of the recorded blocks' (torchic.compile's zero-copy arguments); the Rust
        side checks that each lies inside its arena and reaches as far as those views."""
        if self._closed:
            raise self.closed_error()
        if packed.ctx != self._ctx:   # a forked child's own context: prepare it there
            packed.handle = self._prepare(packed.data, packed.slots)
            packed.ctx = self._ctx
        words = b"".join(_BLOCK.pack(b.arena, b.offset + skip, b.size - skip)
                         for b, skip in blocks) if blocks else b""
        with self._flush_lock:
            self._push_pending()
            if self._lib.push_program(self._ctx, packed.handle, words,
                                      len(words) // 24) < 0:
                self._push_failed()

    def release_packed(self, packed):
        if not self._closed and packed.ctx == self._ctx:
            self._lib.release_program(self._ctx, packed.handle)

    def _record_parts(self, op, out, inputs, params):
        """The packed pieces of one op record, and whether it should start at once."""
        if self._closed:
            raise self.closed_error()
        try:
            if params:
                header = _param_header(op, len(inputs), params)
            else:   # the common case: a header that depends only on (op, input count)
                header = _HEADERS.get((op, len(inputs))) or _plain_header(op, len(inputs))
            # a view's packed words are cached on it (views are immutable)
            words, eager = out.resolved or _pack_view(out)
            parts = [header, words]
            for v in inputs:
                words, big = v.resolved or _pack_view(v)
                parts.append(words)
                if big:
                    eager = True
            if eager and op in _INDEXED_TABLE:     # (sized without the table)
                eager = (out.resolved or _pack_view(out))[1] or \
                    any((v.resolved or _pack_view(v))[1] for v in inputs[1:])
        except (struct.error, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"op {op!r}: bad op name, params or view ({exc!r}); shapes, strides "
                             f"and offsets must be ints that fit in int64") from None
        return parts, eager

    def flush(self):
        """Push every pending op record to the Rust stream in one call (run on this thread,
        now, if the stream is idle)."""
        if self._pending:
            # the lock keeps batches of several Python threads in append order
            with self._flush_lock:
                self._push_pending()

    def _push_pending(self, inline=True):
        # (under _flush_lock)
        if self._closed:
            raise self.closed_error()
        if self._registered != len(self.heap.addresses):
            self._register_arenas()
        pending = self._pending
        n = len(pending)    # (always at a record boundary: see run)
        if n:
            data = b"".join(pending[:n])
            words, ctx, push = len(data) >> 3, self._ctx, self._push
            # Between this del and the push there is no call, so no KeyboardInterrupt
            # can land there (Python raises it after a call returns): a record is
            # never lost nor pushed twice. Records appended meanwhile stay pending.
            del pending[:n]
            if push(ctx, data, words, inline) < 0:
                self._push_failed()

    def _push_failed(self):
        size = self._lib.push_error(self._ctx, self._errbuf, len(self._errbuf))
        msg = self._errbuf.raw[:min(size, len(self._errbuf))].decode()
        if self._closed or msg == "the runtime is closed":
            raise self.closed_error()
        raise ValueError(f"simd backend rejected an op batch: {msg}")

    def write(self, view, array):
        view.block.known = None
        arr = np.ascontiguousarray(array, dtype=DTYPES[view.dtype])
        if arr.shape != tuple(view.shape):
            arr = arr.reshape(view.shape)
        try:
            data = _HEADER.pack(OP_WRITE, 1, 0, 0, 0, 0.0) + _pack_view(view)[0]
        except (struct.error, KeyError, TypeError) as exc:
            raise ValueError(f"write: bad view {view} ({exc!r})") from None
        with self._flush_lock:    # (every push to the Rust stream is under the lock)
            self._push_pending()   # (raises closed_error once closed; registers arenas)
            # Rust copies the data during this call
            if self._lib.write(self._ctx, data, len(data) >> 3, _address(arr), arr.nbytes) < 0:
                self._push_failed()

    def _take_errors(self):
        while True:     # every failure since the last read, oldest first
            # taken from Rust and recorded here, or neither (a Ctrl-C between the two
            # would lose the error)
            with sigint_held:
                kind = self._lib.take_error(self._ctx, self._errbuf, len(self._errbuf))
                if kind:
                    op, msg = self._errbuf.raw.decode(errors="replace").split("\0")[:2]
                    self.record_error(op, _ERROR_KINDS.get(kind, RuntimeError)(msg))
            if not kind:
                break

    def read(self, view):
        block = view.block
        # a new tensor's own View (contiguous, at the block's start) is valid by construction
        own = view is block.view
        if not own:
            self._check_view(view)
        self.sync()
        item = _ITEMSIZE[view.dtype]
        with self._flush_lock:      # (close empties heap.arenas under it)
            if self._closed:        # (closed during the wait: the op may never have run)
                raise self.closed_error()
            return np.ndarray(view.shape, DTYPES[view.dtype], self.heap.arenas[block.arena],
                              block.offset + view.offset * item,
                              None if own else tuple([s * item for s in view.strides])).copy()

    def sync(self):
        if self._pending:
            self.flush()     # (run here when the stream is idle: the wait then has nothing left)
        if self._wait(self._ctx, 0):    # 0: the last op pushed (as Rust counts)
            self._take_errors()
        if self._closed:    # (before or during the wait: close drops queued ops unrun)
            raise self.closed_error()
        if self._error is not None:
            self.raise_pending_error()

    def close(self):
        with self._flush_lock, sigint_held:    # (no push, nor a half-done close)
            if not self._closed:
                self._closed = True
                self._pending.clear()     # never pushed: dropped like queued ops
                self._finalizer()   # drops queued ops, joins the threads, frees the heap

    # fork (dispatcher.py): the heap is copied with the process; the Rust threads are not
    def fork_pause(self):
        self._flush_lock.acquire()     # no push until fork_resume: the stream stays empty
        try:
            self._push_pending()
            if self._wait(self._ctx, 0):
                self._take_errors()    # (so the child inherits them too)
        except BaseException:
            self._flush_lock.release()
            raise

    def fork_resume(self):
        self._flush_lock.release()

    def fork_child(self):
        super().fork_child()
        self._flush_lock = threading.Lock()

    def reopen_in_child(self):
        # the parent's context is left alone (its threads are not here to be joined)
        self._finalizer.detach()
        self._ctx = self._lib.new(self.threads)
        self._registered = 0
        self._register_arenas()     # the same arenas in the same order: cached views hold
        self._finalizer = weakref.finalize(self, _free_ctx, self._lib, self._ctx, self.heap,
                                           os.getpid())

    @classmethod
    def describe_platform(cls):
        """The instruction-set path the kernels take here, how to force another, and the
        matmul blocking derived from this CPU's caches (with the caches it came from)."""
        lib = native.load()
        return {"kernels": _KERNELS, "isa": describe_isa(),
                "force": "TORCHIC_SIMD_SCALAR=1 (scalar) or TORCHIC_SIMD_ISA=avx2",
                "matmul": lib.matmul_tuning() if lib is not None else {}}

    def describe(self):
        return {"backend": self.name, "threads": self.threads, "isa": describe_isa(),
                "kernels": _KERNELS, "library": self._lib.path}

    # -----------------------------------------------------------------------
    def _check_view(self, view):
        """Python-side bounds check for reads (ops are checked in Rust at push)."""
        if view.dtype not in _DTYPE_CODES:
            raise ValueError(f"unknown dtype {view.dtype!r}")
        lo = hi = view.offset
        size = 1
        for n, s in zip(view.shape, view.strides):
            size *= n
            if n > 0:
                span = (n - 1) * s
                if span < 0:
                    lo += span
                else:
                    hi += span
        if size and (lo < 0 or (hi + 1) * _ITEMSIZE[view.dtype] > view.block.size):
            raise ValueError(f"view {view} reaches outside its block")


def _free_ctx(lib, ctx, heap, pid):
    if pid != os.getpid():
        return         # a forked child: the context's threads are the parent's (not here)
    lib.free(ctx)      # joins the threads: no kernel runs after this returns
    heap.close()


register_backend(SimdBackend, KERNEL_TABLE)

__all__ = ["SimdBackend", "KERNEL_TABLE", "describe_isa", "KernelError"]
