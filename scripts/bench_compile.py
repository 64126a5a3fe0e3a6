"""Eager vs torchic.compile: µs per makemore MLP training step (b32) and per op of a
100-op 32x32 add chain, on workers and simd (a figure to read, not a timed test).

    PYTHONPATH=src python scripts/bench_compile.py [--steps 300]
"""

import argparse
import time

import numpy as np

import torchic
import torchic.nn.functional as F

VOCAB, BLOCK, EMB, HIDDEN, BATCH = 27, 3, 10, 200, 32


def makemore_step():
    torchic.manual_seed(42)
    C = torchic.randn(VOCAB, EMB, requires_grad=True)
    W1 = (torchic.randn(BLOCK * EMB, HIDDEN) * 0.2).detach().requires_grad_(True)
    b1 = torchic.zeros(HIDDEN, requires_grad=True)
    W2 = (torchic.randn(HIDDEN, VOCAB) * 0.1).detach().requires_grad_(True)
    b2 = torchic.zeros(VOCAB, requires_grad=True)
    opt = torchic.optim.SGD([C, W1, b1, W2, b2], lr=0.1)

    def step(xb, yb):
        h = torchic.tanh(C[xb].view(-1, BLOCK * EMB) @ W1 + b1)
        loss = F.cross_entropy(h @ W2 + b2, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def per_call_us(fn, args, n):
    for _ in range(5):
        fn(*args)
    torchic.sync()
    t = time.perf_counter()
    for _ in range(n):
        fn(*args)
    torchic.sync()
    return (time.perf_counter() - t) / n * 1e6


def add_chain(x):
    for _ in range(100):
        x = x + 1.0
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    n = ap.parse_args().steps
    rng = np.random.default_rng(0)
    for name in ("workers", "simd"):
        torchic.init(name)
        xb = torchic.tensor(rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int32))
        yb = torchic.tensor(rng.integers(0, VOCAB, (BATCH,)).astype(np.int32))
        eager = per_call_us(makemore_step(), (xb, yb), n)
        compiled = per_call_us(torchic.compile(makemore_step()), (xb, yb), n)
        print(f"{name:8s} makemore step b{BATCH} h{HIDDEN}: eager {eager:8.1f} µs  "
              f"compiled {compiled:8.1f} µs  ({eager / compiled:.1f}x)")
        x = torchic.zeros(32, 32)
        eager = per_call_us(add_chain, (x,), n) / 100
        compiled = per_call_us(torchic.compile(add_chain), (x,), n) / 100
        print(f"{name:8s} 100-op 32x32 add chain, per op: eager {eager:6.2f} µs  "
              f"compiled {compiled:6.2f} µs  ({eager / compiled:.1f}x)")


if __name__ == "__main__":
    main()
