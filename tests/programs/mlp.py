"""The character-level MLP of the makemore lectures: an embedding table C, one tanh
hidden layer, minibatches drawn with torch.randint, a step-decayed learning rate."""

import random

import torch
import torch.nn.functional as F

from _fixtures import Bridge, words

BLOCK = 3


def build_dataset(names, stoi):
    X, Y = [], []
    for w in names:
        context = [0] * BLOCK
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


def main(steps=20, seed=2147483647, bridge=None, batch=32, hidden=64):
    bridge = bridge or Bridge()
    names = words()
    chars = sorted(set("".join(names)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    random.seed(42)
    random.shuffle(names)
    n1 = int(0.8 * len(names))
    Xtr, Ytr = build_dataset(names[:n1], stoi)
    Xdev, Ydev = build_dataset(names[n1:], stoi)

    g = torch.Generator().manual_seed(seed)
    C = torch.randn((27, 10), generator=g)
    W1 = torch.randn((BLOCK * 10, hidden), generator=g)
    b1 = torch.randn(hidden, generator=g)
    W2 = torch.randn((hidden, 27), generator=g)
    b2 = torch.randn(27, generator=g)
    parameters = [C, W1, b1, W2, b2]
    bridge.params("params", parameters)
    n_params = sum(p.nelement() for p in parameters)
    for p in parameters:
        p.requires_grad = True

    losses = []
    for i in range(steps):
        ix = bridge.batch("ix", torch.randint(0, Xtr.shape[0], (batch,), generator=g))
        emb = C[Xtr[ix]]
        h = torch.tanh(emb.view(-1, BLOCK * 10) @ W1 + b1)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Ytr[ix])
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < steps // 2 else 0.01
        for p in parameters:
            p.data += -lr * p.grad
        losses.append(loss.item())

    with torch.no_grad():
        emb = C[Xdev]
        h = torch.tanh(emb.view(-1, BLOCK * 10) @ W1 + b1)
        dev_loss = F.cross_entropy(h @ W2 + b2, Ydev).item()
    return {"losses": losses, "dev": [dev_loss], "n_params": [n_params]}


if __name__ == "__main__":
    print(main())
