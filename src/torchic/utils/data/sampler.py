"""Samplers (PyTorch's torch.utils.data.sampler): the indices a DataLoader loads, in
PyTorch's order for the same seed.
"""

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ... import creation
from ...creation import Generator, randint, randperm
from ...dtypes import float32
from ...tensor import Tensor


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
