"""The hierarchical (WaveNet-style) character model: hand-written Embedding,
FlattenConsecutive, Linear, BatchNorm1d over 3-D inputs and a Sequential container,
trained on minibatches, then evaluated and sampled in eval mode."""

import torch
import torch.nn.functional as F

from _fixtures import Bridge, words

BLOCK = 8


class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out)) / fan_in ** 0.5
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
        self.gamma, self.beta = torch.ones(dim), torch.zeros(dim)
        self.running_mean, self.running_var = torch.zeros(dim), torch.ones(dim)

    def __call__(self, x):
        if self.training:
            dim = 0 if x.ndim == 2 else (0, 1)
            xmean = x.mean(dim, keepdim=True)
            xvar = x.var(dim, keepdim=True)
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


class Embedding:
    def __init__(self, num_embeddings, embedding_dim):
        self.weight = torch.randn((num_embeddings, embedding_dim))

    def __call__(self, IX):
        self.out = self.weight[IX]
        return self.out

    def parameters(self):
        return [self.weight]


class FlattenConsecutive:
    def __init__(self, n):
        self.n = n

    def __call__(self, x):
        B, T, C = x.shape
        x = x.view(B, T // self.n, C * self.n)
        if x.shape[1] == 1:
            x = x.squeeze(1)
        self.out = x
        return self.out

    def parameters(self):
        return []


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        self.out = x
        return self.out

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def dataset(names, stoi):
    X, Y = [], []
    for w in names:
        context = [0] * BLOCK
        for ch in w + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    return torch.tensor(X), torch.tensor(Y)


def main(steps=20, seed=42, bridge=None, batch=16, n_embd=6, n_hidden=16):
    bridge = bridge or Bridge()
    names = words()
    chars = sorted(set("".join(names)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    Xtr, Ytr = dataset(names[:160], stoi)
    Xdev, Ydev = dataset(names[160:], stoi)
    vocab = 27

    torch.manual_seed(seed)
    model = Sequential([
        Embedding(vocab, n_embd),
        FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, vocab),
    ])
    with torch.no_grad():
        model.layers[-1].weight *= 0.1
    parameters = model.parameters()
    bridge.params("params", parameters)
    for p in parameters:
        p.requires_grad = True

    losses = []
    for i in range(steps):
        ix = bridge.batch("ix", torch.randint(0, Xtr.shape[0], (batch,)))
        Xb, Yb = Xtr[ix], Ytr[ix]
        logits = model(Xb)
        loss = F.cross_entropy(logits, Yb)
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < steps * 3 // 4 else 0.01
        for p in parameters:
            p.data += -lr * p.grad
        losses.append(loss.item())
    shapes = [tuple(layer.out.shape) for layer in model.layers]

    for layer in model.layers:
        layer.training = False

    @torch.no_grad()
    def split_loss(x, y):
        return F.cross_entropy(model(x), y).item()

    samples = []
    for _ in range(3):
        out, context = [], [0] * BLOCK
        while len(out) < 12:
            logits = model(torch.tensor([context]))
            probs = F.softmax(logits, dim=1)
            ix = bridge.value("ix", torch.multinomial(probs, num_samples=1).item())
            context = context[1:] + [ix]
            if ix == 0:
                break
            out.append(itos[ix])
        samples.append("".join(out))
    return {"losses": losses, "split": [split_loss(Xtr, Ytr), split_loss(Xdev, Ydev)],
            "shapes": shapes, "samples": samples}


if __name__ == "__main__":
    print(main())
