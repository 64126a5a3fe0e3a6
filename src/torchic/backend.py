"""The interface every backend implements (`Backend`) and the errors kernels raise.

A backend has three parts: the heap (`new_arena`), the eager stream (`run`, `write`,
`read`, `sync`: one primitive op at a time, ops.py), and the replay of recorded programs
(`pack`, `push_packed`, `slot_fits`, `release_packed`: torchic.compile; a backend without
them replays a program record by record). dispatcher.py registers backends and holds the
current Runtime.
"""

import os
import threading


class KernelError(RuntimeError):
    """A kernel failed on the backend; raised at the next read or sync (at the op itself
    in sync mode: ``init(sync=True)`` or ``TORCHIC_SYNC=1``).

    What is raised is a subclass that is also the built-in class PyTorch raises for the
    same failure (``KernelIndexError`` is an ``IndexError``: an index or a target class
    out of range), chosen from the kind of the kernel's error, so both
    ``except KernelError`` and ``except IndexError`` catch it.
    """


class KernelIndexError(KernelError, IndexError):
    """A kernel found an index out of range (gather / scatter rows, cross_entropy targets)."""


class KernelValueError(KernelError, ValueError):
    """A kernel (or the backend's validation of an op record) refused a value."""


class KernelTypeError(KernelError, TypeError):
    """A kernel got an operand of the wrong type."""


class KernelMemoryError(KernelError, MemoryError):
    """A kernel ran out of memory."""


class KernelOverflowError(KernelError, OverflowError):
    """A kernel's result outside what its dtype's storage holds (webgpu's int64 rule:
    int64 stored as 32-bit words; docs/DTYPES.md)."""


_KERNEL_ERRORS = {IndexError: KernelIndexError, ValueError: KernelValueError,
                  TypeError: KernelTypeError, MemoryError: KernelMemoryError,
                  OverflowError: KernelOverflowError}


def kernel_error_class(exc):
    """The KernelError subclass for a kernel's exception: its built-in kind is kept."""
    for cls in type(exc).__mro__:
        if cls in _KERNEL_ERRORS:
            return _KERNEL_ERRORS[cls]
    return KernelError


