"""The benchmark suites: each is a list of ``Case``s built once and run on every impl.

A Case knows how to build a zero-argument callable for an implementation
(``build(impl)``) that performs one issue-to-result unit of work, how much work
that is (flops, bytes, ops or steps) and in which unit to report it, and
optionally the expected result (checked once per impl before timing, so a
fast-but-wrong kernel shows up as a MISMATCH instead of a win).

Input data is generated once per suite from a fixed seed (NumPy float32) and
shared by every implementation, so all of them compute the same thing.
"""

import functools
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

SEED = 1234

RATE_METRICS = ("GFLOPS", "GB/s")
TIME_METRICS = {"µs/op": 1e6, "ms/step": 1e3}


def metric_value(metric, work, seconds):
    if metric in RATE_METRICS:
        return work / seconds / 1e9
    return seconds / work * TIME_METRICS[metric]


def higher_is_better(metric):
    return metric in RATE_METRICS


@dataclass
class Case:
    suite: str
    name: str                 # op or model name ("matmul", "exp", "makemore", ...)
    label: str                # the size as printed ("1024", "16M", "4096x1024", "b32 h200")
    params: dict
    metric: str               # "GFLOPS", "GB/s", "µs/op", "ms/step" (memory: "MiB")
    work: float = 1.0         # flops / bytes / ops / steps done by one call
    build: Optional[Callable] = None       # build(impl) -> fn
    expected: Optional[Callable] = None    # () -> ndarray or float (what fn() must return)
    rtol: float = 1e-4
    atol: float = 1e-5
    run: Optional[Callable] = None         # custom measurement: run(impl, budget) -> values dict
    torchic_only: bool = False
    fresh_session: bool = False            # run in its own torchic.init (memory figures)
    extra: dict = field(default_factory=dict)


def human(n):
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def _rng(*key):
    return np.random.default_rng([SEED, *key])


