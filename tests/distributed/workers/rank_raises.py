"""mpiexec -n 2 python rank_raises.py BACKEND: rank 1 raises in the middle of DDP training
while rank 0 goes on into the gradient all-reduce, which can never complete. The job must
end (MPI_Abort from rank 1's uncaught exception), not hang."""

import sys

import torchic as torch
import torchic.distributed as dist
import torchic.nn as nn
from torchic.nn.parallel import DistributedDataParallel as DDP

torch.init(backend=sys.argv[1])
dist.init_process_group()
model = DDP(nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    if step == 3 and dist.get_rank() == 1:
        raise ValueError("rank 1 fails on purpose at step 3")
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"rank {dist.get_rank()} finished all steps: the failure of rank 1 was not noticed")
