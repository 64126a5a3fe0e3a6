"""The op stream of the CPU backends: one coordinator thread plus a worker pool.

The calling thread only appends records to a queue and returns. The
coordinator takes them off in issue order and runs each one to completion
before the next (this is the stream-order invariant of dispatcher.py). A
large op is cut into row ranges: the coordinator runs the first range and
the pool's threads the others, and the op is finished only when all ranges
are. Small ops run whole on the coordinator, because a hand-off between
Python threads costs tens of microseconds, far more than a small kernel.

A failing kernel does not stop the stream: its error is recorded (naming the
op) and raised at the next read or sync; the ops after it still run.

Records, told apart by type: an op is a plain tuple ``(op name, out View,
input Views, params)`` (the per-op hot path: a tuple costs ~50 ns to build, a
NamedTuple ~300 ns); a host write, a read and a sync each have their class.

The caller waits for a read or a sync on a plain lock that the record holds taken and the
coordinator releases, never on a threading.Event: Event.wait and Event.set run Python code
of threading.py around the Event's inner lock, and a Ctrl-C landing there left that lock
held (Condition.__enter__ returns after the take: the coordinator then hung for good in
the record's set(), and every later read with it) or not taken back (the caller raised
"release unlocked lock" instead of KeyboardInterrupt: the CI flake of
test_ctrl_c_while_issuing_ops). ``lock.acquire()`` is one C call: a press interrupts it
or comes after it, never in the middle.

Closing: a record put after close()'s stop record never runs, so a thread must not wait
for it (another thread's torchic.shutdown() can close the stream between a read's checks
and its put). ``put_awaited`` puts the record and then looks at ``closed``: still open
means close() (which sets ``closed`` before it queues its stop) comes later, so the
record runs before the stop and its lock is released; closed means it may never run, and
the caller raises instead of waiting.
"""

import queue
import threading

import numpy as np

from ...interrupts import taken_lock

_STOP = object()


class WriteRecord:
    """Copy a host array (given away by the caller) into the view's memory."""

    __slots__ = ("view", "array")

    def __init__(self, view, array):
        self.view = view
        self.array = array


class ReadRecord:
    """Copy the view's memory into ``result`` (None if the stream closed), then release
    ``done`` (the caller waits with ``done.acquire()``)."""

    __slots__ = ("view", "result", "done")

    def __init__(self, view):
        self.view = view
        self.result = None
        self.done = taken_lock()


class PackedRecord:
    """A recorded program's prepared kernel calls (WorkersBackend.pack), run in order."""

    __slots__ = ("calls",)

    def __init__(self, calls):
        self.calls = calls


class SyncRecord:
    """Reached by the coordinator once every record issued before it has run; ``wait()``
    (once, by the one thread that issued it) returns then."""

    __slots__ = ("done",)

    def __init__(self):
        self.done = taken_lock()

    def reached(self):
        self.done.release()

    def wait(self):
        self.done.acquire()


class PauseRecord(SyncRecord):
    """A sync record that then holds the coordinator until ``resume`` is released (fork)."""

    __slots__ = ("resume",)

    def __init__(self):
        super().__init__()
        self.resume = taken_lock()

    def reached(self):
        self.done.release()
        self.resume.acquire()


class WorkerPool:
    """threads - 1 helper threads; the coordinator is the first worker."""

    def __init__(self, helpers, name):
        self._inboxes = []
        self._done = queue.SimpleQueue()
        self._threads = []
        for i in range(helpers):
            inbox = queue.SimpleQueue()
            t = threading.Thread(target=self._loop, args=(inbox,), daemon=True,
                                 name=f"{name}-worker-{i + 1}")
            t.start()
            self._inboxes.append(inbox)
            self._threads.append(t)

    @property
    def size(self):
        return len(self._inboxes) + 1

    def _loop(self, inbox):
        with np.errstate(all="ignore"):
            while True:
                task = inbox.get()
                if task is _STOP:
                    return
                try:
                    task()
                    self._done.put(None)
                except BaseException as exc:  # reported to the coordinator
                    self._done.put(exc)

    def run_parallel(self, tasks):
        """Run tasks[0] here and the rest on helpers; re-raise the first error."""
        for inbox, task in zip(self._inboxes, tasks[1:]):
            inbox.put(task)
        error = None
        try:
            tasks[0]()
        except BaseException as exc:
            error = exc
        for _ in tasks[1:]:
            exc = self._done.get()
            if exc is not None and error is None:
                error = exc
        if error is not None:
            raise error

    def close(self, timeout=2.0):
        for inbox in self._inboxes:
            inbox.put(_STOP)
        for t in self._threads:
            t.join(timeout)


class OpStream:
    """Runs records in issue order on a coordinator thread (execute(record) runs one)."""

    def __init__(self, execute, name):
        self._execute = execute   # execute(record) runs one record
        self._name = name
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"{name}-coordinator")
        self._thread.start()
        self.closed = False

    def put(self, record):
        self._queue.put(record)

    def put_awaited(self, record):
        """Put a record the caller will wait on -> False when the stream was closed (the
        record may never run: see the top)."""
        self._queue.put(record)
        return not self.closed

    def _loop(self):
        with np.errstate(all="ignore"):
            get, execute = self._queue.get, self._execute
            while True:
                record = get()
                if record is _STOP:
                    return
                execute(record)

    def wait(self):
        """Block until every record issued so far has run -> False (no wait) when the
        stream was closed."""
        done = SyncRecord()
        if not self.put_awaited(done):
            return False
        done.wait()
        return True

    def pause(self):
        """Wait until every record issued so far has run, then hold the coordinator
        still until resume(pause) (just before fork: nothing runs while memory is copied)."""
        paused = PauseRecord()
        self._queue.put(paused)
        try:
            paused.wait()
        except BaseException:
            paused.resume.release()
            raise
        return paused

    @staticmethod
    def resume(paused):
        paused.resume.release()

    def restarted(self):
        """(fork child, where the coordinator thread does not exist) A new stream with its
        own thread, taking over the records still queued here, in order."""
        stream = OpStream(self._execute, self._name)
        while True:
            try:
                stream.put(self._queue.get_nowait())
            except queue.Empty:
                return stream

    def close(self, timeout=5.0):
        """Stop after the records already queued (the executor may skip them: see closed)."""
        if not self.closed:
            self.closed = True
            self._queue.put(_STOP)
            self._thread.join(timeout)
