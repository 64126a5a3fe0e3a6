"""The `loader` suite: torch.utils.data.DataLoader with worker processes.

One epoch of a dataset whose __getitem__ does about 1 ms of pure-Python work (a loop over
integers: the GIL keeps threads from helping, processes do), with num_workers = 0 and 2
(persistent workers, so an epoch is timed in steady state rather than with the fork of its
workers). Reported in ms per batch; the speed-up of num_workers=2 is the ratio of the two
rows, bounded by the cores free on the machine. PyTorch's DataLoader runs the same rows.
"""

import functools

import numpy as np

from .impls import NotSupported
from .suites import Case

ITEMS, BATCH = 64, 8
WORK = 12_000          # loop iterations per item: about 1 ms of CPython


class PythonWorkDataset:
    """Map-style dataset: item i is a small float32 array after `work` Python iterations."""

    def __init__(self, n, work):
        self.n, self.work = n, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        acc = 0
        for k in range(self.work):
            acc = (acc + k * (i + 1)) % 1_000_003
        return np.array([i, acc % 997], dtype=np.float32)


def _build(workers, items, work, impl):
    if impl.kind == "torchic":
        from ..utils.data import DataLoader
    elif impl.name == "torch":          # PyTorch's own DataLoader, the same dataset
        from torch.utils.data import DataLoader
    else:
        raise NotSupported("no DataLoader")
    kwargs = dict(num_workers=workers, persistent_workers=True) if workers else {}
    loader = DataLoader(PythonWorkDataset(items, work), batch_size=BATCH, **kwargs)

    def epoch():
        last = None
        for last in loader:
            pass
        return last
    return epoch


def loader_suite(ctx):
    items = 16 if ctx["quick"] else ITEMS
    return [Case("loader", "dataloader", f"workers={w} {items}x1ms b{BATCH}",
                 {"num_workers": w, "items": items, "batch": BATCH, "item_loop": WORK},
                 "ms/step", items // BATCH, functools.partial(_build, w, items, WORK))
            for w in (0, 2)]
