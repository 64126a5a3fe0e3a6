"""DistributedSampler (PyTorch's torch.utils.data.distributed): each rank's share.
"""

import math
from collections.abc import Sized

from ... import distributed
from ...creation import Generator, randperm
from .dataset import Dataset
from .sampler import Sampler


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
