"""A deeper MLP built from hand-written Linear / BatchNorm1d / Tanh layers (the way the
activations-and-gradients lecture writes them), with kaiming-style init, running
statistics updated under no_grad, activation / gradient statistics, histograms and the
update-to-data ratios."""

import torch
import torch.nn.functional as F

from _fixtures import Bridge, words

BLOCK = 3


class Linear:
    def __init__(self, fan_in, fan_out, generator, bias=True, gain=5 / 3):
        self.weight = torch.randn((fan_in, fan_out), generator=generator) * gain / fan_in ** 0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps, self.momentum, self.training = eps, momentum, True
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)
        self.running_mean = torch.zeros(dim)
        self.running_var = torch.ones(dim)

    def __call__(self, x):
        if self.training:
            xmean = x.mean(0, keepdim=True)
            xvar = x.var(0, keepdim=True)
        else:
            xmean, xvar = self.running_mean, self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        if self.training:
            with torch.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


def dataset(stoi):
    X, Y = [], []
    for w in words():
        context = [0] * BLOCK
        for ch in w + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    return torch.tensor(X), torch.tensor(Y)


def main(steps=20, seed=2147483647, bridge=None, batch=32, n_embd=10, n_hidden=32):
    bridge = bridge or Bridge()
    chars = sorted(set("".join(words())))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    Xtr, Ytr = dataset(stoi)

    g = torch.Generator().manual_seed(seed)
    C = torch.randn((27, n_embd), generator=g)
    layers = [Linear(n_embd * BLOCK, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh()]
    for _ in range(3):
        layers += [Linear(n_hidden, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh()]
    layers += [Linear(n_hidden, 27, g, gain=1.0), BatchNorm1d(27)]
    with torch.no_grad():
        layers[-1].gamma *= 0.1
    parameters = [C] + [p for layer in layers for p in layer.parameters()]
    bridge.params("params", parameters)
    for p in parameters:
        p.requires_grad = True

    losses, ud = [], []
    for i in range(steps):
        ix = bridge.batch("ix", torch.randint(0, Xtr.shape[0], (batch,), generator=g))
        Xb, Yb = Xtr[ix], Ytr[ix]
        x = C[Xb].view(batch, -1)
        for layer in layers:
            x = layer(x)
        loss = F.cross_entropy(x, Yb)
        for layer in layers:
            layer.out.retain_grad()
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < steps // 2 else 0.01
        if i == 0:   # the statistics the lecture plots, at the first step
            acts, grads = [], []
            for layer in layers[:-1]:
                if isinstance(layer, Tanh):
                    t = layer.out
                    acts += [t.mean().item(), t.std().item(),
                             ((t.abs() > 0.97).float().mean() * 100).item()]
                    grads += [t.grad.mean().item(), t.grad.std().item()]
            hy, hx = torch.histogram(layers[2].out, bins=10, range=(-1.0, 1.0), density=True)
            hg = torch.histc(layers[2].out.grad, bins=10, min=-0.01, max=0.01)
            wstats = [(p.grad.std() / p.std()).item() for p in parameters if p.ndim == 2]
        for p in parameters:
            p.data += -lr * p.grad
        with torch.no_grad():
            ud.append([((lr * p.grad).std() / p.data.std()).log10().item() for p in parameters
                       if p.ndim == 2])
        losses.append(loss.item())

    for layer in layers:
        layer.training = False
    with torch.no_grad():
        x = C[Xtr[:200]].view(200, -1)
        for layer in layers:
            x = layer(x)
        eval_loss = F.cross_entropy(x, Ytr[:200]).item()
    return {"losses": losses, "ud": ud[0] + ud[-1], "acts": acts, "grads": grads,
            "hist": hy.tolist() + hx.tolist(), "histc": hg.tolist(), "wstats": wstats,
            "running": layers[1].running_mean.tolist(), "eval": [eval_loss]}


if __name__ == "__main__":
    print(main())