# The user-level call behind the primitives that check values (the only ones that can
# fail on valid records): named in the KernelError at no cost per op. Sync mode names
# the exact call and line (see _issuer).
_ISSUED_BY = {"gather_rows": "indexing with an integer tensor (x[idx], nn.Embedding)",
              "scatter_add_rows": "the backward of indexing with an integer tensor",
              "cross_entropy_grad": "the backward of cross_entropy"}


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run on this machine (the message says why)."""


def closed_message(backend_name, closed_by):
    """What a use of a closed runtime's tensor raises: Storage.check_usable says it, and so
    does a backend closed under a thread that had passed that check (see Backend)."""
    if closed_by == "torchic.shutdown()":
        return (f"this tensor belongs to a runtime (backend {backend_name!r}) that was closed "
                f"by torchic.shutdown(); tensors do not outlive their runtime: create it again "
                f"(e.g. from .numpy() taken before shutdown)")
    return (f"this tensor belongs to a previous runtime (backend {backend_name!r}) that was "
            f"replaced by torchic.init(); tensors cannot cross runtimes: create it again "
            f"(e.g. from .numpy() taken before init)")


class Backend:
    """The interface every backend implements. See ops.py for the op contract.

    Closing races use: another thread's shutdown() or init() can close the backend between
    a thread's check of its tensors (Storage.check_usable) and the op it issues. Every entry
    point (run, write, read, sync, push_packed) then raises ``closed_error()``: it never
    fails on the released resources (an arena list already emptied) and never waits for a
    stream that no longer runs. So each backend checks that it is open where close cannot
    come between the check and the use: under the lock its close takes, or after queueing
    the record waited for (cpu/stream.py)."""

    name = "?"
    closed_by = "torchic.init()"    # what closed it (Runtime.close sets it; errors name it)
    synchronous = False             # sync mode (init sets it): every op waited for at issue
    alignment = 256                 # byte alignment of every block
    max_arena_bytes = None          # largest single buffer the backend can make
    default_arena_bytes = 64 << 20  # usual growth step of the heap
    # dtypes (docs/DTYPES.md): the codes of dispatcher.DTYPES the backend holds; raw refuses a
    # tensor of any other with a TypeError naming the backend and `refusals[code]` (why, and
    # the alternative). `storage` maps a code to the code it is stored as (its physical code,
    # e.g. webgpu's {"b8": "i32"}; absent: itself): the heap block holds numel * itemsize of
    # the physical code, kernels get Views of the logical code, and the backend's write / read
    # convert host arrays (in the logical code's NumPy dtype) to and from the physical one
    # (to_storage / from_storage below).
    dtypes = ("f32", "i32")
    storage = {}
    refusals = {}
    # the backend's scatter of single elements (a gradient put back at argmax positions) is
    # slow: passes that have a dense form of the same result (a where over a window) take
    # it here (nn/functional_pool.py's max pooling backward)
    slow_scatter = False

    @classmethod
    def available(cls):
        """(True, "") or (False, "why not and how to fix it")."""
        return True, ""

    def __init__(self, threads=None, **options):
        self.threads = threads or os.cpu_count() or 1
        self._error = None
        self._error_lock = threading.Lock()

    # heap ------------------------------------------------------------------
    def new_arena(self, nbytes):
        """Grow the heap by one arena of nbytes; arenas are numbered 0, 1, ..."""
        raise NotImplementedError

    # stream ----------------------------------------------------------------
    def run(self, op, out, inputs, params):
        """Enqueue one primitive op; return before it has run."""
        raise NotImplementedError

    def write(self, view, array):
        """Enqueue a host -> heap copy of a contiguous array the caller gives away."""
        raise NotImplementedError

    def read(self, view):
        """Wait for every earlier op, then return a NumPy copy of the view."""
        raise NotImplementedError

    def sync(self):
        """Wait for every earlier op; raise KernelError if one failed."""
        raise NotImplementedError

    def close(self):
        """Stop the backend's threads and release its memory (idempotent, never hangs)."""

    def closed_error(self):
        """The RuntimeError of a use after close (see the class docstring)."""
        return RuntimeError(closed_message(self.name, self.closed_by))

    def host_array(self, view):   # a NumPy array over the view's host memory (DLPack), or None
        return None

    def describe(self):
        """This runtime's backend: name, threads and what it runs on."""
        return {"backend": self.name, "threads": self.threads}

    @classmethod
    def describe_platform(cls):
        """What this machine offers the backend, without starting it (`python -m torchic
        info`, the bench and serve machine records): a JSON-able dict; call only when
        available() is true. "kernels" says what computes, other keys are the backend's."""
        return {"kernels": "?"}

    # replay (torchic.compile, recording.py) ------------------------------------------
    # A backend may prepare a recorded program once and push it whole; one without these
    # (pack gives None) has its programs replayed record by record through `run`.
    program_slots = False   # do pushes take slots (blocks a push may move: the arguments)?

    def pack(self, records, slots=(), frees=None):
        """A handle for the records (op, out, inputs, params) prepared once, or None.
        `slots`: blocks (given only where program_slots) whose views a push may move to
        other blocks; `frees`: per record, ids of the program's temporaries that die
        right after it (stores nothing reads may be skipped)."""
        return None

    def slot_fits(self, packed, k, block, skip):
        """Can a push run slot k of packed at byte `skip` of block? (else it copies)"""
        return True

    def push_packed(self, packed, blocks=None):
        """Queue a packed program behind every earlier op; `blocks`: one (block, byte skip)
        per slot, where this run's slot views lie (each one slot_fits)."""
        raise NotImplementedError

    def release_packed(self, packed):
        """Free what pack made (the program is released; nothing queued still uses it)."""

    # fork (see "fork" at the end of this file) -----------------------------------
    def fork_pause(self):
        """Parent, just before os.fork(): let every issued op run, then hold the stream."""

    def fork_resume(self):
        """Parent, just after os.fork(): undo fork_pause."""

    def fork_child(self):
        """Child, just after os.fork(): the parent's threads do not exist here and any
        lock may be copied held. Replace the locks; call nothing of the parent's."""
        self._error_lock = threading.Lock()

    def reopen_in_child(self):
        """Child, first use of the inherited runtime: start this process's own threads
        over the inherited heap, or raise BackendUnavailableError saying why not."""
        raise BackendUnavailableError(
            f"the {self.name!r} backend cannot be used in a process forked (os.fork, "
            f"multiprocessing's 'fork' start method) after torchic.init(); use "
            f"multiprocessing.get_context('spawn') or call torchic.init() in the child")

    # dtypes: host conversions for a backend whose storage differs ------------------------
    def to_storage(self, array, code):
        """A host array of `code` (dispatcher.DTYPES's NumPy dtype) as the words the backend
        stores it in; the identity here (a backend with a `storage` map overrides it)."""
        return array

    def from_storage(self, array, code):
        """A host array read from a `code` view's storage, back in code's NumPy dtype; the
        identity here (a backend with a `storage` map overrides it)."""
        return array

    # error plumbing shared by backends ---------------------------------------
    def record_error(self, op, exc):
        with self._error_lock:
            if self._error is None:
                issued_by = _ISSUED_BY.get(op)
                self._error = kernel_error_class(exc)(
                    f"op {op!r}{f' (from {issued_by})' if issued_by else ''} failed on "
                    f"backend {self.name!r}: {type(exc).__name__}: {exc}" +
                    ("" if self.synchronous else
                     " (it is raised at the next read or sync; set TORCHIC_SYNC=1 or "
                     "torchic.init(sync=True) to raise it at the line that issued the op)"))
                self._error.__cause__ = exc
            else:   # later failures before the read are named too, never silently dropped
                self.__dict__.setdefault("_later_errors", []).append(
                    f"{op!r} ({type(exc).__name__}: {exc})")

    def raise_pending_error(self):
        if self._error is not None:
            with self._error_lock:
                err, self._error = self._error, None
                later = self.__dict__.pop("_later_errors", None)
            if err is not None:
                if later:
                    err.args = (f"{err.args[0]}; {len(later)} later op(s) failed too: "
                                + "; ".join(later[:3]) + ("; ..." if len(later) > 3 else ""),)
                raise err
