"""One pass over a DataLoader with num_workers > 0 (PyTorch's _MultiProcessingDataLoaderIter).

The main process sends (send_idx, indices) tasks round-robin to the active workers, keeping
prefetch_factor * num_workers outstanding, and hands the batches back in send order
(PyTorch's in-order delivery, so the batches and their order equal the single-process
loader's). A batch that arrives early waits in _task_info. An IterableDataset's worker that
runs out answers _IterableDatasetStopIteration and gets no more tasks. Workers stop when the
pass ends (unless persistent_workers), when the iterator is deleted or garbage-collected, on
KeyboardInterrupt in the main process, and at interpreter exit (they are daemons); a worker
that dies is reported ("DataLoader worker (pid(s) ...) exited unexpectedly") instead of
waited for, and `timeout` bounds each wait for a batch.
"""

import itertools
import multiprocessing
import os
import queue
from multiprocessing.reduction import ForkingPickler

from . import _worker
from ._worker import (MP_STATUS_CHECK_INTERVAL, ExceptionWrapper,
                      _IterableDatasetStopIteration, _ResumeIteration)
from .collate import default_collate, default_convert
from .sampler import _int64_seed


class _MultiProcessingLoaderIter:
    """Batches loaded by loader.num_workers worker processes, in the sampler's order."""

    _shutdown = True

    def __init__(self, loader):      # (no reference to loader: it holds a persistent one)
        self._index_sampler = loader._index_sampler
        self._len = len(loader) if hasattr(loader.dataset, "__len__") or \
            not loader._iterable else None
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._batched = loader.batch_sampler is not None
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._shutdown = True            # (until the workers exist: __del__ may run early)
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _int64_seed(loader.generator)
        collate = loader.collate_fn
        # the default collation runs here (see _worker.py's docstring); others in the worker
        self._main_collate = collate if collate in (default_collate, default_convert) else None
        worker_collate = _identity if self._main_collate is not None else collate
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._done_event = ctx.Event()
        self._data_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                w = ctx.Process(target=_worker._worker_loop, daemon=True, args=(
                    self._dataset, self._iterable, index_queue, self._data_queue,
                    self._done_event, self._batched, worker_collate, loader.drop_last,
                    self._base_seed, loader.worker_init_fn, i, self._num_workers,
                    os.getpid()))
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
        finally:
            self._shutdown = False
            if len(self._workers) < self._num_workers:
                self._shutdown_workers()
        self._reset(first=True)

    def _reset(self, first=False):
        if not first:
            self._sampler_iter = iter(self._index_sampler)
        self._send_idx = 0          # the next task's number
        self._rcvd_idx = 0          # the next task to hand back
        self._task_info = {}        # send_idx -> (worker,) or (worker, data)
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:               # persistent workers: each restarts its dataset iterator
            for q in self._index_queues:
                q.put(_ResumeIteration())
            waiting = self._num_workers
            while waiting > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        if self._len is None:
            raise TypeError(f"object of type '{type(self._dataset).__name__}' has no len()")
        return self._len

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):          # the next active worker, if any
            worker = next(self._worker_cycle)
            if self._workers_status[worker]:
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """The next (send_idx, data) from any worker; waits at most `timeout` seconds
        (forever when 0), checking every few seconds that no worker died."""
        while True:
            try:
                wait = self._timeout if self._timeout > 0 else MP_STATUS_CHECK_INTERVAL
                idx, data = self._data_queue.get(timeout=wait)
            except queue.Empty:
                if self._timeout > 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} "
                                       f"seconds") from None
                self._check_workers()
                continue
            except (OSError, EOFError):
                self._check_workers()
                raise
            if isinstance(data, bytes):
                data = ForkingPickler.loads(data)
            return idx, data

    def _check_workers(self):
        failed = [w for w, active in zip(self._workers, self._workers_status)
                  if active and not w.is_alive()]     # (a finished stream's worker exits)
        if failed and not self._shutdown:
            pids = ", ".join(str(w.pid) for w in failed)
            self._shutdown_workers()
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def __next__(self):
        try:
            return self._next_data()
        except KeyboardInterrupt:
            self._shutdown_workers()
            raise

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)   # its worker has run out
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker, data = self._task_info.pop(self._rcvd_idx)
                return self._process_data(data, worker)
            if self._shutdown:
                raise StopIteration
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                worker, = self._task_info.pop(idx)
                return self._process_data(data, worker)

    def _process_data(self, data, worker):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        if self._main_collate is None:
            return data
        try:
            return self._main_collate(data)
        except Exception:       # reported as PyTorch reports its worker-side collation
            ExceptionWrapper(where=f"in DataLoader worker process {worker}").reraise()

    def _shutdown_workers(self):
        """Stop every worker: done_event, a None task each, a short join, then terminate."""
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            for w in self._workers:
                w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()

    def __del__(self):
        self._shutdown_workers()


def _identity(data):
    return data
