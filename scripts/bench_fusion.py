"""Issue 45's compiled training steps: torchic.compile (simd) beside torch.compile on CPU,
and a profile of torchic's recorded step (time per kernel, share of the step).

The two models of the issue's table, bench/gpt.py's nanoGPT module, AdamW, no dropout:
    nanogpt:  4 layers, 4 heads, 128 wide, block 64, batch 12 (nanoGPT's CPU recipe)
    makemore: 4 layers, 4 heads, 64 wide, block 16, batch 32

    PYTHONPATH=src python scripts/bench_fusion.py [--threads 1,2] [--rounds 5] [--steps 20]
        [--models nanogpt,makemore] [--no-torch] [--profile] [--memory]

Timing: per thread count, every implementation is built and warmed up, then measured in
`rounds` interleaved rounds of `steps` steps each (the machine's load hits them alike); the
figure is the median step time (ms), the batch draw and the loss read (.item()) included,
as bench/gpt.py's training_step does. The load average is printed beside the table.

--profile: each record of torchic's recorded program (forward, backward, AdamW update) is
run alone, `repeat` copies packed into one program, timed (the fastest of 7 pushes, less a
push's own cost); the table lists
time per op kind (and the largest single records), the share of the sum, and the whole
program's time beside that sum (the rest: what running ops back to back saves or costs).
--memory: the recorded programs' peak temporary bytes beside eager mode's peak heap use.
"""

import argparse
import collections
import os
import statistics
import time

import numpy as np


def gpt_data():
    """(tokens, vocab): the bench's names text, or where the `names` package is missing
    (a bare machine) a seeded random text over the same 27 symbols (timing only)."""
    from torchic.bench import suites
    try:
        return suites.gpt_data()
    except ModuleNotFoundError:
        rng = np.random.default_rng(0)
        return rng.integers(0, 27, 800_000).astype(np.int32), 27


def config(name):
    from torchic.bench import gpt
    return gpt.CPU_MODELS[name]


def torchic_step(cfg, compiled=True, fuse=True):
    """step() -> loss: one training step of torchic's GPT at cfg (step.compiled: the
    Compiled object, or None); fuse=False records it with fusion off (TORCHIC_SIMD_FUSE=0
    while the program is prepared: the state before fusion, in the same run)."""
    import torchic as tc
    from torchic.bench import gpt, suites
    tc.manual_seed(suites.SEED)
    data, vocab = gpt_data()
    model = gpt.build(tc, cfg, vocab)
    model.train()
    opt = gpt.optimizer(tc, model, cfg)
    train = gpt.train_fn(tc, model, opt, 0.0)
    comp = tc.compile(train) if compiled else None
    fn = comp or train
    batches = gpt.Batches(data, cfg["block"], cfg["batch"])

    def step():
        xb, yb = batches.get("train")
        return fn(tc.tensor(xb), tc.tensor(yb)).item()
    step.compiled = comp
    if not fuse:
        saved = os.environ.get("TORCHIC_SIMD_FUSE")
        os.environ["TORCHIC_SIMD_FUSE"] = "0"
        try:
            for _ in range(2):      # warm-up and recording
                step()
        finally:
            if saved is None:
                del os.environ["TORCHIC_SIMD_FUSE"]
            else:
                os.environ["TORCHIC_SIMD_FUSE"] = saved
    return step


def torch_step(cfg, compiled=True):
    import torch
    from torchic.bench import gpt, impls, suites
    if compiled:
        impls.reset_dynamo()    # (a clean cache: see impls.TorchCompileImpl)
    torch.manual_seed(suites.SEED)
    step = gpt.training_step(torch, cfg, *gpt_data(),
                             compile=torch.compile if compiled else None, schedule=False)

    def run():
        with torch.enable_grad():
            return step()
    return run


