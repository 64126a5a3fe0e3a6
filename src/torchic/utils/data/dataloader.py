"""DataLoader (PyTorch's torch.utils.data.DataLoader): batches from a dataset, a sampler
and a collate function.
"""

import math
import multiprocessing
from collections.abc import Callable, Iterable
from typing import Any

from ...creation import Generator
from ._mp_iter import _MultiProcessingLoaderIter
from ._worker import get_worker_info  # noqa: F401  (torch.utils.data.dataloader's name)
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      _InfiniteConstantSampler, _int64_seed)


class DataLoader:
    """PyTorch's DataLoader: batches of a dataset, through a sampler and collate_fn.

    Args:
        dataset: a map-style Dataset (__getitem__, __len__) or an IterableDataset.
        batch_size (int or None): samples per batch (None: no batching, default_convert).
        shuffle (bool): a new random order each epoch (RandomSampler with `generator`).
        sampler / batch_sampler: the indices (or lists of indices) to load.
        num_workers (int): 0 loads in this process; n > 0 starts n worker processes
            (the default start method, or `multiprocessing_context`), seeded
            base_seed + worker_id as PyTorch, delivering batches in the sampler's order.
        collate_fn: samples -> batch (default_collate; default_convert without batching).
        pin_memory (bool): accepted, no effect (there is no device memory to pin for).
        drop_last (bool): drop the last, incomplete batch.
        timeout (float): seconds to wait for a worker's batch (0: forever) before
            RuntimeError("DataLoader timed out after ... seconds").
        worker_init_fn: called in each worker with its id, after seeding.
        multiprocessing_context: a start method name ("fork", "spawn", "forkserver") or a
            multiprocessing context.
        generator: draws the per-iterator base seed and (with shuffle) the order.
        prefetch_factor (int): batches each worker loads ahead (2 when num_workers > 0).
        persistent_workers (bool): keep the workers across epochs.
        in_order (bool): accepted; batches are always delivered in order.

    A worker's exception is re-raised here as the same class, "Caught ValueError in
    DataLoader worker process 0.\nOriginal Traceback ...". See _worker.py for how workers
    stay safe with torchic's backend threads. The argument checks are PyTorch's.

    Example:
        >>> loader = DataLoader(list(range(10)), batch_size=4, num_workers=2)
        >>> [b.tolist() for b in loader]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
               "persistent_workers")
    _initialized = False

    def __init__(self, dataset: Dataset, batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable[Any] | None = None,
                 batch_sampler: Sampler | Iterable[Any] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[Any], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            if num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process"
                                 f" loading (num_workers > 0), but got num_workers="
                                 f"{num_workers}")
            if isinstance(multiprocessing_context, str):
                methods = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            elif not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context "
                                f"object or a string specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context}")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        self.persistent_workers = persistent_workers
        self._iterable = iterable
        self._iterator = None
        self._initialized = True

    def __setattr__(self, attr, val):
        if self._initialized and attr in self._FROZEN:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else \
                    math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _LoaderIter(self)
        if not self.persistent_workers:
            return _MultiProcessingLoaderIter(self)
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = _MultiProcessingLoaderIter(self)
        else:
            self._iterator._reset()
        return self._iterator


class _LoaderIter:
    """One pass over a DataLoader, in the main process (PyTorch's single-process iterator:
    the sampler's iterator, then the base seed drawn from loader.generator, then the
    dataset's iterator for an IterableDataset)."""

    def __init__(self, loader):
        self._loader = loader
        self._collate = loader.collate_fn
        self._batched = loader.batch_sampler is not None
        self._sampler_iter = iter(loader._index_sampler)
        self._base_seed = _int64_seed(loader.generator)
        self._dataset_iter = iter(loader.dataset) if loader._iterable else None
        self._ended = False

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        index = next(self._sampler_iter)
        dataset = self._loader.dataset
        if self._dataset_iter is not None:
            return self._next_streamed(index)
        if not self._batched:
            return self._collate(dataset[index])
        if callable(getattr(dataset, "__getitems__", None)):
            return self._collate(dataset.__getitems__(index))
        return self._collate([dataset[i] for i in index])

    def _next_streamed(self, index):
        if self._ended:
            raise StopIteration
        if not self._batched:
            return self._collate(next(self._dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if not data or (self._loader.drop_last and len(data) < len(index)):
            raise StopIteration
        return self._collate(data)
