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
from dataclasses import asdict, dataclass, field, replace

perf_counter = time.perf_counter


def _nothing():
    pass


@dataclass
class Timing:
    median_s: float
    min_s: float
    max_s: float
    samples: list = field(default_factory=list)   # seconds per call, one per sample
    number: int = 1                              # calls per sample
    warmup_calls: int = 1

    def with_median(self, median_s):
        """The same samples, reporting another median (a GPU-timestamp figure)."""
        return replace(self, median_s=median_s)

    def as_dict(self, keep_samples=32):
        """JSON form: summary figures, plus every sample when there are few of them."""
        d = asdict(self)
        ordered = sorted(self.samples)
        d["n_samples"] = len(ordered)
        d["p10_s"] = ordered[int(0.1 * (len(ordered) - 1))]
        d["p90_s"] = ordered[int(0.9 * (len(ordered) - 1))]
        if len(self.samples) <= keep_samples:
            d["samples"] = [float(f"{x:.6g}") for x in self.samples]
        else:
            del d["samples"]
        return d


@dataclass
class Budget:
    """How hard to measure: quick runs use a small budget, full runs a larger one.

    Sampling goes on until at least ``repeat`` samples *and* ``min_total_s`` of
    timed calls are in, so a 20 µs op gets thousands of short samples (its median
    shrugs off the millisecond tails of thread hand-offs) and a 2 s matmul gets
    ``repeat`` samples, or ``min_samples`` once ``max_total_s`` has passed.
    """
    repeat: int = 7            # timed samples wanted (at least)
    min_samples: int = 3       # never fewer, even past max_total_s
    min_sample_s: float = 2e-4  # calls per sample chosen so one sample lasts this long
    min_total_s: float = 0.3   # keep sampling until this much time was timed
    warmup_s: float = 0.05     # keep calling during warm-up until this much time passed
    max_total_s: float = 6.0   # stop taking samples after this much (once min_samples)
    max_call_s: float = 30.0   # skip a case whose single call is projected to take longer
    max_samples: int = 20000
    gpu_sample_s: float = 0.02  # queued GPU work per sample (one sync per sample)

    def per_round(self, rounds):
        """The share of this budget for one of `rounds` interleaved rounds."""
        if rounds <= 1:
            return self
        return replace(self, repeat=max(self.min_samples, math.ceil(self.repeat / rounds)),
                       min_total_s=self.min_total_s / rounds,
                       max_total_s=self.max_total_s / rounds)

    @classmethod
    def quick(cls, repeat=None):
        return cls(repeat=repeat or 3, min_samples=min(2, repeat or 3), min_sample_s=1e-4,
                   min_total_s=0.02, warmup_s=3e-3, max_total_s=0.5, max_call_s=2.0,
                   gpu_sample_s=0.004)


def measure(fn, budget, sync=None, min_sample_s=None):
    """Median time of one call of fn() (seconds), after warm-up.

    sync: called once at the end of every sample (and after every warm-up call), for
    implementations whose calls only queue work (GPU streams): the sample then times
    ``number`` queued calls plus the wait for all of them.
    """
    min_sample_s = budget.min_sample_s if min_sample_s is None else min_sample_s
    sync = sync or _nothing
    # warm-up: at least one call; keep going for warmup_s (first calls pack, allocate, compile)
    start = perf_counter()
    calls = 0
    fastest = math.inf
    while True:
        t0 = perf_counter()
        fn()
        sync()
        dt = perf_counter() - t0
        calls += 1
        if calls > 1 or dt < fastest:   # the first call may pack / compile: not an estimate
            fastest = min(fastest, dt) if calls > 1 else dt
        if perf_counter() - start >= budget.warmup_s or calls >= 10000:
            break
    per_call = max(fastest, 1e-9)
    number = 1
    if per_call < min_sample_s:
        number = min(100000, math.ceil(min_sample_s / per_call))
    if sync is not _nothing and number > 1:
        # queued calls overlap: a synced call overstates a queued one, so calibrate again
        for _ in range(3):
            t0 = perf_counter()
            for _ in range(number):
                fn()
            sync()
            dt = perf_counter() - t0
            if dt >= 0.5 * min_sample_s or number >= 100000:
                break
            number = min(100000, math.ceil(number * min_sample_s / max(dt, 1e-9)))
    samples = []
    total = 0.0
    while True:
        t0 = perf_counter()
        for _ in range(number):
            fn()
        sync()
        dt = perf_counter() - t0
        samples.append(dt / number)
        total += dt
        n = len(samples)
        if n >= budget.min_samples and (total >= budget.max_total_s or n >= budget.max_samples):
            break
        if n >= budget.repeat and total >= budget.min_total_s:
            break
    return Timing(median_s=statistics.median(samples), min_s=min(samples), max_s=max(samples),
                  samples=samples, number=number, warmup_calls=calls)


def pooled(timings):
    """One Timing from the samples of several rounds (the median of all of them)."""
    samples = [s for t in timings for s in t.samples]
    return Timing(median_s=statistics.median(samples), min_s=min(samples), max_s=max(samples),
                  samples=samples, number=max(t.number for t in timings),
                  warmup_calls=sum(t.warmup_calls for t in timings))
