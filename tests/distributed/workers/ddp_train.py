"""mpiexec -n 2 python ddp_train.py BACKEND [STEPS]: 2-process DDP training must end with the
parameters of 1-process training on the concatenated batches, from the same initial weights.

Rank 1 starts from other weights (DDP's wrap-time broadcast must replace them); rank 0 also
trains a copy of its initial model alone on both ranks' rows. Exits non-zero on a mismatch."""

import copy
import sys

import numpy as np

import torchic as torch
import torchic.distributed as dist
import torchic.nn as nn
import torchic.nn.functional as F
from torchic.nn.parallel import DistributedDataParallel as DDP

VOCAB, CONTEXT, EMB, HIDDEN, BATCH = 27, 3, 8, 32, 16


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB)
        self.hidden = nn.Linear(CONTEXT * EMB, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, idx):
        e = self.emb(idx)
        return self.out(torch.tanh(self.hidden(e.view(e.shape[0], -1))))


def batches(steps, world):
    rng = np.random.default_rng(7)
    for _ in range(steps):
        x = rng.integers(0, VOCAB, (world * BATCH, CONTEXT)).astype(np.int32)
        yield x, (x.sum(1) % VOCAB).astype(np.int32)


def train(model, steps, world, rows):
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for x, y in batches(steps, world):
        loss = F.cross_entropy(model(torch.tensor(x[rows])), torch.tensor(y[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def main(backend, steps):
    torch.init(backend=backend)
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1 + rank)             # different weights per rank before the wrap
    model = Net()
    reference = copy.deepcopy(model)        # rank 0's weights: what DDP broadcasts
    ddp = DDP(model, bucket_cap_mb=0.004)   # ~1000 floats a bucket: several buckets
    assert ddp.module is model and len(ddp._buckets) > 1, len(ddp._buckets)
    loss = train(ddp, steps, world, slice(rank * BATCH, (rank + 1) * BATCH))

    # every rank holds the same parameters, bit for bit
    for name, p in model.named_parameters():
        got = [torch.zeros_like(p) for _ in range(world)]
        dist.all_gather(got, p.detach())
        for r in range(world):
            assert np.array_equal(got[r].numpy(), got[0].numpy()), f"{name}: rank {r} differs"
    if rank == 0:
        ref_loss = train(reference, steps, world, slice(None))   # all rows
        worst = 0.0
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            a, b = p.detach().numpy(), q.detach().numpy()
            worst = max(worst, float(np.abs(a - b).max()))
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)
        print(f"OK ddp {backend}: {steps} steps, loss {loss:.4f} (1-process {ref_loss:.4f}), "
              f"largest parameter difference {worst:.2e}, "
              f"{ddp.comm_stats['reductions']} bucket reductions", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50)
