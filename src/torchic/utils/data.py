"""torch.utils.data under torchic: datasets, samplers, default_collate and DataLoader.

PyTorch's semantics, messages and exception classes, and its exact pattern of random draws,
so that a program gets the same batches in the same order as under PyTorch whenever
torchic's generator produces PyTorch's numbers:
- RandomSampler without a generator seeds a fresh Generator from one int64 draw of the
  default generator at the start of each epoch; without replacement it draws randperm(n)
  num_samples // n times plus once more for the remainder (drawn even when it is empty,
  as PyTorch does); with replacement it draws randint(0, n) in chunks of 32.
- every iter(DataLoader) makes one int64 draw from loader.generator (the default
  generator when None), PyTorch's per-iterator base seed, before the sampler runs.

num_workers > 0 is accepted but the batches are loaded in the main process (torchic's
backends already run ops on their own threads); worker_init_fn is called once with worker
id 0, prefetch_factor / persistent_workers / timeout are checked as PyTorch checks them and
otherwise ignored, and pin_memory is ignored (there is no device memory to pin for).
"""

import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings
from collections.abc import Callable, Iterable, Sequence, Sized
from typing import Any

import numpy as np

from .. import creation, distributed
from ..api import stack
from ..creation import Generator, randint, randperm
from ..dtypes import float32, int32
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info", "DistributedSampler"]


def _int64_seed(generator=None):
    """PyTorch's `torch.empty((), dtype=torch.int64).random_(generator=g).item()`: a seed in
    [0, 2**63) drawn from `generator` (the default generator when None).

    torchic tensors hold no int64, so the draw is the generator's own `random_int64()`
    when it has one (the bit-exact hook); otherwise two 31-bit randint draws make it.
    """
    g = creation.default_generator if generator is None else generator
    draw = getattr(g, "random_int64", None)
    if draw is not None:
        return int(draw())
    hi, lo = randint(0, 2 ** 31 - 1, (2,), generator=generator).tolist()
    return (hi << 31) | lo


# -- datasets ----------------------------------------------------------------------------------

class Dataset:
    """A map-style dataset: subclasses define __getitem__ (and usually __len__)."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset of samples from __iter__ (a stream); DataLoader takes no sampler for it."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of the tensors' rows: TensorDataset(x, y)[i] == (x[i], y[i])."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: int) -> Any:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    @staticmethod
    def cumsum(sequence: Iterable[Dataset]) -> list[int]:
        """The running totals of the datasets' lengths (where each one ends)."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset]:
    """Split `dataset` into Subsets of the given lengths (ints), or fractions summing to 1
    (each floor(frac * len), the remainder handed out one by one from the first split),
    from one randperm(len(dataset), generator=generator)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(math.floor(len(dataset) * frac))
        for i in range(len(dataset) - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]


# -- samplers ----------------------------------------------------------------------------------

class Sampler:
    """Iterates over dataset indices (or batches of them); subclasses define __iter__."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """The indices 0 .. len(data_source) - 1, in order (the DataLoader's default)."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation per pass (replacement=False) or independent draws."""

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (`num_samples`, or the dataset's length)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):         # a generator: nothing is drawn before the first next()
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator()
            generator.manual_seed(_int64_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=generator).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (one randperm per pass)."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights: Sequence[float] | Tensor, num_samples: int,
                 replacement: bool = True, generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        values = weights.detach().numpy() if isinstance(weights, Tensor) else np.asarray(weights)
        if values.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(values.shape)}")
        self.weights = creation.tensor(values.astype(np.float32), dtype=float32)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = creation.multinomial(self.weights, self.num_samples, self.replacement,
                                     generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler` (the last one shorter unless drop_last)."""

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[it] * self.batch_size):
                yield list(batch)
            return
        batch = list(itertools.islice(it, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(it, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler):
    """An IterableDataset's sampler: None forever (the dataset's iterator says when to stop)."""

    def __iter__(self):
        while True:
            yield None


# -- collation ---------------------------------------------------------------------------------

_STR_OR_OBJECT = re.compile(r"[SaUO]")      # NumPy dtype kinds default_collate refuses
_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                  "or lists; found {}")


def default_collate(batch: Sequence[Any]) -> Any:
    """PyTorch's default_collate: a list of samples -> one batch, by the first sample's type.

    Tensors are stacked on a new dim 0; NumPy arrays become tensors and are stacked; NumPy
    scalars, ints and floats become a 1-D tensor (int -> int32, float -> float32, torchic's
    dtypes for PyTorch's int64 / float64); strings stay a list; mappings, namedtuples and
    sequences are collated field by field (a tuple of fields gives a list, as in PyTorch).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _STR_OR_OBJECT.search(elem.dtype.str) is not None:
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return default_collate([creation.as_tensor(b) for b in batch])
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        if _STR_OR_OBJECT.search(elem.dtype.str) is not None:
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return creation.as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return creation.tensor(list(batch))
    if isinstance(elem, int):
        return creation.tensor(list(batch), dtype=int32)
    if isinstance(elem, float):
        return creation.tensor(list(batch), dtype=float32)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)
            out.update(fields)
            return out
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):       # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [list(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                out = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    out[i] = default_collate(samples)
                return out
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """batch_size=None's collate: NumPy arrays (and those inside containers) -> tensors."""
    if isinstance(data, np.ndarray) or (isinstance(data, np.generic) and
                                        not isinstance(data, (np.str_, np.bytes_))):
        if _STR_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return creation.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()}) \
            if isinstance(data, dict) else {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def get_worker_info() -> None:
    """None: batches are always loaded in the main process (see the module docstring)."""
    return None


# -- DataLoader --------------------------------------------------------------------------------

class DataLoader:
    """PyTorch's DataLoader: batches of a dataset, through a sampler and collate_fn.

    Loading always happens in the calling process, whatever num_workers says (accepted for
    PyTorch programs; torchic's backends run ops on their own threads), and pin_memory is
    ignored. The argument checks are PyTorch's, with its ValueError messages.
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
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError(f"multiprocessing_context can only be used with multi-process "
                             f"loading (num_workers > 0), but got num_workers={num_workers}")

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
        return _LoaderIter(self)


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
        if loader.num_workers > 0 and loader.worker_init_fn is not None:
            loader.worker_init_fn(0)
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


class DistributedSampler(Sampler):
    """The share of the dataset's indices that this rank trains on (PyTorch's
    DistributedSampler, the same indices in the same order for the same seed and epoch).

    Each epoch draws one permutation (seed + epoch, so every rank draws the same one: call
    `set_epoch(epoch)` before each epoch), pads it by repeating its start up to a multiple of
    `num_replicas` (or, with `drop_last`, cuts the tail), and rank r takes every
    `num_replicas`-th index from position r.

    Args:
        num_replicas (int): the number of ranks (default: `torchic.distributed`'s world size).
        rank (int): this rank (default: `torchic.distributed.get_rank()`).
        shuffle (bool): permute the indices each epoch (default True).
        seed (int): the permutation's seed, the same on every rank.
        drop_last (bool): drop the tail instead of padding.

    Example:
        >>> sampler = DistributedSampler(dataset, num_replicas=2, rank=0)
        >>> loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    """

    def __init__(self, dataset: Dataset | Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use permutation `seed + epoch` from now on (call it at the start of each epoch)."""
        self.epoch = epoch
