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

from . import conv, gpt, lstm, scripts
from .impls import NotSupported

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
    # float64 (issue 40: simd's dgemm against NumPy's, 1024^3 and 2048^3 on 1 and 2 threads)
    for n in [64] if ctx["quick"] else [1024, 2048]:
        data64 = functools.lru_cache(None)(lambda n=n: (_randn(_rng(3, n), n, n).astype(np.float64),
                                                        _randn(_rng(4, n), n, n).astype(np.float64)))

        def build64(impl, data=data64):
            if getattr(impl, "kind", "") == "torchic" and impl.name == "webgpu":
                from .impls import NotSupported     # (impls imports this module)
                raise NotSupported("webgpu has no float64 (docs/DTYPES.md)")
            a, b = data()
            return impl.kernel("matmul", impl.tensor(a), impl.tensor(b))

        cases.append(Case("matmul", "matmul_f64", str(n), {"n": n, "dtype": "float64"},
                          "GFLOPS", 2.0 * n ** 3, build64,
                          (lambda data=data64: data()[0] @ data()[1]) if n <= 1024 else None,
                          rtol=1e-10, atol=1e-10 * np.sqrt(n)))
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
    # a bias gradient: (B*T, C) summed over its rows, the reduced elements C apart (a GPT
    # step's Linear layers: C 384 and 4C)
    for rows, cols in ([(256, 64)] if quick else [(16384, 384), (16384, 1536)]):
        data = functools.lru_cache(None)(lambda r=rows, c=cols: _randn(_rng(8, r, c), r, c))
        cases.append(Case(
            "reduce", "sum0", f"{rows}x{cols}", {"rows": rows, "cols": cols}, "GB/s",
            4.0 * rows * cols, lambda impl, d=data: impl.kernel("sum0", impl.tensor(d())),
            lambda d=data: d().astype(np.float64).sum(axis=0), rtol=1e-5,
            atol=2e-7 * rows))     # (NumPy adds the rows one by one in float32)
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
    return cases + fused_cases(ctx)


# -- the fused transformer ops (GB/s against copy's) ---------------------------------------------
FUSED = {  # op: bytes per element forward; forward + backward
    "layer_norm": (8, 20), "gelu": (8, 20), "causal_softmax": (8, 28),
}


def fused_cases(ctx):
    quick = ctx["quick"]
    cases = []
    for op, (fbytes, gbytes) in FUSED.items():
        shape = ((2, 32, 32) if quick else (16, 256, 256)) if op == "causal_softmax" \
            else ((64, 256) if quick else (4096, 1024))
        n = int(np.prod(shape))
        data = functools.lru_cache(None)(lambda s=shape: _randn(_rng(8, *s), *s))
        for grad, nbytes in ((False, fbytes), (True, gbytes)):
            def build(impl, op=op, d=data, grad=grad):
                return impl.fused(op, d(), grad)
            cases.append(Case("reduce", op + ("+grad" if grad else ""), "x".join(map(str, shape)),
                              {"numel": n}, "GB/s", float(nbytes * n), build))
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
    return [*eager_cases(ctx),
        Case("overhead", "add_latency", "32x32", {"shape": [32, 32], "ops": 1}, "µs/op", 1,
             latency, lambda: a64 + b64, rtol=1e-6, atol=1e-6),
        Case("overhead", "add_chain", f"32x32 x{CHAIN}", {"shape": [32, 32], "ops": CHAIN},
             "µs/op", CHAIN, chain, lambda: a64 + CHAIN * b64, rtol=1e-4, atol=1e-4),
    ]


# eager small-program paths (issue 45): what a lecture script's get_batch and hand-written
# backward do per call, each checked against NumPy (float64) before timing
EAGER_N = 32


def _lib(impl):
    if impl.kind == "torchic":
        import torchic
        return torchic
    if not impl.name.startswith("torch"):
        raise NotSupported(f"{impl.name}: these rows time torch-spelled programs")
    import torch
    return torch


