"""Time the makemore bigram loss with its backward: -probs[arange(n), ys].log().mean().

The two-index gather's backward is scatter_add_rows over a table of n * 27 rows and an
index of n rows (issue 15: it was quadratic on webgpu). Prints seconds per step (the best
of --repeat, after one warm-up) and checks the gradient against NumPy float64.

    python scripts/bench_gather_backward.py --backend webgpu --n 2000 8000 32000
"""

import argparse
import time

import numpy as np

import torchic as torch


def step(x_np, ys_np):
    x = torch.tensor(x_np, requires_grad=True)
    ys = torch.tensor(ys_np)
    probs = x.softmax(dim=1)
    loss = -probs[torch.arange(len(ys_np)), ys].log().mean()
    loss.backward()
    return float(loss.item()), x.grad.numpy()


def reference(x_np, ys_np):
    x = x_np.astype(np.float64)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    n = len(ys_np)
    g = p / n
    g[np.arange(n), ys_np] -= 1.0 / n
    return -np.log(p[np.arange(n), ys_np]).mean(), g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="webgpu")
    ap.add_argument("--n", type=int, nargs="+", default=[2000, 8000, 32000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    torch.init(args.backend)
    rng = np.random.default_rng(0)
    for n in args.n:
        x_np = rng.standard_normal((n, 27)).astype(np.float32)
        ys_np = rng.integers(0, 27, n)
        loss, grad = step(x_np, ys_np)        # warm-up (compiles)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            step(x_np, ys_np)
            best = min(best, time.perf_counter() - t0)
        ref_loss, ref_grad = reference(x_np, ys_np)
        err = float(np.abs(grad - ref_grad).max())
        print(f"{args.backend} n={n}: {best * 1e3:.1f} ms/step  loss {loss:.6f} "
              f"(ref {ref_loss:.6f})  max grad err {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
