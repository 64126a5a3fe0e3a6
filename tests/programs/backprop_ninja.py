"""Manual backpropagation through an MLP with batch norm: the forward pass cut into
atomic steps, every gradient written by hand and compared with autograd, then the
network trained with the hand-written backward alone."""

import torch
import torch.nn.functional as F

from _fixtures import Bridge, words

BLOCK = 3


def cmp(name, dt, t):
    ex = torch.all(dt == t.grad).item()
    app = torch.allclose(dt, t.grad, rtol=1e-4, atol=1e-6)
    maxdiff = (dt - t.grad).abs().max().item()
    return name, bool(ex), bool(app), maxdiff


def dataset(stoi):
    X, Y = [], []
    for w in words():
        context = [0] * BLOCK
        for ch in w + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    return torch.tensor(X), torch.tensor(Y)


def main(steps=20, seed=2147483647, bridge=None, n=16, n_embd=10, n_hidden=32):
    bridge = bridge or Bridge()
    chars = sorted(set("".join(words())))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    Xtr, Ytr = dataset(stoi)
    vocab = 27

    g = torch.Generator().manual_seed(seed)
    C = torch.randn((vocab, n_embd), generator=g)
    W1 = torch.randn((n_embd * BLOCK, n_hidden), generator=g) * (5 / 3) / (n_embd * BLOCK) ** 0.5
    b1 = torch.randn(n_hidden, generator=g) * 0.1
    W2 = torch.randn((n_hidden, vocab), generator=g) * 0.1
    b2 = torch.randn(vocab, generator=g) * 0.1
    bngain = torch.randn((1, n_hidden), generator=g) * 0.1 + 1.0
    bnbias = torch.randn((1, n_hidden), generator=g) * 0.1
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    bridge.params("params", parameters)
    for p in parameters:
        p.requires_grad = True

    # exercise 1: every intermediate's gradient by hand, against autograd
    ix = bridge.batch("ix", torch.randint(0, Xtr.shape[0], (n,), generator=g))
    Xb, Yb = Xtr[ix], Ytr[ix]
    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff ** 2
    bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = bndiff * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum ** -1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()
    for p in parameters:
        p.grad = None
    for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes,
              logits, h, hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani,
              embcat, emb]:
        t.retain_grad()
    loss.backward()

    dlogprobs = torch.zeros_like(logprobs)
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = (1.0 / probs) * dlogprobs
    dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
    dcounts = counts_sum_inv * dprobs
    dcounts_sum = (-counts_sum ** -2) * dcounts_sum_inv
    dcounts += torch.ones_like(counts) * dcounts_sum
    dnorm_logits = counts * dcounts
    dlogits = dnorm_logits.clone()
    dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
    dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h ** 2) * dh
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnraw = bngain * dhpreact
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbndiff = bnvar_inv * dbnraw
    dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
    dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
    dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
    dbndiff += (2 * bndiff) * dbndiff2
    dhprebn = dbndiff.clone()
    dbnmeani = (-dbndiff).sum(0)
    dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            dC[Xb[k, j]] += demb[k, j]

    checks = [cmp(*c) for c in [
        ("logprobs", dlogprobs, logprobs), ("probs", dprobs, probs),
        ("counts_sum_inv", dcounts_sum_inv, counts_sum_inv), ("counts_sum", dcounts_sum, counts_sum),
        ("counts", dcounts, counts), ("norm_logits", dnorm_logits, norm_logits),
        ("logit_maxes", dlogit_maxes, logit_maxes), ("logits", dlogits, logits), ("h", dh, h),
        ("W2", dW2, W2), ("b2", db2, b2), ("hpreact", dhpreact, hpreact),
        ("bngain", dbngain, bngain), ("bnbias", dbnbias, bnbias), ("bnraw", dbnraw, bnraw),
        ("bnvar_inv", dbnvar_inv, bnvar_inv), ("bnvar", dbnvar, bnvar),
        ("bndiff2", dbndiff2, bndiff2), ("bndiff", dbndiff, bndiff), ("bnmeani", dbnmeani, bnmeani),
        ("hprebn", dhprebn, hprebn), ("embcat", dembcat, embcat), ("W1", dW1, W1), ("b1", db1, b1),
        ("emb", demb, emb), ("C", dC, C)]]

    # exercise 2: the cross-entropy's backward in one go (an indexed update and an in-place
    # divide of a tensor in the graph)
    loss_fast = F.cross_entropy(logits, Yb)
    fast = [(loss_fast - loss).item()]
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    checks.append(cmp("logits (fast)", dlogits, logits))

    # exercise 3: the batch norm's backward in one go
    hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(
        hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias
    fast.append((hpreact_fast - hpreact).abs().max().item())
    dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)
                                         - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
    checks.append(cmp("hprebn (fast)", dhprebn, hprebn))

    # exercise 4: train with the hand-written backward only (cross-entropy and batch norm
    # backward in their short forms)
    losses = []
    with torch.no_grad():
        for i in range(steps):
            ix = bridge.batch("ix", torch.randint(0, Xtr.shape[0], (n,), generator=g))
            Xb, Yb = Xtr[ix], Ytr[ix]
            emb = C[Xb]
            embcat = emb.view(emb.shape[0], -1)
            hprebn = embcat @ W1 + b1
            bnmean = hprebn.mean(0, keepdim=True)
            bnvar = hprebn.var(0, keepdim=True, unbiased=True)
            bnvar_inv = (bnvar + 1e-5) ** -0.5
            bnraw = (hprebn - bnmean) * bnvar_inv
            hpreact = bngain * bnraw + bnbias
            h = torch.tanh(hpreact)
            logits = h @ W2 + b2
            loss = F.cross_entropy(logits, Yb)
            dlogits = F.softmax(logits, 1)
            dlogits[range(n), Yb] -= 1
            dlogits /= n
            dh = dlogits @ W2.T
            dW2 = h.T @ dlogits
            db2 = dlogits.sum(0)
            dhpreact = (1.0 - h ** 2) * dh
            dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
            dbnbias = dhpreact.sum(0, keepdim=True)
            dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)
                                                 - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
            dembcat = dhprebn @ W1.T
            dW1 = embcat.T @ dhprebn
            db1 = dhprebn.sum(0)
            demb = dembcat.view(emb.shape)
            dC = torch.zeros_like(C)
            for k in range(Xb.shape[0]):
                for j in range(Xb.shape[1]):
                    dC[Xb[k, j]] += demb[k, j]
            grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
            lr = 0.1 if i < steps // 2 else 0.01
            for p, grad in zip(parameters, grads):
                p.data += -lr * grad
            losses.append(loss.item())
    # the exact-equality flags are printed, not compared: bitwise agreement with autograd
    # depends on each library's order of float operations
    return {"losses": losses, "fast": fast, "approx": [(c[0], c[2]) for c in checks],
            "maxdiff": [c[3] for c in checks], "checks": checks}


if __name__ == "__main__":
    out = main()
    for c in out["checks"]:
        print("%15s | exact: %5s | approximate: %5s | maxdiff: %g" % c)
    print(out["losses"])
