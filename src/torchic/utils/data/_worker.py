"""The DataLoader's worker processes (PyTorch's torch.utils.data._utils.worker): the loop a
worker runs, get_worker_info(), the per-worker seeds, the exception wrapper that carries a
worker's traceback to the main process, and the pickling of torchic tensors between processes.

Design (why workers are safe with torchic's backend threads):
- Workers are started with the platform's default start method (fork on Linux) unless
  `multiprocessing_context` says otherwise. torchic's at-fork hooks (dispatcher.py) drain and
  hold the runtime's stream around the fork, so a forked worker inherits a consistent heap;
  its runtime is reopened (its own threads) only if the worker itself uses torchic.
- With the default collate_fn (default_collate / default_convert) a worker only fetches the
  samples (dataset[i], __getitems__, or next() of the dataset's iterator) and sends them as
  they are; the main process collates them into tensors. A dataset producing NumPy / Python
  data therefore never touches torchic in a worker, on every backend (webgpu included, whose
  GPU device cannot be used from a forked child). A custom collate_fn runs in the worker,
  as in PyTorch; if it makes tensors, the worker's runtime reopens (workers / simd backends;
  webgpu needs multiprocessing_context="spawn" for that).
- Tensors cross processes by value: a torchic tensor is pickled as its NumPy array, dtype and
  requires_grad (registered with multiprocessing's ForkingPickler, as torch.multiprocessing
  registers its reductions), so it works for any object graph a dataset or collate_fn returns.
"""

import os
import queue
import random
import sys
import traceback
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ... import creation
from ...dtypes import bfloat16, float32
from ...tensor import Tensor

MP_STATUS_CHECK_INTERVAL = 5.0   # seconds between a blocked get's checks (PyTorch's value)

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset
    (the worker's own copy). Read-only, as PyTorch's."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info() -> WorkerInfo | None:
    """PyTorch's get_worker_info: in a DataLoader worker process, its WorkerInfo (`id`,
    `num_workers`, `seed` = base_seed + id, and `dataset`, the worker's copy of the dataset);
    None in the main process. An IterableDataset uses it to split its stream across workers.

    Example:
        >>> class Range(IterableDataset):
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         n = 1 if info is None else info.num_workers
        ...         i = 0 if info is None else info.id
        ...         return iter(range(i, 10, n))
    """
    return _worker_info


class ExceptionWrapper:
    """An exception with its traceback as text, to re-raise in another process (PyTorch's
    torch._utils.ExceptionWrapper)."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise `exc_type("Caught <Type> <where>.\\nOriginal <traceback>")` (RuntimeError
        with that message when the type cannot be built from one string)."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:        # no frame -> exception -> traceback -> frame cycle: the iterator
            del exception   # (and its workers) goes as soon as the caller drops it


class _KeyErrorMessage(str):
    """KeyError's str() is the repr of its argument; this keeps the traceback readable."""

    def __repr__(self):
        return self


class _IterableDatasetStopIteration:
    """A worker's iterator is exhausted (sent in place of a batch)."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Persistent workers: start the next epoch (re-create the dataset iterator)."""


def _generate_state(base_seed, worker_id):
    """PyTorch's NumPy seed for a worker: 4 uint32 words hashed from (worker_id, base_seed)
    (the SeedSequence-style hash of torch.utils.data._utils.worker._generate_state)."""
    mask = 0xFFFFFFFF
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    hash_a = [0x43B0D7E5]

    def hashed(value):
        value = (value ^ hash_a[0]) & mask
        hash_a[0] = (hash_a[0] * mult_a) & mask
        value = (value * hash_a[0]) & mask
        return (value ^ (value >> 16)) & mask

    def mix(x, y):
        r = ((0xCA01F9DD * x) & mask) - ((0x4973F715 * y) & mask)
        r &= mask
        return (r ^ (r >> 16)) & mask

    pool = [hashed(e) for e in (worker_id, base_seed & mask, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hashed(pool[src]))
    hash_b, state = 0x8B51F9DD, []
    for value in pool:
        value = (value ^ hash_b) & mask
        hash_b = (hash_b * mult_b) & mask
        value = (value * hash_b) & mask
        state.append((value ^ (value >> 16)) & mask)
    return state


# -- tensors between processes --------------------------------------------------------------
def _rebuild_tensor(array, dtype, requires_grad):
    t = creation.tensor(array, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    d = t.detach()
    array = d.to(float32).numpy() if d.dtype == bfloat16 else d.numpy()
    return (_rebuild_tensor, (array, t.dtype, bool(t.requires_grad)))


ForkingPickler.register(Tensor, _reduce_tensor)


# -- the worker loop ------------------------------------------------------------------------
def _pickled(data, worker_id):
    """data pickled here, in the worker's loop, so that an unpicklable batch becomes an error
    the main process raises (a Queue's feeder thread would only print it, and the main
    process would wait for that batch forever)."""
    try:
        return bytes(ForkingPickler.dumps(data))
    except Exception:
        wrapper = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        try:
            return bytes(ForkingPickler.dumps(wrapper))
        except Exception:
            wrapper.exc_type = RuntimeError       # (an exception class pickle cannot name)
            return bytes(ForkingPickler.dumps(wrapper))


class _Fetcher:
    """Samples for one task: a list of indices (batched), one index, or the next items of
    the dataset's iterator (an IterableDataset), passed through collate_fn."""

    def __init__(self, dataset, iterable, batched, collate_fn, drop_last):
        self.dataset, self.batched, self.collate = dataset, batched, collate_fn
        self.drop_last = drop_last
        self.it = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index):
        if self.it is None:
            if not self.batched:
                return self.collate(self.dataset[index])
            if callable(getattr(self.dataset, "__getitems__", None)):
                return self.collate(self.dataset.__getitems__(index))
            return self.collate([self.dataset[i] for i in index])
        if self.ended:
            raise StopIteration
        if not self.batched:
            return self.collate(next(self.it))
        data = []
        for _ in index:
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate(data)


def _worker_loop(dataset, iterable, index_queue, data_queue, done_event, batched,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                 parent_pid):
    """A worker process: seed, worker_init_fn, then fetch (send_idx, index) tasks from
    index_queue and put (send_idx, data | ExceptionWrapper) on data_queue until None."""
    global _worker_info
    try:
        seed = base_seed + worker_id
        random.seed(seed)
        creation.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _Fetcher(dataset, iterable, batched, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        ended = False
        while True:
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:      # the main process is gone
                    break
                continue
            if isinstance(task, _ResumeIteration):
                data_queue.put((task, None))
                ended, init_error = False, None
                fetcher = _Fetcher(dataset, iterable, batched, collate_fn, drop_last)
                continue
            if task is None:
                break
            if done_event.is_set() or ended:
                continue
            idx, index = task
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        ended = True
                    else:
                        data = ExceptionWrapper(
                            where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, _pickled(data, worker_id)))
            del data, index, task
    except KeyboardInterrupt:       # Ctrl-C reaches the whole process group: quit quietly
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
