"""Scalar autograd checked in float64, in the style of karpathy/micrograd's test_engine.py
(which compares micrograd with torch in double precision at 1e-6): expressions over a few
scalars built from +, -, *, /, **, relu, tanh, exp, log and sigmoid, their values and the
gradients of every input after one backward; then a small float64 MLP (nn.Linear made
double, SGD and Adam) trained a few steps on fixed data. Our own program: every expression
and number here is written for torchic's checks.

`main()` returns a dict of Python floats (and dtype names): the harness runs it with
PyTorch and with torchic standing in for torch (shim.py) and compares at 1e-6 relative.
"""

import torch
import torch.nn as nn


def leaf(value):
    """A float64 scalar leaf that requires grad, made the way tutorial code makes one."""
    x = torch.Tensor([value]).double()
    x.requires_grad = True
    return x


def scalar_chain():
    a, b, c = leaf(-3.0), leaf(1.5), leaf(0.25)
    d = a * b + b ** 3 - c / 4
    e = (d - a).relu() + d * a / 7 + (a * c).relu()
    f = (e * 2 - d).tanh() * 3 + (c - b) ** 2
    g = f.sigmoid() * e + (b * c + 1).log() - (c * 2).exp() / 5
    h = g / (1 + b * b) + 10.0 / (e + 20) - 0.5 ** (c + 1)
    h.backward()
    return {"h": h.item(), "a.grad": a.grad.item(), "b.grad": b.grad.item(),
            "c.grad": c.grad.item(), "h.dtype": str(h.dtype).split(".")[-1]}


def more_ops():
    x, y = leaf(2.0), leaf(-4.0)
    z = x * y + x ** 2 + (y / x) * 3
    z = z + z * x + (x - y).relu() * 0.5
    w = (z * z).relu() / 100 + (-z).relu() + y ** 2 / (x + 3)
    w = w + (w - x * 17).tanh() + 1 / (2 + w.abs())
    w.backward()
    return {"w": w.item(), "x.grad": x.grad.item(), "y.grad": y.grad.item()}


def thirds():
    """The issue's check: float64 division is float64 (0.3333333333333333, not float32's)."""
    t = torch.Tensor([1.0]).double() / 3
    return {"third": t.item(), "third.dtype": str(t.dtype).split(".")[-1]}


def mlp(steps):
    """A 2-4-1 tanh MLP in float64 on fixed points, weights set by a formula (no random
    draws: both runs start equal); SGD then Adam."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            values = torch.linspace(-0.7 + 0.1 * i, 0.9 - 0.05 * i, n, dtype=torch.float64)
            p.copy_(values.reshape(p.shape))
    xs = torch.tensor([[0.5, -1.0], [1.5, 2.0], [-2.0, 0.25], [0.1, 0.3]], dtype=torch.float64)
    ys = torch.tensor([[1.0], [-1.0], [0.5], [0.0]], dtype=torch.float64)
    losses = {}
    for name, opt in (("sgd", torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)),
                      ("adam", torch.optim.Adam(model.parameters(), lr=0.05))):
        for step in range(steps):
            loss = ((model(xs) - ys) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[f"{name} loss {step}"] = loss.item()
    losses["weight.dtype"] = str(model[0].weight.dtype).split(".")[-1]
    losses["grad.dtype"] = str(model[0].weight.grad.dtype).split(".")[-1]
    return losses


def main(steps=5):
    out = {}
    for part in (scalar_chain(), more_ops(), thirds(), mlp(steps)):
        out.update(part)
    return out


if __name__ == "__main__":
    for key, value in main().items():
        print(f"{key}: {value}")
