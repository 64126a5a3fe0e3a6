"""Learn y = 2x + 1 with one nn.Linear(1, 1), mean squared error and SGD.

    python examples/linear_regression.py [--backend ...] [--steps 200] [--lr 0.1]

The original's training example: after training, w is close to 2 and b close to 1.
"""

import argparse

import torchic
import torchic.nn as nn
import torchic.nn.functional as F
from torchic import optim

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backend", default=None, help="workers | simd | webgpu")
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torchic.init(backend=args.backend)
torchic.manual_seed(args.seed)

# 64 points on the line y = 2x + 1, x in [-1, 1], with a little noise
x = torchic.rand(64, 1) * 2 - 1
y = 2 * x + 1 + 0.01 * torchic.randn(64, 1)

model = nn.Linear(1, 1)
opt = optim.SGD(model.parameters(), lr=args.lr)

for step in range(args.steps):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == args.steps - 1:
        print(f"step {step:4d}  loss {loss.item():.6f}")

w, b = model.weight.item(), model.bias.item()
print(f"learned: w = {w:.4f} (target 2), b = {b:.4f} (target 1)")