def timed(step, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
    return out


def measure(models, threads, rounds, steps, with_torch, eager):
    """{(model, threads, impl): median ms}"""
    import torch

    import torchic as tc
    results = {}
    for t in threads:
        tc.init("simd", threads=t)
        torch.set_num_threads(t)
        for name in models:
            cfg = config(name)
            impls = {"torchic.compile": torchic_step(cfg),
                     "torchic.compile unfused": torchic_step(cfg, fuse=False)}
            if eager:
                impls["torchic eager"] = torchic_step(cfg, compiled=False)
            if with_torch:
                impls["torch.compile"] = torch_step(cfg)
                if eager:
                    impls["torch eager"] = torch_step(cfg, compiled=False)
            for step in impls.values():
                timed(step, 5)      # warm-up: records / compiles
            samples = collections.defaultdict(list)
            for _ in range(rounds):
                for key, step in impls.items():
                    samples[key] += timed(step, steps)
            for key, s in samples.items():
                results[(name, t, key)] = statistics.median(s) * 1e3
                print(f"{name} threads {t} {key}: {results[(name, t, key)]:.2f} ms "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
    return results


def print_table(results, models, threads):
    impls = list(dict.fromkeys(k[2] for k in results))
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| model | threads | " + " | ".join(impls) +
          (" | torchic.compile / torch.compile |" if "torch.compile" in impls else " |"))
    print("|---|---|" + "---|" * len(impls) + ("---|" if "torch.compile" in impls else ""))
    for name in models:
        for t in threads:
            row = [results[(name, t, k)] for k in impls]
            ratio = ""
            if "torch.compile" in impls:
                ratio = f" {results[(name, t, 'torchic.compile')] / results[(name, t, 'torch.compile')]:.2f}x |"
            print(f"| {name} | {t} | " + " | ".join(f"{x:.1f}" for x in row) + " |" + ratio)


# -- profile ---------------------------------------------------------------------------------
def _programs(comp):
    from torchic.compile import _Graph, Program
    for entry in comp.programs.values():
        if isinstance(entry, Program):
            yield "step", entry
        elif isinstance(entry, _Graph):
            yield "forward", entry.forward
            for subset, (_, program) in entry.segments.items():
                yield f"backward{list(subset)}", program


def _push_time(backend, records, repeat, tries=7):
    import torchic as tc
    packed = backend.pack(records * repeat)
    try:
        best = []
        for _ in range(tries):
            t = time.perf_counter()
            backend.push_packed(packed)
            tc.sync()
            best.append(time.perf_counter() - t)
        return min(best)        # (the least disturbed by the machine's other load)
    finally:
        backend.release_packed(packed)


def _kind(op, out, inputs):
    shapes = " ".join("x".join(map(str, v.shape)) or "()" for v in (out,) + tuple(inputs))
    return f"{op} {shapes}"


def profile(name, threads, repeat=20):
    import torchic as tc
    from torchic import dispatcher
    tc.init("simd", threads=threads)
    step = torchic_step(config(name))
    for _ in range(4):
        step()
    backend = dispatcher.runtime().backend
    whole = statistics.median(timed(step, 15)) * 1e3
    # the cost of a push and sync alone (a 1-element fill, repeated)
    one = tc.zeros(1)
    fill = [("fill", one._view, (), {"value": 0.0})]
    base = _push_time(backend, fill, 1)
    per_fill = (_push_time(backend, fill, 200) - base) / 199
    by_op = collections.defaultdict(lambda: [0, 0.0])
    by_record = collections.defaultdict(lambda: [0, 0.0])
    prog_total = 0.0
    for label, program in _programs(step.compiled):
        records = program.records
        t_prog = _push_time(backend, records, 1) - base + per_fill
        prog_total += t_prog
        for r in records:
            t = max((_push_time(backend, [r], repeat) - base) / repeat, 0.0)
            by_op[r[0]][0] += 1
            by_op[r[0]][1] += t
            k = _kind(r[0], r[1], r[2])
            by_record[k][0] += 1
            by_record[k][1] += t
    total = sum(v[1] for v in by_op.values())
    print(f"\n### {name}, {threads} thread(s): step {whole:.2f} ms (replay, batch draw and "
          f".item() included); programs pushed whole {prog_total * 1e3:.2f} ms; "
          f"records timed alone, summed {total * 1e3:.2f} ms; load average "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| op | records | ms per step | share of the summed records |")
    print("|---|---|---|---|")
    for op, (n, t) in sorted(by_op.items(), key=lambda kv: -kv[1][1]):
        print(f"| {op} | {n} | {t * 1e3:.3f} | {t / total:.1%} |")
    print("\nlargest records (op, out and input shapes):\n")
    print("| record | count | ms per step | share |")
    print("|---|---|---|---|")
    for k, (n, t) in sorted(by_record.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f"| {k} | {n} | {t * 1e3:.3f} | {t / total:.1%} |")


def memory(name):
    """Peak heap bytes above the resting state (parameters, grads, AdamW's moments) during
    an eager step, beside the compiled program's block plan for its temporaries."""
    import torchic as tc
    rows = {}
    for compiled in (False, True):
        tc.init("simd", threads=1)
        step = torchic_step(config(name), compiled=compiled)
        for _ in range(3):
            step()
        tc.sync()
        rest = tc.memory()["bytes_in_use"]
        from torchic import dispatcher
        alloc = dispatcher.runtime().allocator
        alloc.peak = alloc.in_use
        step()
        tc.sync()
        m = tc.memory()
        rows[compiled] = (rest, m["peak_bytes"] - rest, m["compiled_plan_bytes"])
    (rest, eager_peak, _), (_, _, plan) = rows[False], rows[True]
    print(f"| {name} | {rest / 2**20:.2f} | {eager_peak / 2**20:.2f} | {plan / 2**20:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default="nanogpt,makemore")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--eager", action="store_true", help="eager rows too")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--memory", action="store_true")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    models = a.models.split(",")
    if a.profile:
        for name in models:
            for t in threads:
                profile(name, t)
        return
    if a.memory:
        print("| model | resting state, eager (MiB) | eager step's peak above it (MiB) | "
              "compiled program's temporaries (MiB) |\n|---|---|---|---|")
        for name in models:
            memory(name)
        return
    results = measure(models, threads, a.rounds, a.steps, not a.no_torch, a.eager)
    print_table(results, models, threads)


if __name__ == "__main__":
    main()
