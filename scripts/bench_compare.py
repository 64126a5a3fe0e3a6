"""Benchmark two commits in one session, interleaved, and compare them.

    python scripts/bench_compare.py BEFORE AFTER [--rounds 2] [--suites overhead,train,matmul,elementwise]

Each commit is cloned into a temporary folder and its Rust library built; then the bench
(`python -m torchic bench SUITES --backends workers,simd --refs numpy,torch`) runs for
BEFORE, AFTER, BEFORE, AFTER ... so that a drift of the machine hits both. Every torchic
figure is read as a time relative to NumPy's in the same run (same case, size and
threads), which cancels the drift the two sides share; the noise of a figure is how much
BEFORE's own rounds disagree. Prints the median ratio per suite and every figure beyond
max(noise, 15%).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATES = ("GFLOPS", "GB/s")


def checkout(rev, where):
    subprocess.run(["git", "clone", "-q", ROOT, where], check=True)
    subprocess.run(["git", "-C", where, "checkout", "-q", rev], check=True)
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=os.path.join(where, "kernels"),
                   check=True)
    os.replace(os.path.join(where, "kernels/target/release/libtorchic_kernels.so"),
               os.path.join(where, "src/torchic/backends/simd/_kernels.so"))


def bench(where, suites, out):
    env = dict(os.environ, PYTHONPATH=os.path.join(where, "src"))
    subprocess.run([sys.executable, "-m", "torchic", "bench", *suites, "--backends",
                    "workers,simd", "--refs", "numpy,torch", "--no-plots", "--quiet",
                    "--out", out], env=env, check=True)
    return relative_to_numpy(json.load(open(os.path.join(out, "results.json")))["records"])


def relative_to_numpy(records):
    def time_like(x):
        return 1 / x["value"] if x["metric"] in RATES else x["value"]
    numpy = {(x["suite"], x["case"], x["label"], x["threads"]): time_like(x)
             for x in records if x["impl"] == "numpy" and x.get("value")}
    out = {}
    for x in records:
        key = (x["suite"], x["case"], x["label"], x["threads"])
        if x.get("kind") == "torchic" and x.get("value") and key in numpy:
            out[key + (x["impl"],)] = time_like(x) / numpy[key]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--suites", default="overhead,train,matmul,elementwise")
    args = p.parse_args()
    if args.rounds < 2:
        p.error("--rounds must be at least 2 (the noise is the spread between rounds)")
    suites = args.suites.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {name: os.path.join(tmp, name) for name in ("before", "after")}
        for name, rev in (("before", args.before), ("after", args.after)):
            checkout(rev, trees[name])
        runs = {"before": [], "after": []}
        for r in range(args.rounds):
            for name in ("before", "after"):
                print(f"round {r + 1}: {name}", flush=True)
                runs[name].append(bench(trees[name], suites, os.path.join(tmp, f"{name}{r}")))
    keys = set.intersection(*(set(run) for side in runs.values() for run in side))
    rows = []
    for k in sorted(keys):
        before = [run[k] for run in runs["before"]]
        after = [run[k] for run in runs["after"]]
        noise = (max(before) - min(before)) / min(before)
        rows.append((k, min(after) / min(before), noise))
    print(f"\n{args.after} vs {args.before}: torchic time relative to NumPy, best of "
          f"{args.rounds} rounds each (< 1: faster after)")
    for suite in suites:
        rs = [(r, n) for k, r, n in rows if k[0] == suite]
        if rs:
            print(f"  {suite:12s} {len(rs):3d} figures: median {statistics.median(r for r, _ in rs):.3f}"
                  f" (range {min(r for r, _ in rs):.2f}-{max(r for r, _ in rs):.2f}); "
                  f"noise between rounds, median {statistics.median(n for _, n in rs):.2f}")
    beyond = [(k, r, n) for k, r, n in rows if r > 1 + max(n, 0.15)]
    print(f"  {len(beyond)} figures slower beyond max(noise, 15%)" + (":" if beyond else ""))
    for k, r, n in beyond:
        print(f"    {'/'.join(map(str, k)):55s} x{r:.2f} (noise {n:.0%})")


if __name__ == "__main__":
    main()
