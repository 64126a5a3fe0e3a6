"""The counting bigram model of character names: a 27x27 table of counts, smoothed
probabilities, sampled names and the average negative log-likelihood."""

import torch

from _fixtures import Bridge, words


def main(steps=20, seed=2147483647, bridge=None):
    bridge = bridge or Bridge()
    names = words()
    chars = sorted(set("".join(names)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}

    N = torch.zeros((27, 27), dtype=torch.int32)
    for w in names:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            N[stoi[ch1], stoi[ch2]] += 1

    P = (N + 1).float()
    P /= P.sum(1, keepdims=True)

    g = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(5):
        out, ix = [], 0
        while True:
            p = P[ix]
            ix = bridge.value("ix", torch.multinomial(p, num_samples=1, replacement=True,
                                                      generator=g).item())
            if ix == 0:
                break
            out.append(itos[ix])
        samples.append("".join(out))

    # the loss: average negative log-likelihood, reported after each of the first names
    losses = []
    log_likelihood = 0.0
    n = 0
    for w in names[:steps]:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            prob = P[stoi[ch1], stoi[ch2]]
            log_likelihood += torch.log(prob)
            n += 1
        nll = -log_likelihood
        losses.append((nll / n).item())
    summary = f"{nll / n:.4f}"
    return {"losses": losses, "total": [N.sum().item(), N[0].max().item()],
            "row_sums": P.sum(1).tolist(), "summary": [float(summary)], "samples": samples}


if __name__ == "__main__":
    print(main())