def eager_cases(ctx):
    rows_np = _randn(_rng(10), EAGER_N, 8)
    data_np = np.arange(1000, dtype=np.int64)
    at, width = 5, 8

    def stack(impl):
        rows, lib, read = [impl.tensor(r) for r in rows_np], _lib(impl), impl.read
        return lambda: read(lib.stack(rows))

    def slice0d(impl):
        data, i, read, _ = impl.tensor(data_np), impl.tensor(np.array(at)), impl.read, _lib(impl)
        return lambda: read(data[i:i + width])

    def iterate(impl):
        v, read, _ = impl.tensor(rows_np[:, 0]), impl.read, _lib(impl)
        return lambda: read(list(v)[-1])

    def add_at(impl):
        table, ix, v = (impl.tensor(np.zeros((27, 8), np.float32)), impl.tensor(np.array(3)),
                        impl.tensor(rows_np[0]))

        def run():
            table[ix] += v
            return read(table[ix])
        read, _ = impl.read, _lib(impl)
        return run

    r64 = rows_np.astype(np.float64)
    return [
        Case("overhead", "stack", f"{EAGER_N}x(8,)", {"n": EAGER_N, "shape": [8]}, "µs/op", 1,
             stack, lambda: r64, rtol=0, atol=1e-6),
        Case("overhead", "slice_0d_bound", f"[i:i+{width}]", {"width": width}, "µs/op", 1,
             slice0d, lambda: data_np[at:at + width].astype(np.float64), rtol=0, atol=1e-6),
        Case("overhead", "iterate", f"list(t) {EAGER_N}", {"n": EAGER_N}, "µs/op", 1,
             iterate, lambda: r64[-1, 0], rtol=0, atol=1e-6),
        # (the result grows with every call: checked loosely, once, before timing)
        Case("overhead", "index_add_0d", "t[ix] += v", {"shape": [27, 8]}, "µs/op", 1,
             add_at, None),
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
    for cfg in transformer_settings(ctx["quick"]):
        cases.append(Case(
            "train", "transformer", transformer_label(cfg), dict(cfg), "ms/step", 1,
            lambda impl, cfg=cfg: impl.transformer_step(cfg, transformer_data(cfg)),
            lambda cfg=cfg: transformer_first_loss(cfg), rtol=1e-4, atol=1e-5))
    cases += gpt_cases(ctx, "train")
    # issue 45: the lecture scripts of tests/programs/, whole loop body, torch and torchic
    return cases + scripts.script_cases(ctx, Case)


# -- train: the nanoGPT-shaped GPT (issue 17) --------------------------------------------------
def gpt_settings(ctx):
    """The small GPT everywhere; issue 45's two CPU models (nanoGPT's CPU recipe and a
    makemore-style one, no dropout) unless quick, on CPU implementations only (Impl.
    gpt_size_check); nanoGPT's shakespeare_char size (6 x 384,
    T 256, batch 64) when a real GPU is in the run, and only on GPU implementations (~1
    TFLOP a step)."""
    cpu = [] if ctx["quick"] else list(gpt.CPU_MODELS.values())
    return [gpt.SMALL] + cpu + ([gpt.FULL] if ctx["gpu"] and not ctx["quick"] else [])


@functools.lru_cache(None)
def gpt_data():
    """(tokens, vocab) of the bundled names text (the `names` package)."""
    return gpt.encode(gpt.names_text())


def gpt_cases(ctx, suite):
    """The gpt rows of `suite`: "train" steps eagerly; "compile" records torchic's step with
    torchic.compile (the references stay eager; torch-compile and torch-cuda-compile use
    torch.compile).
    Dropout draws differ per library, so the first-step check is a bound, not a match:
    with nanoGPT's init (std 0.02) the first loss is ln(vocab) within a few percent (the
    exact match with PyTorch is tests/bench/test_gpt_vs_torch.py, masks shared)."""
    def build(impl, cfg):
        return impl.gpt_step(cfg, compiled=suite == "compile" and impl.kind == "torchic")
    return [Case(suite, "gpt", gpt.label(cfg), dict(cfg), "ms/step", 1,
                 lambda impl, cfg=cfg: build(impl, cfg), lambda: float(np.log(gpt_data()[1])),
                 rtol=0.05, atol=0.0)
            for cfg in gpt_settings(ctx)]


# -- compile: torchic.compile against eager references (issue 16) ---------------------------
def compile_suite(ctx):
    """The overhead chain, the makemore, LeNet, LSTM LM and GPT steps, torchic compiled
    (torchic.compile) against the references' eager figures (PyTorch eager, the hand-written
    NumPy step) and torch.compile's where asked for (--refs torch-compile)."""
    a_np, b_np = _randn(_rng(8), 32, 32), _randn(_rng(9), 32, 32)

    def chain(impl):
        a, b = impl.tensor(a_np), impl.tensor(b_np)
        if impl.kind == "torchic":
            return impl.chain(a, b, CHAIN, compiled=True)

        def run():
            x = a
            for _ in range(CHAIN):
                x = x + b
            return impl.read(x)
        return run

    def step(impl, cfg):
        if impl.kind == "torchic":
            return impl.mlp_step(cfg, makemore_data(cfg), compiled=True)
        return impl.mlp_step(cfg, makemore_data(cfg))

    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    cases = [Case("compile", "add_chain", f"32x32 x{CHAIN}", {"shape": [32, 32], "ops": CHAIN},
                  "µs/op", CHAIN, chain, lambda: a64 + CHAIN * b64, rtol=1e-4, atol=1e-4)]
    for cfg in makemore_settings(ctx["quick"]):
        cases.append(Case(
            "compile", "makemore", makemore_label(cfg), dict(cfg), "ms/step", 1,
            lambda impl, cfg=cfg: step(impl, cfg),
            lambda cfg=cfg: makemore_first_loss(cfg), rtol=1e-4, atol=1e-5))
    return cases + net_cases(ctx) + gpt_cases(ctx, "compile")


def net_cases(ctx):
    """The LeNet and LSTM LM steps of issue 42 under torchic.compile (issue 45: against
    torch.compile's, `--refs torch-compile`; PyTorch eager beside them)."""
    lenet_cfg = conv.QUICK_LENET if ctx["quick"] else conv.LENET
    lstm_cfg = lstm.QUICK if ctx["quick"] else lstm.CFG

    def compiled(impl):
        return impl.kind == "torchic"
    return [
        Case("compile", "lenet", conv.lenet_label(lenet_cfg), dict(lenet_cfg), "ms/step", 1,
             lambda impl: impl.lenet_step(lenet_cfg, compiled(impl)),
             lambda: conv.lenet_first_loss(lenet_cfg), rtol=1e-4, atol=1e-4),
        Case("compile", "lstm_lm", lstm.label(lstm_cfg), dict(lstm_cfg), "ms/step", 1,
             lambda impl: impl.lstm_step(lstm_cfg, compiled(impl)),
             lambda: lstm.first_loss(lstm_cfg), rtol=1e-4, atol=1e-5)]


# -- train: a makemore-style Transformer -------------------------------------------------------
def transformer_settings(quick):
    """makemore's Transformer (n_layer 4, n_head 4, n_embd 64, block 16, batch 32) and a
    small one; AdamW as makemore trains it."""
    base = {"vocab": 27, "lr": 5e-4, "weight_decay": 0.01, "betas": (0.9, 0.99), "eps": 1e-8,
            "examples": 4096}
    sizes = [(2, 2, 16, 8, 8)] if quick else [(2, 2, 16, 8, 8), (4, 4, 64, 16, 32)]
    return [dict(base, n_layer=L, n_head=H, n_embd=C, block=T, batch=B) for L, H, C, T, B in sizes]


def transformer_label(cfg):
    return f"L{cfg['n_layer']} C{cfg['n_embd']} T{cfg['block']} b{cfg['batch']}"


def transformer_param_names(n_layer):
    names = ["wte", "wpe"]
    for i in range(n_layer):
        names += [f"h{i}.{p}" for p in ("ln1.w", "ln1.b", "attn.w", "attn.b", "proj.w",
                                        "proj.b", "ln2.w", "ln2.b", "fc.w", "fc.b", "fcp.w",
                                        "fcp.b")]
    return names + ["lnf.w", "lnf.b", "head.w"]


@functools.lru_cache(None)
def _transformer_data_cached(vocab, block, n_embd, n_layer, examples):
    rng = _rng(11, n_embd, n_layer)
    seqs = rng.integers(0, vocab, (examples, block + 1)).astype(np.int32)
    C = n_embd
    # PyTorch's default scales (embeddings N(0, 1), weights ~ 1/sqrt(fan_in)), so the first
    # loss is far from log(vocab) and the first-step check means something
    shapes = {"wte": (vocab, C), "wpe": (block, C), "lnf.w": (C,), "lnf.b": (C,),
              "head.w": (C, vocab)}
    for i in range(n_layer):
        shapes.update({f"h{i}.ln1.w": (C,), f"h{i}.ln1.b": (C,), f"h{i}.attn.w": (C, 3 * C),
                       f"h{i}.attn.b": (3 * C,), f"h{i}.proj.w": (C, C), f"h{i}.proj.b": (C,),
                       f"h{i}.ln2.w": (C,), f"h{i}.ln2.b": (C,), f"h{i}.fc.w": (C, 4 * C),
                       f"h{i}.fc.b": (4 * C,), f"h{i}.fcp.w": (4 * C, C), f"h{i}.fcp.b": (C,)})
    weights = []
    for name in transformer_param_names(n_layer):
        shape = shapes[name]
        if name in ("wte", "wpe"):
            w = _randn(rng, *shape)
        elif name.endswith("ln1.w") or name.endswith("ln2.w") or name == "lnf.w":
            w = (1 + 0.1 * _randn(rng, *shape)).astype(np.float32)
        elif len(shape) == 2:
            w = _randn(rng, *shape) * np.float32(1 / shape[0] ** 0.5)
        else:
            w = _randn(rng, *shape) * np.float32(0.1)
        weights.append(w)
    return seqs[:, :-1].copy(), seqs[:, 1:].copy(), weights


def transformer_data(cfg):
    """Random token windows, their next tokens and the initial weights, seeded."""
    X, Y, weights = _transformer_data_cached(cfg["vocab"], cfg["block"], cfg["n_embd"],
                                             cfg["n_layer"], cfg["examples"])
    return {"X": X, "Y": Y, "weights": weights, "seed": SEED}


def transformer_first_loss(cfg):
    """The float64 loss of the first step's batch, the forward written in NumPy."""
    d = transformer_data(cfg)
    P = dict(zip(transformer_param_names(cfg["n_layer"]),
                 [w.astype(np.float64) for w in d["weights"]]))
    ix = np.random.default_rng(d["seed"]).integers(0, len(d["Y"]), cfg["batch"])
    idx, Y = d["X"][ix], d["Y"][ix]
    B, T = idx.shape
    C, nh = cfg["n_embd"], cfg["n_head"]
    hs = C // nh

    def layer_norm(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * w + b

    def softmax(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    x = P["wte"][idx] + P["wpe"][:T]
    mask = np.tril(np.ones((T, T), bool))
    for i in range(cfg["n_layer"]):
        p = lambda name, i=i: P[f"h{i}.{name}"]   # noqa: E731
        qkv = layer_norm(x, p("ln1.w"), p("ln1.b")) @ p("attn.w") + p("attn.b")
        q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
                   for j in range(3))
        att = np.where(mask, q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs), -np.inf)
        y = (softmax(att) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ p("proj.w") + p("proj.b")
        h = layer_norm(x, p("ln2.w"), p("ln2.b")) @ p("fc.w") + p("fc.b")
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
        x = x + h @ p("fcp.w") + p("fcp.b")
    logits = (layer_norm(x, P["lnf.w"], P["lnf.b"]) @ P["head.w"]).reshape(B * T, -1)
    m = logits.max(axis=1)
    lse = np.log(np.exp(logits - m[:, None]).sum(axis=1)) + m
    return float((lse - logits[np.arange(B * T), Y.reshape(-1)]).mean())


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


# -- lstm: the LSTM language model (issue 42) ----------------------------------------------------
def lstm_suite(ctx):
    """One Adam step of bench/lstm.py's character LSTM LM (2 layers, hidden 256, T 64, b 32),
    torchic beside PyTorch CPU at the same thread counts."""
    cfg = lstm.QUICK if ctx["quick"] else lstm.CFG
    return [Case("lstm", "lstm_lm", lstm.label(cfg), dict(cfg), "ms/step", 1,
                 lambda impl, cfg=cfg: impl.lstm_step(cfg), lambda cfg=cfg: lstm.first_loss(cfg),
                 rtol=1e-4, atol=1e-5)]


SUITES = {
    "matmul": matmul_suite,
    "elementwise": elementwise_suite,
    "reduce": reduce_suite,
    "overhead": overhead_suite,
    "train": train_suite,
    "compile": compile_suite,
    "memory": memory_suite,
    # issue 42: LeNet training step and a ResNet-shaped conv2d (bench/conv.py)
    "conv": lambda ctx: conv.conv_suite(ctx, Case),
    "lstm": lstm_suite,
}

# dataloader workers (utils/data): its own module, registered here
from .loader import loader_suite  # noqa: E402

SUITES["loader"] = loader_suite
