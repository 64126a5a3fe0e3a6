"""The public API as a user writes it, for the type checker (never run by pytest).

tests/unit/test_typing.py runs `mypy --strict` on this file and on examples/: every line
here must type-check without an ignore, as it would with PyTorch's stubs. Add a line when
you add a public op, method or module.
"""

import copy
import os
import tempfile
from typing import Any

import numpy as np
import numpy.typing as npt

import torchic as torch
import torchic.nn as nn
import torchic.nn.functional as F
from torchic import optim


def tensors() -> list[torch.Tensor]:
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = torch.tensor([[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]])
    c: torch.Tensor = a.matmul(b) + a @ b - 1 * a.sum() / 2.0
    d = 3 * c ** 2 - 0.5 / c + (c > 0) * c.relu().exp().log()
    e = torch.tanh(d).mean(1, keepdim=True).view(2, 1).reshape(-1).T
    f = torch.zeros(2, 3) + torch.ones(2, 3) * torch.randn(2, 3) - torch.rand(2, 3)
    g = f.transpose(0, 1).contiguous().flatten().unsqueeze(0).squeeze(0)
    h = torch.cat([g, g]) + torch.stack([g, g]).sum(0).roll(1).expand(2, 6).flatten()
    idx = torch.arange(3)
    picked = a[:, idx] + a[0] + a[1, :]
    a[0, 0] = 5.0
    parts = a.split(1, dim=0) + a.chunk(2, dim=1)
    m = a.amax() + a.max() + torch.min(a) + a.max(a) + a.max(dim=1).values.sum()
    largest, where_ = a.max(1)
    m = m + largest.sum() + where_.float().sum() + a.min(axis=0).values.sum()
    values, indices = a.sort(dim=1)
    am = a.argmax(dim=1).long().float()
    w = torch.where(a > 2, a, 0.0).clamp(min=0.0, max=4.0).abs().neg().sqrt()
    return [c, d, e, f, g, h, picked, *parts, m, am, w, -a, +a, ~(a > 1), a.T, a.t(), values,
            indices]


def reads(t: torch.Tensor) -> float:
    n: int = t.numel() + t.dim() + t.ndim + len(t.shape)
    arr: npt.NDArray[Any] = t.numpy()
    vals: list[Any] = t.tolist()
    one = t.sum().item()
    print(n, arr.shape, vals, t.dtype, t.device, t.requires_grad, t.is_leaf, f"{one:.2f}")
    return float(one) + float(t.sum()) + float(np.asarray(t).sum())


def autograd() -> None:
    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 2 + 3 * x
    y.backward()
    assert x.grad is not None
    print(y.item(), x.grad.item())
    with torch.no_grad():
        x -= 0.1 * x.grad
    with torch.enable_grad():
        z = (x * x).sum()
    z.backward(retain_graph=True)
    x.grad = None
    detached = x.detach().clone().requires_grad_()
    print(detached.grad_fn, x.is_leaf, torch.is_grad_enabled())

    @torch.no_grad()
    def no_graph(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    print(no_graph(x).requires_grad)
    with torch.inference_mode():
        print(torch.is_inference_mode_enabled())
    custom_autograd()


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, t: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(t)
        return t ** 3

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        t: torch.Tensor = ctx.saved_tensors[0]
        return g * 3 * t ** 2


def custom_autograd() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), [x], allow_unused=True, materialize_grads=True)
    handle = x.register_hook(lambda grad: grad * 2)
    torch.autograd.backward([(x * x).sum()], inputs=[x])
    handle.remove()
    (x * x).sum().backward(create_graph=False, inputs=x)
    jac = torch.autograd.functional.jacobian(lambda t: t.exp(), x)
    with torch.autograd.detect_anomaly(), torch.set_grad_enabled(True):
        print(g, h, jac, torch.autograd.graph.get_gradient_edge(y).node)
    print(torch.autograd.gradcheck(lambda t: t.sin(), (x.double().detach().requires_grad_(),)))


def scopes() -> None:
    with torch.track_tensors():
        tmp = (torch.ones(3) * 2).sum()
        kept = torch.keep(tmp * 3)
    print(kept, torch.memory()["live_tensors"])
    torch.sync()
    torch.dispose(kept)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3, 8)
        self.fc2 = nn.Linear(8, 2)
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


def training() -> float:
    model = MLP()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=10)
    x, target = torch.randn(4, 3), torch.tensor([0, 1, 1, 0])
    loss = F.cross_entropy(model(x), target)
    loss2 = torch.cross_entropy(model.forward(x), target) + F.mse_loss(model(x), x[:, :2])
    opt.zero_grad()
    (loss + loss2).backward()
    opt.step()
    sched.step()
    linear = nn.Linear(3, 2)
    out: torch.Tensor = linear(x)
    weight: nn.Parameter = linear.weight
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    state = model.state_dict()
    model.load_state_dict(state)
    model.eval()
    model.train()
    twin = copy.deepcopy(model)
    print(out, weight.shape, seq(x), sum(p.numel() for p in twin.parameters()))
    return loss.item()


def data_and_checkpoints(path: str) -> None:
    from torchic.utils.data import DataLoader, TensorDataset

    xs, ys = torch.randn(8, 3), torch.randint(0, 2, (8,))
    loader = DataLoader(TensorDataset(xs, ys), batch_size=4, shuffle=True)
    model = nn.Linear(3, 2)
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        print(loss.item())
    torch.save(model.state_dict(), path)
    model.load_state_dict(torch.load(path))


def functional_and_more(x: torch.Tensor) -> list[torch.Tensor]:
    emb = nn.Embedding(10, 4)
    idx = torch.tensor([[1, 2], [3, 4]])
    e = emb(idx).flatten(1)
    blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
    h = x[:, :1].expand(2, 4) if x.shape[0] == 2 else torch.zeros(2, 4)
    for block in blocks:
        h = block(h).relu()
    probs = F.softmax(h, dim=-1)
    sampled = torch.multinomial(probs, num_samples=1)
    parts = [F.relu(h), F.dropout(h, p=0.1, training=False), F.layer_norm(h, (4,)),
             F.one_hot(sampled.squeeze(1), num_classes=4), torch.softmax(h, dim=1),
             h.masked_fill(h > 0, 0.0).tril(), torch.stack([h, h]).mean(0), e]
    n: int = h.size(0) + h.stride(1)
    shape: tuple[int, ...] = h.shape
    print(n, shape, h.size(), h.dtype == torch.float32, h.to(torch.float32).is_contiguous())
    return parts


def compiled() -> None:
    model = nn.Linear(3, 2)

    def step(x: torch.Tensor) -> torch.Tensor:
        return model(x).sum()

    fn = torch.compile(step)
    print(fn(torch.randn(4, 3)))


if __name__ == "__main__":
    torch.init(backend="workers", threads=2)
    torch.manual_seed(0)
    print(tensors(), reads(torch.ones(2)), training(), functional_and_more(torch.ones(2, 3)))
    data_and_checkpoints(os.path.join(tempfile.mkdtemp(), "model.safetensors"))
    autograd()
    scopes()
    compiled()
