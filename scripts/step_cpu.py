"""The calling thread's CPU time per training step of the eager-overhead rows (issue 45):
the bigram.py and gpt.py script steps (tests/programs/) and the bench's LeNet step, on one
backend at one thread count. Thread CPU time (time.thread_time) is what the load of a
shared machine inflates least; run the old and new trees alternately to compare them.

    PYTHONPATH=$PWD/src python scripts/step_cpu.py                  # bigram gpt lenet, simd
    PYTHONPATH=$PWD/src python scripts/step_cpu.py gpt --profile tottime   # cProfile instead

(docs/perf/eager_overhead.md: the figures and what they led to.)
"""

import argparse
import cProfile
import pstats
import statistics
import time


def make_step(name, tc):
    """fn(): one training step of `name` ("bigram", "gpt" or "lenet") on torchic `tc`."""
    if name == "lenet":
        from torchic.bench import conv
        return conv.model_step("lenet", tc)
    from torchic.bench import scripts

    class Impl:
        kind = name = "torchic"
    return scripts.build(name, Impl)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", default=["bigram", "gpt", "lenet"])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--backend", default="simd")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", default=None, metavar="SORT",
                   help="print a cProfile of the steps sorted by SORT (tottime, cumtime)")
    a = p.parse_args()
    import torchic as tc
    tc.init(a.backend, threads=a.threads)
    for name in a.names:
        step = make_step(name, tc)
        for _ in range(20):
            step()
        if a.profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(a.steps):
                step()
            prof.disable()
            pstats.Stats(prof).sort_stats(a.profile).print_stats(40)
            continue
        times = []
        for _ in range(a.steps):
            t = time.thread_time()
            step()
            times.append(time.thread_time() - t)
        times.sort()
        print(f"{name}: thread CPU per step, ms: median {statistics.median(times) * 1e3:.3f}, "
              f"p25 {times[len(times) // 4] * 1e3:.3f}, min {times[0] * 1e3:.3f}")


if __name__ == "__main__":
    main()
