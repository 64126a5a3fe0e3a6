"""The Dispatcher: one interface, several backends.

A backend is a class that implements ``Backend`` (backend.py) and registers itself
with ``register_backend``; nothing else in torchic names a backend. The
frontend only ever talks to the current ``Runtime``:

    runtime.alloc(nbytes) -> Block            (heap, via allocator.py)
    runtime.run(op, out, inputs, params)      (enqueue one primitive op, ops.py)
    runtime.write(view, array)                (host -> heap, in stream order)
    runtime.read(view) -> numpy array         (waits for the producing ops)

Stream order is the invariant that makes everything else simple: ops, host
writes and reads are executed in exactly the order they were issued. So a
block freed on the calling thread can be handed to a new tensor at once: any
op that still reads the old contents was issued earlier and therefore runs
before any op that writes the new ones."""

import functools
import linecache
import os
import sys
import threading

import numpy as np

from . import ops as _ops
from .allocator import Allocator, Block
from .backend import (Backend, BackendUnavailableError, KernelError,  # noqa: F401 (re-exported)
                      KernelIndexError, KernelMemoryError, KernelTypeError, KernelValueError,
                      closed_message, kernel_error_class)
from .interrupts import sigint_held

# THE table of dtype codes (docs/DTYPES.md): code -> the NumPy dtype a host array of it has
# (bf16: its bits, as uint16). Itemsize is the NumPy dtype's. A backend says which codes it
# holds and how it stores them (Backend.dtypes / storage / refusals, backend.py).
DTYPES = {
    "b8": np.dtype(np.bool_), "u8": np.dtype(np.uint8), "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
ITEMSIZE = {code: dt.itemsize for code, dt in DTYPES.items()}
if tuple(DTYPES) != _ops.CODES:
    raise TypeError("dispatcher.DTYPES and ops.CODES must name the same codes")
FLOAT_CODES = ("f16", "bf16", "f32", "f64")
INT_CODES = ("u8", "i8", "i16", "i32", "i64")
# integer code -> (lowest, highest) value it holds (np.iinfo once, not per call)
INT_LIMITS = {c: (int(np.iinfo(DTYPES[c]).min), int(np.iinfo(DTYPES[c]).max)) for c in INT_CODES}


def storage_code(backend, code):
    """The code `backend` stores a `code` tensor as (its physical code), or TypeError naming
    the backend when it does not hold that dtype (Backend.dtypes / refusals)."""
    if code not in backend.dtypes:
        why = backend.refusals.get(code) or "not implemented on it yet"
        raise TypeError(f"the {backend.name!r} backend does not hold {_NAMES.get(code, code)} "
                        f"tensors: {why}")
    return backend.storage.get(code, code)


_NAMES = {"b8": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
          "i64": "int64", "f16": "float16", "bf16": "bfloat16", "f32": "float32",
          "f64": "float64"}


class HeapBlock(Block):
    """A heap block, with the View last made of it (raw.new_tensor). Blocks are recycled
    with the same sizes step after step, so the next tensor placed here usually has the
    same layout and reuses the View, and with it what the backend cached on the View."""

    __slots__ = ("view", "known", "shared")

    def __init__(self, arena, offset, size):
        super().__init__(arena, offset, size)
        self.view = None
        self.known = None         # known.py: (code, offset, values) of its elements, or None
        self.shared = False       # known.py: NumPy aliases its memory (never known again)

    def retire(self):
        self.view = None          # (a View refers back to its block: no cycle left behind)


def forget(op, out, inputs):
    """known.py: what was known of the blocks op writes (its output's, and its inputs'
    that ops.WRITES names) is forgotten. Each backend's run calls it, when the output's
    block has a known value or the op writes an input."""
    out.block.known = None
    for k in _ops.WRITES.get(op, ()):
        inputs[k].block.known = None


def share(block):
    """known.py: NumPy aliases `block`'s memory (a backend's host_array): never known."""
    block.known = None
    block.shared = True


class View:
    """What a kernel sees of a tensor: heap block + element offset/shape/strides."""

    __slots__ = ("block", "offset", "shape", "strides", "dtype", "resolved", "as_batch")

    def __init__(self, block, offset, shape, strides, dtype):
        self.resolved = None      # a backend may cache what it resolved the view to
        self.as_batch = None      # raw.matmul: [as a batch of one, transposed as one]
        self.block = block
        self.offset = offset      # in elements, from the start of the block
        self.shape = shape        # tuple of ints
        self.strides = strides    # tuple of ints, in elements
        self.dtype = dtype        # a code of DTYPES ("f32", "i64", "b8", ...)

    def __repr__(self):
        return (f"View({self.block}, offset={self.offset}, shape={self.shape}, "
                f"strides={self.strides}, dtype={self.dtype})")


_BACKENDS = {}
_KERNEL_TABLES = {}


def register_backend(cls, kernel_table=None):
    """Make a backend available to init(); kernel_table is checked against ops.ALL_OPS."""
    if kernel_table is not None:
        _ops.check_backend_table(cls.name, kernel_table)
        _KERNEL_TABLES[cls.name] = kernel_table
    _BACKENDS[cls.name] = cls
    return cls


def kernel_table(name):
    """The {op: kernel} table a backend registered (None if it registered none)."""
    backend_class(name)
    return _KERNEL_TABLES.get(name)


def backend_names():
    return list(_BACKENDS)


def backend_class(name):
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known backends: {sorted(_BACKENDS)}")
    return _BACKENDS[name]


def _int_range(code, stored):
    """(lowest, highest) of the values both integer codes hold."""
    (a_min, a_max), (b_min, b_max) = INT_LIMITS[code], INT_LIMITS[stored]
    return max(a_min, b_min), min(a_max, b_max)


class Runtime:
    """One initialized backend with its heap. ``init`` makes a new one."""

    _generation = 0

    def __init__(self, backend, heap_cap):
        Runtime._generation += 1
        self.generation = Runtime._generation
        self.backend = backend
        self.closed = False
        self.allocator = Allocator(
            backend.new_arena, heap_cap,
            arena_bytes=min(backend.default_arena_bytes, heap_cap),
            max_arena_bytes=backend.max_arena_bytes, align=backend.alignment,
            block_type=HeapBlock)
        # the per-op calls go straight to the allocator and the backend (no extra frame)
        self.alloc = self.allocator.alloc
        self.free = self.allocator.free       # deferred: see allocator.py
        self.run = backend.run
        self.read = backend.read
        self.sync = backend.sync
        # known.py: per integer code the backend holds, the values an op's result of that
        # code is stored exactly as (its range, and its storage code's: webgpu's int64 is
        # 32-bit words), what such a result may be remembered as without a read
        self.int_ranges = {c: _int_range(c, backend.storage.get(c, c)) for c in INT_CODES
                           if c in backend.dtypes and backend.storage.get(c, c) in INT_CODES}
        self.layouts = {}     # (shape, code) -> (bytes, strides, Size): raw.new_tensor's cache
        self.recorder = None       # compile's recorder while it records a call (recording.py)
        # restore() is the instance dict's own update: one C call (see rebind)
        self.restore = self.__dict__.update
        self.pid = os.getpid()     # the process whose threads run the backend (see fork)
        self._before_reopen = None

    def stats(self):
        return self.allocator.stats()

    # The entry points (alloc, free, run, write, read, sync) are instance attributes, so
    # the per-op path has no extra frame; whatever routes them elsewhere (sync mode, a fork
    # child until first use, compile's recorder, testing.issued_ops) goes through rebind,
    # and `rt.restore(saved)` puts them back. restore is `self.__dict__.update` itself (set
    # in __init__), one C call with no Python frame: CPython handles a Ctrl-C when a call
    # returns or a Python function starts, so `finally: rt.restore(saved)` can never be cut
    # short by a press (a method would be, at its first instruction: the recorder once
    # stayed installed, every later read and compile refused).
    def rebind(self, **entry_points):
        """Route the named entry points (or set `recorder`) through the given callables;
        returns what restore() takes to put the previous ones back (nested rebinds undo
        in order)."""
        saved = self.saved(*entry_points)
        self.__dict__.update(entry_points)
        return saved

    def saved(self, *names):
        """What restore() takes to put the named entry points back as they are now."""
        return {n: getattr(self, n) for n in names}

    def write(self, view, array, source=None):   # (source: a recorder's, see compile.py)
        self.backend.write(view, array)

    def close(self, by="torchic.init()"):
        """Close the backend; `by` (what closed it) is named in the errors of later uses."""
        if not self.closed:
            self.closed_by = self.backend.closed_by = by
            self.closed = True
            if self.pid != os.getpid():
                return    # inherited through fork, never reopened: the threads are the parent's
            self.backend.close()
            self.allocator.discard_freed()   # the heap is gone: nothing to return them to

    # fork: an inherited runtime reopens its backend at first use ------------------------
    _ENTRY_POINTS = ("alloc", "run", "read", "sync", "write")

    def _until_reopened(self):
        """(fork child) Route every entry point through _reopen_then until first use."""
        self._reopen_lock = threading.Lock()
        if self._before_reopen is None:
            self._before_reopen = self.rebind(**{n: functools.partial(self._reopen_then, n)
                                                 for n in self._ENTRY_POINTS})

    def _reopen_then(self, name, *args):
        with self._reopen_lock:
            if self._before_reopen is not None:
                if self.closed:
                    raise RuntimeError("this torchic runtime was closed in this (forked) process")
                self.backend.reopen_in_child()     # or BackendUnavailableError (webgpu)
                saved, self._before_reopen = self._before_reopen, None
                self.restore(saved)
                self.pid = os.getpid()
        return getattr(self, name)(*args)


# -- settings: init() arguments and TORCHIC_* environment variables -------------------
# One set of checks for both, so a bad value is refused the same way wherever it comes
# from, and the error names the argument or the variable.
def _positive_int(value, what):
    """value as an int, or ValueError "<what> must be <a positive ...>, got <value>"."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what}, got {value!r}")
    return int(value)


def env_int(name, default, minimum=1, meaning=None):
    """The integer value of environment variable `name` (default when unset or empty)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ValueError(f"environment variable {name} must be "
                         f"{meaning or f'an integer >= {minimum}'}, got {text!r}")
    return value


def env_flag(name):
    """True for 1/true/yes/on, False for unset, empty, 0/false/no/off; anything else is refused."""
    text = os.environ.get(name, "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"environment variable {name} must be 0 or 1, got {os.environ[name]!r}")


def env_choice(name, default, choices):
    """The value of environment variable `name`, one of `choices` (default when unset)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if text not in choices:
        raise ValueError(f"environment variable {name} must be one of {', '.join(choices)}, "
                         f"got {text!r}")
    return text


# -- sync mode (like CUDA_LAUNCH_BLOCKING=1) --------------------------------------------
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _issuer():
    """Where the failing op came from: the torchic call the user made and the user's line.

    Walks the stack of the thread that issued the op (sync mode raises on it), so it
    names `C[idx]` or `loss.backward()` as written, and the Function that issued it.
    """
    frame = sys._getframe(2)
    function = outermost = None
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        code = frame.f_code
        if function is None and code.co_name in ("forward", "backward") and \
                hasattr(frame.f_locals.get("self"), "needs_grad"):   # an autograd Function
            function = code.co_qualname
        outermost = _public_name(frame)
        frame = frame.f_back
    parts = []
    if outermost is not None:
        parts.append(f"torchic.{outermost}" + (f" ({function})" if function and
                                               function != outermost else ""))
    if frame is not None:
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        parts.append(f"at {frame.f_code.co_filename}:{frame.f_lineno}" +
                     (f": {line}" if line else ""))
    return " issued by " + ", ".join(parts) if parts else ""


def _public_name(frame):
    """What the user called to reach this frame: a method of the first argument's class
    when the function is bound there (Tensor's methods are the op functions themselves:
    `C[idx]` runs api.shaping.getitem as Tensor.__getitem__), else the function's name."""
    code = frame.f_code
    if code.co_argcount:
        first = frame.f_locals.get(code.co_varnames[0])
        for cls in type(first).__mro__:
            for name, attr in vars(cls).items():
                if getattr(attr, "__code__", None) is code:
                    return f"{cls.__name__}.{name}"
    return code.co_qualname


def _synchronous(backend):
    """backend.run that waits for the op and raises its KernelError at the call."""
    run, sync = backend.run, backend.sync

    def run_and_wait(op, out, inputs, params):
        run(op, out, inputs, params)
        try:
            sync()
        except KernelError as err:
            err.args = (f"{err.args[0]} (sync mode:{_issuer()})",) + err.args[1:]
            raise err.with_traceback(None)  # noqa: B904  (the same error, its message added to)
    return run_and_wait


_runtime = None
_runtime_lock = threading.Lock()
# what torchic.set_num_threads asked for (None: nothing): the worker threads of a runtime
# started later without its own `threads` (a script's torch.set_num_threads(1) at its top
# comes before the first op starts the default runtime)
requested_threads = None

DEFAULT_HEAP_CAP = 8 << 30


_said_choice = False


def _chosen_backend():
    """The fastest backend built here; says once per process (on stderr) which and why."""
    global _said_choice
    name = next(n for n in ("simd", "workers") if n in _BACKENDS and _BACKENDS[n].available()[0])
    if not _said_choice:
        _said_choice = True
        if name == "simd":
            why = "the fastest built here"
        else:
            why = "the simd backend is not available: " + str(_BACKENDS["simd"].available()[1]
                                                              if "simd" in _BACKENDS else "")
        print(f"torchic: using the {name} backend ({why}; set TORCHIC_BACKEND or "
              f"init(backend=...) to choose)", file=sys.stderr)
    return name


def init(backend: str | None = None, threads: int | None = None, heap_cap: int | None = None,
         sync: bool | None = None, **options: object) -> Runtime:
    """Start (or switch to) a backend. Tensors of the previous runtime become unusable.

    backend: "workers", "simd" or "webgpu" (default: $TORCHIC_BACKEND, else the fastest built).
    threads: worker threads for the CPU backends (default: what set_num_threads asked for,
        else the number of cores).
    heap_cap: the most bytes the heap may grow to (default 8 GiB, env TORCHIC_HEAP_CAP).
        Creation functions refuse a tensor larger than the cap before building it.
    sync: run every op to completion before returning, so a kernel error (an index
        out of range) is raised at the line that issued the op, naming it: a debug
        mode, like CUDA_LAUNCH_BLOCKING=1 (default: env TORCHIC_SYNC=1, else off).
    """
    return _init(backend, threads, heap_cap, sync, options, replace=True)


def _init(backend, threads, heap_cap, sync, options, replace):
    """init; with replace=False the current runtime is kept if another thread made one
    meanwhile (runtime()'s first use on two threads: both must get the same runtime)."""
    global _runtime
    name = backend or os.environ.get("TORCHIC_BACKEND") or _chosen_backend()
    if not isinstance(name, str):
        raise TypeError(f"backend must be a string, got {type(name).__name__}")
    cls = backend_class(name)
    ok, why = cls.available()
    if not ok:
        raise BackendUnavailableError(f"backend {name!r} is not available: {why}")
    if threads is None:
        threads = requested_threads
    if threads is not None:
        threads = _positive_int(threads, "threads must be a positive int")
    if heap_cap is None:
        cap = env_int("TORCHIC_HEAP_CAP", DEFAULT_HEAP_CAP,
                      meaning="a positive number of bytes (an integer)")
    else:
        cap = _positive_int(heap_cap, "heap_cap must be a positive number of bytes")
    if sync is None:
        sync = env_flag("TORCHIC_SYNC")
    elif not isinstance(sync, bool):
        raise TypeError(f"sync must be True or False, got {sync!r}")
    with _runtime_lock:
        if _runtime is not None:
            if not replace:
                return _runtime
            old, _runtime = _runtime, None
            try:
                # (one inherited through fork has no threads here; one closed has nothing left)
                if old.pid == os.getpid() and not old.closed:
                    old.sync()
            except KernelError:
                pass
            finally:
                old.close()
        rt = Runtime(cls(threads=threads, **options), cap)
        if sync:
            rt.backend.synchronous = True
            rt.rebind(run=_synchronous(rt.backend))
        _runtime = rt         # (complete: runtime() reads it without the lock)
    return rt


def runtime():
    """The current runtime, starting the default backend on first use."""
    rt = _runtime
    if rt is None:
        rt = _init(None, None, None, None, {}, replace=False)
    return rt


def current_backend_name():
    return runtime().backend.name


def shutdown() -> None:
    """Close the current runtime (also run at interpreter exit)."""
    global _runtime
    # (Ctrl-C held back: a press between the two steps would leave the runtime unreachable
    # and still running)
    with _runtime_lock, sigint_held:
        if _runtime is not None:
            rt, _runtime = _runtime, None
            rt.close("torchic.shutdown()")    # named when an old tensor is used


# -- fork ------------------------------------------------------------------------------
# os.fork() (multiprocessing's 'fork' start method) copies the process's memory but only
# the thread that forked: the coordinator and worker threads (Python or Rust) do not exist
# in the child, and any lock may be copied held. So:
# * just before fork the parent lets every issued op run and holds its stream still
#   (Backend.fork_pause), and takes the runtime and allocator locks, so the child
#   inherits a heap with every result in it and consistent allocator state; the parent
#   lets go right after fork and is otherwise unaffected;
# * the child replaces the locks and calls nothing of the parent's (Backend.fork_child).
#   Its runtime is "inherited" (pid != os.getpid()) until first use, which starts the
#   child's own threads over the copied heap (Backend.reopen_in_child): tensors made by
#   the parent keep their values, like PyTorch's CPU tensors. A backend that cannot do
#   that (webgpu: the device is the parent's) raises BackendUnavailableError there,
#   naming multiprocessing's 'spawn' start method. An inherited runtime is never closed
#   by the child (close, atexit and finalizers are no-ops), so a child that never uses
#   torchic exits cleanly and never releases what the parent still uses.
_fork_held = None     # the runtime _before_fork paused (released after fork)


def _before_fork():
    global _fork_held
    _runtime_lock.acquire()
    rt = _runtime
    if rt is not None and not rt.closed and rt.pid == os.getpid():
        rt.backend.fork_pause()
        rt.allocator.lock.acquire()
        _fork_held = rt


def _after_fork_in_parent():
    global _fork_held
    rt, _fork_held = _fork_held, None
    if rt is not None:
        rt.allocator.lock.release()
        rt.backend.fork_resume()
    _runtime_lock.release()


def _after_fork_in_child():
    global _fork_held, _runtime_lock
    _fork_held = None
    _runtime_lock = threading.Lock()
    rt = _runtime
    if rt is not None and not rt.closed:
        rt.allocator.lock = threading.Lock()
        if rt._before_reopen is None:    # (else: a fork of a child that never used it)
            rt.backend.fork_child()
        rt._until_reopened()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
