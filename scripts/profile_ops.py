"""Per-op profile of an eager training step on the simd backend at 1 and 2 threads (issue 42).

Captures the op records one step issues (backend.run), then times each record alone
(pushed `repeat` times, then a sync; the push-and-sync cost of a 1-element fill taken
off) at each thread count, so the ops that do not gain from a second thread stand out.

    PYTHONPATH=$PWD/src python scripts/profile_ops.py lenet --threads 1,2
    PYTHONPATH=$PWD/src python scripts/profile_ops.py lstm --threads 1,2 --top 25
"""

import argparse
import collections
import os
import resource
import statistics
import time


def capture(step, rt):
    records = []
    run = rt.run

    def spy(op, out, inputs, params):
        records.append((op, out, tuple(inputs), dict(params) if params else params))
        return run(op, out, inputs, params)
    rt.run = spy
    try:
        step()
    finally:
        rt.run = run
    return records


def time_record(backend, r, repeat, tries):
    import torchic as tc
    best = float("inf")
    for _ in range(tries):
        t = time.perf_counter()
        for _ in range(repeat):
            backend.run(*r)
        tc.sync()
        best = min(best, time.perf_counter() - t)
    return best / repeat


def kind(op, out, inputs):
    return f"{op} " + " ".join("x".join(map(str, v.shape)) or "()" for v in (out,) + inputs)


def profile(name, threads, repeat, tries):
    import torchic as tc
    from torchic import dispatcher
    from torchic.bench import conv
    tc.init("simd", threads=threads)
    step = conv.model_step(name, tc)
    for _ in range(3):
        step()
    times = []
    for _ in range(7):
        r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        step()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        times.append((time.perf_counter() - t, r1.ru_utime - r0.ru_utime))
    backend = dispatcher.runtime().backend
    records = capture(step, dispatcher.runtime())
    tc.sync()
    one = tc.zeros(1)
    base = time_record(backend, ("fill", one._view, (), {"value": 0.0}), repeat, tries)
    per = collections.defaultdict(lambda: [0, 0.0])
    for r in records:
        t = max(time_record(backend, r, repeat, tries) - base, 0.0)
        k = kind(r[0], r[1], r[2])
        per[k][0] += 1
        per[k][1] += t
    wall = statistics.median(x[0] for x in times)
    user = statistics.median(x[1] for x in times)
    return wall, user, len(records), dict(per)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=("lenet", "lstm"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    import subprocess
    import sys
    import json
    if os.environ.get("_PROFILE_CHILD"):
        t = int(a.threads)
        wall, user, n, per = profile(a.model, t, a.repeat, a.tries)
        print(json.dumps({"wall": wall, "user": user, "n": n, "per": per}))
        return
    res = {}
    for t in map(int, a.threads.split(",")):
        out = subprocess.run([sys.executable, __file__, a.model, "--threads", str(t),
                              "--repeat", str(a.repeat), "--tries", str(a.tries)],
                             env=dict(os.environ, _PROFILE_CHILD="1"), capture_output=True,
                             text=True, check=True).stdout
        res[t] = json.loads(out.strip().splitlines()[-1])
    ts = sorted(res)
    print(f"load average {os.getloadavg()[0]:.2f}")
    for t in ts:
        r = res[t]
        tot = sum(v[1] for v in r["per"].values())
        print(f"{t} thread(s): step {r['wall'] * 1e3:.2f} ms (user CPU {r['user'] * 1e3:.2f} ms), "
              f"{r['n']} records, summed alone {tot * 1e3:.2f} ms")
    keys = sorted(res[ts[0]]["per"], key=lambda k: -res[ts[0]]["per"][k][1])
    print("| record | n | " + " | ".join(f"ms {t}t" for t in ts) + " | ratio |")
    print("|---|---|" + "---|" * len(ts) + "---|")
    for k in keys[:a.top]:
        row = [res[t]["per"].get(k, [0, 0.0])[1] * 1e3 for t in ts]
        ratio = row[-1] / row[0] if row[0] else 0
        print(f"| {k} | {res[ts[0]]['per'][k][0]} | " + " | ".join(f"{x:.3f}" for x in row)
              + f" | {ratio:.2f} |")


if __name__ == "__main__":
    main()
