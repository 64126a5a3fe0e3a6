"""Timing: warm up, then take medians of repeated samples (timeit-style autorange).

One *sample* is ``number`` back-to-back calls of the measured function divided
by ``number``; ``number`` is chosen after warm-up so that one sample lasts at
least ``min_sample_s`` (so a 2 µs op is not measured with a 1 µs clock step).
The figure reported is the median over samples; min and max are kept so the
spread is visible in the JSON. Every measured call is issue-to-result: the
function itself must end with the read / sync that makes its result usable.
"""

import math
import statistics
import time
from dataclasses import asdict, dataclass, field

perf_counter = time.perf_counter


@dataclass
class Timing:
    median_s: float
    min_s: float
    max_s: float
    samples: list = field(default_factory=list)   # seconds per call, one per sample
    number: int = 1                              # calls per sample
    warmup_calls: int = 1

    def as_dict(self):
        d = asdict(self)
        d["samples"] = [float(f"{s:.6g}") for s in self.samples]
        return d


@dataclass
class Budget:
    """How hard to measure: quick runs use a small budget, full runs a larger one."""
    repeat: int = 7            # timed samples wanted
    min_samples: int = 3       # never fewer, even past max_total_s
    min_sample_s: float = 5e-3
    warmup_s: float = 0.05     # keep calling during warm-up until this much time passed
    max_total_s: float = 6.0   # stop taking samples after this much (once min_samples)
    max_call_s: float = 30.0   # skip a case whose single call is projected to take longer

    @classmethod
    def quick(cls, repeat=None):
        return cls(repeat=repeat or 3, min_samples=min(2, repeat or 3), min_sample_s=2e-4,
                   warmup_s=2e-3, max_total_s=0.5, max_call_s=2.0)


def measure(fn, budget):
    """Median time of one call of fn() (seconds), after warm-up."""
    # warm-up: at least one call; keep going for warmup_s (first calls pack, allocate, compile)
    start = perf_counter()
    calls = 0
    last = 0.0
    while True:
        t0 = perf_counter()
        fn()
        last = perf_counter() - t0
        calls += 1
        if perf_counter() - start >= budget.warmup_s or calls >= 10000:
            break
    per_call = max(last, 1e-9)
    number = 1
    if per_call < budget.min_sample_s:
        number = min(100000, math.ceil(budget.min_sample_s / per_call))
    samples = []
    total = 0.0
    for _ in range(max(budget.repeat, 1)):
        t0 = perf_counter()
        for _ in range(number):
            fn()
        dt = perf_counter() - t0
        samples.append(dt / number)
        total += dt
        if total >= budget.max_total_s and len(samples) >= budget.min_samples:
            break
    return Timing(median_s=statistics.median(samples), min_s=min(samples), max_s=max(samples),
                  samples=samples, number=number, warmup_calls=calls)
