"""The bigram model as a one-layer neural net: one-hot inputs, a 27x27 weight matrix,
softmax by hand, gradient descent by writing into W.data."""

import torch
from torch.nn import functional as F

from _fixtures import Bridge, words


def main(steps=20, seed=2147483647, bridge=None):
    bridge = bridge or Bridge()
    names = words()[:40]
    chars = sorted(set("".join(words())))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}

    xs, ys = [], []
    for w in names:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    xs = torch.tensor(xs)
    ys = torch.tensor(ys)
    num = xs.nelement()

    g = torch.Generator().manual_seed(seed)
    W = torch.randn((27, 27), generator=g, requires_grad=True)
    bridge.params("W", [W])

    losses = []
    for k in range(steps):
        xenc = F.one_hot(xs, num_classes=27).float()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W ** 2).mean()
        losses.append(loss.item())
        W.grad = None
        loss.backward()
        W.data += -50 * W.grad

    samples = []
    for _ in range(3):
        out, ix = [], 0
        while True:
            xenc = F.one_hot(torch.tensor([ix]), num_classes=27).float()
            p = (xenc @ W).exp()
            p = p / p.sum(1, keepdims=True)
            ix = bridge.value("ix", torch.multinomial(p, num_samples=1, replacement=True,
                                                      generator=g).item())
            if ix == 0:
                break
            out.append(itos[ix])
        samples.append("".join(out))
    return {"losses": losses, "samples": samples}


if __name__ == "__main__":
    print(main())