def _randn(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


def check(got, expected, rtol, atol):
    """(ok, worst error relative to tolerance) of a result against the expected one."""
    got = np.asarray(got, dtype=np.float64)
    exp = np.asarray(expected, dtype=np.float64)
    if got.shape != exp.shape:
        if got.size == exp.size:
            got = got.reshape(exp.shape)
        else:
            return False, f"shape {got.shape} != {exp.shape}"
    err = np.abs(got - exp)
    bound = atol + rtol * np.abs(exp)
    if not np.all(np.isfinite(got) == np.isfinite(exp)):
        return False, "non-finite values differ"
    fin = np.isfinite(exp)
    worst = float(np.max(err[fin] / bound[fin])) if fin.any() else 0.0
    return worst <= 1.0, f"max err {float(np.max(err[fin])) if fin.any() else 0:.3g}"


# -- matmul ------------------------------------------------------------------------------------
def matmul_suite(ctx):
    sizes = [64, 128] if ctx["quick"] else [128, 256, 512, 1024, 2048, 4096]
    cases = []
    for n in sizes:
        data = functools.lru_cache(None)(lambda n=n: (_randn(_rng(1, n), n, n),
                                                      _randn(_rng(2, n), n, n)))

        def build(impl, data=data):
            a, b = data()
            return impl.kernel("matmul", impl.tensor(a), impl.tensor(b))

        expected = (lambda data=data: data()[0].astype(np.float64) @ data()[1]) \
            if n <= 1024 else None
        cases.append(Case("matmul", "matmul", str(n), {"n": n}, "GFLOPS", 2.0 * n ** 3, build,
                          expected, rtol=1e-4, atol=1e-3 * np.sqrt(n)))
    return cases


# -- elementwise -------------------------------------------------------------------------------
ELEMENTWISE = {  # op: (inputs, bytes moved per element)
    "add": (2, 12), "mul": (2, 12), "exp": (1, 8), "tanh": (1, 8), "copy": (1, 8),
}


def elementwise_suite(ctx):
    sizes = [1 << 10, 1 << 16] if ctx["quick"] else [1 << k for k in range(10, 27, 2)]
    cases = []
    arrays = functools.lru_cache(None)(lambda n, k: _randn(_rng(3, n, k), n))
    for op, (nin, nbytes) in ELEMENTWISE.items():
        for n in sizes:
            def build(impl, op=op, n=n, nin=nin):
                return impl.kernel(op, *[impl.tensor(arrays(n, k)) for k in range(nin)])

            def expected(op=op, n=n, nin=nin):
                xs = [arrays(n, k).astype(np.float64) for k in range(nin)]
                return {"add": np.add, "mul": np.multiply, "exp": np.exp, "tanh": np.tanh,
                        "copy": np.copy}[op](*xs)
            cases.append(Case("elementwise", op, human(n), {"numel": n}, "GB/s", float(nbytes * n),
                              build, expected if n <= 1 << 22 else None, rtol=1e-5, atol=1e-6,
                              extra={"elements": n}))
    return cases


# -- reduce ------------------------------------------------------------------------------------
def reduce_suite(ctx):
    quick = ctx["quick"]
    cases = []
    sums = [1 << 12, 1 << 16] if quick else [1 << 20, 1 << 24]
    for n in sums:
        data = functools.lru_cache(None)(lambda n=n: _rng(4, n).random(n, dtype=np.float32))
        cases.append(Case(
            "reduce", "sum", human(n), {"numel": n}, "GB/s", 4.0 * n,
            lambda impl, d=data: impl.kernel("sum", impl.tensor(d())),
            lambda d=data: d().astype(np.float64).sum(), rtol=1e-5, atol=0.0))
    shapes = [(64, 256)] if quick else [(4096, 1024)]
    if ctx["gpu"] and not quick:
        shapes.append((65536, 1024))   # 64M floats: the GPU bandwidth target
    for rows, cols in shapes:
        data = functools.lru_cache(None)(lambda r=rows, c=cols: _randn(_rng(5, r, c), r, c))

        def softmax_expected(d=data):
            a = d().astype(np.float64)
            e = np.exp(a - a.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        cases.append(Case(
            "reduce", "softmax", f"{rows}x{cols}", {"rows": rows, "cols": cols}, "GB/s",
            8.0 * rows * cols, lambda impl, d=data: impl.kernel("softmax", impl.tensor(d())),
            softmax_expected if rows * cols <= 1 << 22 else None, rtol=1e-4, atol=1e-7))
    for rows, cols in ([(64, 256)] if quick else [(4096, 1024)]):
        data = functools.lru_cache(None)(lambda r=rows, c=cols: (
            _randn(_rng(6, r, c), r, c), _rng(7, r, c).integers(0, c, r).astype(np.int32)))

        def ce_expected(d=data):
            a, t = d()
            a = a.astype(np.float64)
            m = a.max(axis=1)
            lse = np.log(np.exp(a - m[:, None]).sum(axis=1)) + m
            return (lse - a[np.arange(len(t)), t]).mean()

        def ce_build(impl, d=data):
            a, t = d()
            return impl.kernel("cross_entropy", impl.tensor(a), impl.tensor(t))
        cases.append(Case("reduce", "cross_entropy", f"{rows}x{cols}",
                          {"rows": rows, "cols": cols}, "GB/s", 4.0 * rows * cols, ce_build,
                          ce_expected, rtol=1e-4, atol=1e-5))
    return cases


# -- overhead ----------------------------------------------------------------------------------
CHAIN = 100


def overhead_suite(ctx):
    a_np = _randn(_rng(8), 32, 32)
    b_np = _randn(_rng(9), 32, 32)

    def latency(impl):
        a, b, read = impl.tensor(a_np), impl.tensor(b_np), impl.read
        return lambda: read(a + b)

    def chain(impl):
        a, b, read = impl.tensor(a_np), impl.tensor(b_np), impl.read

        def run():
            x = a
            for _ in range(CHAIN):
                x = x + b
            return read(x)
        return run

    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    return [
        Case("overhead", "add_latency", "32x32", {"shape": [32, 32], "ops": 1}, "µs/op", 1,
             latency, lambda: a64 + b64, rtol=1e-6, atol=1e-6),
        Case("overhead", "add_chain", f"32x32 x{CHAIN}", {"shape": [32, 32], "ops": CHAIN},
             "µs/op", CHAIN, chain, lambda: a64 + CHAIN * b64, rtol=1e-4, atol=1e-4),
    ]


# -- train: the makemore MLP -------------------------------------------------------------------
def makemore_settings(quick):
    base = {"context": 3, "emb": 10, "vocab": 27, "lr": 0.1, "examples": 20000}
    sizes = [(32, 200), (256, 64)] if quick else [(32, 200), (4096, 1024)]
    return [dict(base, batch=b, hidden=h) for b, h in sizes]


def makemore_label(cfg):
    return f"b{cfg['batch']} h{cfg['hidden']}"


@functools.lru_cache(None)
def _makemore_data_cached(context, emb, vocab, hidden, examples):
    rng = _rng(10, hidden)
    X = rng.integers(0, vocab, (examples, context)).astype(np.int32)
    Y = rng.integers(0, vocab, examples).astype(np.int32)
    fan_in = context * emb
    weights = [
        _randn(rng, vocab, emb),
        _randn(rng, fan_in, hidden) * np.float32((5 / 3) / fan_in ** 0.5),
        _randn(rng, hidden) * np.float32(0.01),
        _randn(rng, hidden, vocab) * np.float32(0.01),
        np.zeros(vocab, np.float32),
    ]
    return X, Y, weights


def makemore_data(cfg):
    """Synthetic token windows + initial weights (makemore part 2 init), seeded."""
    X, Y, weights = _makemore_data_cached(cfg["context"], cfg["emb"], cfg["vocab"],
                                          cfg["hidden"], cfg["examples"])
    return {"X": X, "Y": Y, "weights": weights, "seed": SEED}


def makemore_first_loss(cfg):
    """The float64 loss of the first step's batch (every impl must report it)."""
    d = makemore_data(cfg)
    C, W1, b1, W2, b2 = [w.astype(np.float64) for w in d["weights"]]
    ix = np.random.default_rng(d["seed"]).integers(0, len(d["Y"]), cfg["batch"])
    x = C[d["X"][ix]].reshape(cfg["batch"], -1)
    logits = np.tanh(x @ W1 + b1) @ W2 + b2
    m = logits.max(axis=1)
    lse = np.log(np.exp(logits - m[:, None]).sum(axis=1)) + m
    return float((lse - logits[np.arange(cfg["batch"]), d["Y"][ix]]).mean())


def train_suite(ctx):
    cases = []
    for cfg in makemore_settings(ctx["quick"]):
        cases.append(Case(
            "train", "makemore", makemore_label(cfg), dict(cfg), "ms/step", 1,
            lambda impl, cfg=cfg: impl.mlp_step(cfg, makemore_data(cfg)),
            lambda cfg=cfg: makemore_first_loss(cfg), rtol=1e-4, atol=1e-5))
    return cases


# -- memory ------------------------------------------------------------------------------------
def memory_suite(ctx):
    quick = ctx["quick"]
    cases = []
    for cfg in makemore_settings(quick):
        big = cfg["batch"] * cfg["hidden"] > 1 << 16
        steps, warm = (10, 3) if quick else ((10, 3) if big else (200, 20))
        cases.append(Case(
            "memory", "makemore", makemore_label(cfg), dict(cfg, steps=steps, warmup=warm),
            "MiB", run=functools.partial(_memory_run, cfg, steps, warm), torchic_only=True,
            fresh_session=True))
    return cases


def _memory_run(cfg, steps, warm, impl, budget):
    """Heap figures across a short training run, from torchic.memory() (exact, not sampled)."""
    import gc
    import time

    import torchic
    mib = 1 / 2 ** 20
    step = impl.mlp_step(cfg, makemore_data(cfg))
    for _ in range(warm):
        step()
    m0 = torchic.memory()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = time.perf_counter() - t0
    m1 = torchic.memory()
    del step
    gc.collect()
    torchic.sync()
    m2 = torchic.memory()
    recycled = m1["recycled_allocs"] - m0["recycled_allocs"]
    fresh = m1["fresh_allocs"] - m0["fresh_allocs"]
    total_allocs = m1["recycled_allocs"] + m1["fresh_allocs"]
    return {
        "peak_mib": m1["peak_bytes"] * mib,
        "in_use_mib": m1["bytes_in_use"] * mib,
        "heap_mib": m1["heap_capacity"] * mib,
        "arenas": m1["arenas"],
        "allocs_per_step": (recycled + fresh) / steps,
        "fresh_per_step": fresh / steps,
        "recycle_rate": recycled / max(recycled + fresh, 1),
        "recycle_rate_total": m1["recycled_allocs"] / max(total_allocs, 1),
        "live_tensors": m1["live_tensors"],
        "live_blocks": m1["live_blocks"],
        "after_free_mib": m2["bytes_in_use"] * mib,
        "live_tensors_after_free": m2["live_tensors"],
        "ms_per_step": elapsed / steps * 1e3,
        "steps": steps,
    }


SUITES = {
    "matmul": matmul_suite,
    "elementwise": elementwise_suite,
    "reduce": reduce_suite,
    "overhead": overhead_suite,
    "train": train_suite,
    "memory": memory_suite,
}
