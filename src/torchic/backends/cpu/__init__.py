"""The `workers` backend: coordinator + N worker threads over one host heap, NumPy kernels.

This is the portable reference backend: it needs nothing but NumPy, and its
kernel table (numpy_kernels.py) is the executable form of the op contract
in ops.py.
"""

import numpy as np

from ...dispatcher import DTYPES, Backend, env_int, forget, register_backend, share
from ...ops import WRITES
from . import numpy_kernels
from .heap import HostHeap
from .stream import OpStream, PackedRecord, ReadRecord, SyncRecord, WorkerPool, WriteRecord

# Below this many output elements an op runs whole on the coordinator: a hand-off to
# a worker thread costs more than it saves (measurements: docs/perf/workers_split.md).
SPLIT_MIN_ELEMENTS = env_int("TORCHIC_SPLIT_MIN", 1 << 20, minimum=0)


class WorkersBackend(Backend):
    name = "workers"
    dtypes = tuple(DTYPES)      # every code, stored natively

    def __init__(self, threads=None, **options):
        super().__init__(threads)
        if options:
            raise TypeError(f"backend 'workers' got unknown options {sorted(options)}")
        self.heap = HostHeap()
        self.kernels = numpy_kernels.KERNELS
        self.pool = WorkerPool(self.threads - 1, "torchic")
        self.stream = OpStream(self._execute, "torchic")

    # heap
    def new_arena(self, nbytes):
        self.heap.new_arena(nbytes)

    def host_array(self, view):
        share(view.block)
        return self.heap.alias(view)

    # stream
    def run(self, op, out, inputs, params):
        if out.block.known is not None or op in WRITES:
            forget(op, out, inputs)
        self.stream.put((op, out, inputs, params))

    def write(self, view, array):
        view.block.known = None
        self.stream.put(WriteRecord(view, array))

    def pack(self, records, slots=(), frees=None):
        """The records as prepared kernel calls, the NumPy views of their operands resolved
        once (torchic.compile packs a program once; push_packed runs it as one record).
        No slots (program_slots is False) and no use for frees."""
        return PackedRecord([self._prepare(r) for r in records])

    def push_packed(self, packed, blocks=None):
        """Queue a packed program (`blocks`, program slots, are simd's: None here)."""
        self.stream.put(packed)

    def read(self, view):
        record = ReadRecord(view)
        if not self.stream.put_awaited(record):    # (closed: it may never run)
            raise self.closed_error()
        record.done.acquire()   # released by the coordinator (stream.py: why not an Event)
        self.raise_pending_error()
        if record.result is None:     # closed while it waited
            raise self.closed_error()
        return record.result

    def sync(self):
        if not self.stream.wait():
            raise self.closed_error()
        self.raise_pending_error()

    def close(self):
        self.stream.close()
        self.pool.close()
        self.heap.close()

    # fork (dispatcher.py): the heap is copied with the process; the threads are not
    def fork_pause(self):
        self._paused = self.stream.pause()

    def fork_resume(self):
        self.stream.resume(self._paused)

    def reopen_in_child(self):
        self.pool = WorkerPool(self.threads - 1, "torchic")
        self.stream = self.stream.restarted()

    @classmethod
    def describe_platform(cls):
        """The NumPy that runs the kernels and the size from which an op is cut up."""
        return {"kernels": f"NumPy {np.__version__}", "split_min_elements": SPLIT_MIN_ELEMENTS}

    def describe(self):
        return {"backend": self.name, "threads": self.threads, **self.describe_platform()}

    # coordinator side ----------------------------------------------------------
    def _execute(self, record):
        # (stream.py: an op record is a plain tuple; the others have their own classes)
        if type(record) is not tuple:
            self._execute_other(record)
            return
        if self.stream.closed:
            return   # shutting down: nobody can read these results any more
        op, out, inputs, params = record
        try:
            self._run_call(*self._prepare(record))
        except BaseException as exc:
            self.record_error(op, exc)

    def _prepare(self, record):
        """(op, kernel, out array, input arrays, params, rows to split into or 0)."""
        op, out, inputs, params = record
        heap_array = self.heap.array
        out_a = heap_array(out)
        ins = tuple(heap_array(v) for v in inputs)
        n = numpy_kernels.split_length(op, out) if self.pool.size > 1 else 0
        if n < 2 or out_a.size < SPLIT_MIN_ELEMENTS:
            n = 0
        return op, self.kernels[op], out_a, ins, params, n

    def _run_call(self, op, kernel, out_a, ins, params, n):
        if n:
            self._run_split(op, kernel, out_a, ins, params, n)
        else:
            kernel(out_a, ins, params)

    def _run_packed(self, calls):
        run_call = self._run_call
        for call in calls:
            if self.stream.closed:
                return
            try:
                run_call(*call)
            except BaseException as exc:
                self.record_error(call[0], exc)

    def _execute_other(self, record):
        kind = type(record)
        if kind is ReadRecord:
            try:
                if not self.stream.closed:
                    record.result = self.heap.array(record.view).copy()
            except BaseException as exc:
                self.record_error("read", exc)
            record.done.release()
        elif kind is WriteRecord:
            if not self.stream.closed:
                try:
                    self.heap.array(record.view)[...] = record.array
                except BaseException as exc:
                    self.record_error("write", exc)
        elif kind is PackedRecord:
            self._run_packed(record.calls)
        elif isinstance(record, SyncRecord):
            record.reached()
        else:   # a bug in torchic: named at the next read, the stream keeps running
            self.record_error("stream", TypeError(f"unknown stream record {record!r}"))

    def _run_split(self, op, kernel, out_a, ins, params, n):
        cut = numpy_kernels.SPLIT[op]
        parts = min(self.pool.size, n)
        bounds = [n * i // parts for i in range(parts + 1)]
        tasks = []
        for lo, hi in zip(bounds, bounds[1:]):
            o, i = cut(out_a, ins, lo, hi)
            tasks.append(lambda o=o, i=i: kernel(o, i, params))
        self.pool.run_parallel(tasks)


register_backend(WorkersBackend, numpy_kernels.KERNELS)
