"""mpiexec -n 2 python errors.py BACKEND: clear errors on every rank, and no hang, when ranks
disagree on the model (DDP's wrap) or a parameter gets no gradient."""

import sys

import torchic as torch
import torchic.distributed as dist
import torchic.nn as nn
from torchic.nn.parallel import DistributedDataParallel as DDP


def expect(fn, *words):
    try:
        fn()
    except RuntimeError as exc:
        assert all(w in str(exc) for w in words), str(exc)
        return
    raise AssertionError(f"no RuntimeError (expected one saying {words})")


torch.init(backend=sys.argv[1])
dist.init_process_group()
rank = dist.get_rank()
# rank 1's model has another shape: refused at wrap time, on both ranks
expect(lambda: DDP(nn.Linear(4, 2 + rank)), "disagree", "weight", "(3, 4)")


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 1), nn.Linear(3, 1)

    def forward(self, x):
        return self.a(x)                    # b never gets a gradient


model = DDP(TwoHeads())
model(torch.randn(2, 3)).sum().backward()
expect(lambda: model(torch.randn(2, 3)), "b.weight", "b.bias", "find_unused_parameters")
dist.barrier()
print(f"OK errors rank {rank}", flush=True)
