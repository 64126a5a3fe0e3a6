"""torchic quick start: tensors, a few ops, backward, gradients.

    python examples/quickstart.py [--backend workers|simd|webgpu]
"""

import argparse

import torchic

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backend", default=None, help="workers | simd | webgpu")
args = parser.parse_args()

torchic.init(backend=args.backend)  # default: $TORCHIC_BACKEND, else simd if built, else workers
torchic.manual_seed(0)                      # same numbers on every backend

# create tensors
a = torchic.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
b = torchic.tensor([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
x = torchic.randn(2, 3)
print("backend:", torchic.get_backend())
print("a =", a)
print("random x =", x)

# a matmul and a few elementwise ops
c = a @ b                                   # [[19, 22], [43, 50]]
d = (c.relu() + 1).log().sum(1)             # row sums of log(c + 1)
e = torchic.tanh(a * b - 10).mean()
print("a @ b =", c)
print("log(relu(a @ b) + 1).sum(1) =", d)
print("tanh(a * b - 10).mean() =", e.item())

# views are free: transpose and reshape share storage
print("a.T =", a.T, " a.view(4) =", a.view(4).tolist())

# backward through all of it
loss = d.sum() + e
loss.backward()
print("loss =", loss.item())
print("dloss/da =", a.grad)
print("dloss/db =", b.grad)

# no graph inside no_grad; reads block until the result is ready
with torchic.no_grad():
    f = a * 2
print("inside no_grad: requires_grad =", f.requires_grad, " values =", f.numpy())
print("heap:", {k: v for k, v in torchic.memory().items() if k in ("live_tensors", "backend")})
