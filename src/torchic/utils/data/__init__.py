"""torch.utils.data under torchic: datasets (dataset.py), samplers (sampler.py,
distributed.py), default_collate (collate.py) and DataLoader (dataloader.py).

PyTorch's semantics, messages and exception classes, and its exact pattern of random draws,
so that a program gets the same batches in the same order as under PyTorch whenever
torchic's generator produces PyTorch's numbers:
- RandomSampler without a generator seeds a fresh Generator from one int64 draw of the
  default generator at the start of each epoch; without replacement it draws randperm(n)
  num_samples // n times plus once more for the remainder (drawn even when it is empty,
  as PyTorch does); with replacement it draws randint(0, n) in chunks of 32.
- every iter(DataLoader) makes one int64 draw from loader.generator (the default
  generator when None), PyTorch's per-iterator base seed, before the sampler runs.

num_workers > 0 loads batches in worker processes (_worker.py: the worker loop, seeds,
get_worker_info, and why it is safe with torchic's backend threads; _mp_iter.py: the main
process's side, in-order delivery, shutdown). pin_memory is ignored (there is no device
memory to pin for).
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset,
                      TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info", "DistributedSampler"]
