"""Interleaved timing of a training step: torchic simd and PyTorch at 1 and 2 threads in one
process, round after round (issue 42; the shared machine's load moves between rounds, so
only figures of the same round are compared). Prints per-round medians, the median over
rounds, and user CPU time per step (all threads of the process).

    PYTHONPATH=$PWD/src python scripts/ab_step.py lenet --rounds 5 --steps 20
"""

import argparse
import resource
import statistics
import time


def _user():
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def timed(step, n):
    ts, us = [], []
    for _ in range(n):
        u, t = _user(), time.perf_counter()
        step()
        ts.append(time.perf_counter() - t)
        us.append(_user() - u)
    return statistics.median(ts) * 1e3, statistics.mean(us) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=("lenet", "lstm"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    import torchic as tc
    import torch
    from torchic.bench import conv
    threads = [int(t) for t in a.threads.split(",")]
    res = {}
    for r in range(a.rounds):
        for t in threads:
            tc.init("simd", threads=t)
            s = conv.model_step(a.model, tc)
            for _ in range(3):
                s()
            res.setdefault(("simd", t), []).append(timed(s, a.steps))
            del s
            if not a.no_torch:
                torch.set_num_threads(t)
                s = conv.model_step(a.model, torch)
                for _ in range(3):
                    s()
                res.setdefault(("torch", t), []).append(timed(s, a.steps))
        print(f"round {r}: " + ", ".join(f"{k[0]} {k[1]}t {v[-1][0]:.2f} ms"
                                         for k, v in res.items()), flush=True)
    print("| impl | threads | median step ms (rounds) | user CPU ms/step | ratio to torch |")
    print("|---|---|---|---|---|")
    for (impl, t), v in res.items():
        med = statistics.median(x[0] for x in v)
        user = statistics.median(x[1] for x in v)
        ratio = ""
        if impl == "simd" and ("torch", t) in res:
            rs = [x[0] / y[0] for x, y in zip(v, res[("torch", t)])]
            ratio = f"{statistics.median(rs):.2f}x (per round {min(rs):.2f}-{max(rs):.2f})"
        print(f"| {impl} | {t} | {med:.2f} | {user:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
