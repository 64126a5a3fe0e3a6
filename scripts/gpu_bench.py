#!/usr/bin/env python3
"""The webgpu backend's GPU table in one run (issue 6): matmul TFLOPS, bandwidth, makemore.

    python scripts/gpu_bench.py                 # full table (a real GPU)
    python scripts/gpu_bench.py --quick         # small sizes (lavapipe / CI machine)
    python scripts/gpu_bench.py --tune          # also sweep every matmul tile config

On the device machine:  . .gl/gpu-env; python3 scripts/gpu_bench.py --tune
Writes gpu_bench.json and gpu_bench.md to $OUT (or ./bench-results).

What is measured, and how
* matmul n^3 (f32): GPU timestamps around `reps` back-to-back matmuls in one compute
  pass (timestamp-query), median of 5; beside torch CUDA fp32 sgemm
  (allow_tf32=False) timed with CUDA events, median of 5, in the same process.
* bandwidth: elementwise add (2 reads + 1 write) and softmax rows (1 read + 1 write)
  over 64M floats, as a fraction of the copy bandwidth measured in the same run
  (the best of a shader copy of 64M floats and copy_buffer_to_buffer).
* makemore MLP training steps/s (embedding C[X] via gather_rows, tanh hidden layer,
  cross_entropy, SGD, loss.item() every step) at batch 32 / hidden 200 and at
  batch 4096 / hidden 1024, beside the same code on torch CUDA.
* --occupancy: matmul workgroups resident at once per shape and tile (counted by the
  kernels themselves), beside the sweep.
* gpt (issue 17): the nanoGPT shakespeare_char-shaped GPT of torchic/bench/gpt.py (6 layers,
  6 heads, 384 wide, context 256, batch 64, dropout 0.2, AdamW; --quick: 2 x 64, T 32, b 8),
  ms per training step (incl. loss.item(), the learning rate held at 1e-3) of torchic
  webgpu eager and torchic.compile'd, torch CUDA eager and torch.compile'd; then the loss
  check and --gpt-steps (500) steps of training as nanoGPT's train.py runs them (the rate
  warmed up over 100 steps, then decayed along a cosine; gradients clipped at norm 1), from
  the same weights and batches on torchic and torch: wall time, final train / val loss. The text
  is the `names` package's names; --gpt-text FILE trains on a local file instead.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import torchic  # noqa: E402
from torchic.bench import gpt  # noqa: E402
from torchic.bench.impls import makemore_step  # noqa: E402
from torchic.dispatcher import View  # noqa: E402
from torchic.backends.webgpu import matmul as wmm  # noqa: E402


def median(xs):
    return statistics.median(xs)


class Bench:
    def __init__(self, quick):
        self.quick = quick
        self.rt = torchic.init("webgpu")
        self.be = self.rt.backend
        self.rows = {}
        self.ts = self.be.gpu.has_timestamps()

    def alloc(self, shape, data=None):
        n = int(np.prod(shape))
        blk = self.rt.alloc(n * 4)
        strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        v = View(blk, 0, tuple(shape), strides, "f32")
        if data is not None:
            self.rt.write(v, np.ascontiguousarray(data, np.float32))
        return v

    def free(self, *views):
        """Give the views' blocks back (each part frees its operands: the GPT parts after
        them need the heap)."""
        self.rt.sync()
        for v in views:
            self.rt.free(v.block)

    def gpu_seconds(self, issue, reps, trials=5):
        """Median seconds per issue() call, from GPU timestamps when the adapter has them."""
        issue()
        self.rt.sync()
        out = []
        for _ in range(trials):
            if self.ts:
                ns = self.be.timed(lambda: [issue() for _ in range(reps)])
                out.append(ns * 1e-9 / reps)
            else:
                t = time.perf_counter()
                for _ in range(reps):
                    issue()
                self.rt.sync()
                out.append((time.perf_counter() - t) / reps)
        return median(out)

    # -- matmul -------------------------------------------------------------------------------
    def warm_up(self, seconds=1.0):
        """Bring the GPU to its working clocks before anything is timed."""
        n = 256 if self.quick else 2048
        a = self.alloc((1, n, n), np.ones((1, n, n)))
        c = self.alloc((1, n, n))
        t = time.perf_counter()
        while time.perf_counter() - t < seconds:
            for _ in range(10):
                self.rt.run("matmul", c, (a, a), {})
            self.rt.sync()

    def matmul(self, sizes, tiles):
        res = {}
        for n in sizes:
            a = self.alloc((1, n, n), np.random.default_rng(0).standard_normal((1, n, n)))
            b = self.alloc((1, n, n), np.random.default_rng(1).standard_normal((1, n, n)))
            c = self.alloc((1, n, n))
            flop = 2.0 * n ** 3
            reps = max(1, min(50, int(2e12 / flop))) if not self.quick else 1
            per = {}
            self.warm_up(0.3)
            for tile in tiles:
                if tile:
                    os.environ[wmm.ENV_TILE] = tile
                else:
                    os.environ.pop(wmm.ENV_TILE, None)
                try:
                    s = self.gpu_seconds(lambda: self.rt.run("matmul", c, (a, b), {}), reps,
                                         trials=5 if not self.quick else 2)
                    per[tile or "auto"] = flop / s / 1e12
                except Exception as exc:  # a config the adapter cannot run: note it, go on
                    per[tile or "auto"] = f"error: {exc}"[:300]
            os.environ.pop(wmm.ENV_TILE, None)
            self.rt.run("matmul", c, (a, b), {})     # (the backend's choice: its tile)
            err = self.matmul_error(a, b, c, False, False)
            self.free(a, b, c)
            res[n] = {"tflops": per, "rel_err": err,
                      "auto_tile": getattr(self.be.gpu, "matmul_last", (None, None))[1]}
            print_tflops(f"{n}^3", per, err)
        return res

    def matmul_error(self, a, b, c, ta, tb):
        """c against a @ b in float64 (a / b stored transposed when ta / tb): the largest
        error relative to the largest product (at least 1)."""
        got = self.rt.read(c)
        ha = self.rt.read(a).astype(np.float64)
        hb = self.rt.read(b).astype(np.float64)
        ref = (ha.transpose(0, 2, 1) if ta else ha) @ (hb.transpose(0, 2, 1) if tb else hb)
        return float(np.max(np.abs(got - ref)) / max(1.0, np.max(np.abs(ref))))

    def matmul_operands(self, B, M, K, N, ta, tb, rng=None):
        """(a, b, c, a's view, b's view) of a (B, M, K) @ (B, K, N) product, each operand
        stored transposed when ta / tb (as autograd's backward gives them), filled from rng
        (else left as allocated)."""
        ashape, bshape = (B, K, M) if ta else (B, M, K), (B, N, K) if tb else (B, K, N)
        a = self.alloc(ashape, None if rng is None else rng.standard_normal(ashape))
        b = self.alloc(bshape, None if rng is None else rng.standard_normal(bshape))
        c = self.alloc((B, M, N))
        av = View(a.block, 0, (B, M, K), (M * K, 1, M) if ta else (M * K, K, 1), "f32")
        bv = View(b.block, 0, (B, K, N), (K * N, 1, K) if tb else (K * N, N, 1), "f32")
        return a, b, c, av, bv

    def matmul_shapes(self, shapes, tiles, checks=False, splits=(), envs=()):
        """The transformer step's products (TRANSFORMER_SHAPES) in the layouts autograd gives
        them, each tile of `tiles` (None: the backend's choice), TFLOPS from GPU time."""
        res = {}
        rng = np.random.default_rng(0)
        for name, (B, M, K, N, ta, tb) in shapes.items():
            a, b, c, av, bv = self.matmul_operands(B, M, K, N, ta, tb, rng)
            flop = 2.0 * B * M * N * K
            # ~10 ms of GPU work per timed trial; trials interleave the variants round-robin
            # (after a warm-up) so a clock change between them biases none of them
            reps = 1 if self.quick else max(1, min(200, int(4e11 / flop)))
            # (tile, checked compile, split-K target): None is the backend's choice
            variants = [(t, False, None) for t in tiles] + ([(None, True, None)] if checks else [])
            variants += [(None, False, g) for g in splits]
            # ("VAR=VALUE" strings: the backend's choice with that variable set)
            # ("VAR=VALUE@TILE": with that tile)
            variants += [((e.split("@") + [None])[1], False, e.split("@")[0]) for e in envs]
            times = {}
            self.warm_up(0.3)
            for trial in range(2 if self.quick else 5):
                for tile, chk, split in variants:
                    env = split if isinstance(split, str) else None
                    if env:
                        label = f"{tile or 'auto'} {env}"
                    split = None if env else split
                    if not env:
                        label = (tile or "auto") + (" checked" if chk else "") + \
                            (f" split{split}" if split else "")
                    if isinstance(times.get(label), str):
                        continue
                    if tile:
                        os.environ[wmm.ENV_TILE] = tile
                    # the sweep times the unchecked compile; "auto checked" is the default one
                    os.environ[wmm.ENV_CHECKS] = "1" if chk else "0"
                    if split:
                        os.environ[wmm.ENV_SPLIT] = str(split)
                    if env:
                        os.environ[env.split("=")[0]] = env.split("=", 1)[1]
                    try:
                        s = self.gpu_seconds(lambda: self.rt.run("matmul", c, (av, bv), {}), reps,
                                             trials=1)
                        times.setdefault(label, []).append(s)
                    except Exception as exc:  # a config the adapter cannot run: note it, go on
                        times[label] = f"error: {exc}"[:300]
                    for e in (wmm.ENV_TILE, wmm.ENV_CHECKS, wmm.ENV_SPLIT) + \
                            ((env.split("=")[0],) if env else ()):
                        os.environ.pop(e, None)
            per = {k: (flop / median(v) / 1e12 if isinstance(v, list) else v)
                   for k, v in times.items()}
            self.rt.run("matmul", c, (av, bv), {})
            cls = getattr(self.be.gpu, "matmul_last", (None,))[0] or \
                wmm.shape_class(B, M, N, K)
            err = self.matmul_error(a, b, c, ta, tb)
            self.free(a, b, c)
            res[name] = {"shape": [B, M, K, N, ta, tb], "tflops": per, "rel_err": err,
                         "class": cls,
                         "auto_tile": getattr(self.be.gpu, "matmul_last", (None, None))[1]}
            print_tflops(name, per, err)
        return res

    def matmul_occupancy(self, shapes, tiles):
        """Workgroups resident at once per (shape, tile): each workgroup's first invocation
        counts itself in on entry and out at its end, keeping the peak (in the status words
        of the last two index-error tags: only index-checked kernels take tags, and a matmul
        is not one). What bounds a tile's occupancy, its workgroup memory or its registers,
        shows as this count against the SM count (docs/perf/webgpu.md, "Occupancy, replay
        chunks, read naps")."""
        from torchic.backends.webgpu import gpu as wgpu_gpu
        count, peak = wgpu_gpu.STATUS_WORDS - 2, wgpu_gpu.STATUS_WORDS - 1
        gpu, program, decode = self.be.gpu, wmm._program, type(self.be.gpu)._decode
        seen = {}

        def counted(gpu_, key, build):
            def build_counted():
                code, n = build()
                head = "lid: u32) {\n"
                at = code.index(head) + len(head)
                code = (code[:at] + f"  if (lid == 0u) {{ atomicMax(&ST[{peak}u], "
                        f"atomicAdd(&ST[{count}u], 1u) + 1u); }}\n" + code[at:])
                end = code.rstrip().rindex("}")
                return (code[:end] + f"  workgroupBarrier();\n  if (lid == 0u) "
                        f"{{ atomicSub(&ST[{count}u], 1u); }}\n}}\n"), n
            return program(gpu_, key + ("occupancy",), build_counted)

        def keep(gpu_, status, reset=True):
            seen["peak"] = int(status[peak])
            return decode(gpu_, status, reset)
        wmm._program, type(gpu)._decode = counted, keep
        res = {}
        try:
            for name, (B, M, K, N, ta, tb) in shapes.items():
                a, b, c, av, bv = self.matmul_operands(B, M, K, N, ta, tb)
                row = res[name] = {}
                for tile in tiles:
                    if tile:
                        os.environ[wmm.ENV_TILE] = tile
                    try:
                        self.rt.sync()
                        self.rt.run("matmul", c, (av, bv), {})
                        self.rt.sync()
                        row[tile or gpu.matmul_last[1]] = seen["peak"]
                    finally:
                        os.environ.pop(wmm.ENV_TILE, None)
                self.free(a, b, c)
                print(f"matmul occupancy {name}: {row} workgroups at once", flush=True)
        finally:
            wmm._program, type(gpu)._decode = program, decode
        return res

    # -- bandwidth ------------------------------------------------------------------------------
    def bandwidth(self, n):
        x = self.alloc((n,), np.random.default_rng(2).standard_normal(n))
        y = self.alloc((n,), np.random.default_rng(3).standard_normal(n))
        z = self.alloc((n,))
        reps = 10 if not self.quick else 2
        t_copy = self.gpu_seconds(lambda: self.rt.run("copy", z, (x,), {}), reps)
        # copy_buffer_to_buffer (wall clock of `reps` copies in one submit)
        gpu = self.be.gpu
        U = gpu.wgpu.BufferUsage
        bx, ox = gpu.device.create_buffer(size=n * 4, usage=U.COPY_SRC | U.COPY_DST), 0
        bz, oz = gpu.device.create_buffer(size=n * 4, usage=U.COPY_SRC | U.COPY_DST), 0
        trials = []
        for _ in range(5):
            self.rt.sync()
            t = time.perf_counter()
            enc = gpu._encoder()
            gpu._end_pass()
            for _ in range(reps):
                enc.copy_buffer_to_buffer(bx, ox * 4, bz, oz * 4, n * 4)
            self.rt.sync()
            trials.append((time.perf_counter() - t) / reps)
        t_b2b = median(trials)
        copy_bw = max(2 * n * 4 / t_copy, 2 * n * 4 / t_b2b)
        t_add = self.gpu_seconds(lambda: self.rt.run("add", z, (x, y), {}), reps)
        cols = 1024
        rows = n // cols
        xs = View(x.block, 0, (rows, cols), (cols, 1), "f32")
        zs = View(z.block, 0, (rows, cols), (cols, 1), "f32")
        from torchic.backends.webgpu import rowwise
        sweep = {}
        default_vpt = rowwise.VALUES_PER_INVOCATION
        for vpt in ((default_vpt,) if self.quick else (4, 8, 16, 32)):
            rowwise.VALUES_PER_INVOCATION = vpt
            sweep[f"vpt{vpt}"] = 2 * n * 4 / self.gpu_seconds(
                lambda: self.rt.run("softmax", zs, (xs,), {}), reps) / 1e9
        rowwise.VALUES_PER_INVOCATION = default_vpt
        t_sm = self.gpu_seconds(lambda: self.rt.run("softmax", zs, (xs,), {}), reps)
        self.free(x, y, z)
        add_bw = 3 * n * 4 / t_add
        sm_bw = 2 * n * 4 / t_sm
        out = {"n": n, "copy_shader_GBs": 2 * n * 4 / t_copy / 1e9,
               "copy_b2b_GBs": 2 * n * 4 / t_b2b / 1e9, "copy_GBs": copy_bw / 1e9,
               "add_GBs": add_bw / 1e9, "add_frac": add_bw / copy_bw,
               "softmax_GBs": sm_bw / 1e9, "softmax_frac": sm_bw / copy_bw,
               "softmax_shape": [rows, cols], "softmax_sweep_GBs": sweep}
        print("bandwidth:", {k: (round(v, 3) if isinstance(v, float) else v)
                             for k, v in out.items()}, flush=True)
        return out


# -- makemore ---------------------------------------------------------------------------------
def make_data(vocab=27, ctx=3, n=200000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, (n, ctx)).astype(np.int32), rng.integers(0, vocab, n).astype(np.int32)


def init_weights(vocab, ctx, emb, hidden, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((vocab, emb)).astype(np.float32),
            (rng.standard_normal((ctx * emb, hidden)) * (5 / 3) / (ctx * emb) ** 0.5).astype(np.float32),
            (rng.standard_normal(hidden) * 0.01).astype(np.float32),
            (rng.standard_normal((hidden, vocab)) * 0.01).astype(np.float32),
            np.zeros(vocab, np.float32)]


def torchic_step(cfg, X, Y, weights, compiled=False):
    params = [torchic.tensor(w, requires_grad=True) for w in weights]
    return makemore_step(torchic, params, X, Y, cfg["batch"], 0.1, np.random.default_rng(1),
                         torchic.tensor, torchic.compile if compiled else None)


def torch_step(cfg, X, Y, weights):
    import torch
    params = [torch.tensor(w, device="cuda", requires_grad=True) for w in weights]
    return makemore_step(torch, params, X.astype(np.int64), Y.astype(np.int64), cfg["batch"],
                         0.1, np.random.default_rng(1),
                         lambda a: torch.from_numpy(a).to("cuda"))


def steps_per_second(step, seconds, warm=5):
    for _ in range(warm):
        step()
    rates = []
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while True:
            step()
            n += 1
            dt = time.perf_counter() - t0
            if dt > seconds / 3 and n >= 3:
                break
        rates.append(n / dt)
    return median(rates)


def latency(bench, n_ops=(0, 1, 44), reps=50):
    """Read round trip (wall clock) after n tiny ops, for each wait strategy."""
    gpu = bench.be.gpu
    a = bench.alloc((32, 32), np.ones((32, 32)))
    c = bench.alloc((32, 32))
    out = {}
    for mode in ("block", "auto", "spin"):
        gpu.wait_mode = mode
        for n in n_ops:
            for _ in range(3):
                for _ in range(n):
                    bench.rt.run("add", c, (a, a), {})
                bench.rt.read(c)
            t0 = dict(gpu.times)
            ts = []
            for _ in range(reps):
                t = time.perf_counter()
                for _ in range(n):
                    bench.rt.run("add", c, (a, a), {})
                bench.rt.read(c)
                ts.append(time.perf_counter() - t)
            parts = [round((gpu.times[k] - t0[k]) / reps * 1e6, 1) for k in ("submit", "wait", "map")]
            out[f"{mode} {n} ops"] = {"us": median(ts) * 1e6, "submit_wait_map_us": parts}
    gpu.wait_mode = "block"
    print("latency:", out, flush=True)
    return out


def makemore_matmuls(bench, batch=4096, hidden=1024, ctx_emb=30, vocab=27):
    """GPU time of the large makemore step's matmuls, in the layouts autograd gives them."""
    rng = np.random.default_rng(0)
    out = {}
    B, H, E, V = batch, hidden, ctx_emb, vocab
    cases = {  # name: (M, K, N, a transposed?, b transposed?)
        "fwd emb@W1 (B,E)@(E,H)": (B, E, H, 0, 0),
        "fwd h@W2 (B,H)@(H,V)": (B, H, V, 0, 0),
        "bwd dlogits@W2^T (B,V)@(V,H)": (B, V, H, 0, 1),
        "bwd h^T@dlogits (H,B)@(B,V)": (H, B, V, 1, 0),
        "bwd emb^T@dh (E,B)@(B,H)": (E, B, H, 1, 0),
    }
    for name, (M, K, N, ta, tb) in cases.items():
        a, b, c, av, bv = bench.matmul_operands(1, M, K, N, ta, tb, rng)
        s = bench.gpu_seconds(lambda: bench.rt.run("matmul", c, (av, bv), {}), 20)
        out[name] = {"us": s * 1e6, "tflops": 2 * M * N * K / s / 1e12}
    print("makemore matmuls:", {k: round(v["us"], 1) for k, v in out.items()}, flush=True)
    return out


def makemore(quick, with_torch):
    X, Y = make_data()
    configs = [{"name": "batch 32, hidden 200", "batch": 32, "emb": 10, "hidden": 200},
               {"name": "batch 4096, hidden 1024", "batch": 4096, "emb": 10, "hidden": 1024}]
    out = []
    for cfg in configs:
        w = init_weights(27, 3, cfg["emb"], cfg["hidden"])
        row = {"config": cfg["name"]}
        be = torchic.dispatcher.runtime().backend
        step = torchic_step(cfg, X, Y, w)
        step()
        s0 = dict(be.gpu.stats)
        step()
        s1 = be.gpu.stats
        row["submits_per_step"] = s1["submits"] - s0["submits"]
        row["dispatches_per_step"] = s1["dispatches"] - s0["dispatches"]
        t0, n0 = dict(be.gpu.times), be.gpu.stats["reads"]
        row["torchic_steps_s"] = steps_per_second(step, 1.5 if quick else 3.0)
        nsteps = be.gpu.stats["reads"] - n0
        row["ms_per_step"] = 1e3 / row["torchic_steps_s"]
        row["ms_in_submit_wait_map"] = [round((be.gpu.times[k] - t0[k]) / max(nsteps, 1) * 1e3, 3)
                                        for k in ("submit", "wait", "map")]
        # the same step through torchic.compile (issue 16): recorded once, then replayed
        row["compiled_steps_s"] = steps_per_second(torchic_step(cfg, X, Y, w, compiled=True),
                                                   1.5 if quick else 3.0)
        if with_torch:
            row["torch_cuda_steps_s"] = steps_per_second(torch_step(cfg, X, Y, w), 3.0)
            row["ratio_torch_over_torchic"] = row["torch_cuda_steps_s"] / row["torchic_steps_s"]
            row["compiled_over_torch"] = row["compiled_steps_s"] / row["torch_cuda_steps_s"]
        print("makemore", row, flush=True)
        out.append(row)
    return out


# -- gpt (issue 17) ---------------------------------------------------------------------------
def gpt_inputs(quick, text_path):
    """(config, tokens, vocab, text name): the full config on a GPU, the small one --quick."""
    cfg = gpt.SMALL if quick else gpt.FULL
    if text_path:       # a local file only (e.g. tinyshakespeare); nothing is downloaded
        with open(text_path, encoding="utf-8") as f:
            text, name = f.read(), os.path.basename(text_path)
    else:
        text, name = gpt.names_text(), "names package"
    return (cfg, *gpt.encode(text), name)


def _guarded(fn):
    """fn()'s value, or the error as a string (torch.compile or a new path failing)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001  (recorded in the table; the run goes on)
        return f"error: {type(exc).__name__}: {exc}"[:300]


def _ms(step, seconds):
    return 1e3 / steps_per_second(step, seconds)


def _torch_gpt_step(cfg, data, vocab, compiled, schedule=False):
    import torch
    torch.manual_seed(1337)
    return gpt.training_step(torch, cfg, data, vocab, device="cuda",
                             compile=torch.compile if compiled else None, schedule=schedule)


def gpt_step_times(quick, with_torch, text_path=None):
    """ms per GPT training step: torchic webgpu eager / compiled, torch CUDA eager / compiled."""
    cfg, data, vocab, name = gpt_inputs(quick, text_path)
    seconds = 1.5 if quick else 5.0
    row = {"config": gpt.label(cfg), "text": name, "vocab": vocab}
    be = torchic.dispatcher.runtime().backend
    torchic.manual_seed(1337)
    # (the step-time runs time the fixed step: gpt.training_step's schedule=False)
    step = gpt.training_step(torchic, cfg, data, vocab, schedule=False)
    row["params"] = sum(p.numel() for p in step.model.parameters())
    step()
    s0 = dict(be.gpu.stats)
    step()
    row["submits_per_step"] = be.gpu.stats["submits"] - s0["submits"]
    row["dispatches_per_step"] = be.gpu.stats["dispatches"] - s0["dispatches"]
    row["torchic_ms"] = _ms(step, seconds)
    del step
    row["compiled_ms"] = _guarded(lambda: _ms(
        gpt.training_step(torchic, cfg, data, vocab, compile=torchic.compile,
                          schedule=False), seconds))
    # what the matmul epilogues buy (fuse.epilogues), in the same run
    os.environ["TORCHIC_WEBGPU_EPILOGUES"] = "0"
    row["compiled_no_epilogues_ms"] = _guarded(lambda: _ms(
        gpt.training_step(torchic, cfg, data, vocab, compile=torchic.compile,
                          schedule=False), seconds))
    os.environ.pop("TORCHIC_WEBGPU_EPILOGUES")
    if with_torch:
        import torch
        row["torch_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
        row["torch_cuda_ms"] = _ms(_torch_gpt_step(cfg, data, vocab, False), seconds)
        row["torch_compile_ms"] = _guarded(lambda: _ms(
            _torch_gpt_step(cfg, data, vocab, True), seconds))
        for key in ("torchic_ms", "compiled_ms", "torch_compile_ms"):
            if isinstance(row[key], float):
                row[key.replace("_ms", "_over_torch")] = row[key] / row["torch_cuda_ms"]
    print("gpt step", row, flush=True)
    return row


def _kernel_label(key):
    """A profile row's name: the program key's op and, for a matmul, tile and load modes."""
    if key and key[0] == "matmul":
        return "matmul " + " ".join(str(x) for x in key[1:4])
    return " ".join(str(x) for x in key[:2]) if isinstance(key, tuple) else str(key)


def gpt_profile(quick, text_path=None, top=25, compiled=False):
    """GPU time of one GPT training step (eager, or torchic.compile'd: the replayed
    program's dispatches) per kernel (each dispatch timed in a pass of its own): where the
    step's GPU time goes."""
    cfg, data, vocab, name = gpt_inputs(quick, text_path)
    be = torchic.dispatcher.runtime().backend
    torchic.manual_seed(1337)
    step = gpt.training_step(torchic, cfg, data, vocab,
                             compile=torchic.compile if compiled else None, schedule=False)
    t = time.perf_counter()
    while time.perf_counter() - t < 1.0:    # (recorded, and the GPU at its working clocks)
        step()
    times = be.profiled(step)
    rows = {}
    for key, ns in times:
        r = rows.setdefault(_kernel_label(key), [0, 0.0])
        r[0] += 1
        r[1] += ns * 1e-6
    total = sum(ms for _, ms in rows.values())
    ranked = sorted(rows.items(), key=lambda kv: -kv[1][1])
    out = {"config": gpt.label(cfg) + (", compiled" if compiled else ""),
           "dispatches": len(times), "gpu_ms": total,
           "kernels": [{"kernel": k, "count": c, "ms": ms, "share": ms / total if total else 0}
                       for k, (c, ms) in ranked[:top]]}
    print("gpt profile", out, flush=True)
    return out


# torch CUDA kernel names -> the rows gpt_profile's torchic kernels are grouped by
_TORCH_KERNEL_KINDS = (("matmul", ("gemm", "sgemm", "cutlass", "ampere", "sm90", "cublas")),
                       ("softmax", ("softmax",)), ("layer norm", ("layer_norm", "layernorm")),
                       ("dropout", ("dropout", "fused_dropout", "bernoulli")),
                       ("adam", ("adam", "foreach", "multi_tensor")),
                       ("reduce", ("reduce",)), ("copy", ("copy", "cat")),
                       ("embedding / cross entropy", ("embedding", "nll", "index", "scatter")),
                       ("elementwise", ("elementwise", "vectorized", "where", "gelu",
                                        "masked", "fill")))


def torch_gpt_profile(quick, text_path=None, steps=3):
    """GPU time of torch CUDA eager's GPT step per kernel kind (torch.profiler over `steps`
    steps, per step): what torch's step spends on matmuls and on the rest, beside gpt_profile."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    cfg, data, vocab, name = gpt_inputs(quick, text_path)
    step = _torch_gpt_step(cfg, data, vocab, False)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kinds, kernels = {}, {}
    for ev in prof.key_averages():
        us = getattr(ev, "self_device_time_total", None)
        if us is None:
            us = getattr(ev, "self_cuda_time_total", 0)
        if not us or ev.key.startswith("ProfilerStep"):
            continue
        low = ev.key.lower()
        kind = next((k for k, words in _TORCH_KERNEL_KINDS if any(w in low for w in words)),
                    "other")
        kinds[kind] = kinds.get(kind, 0.0) + us * 1e-3 / steps
        kernels[ev.key[:90]] = (ev.count // steps, us * 1e-3 / steps)
    total = sum(kinds.values())
    top = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:25]
    out = {"config": gpt.label(cfg), "gpu_ms": total,
           "kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
           "kernels": [{"kernel": k, "count": c, "ms": ms} for k, (c, ms) in top]}
    print("torch gpt profile", out, flush=True)
    return out


def gpt_match(quick, text_path=None, steps=50):
    """Issue 17's loss check at the full size: the first `steps` eager training losses of
    torchic webgpu and torch CUDA with dropout masks shared (gpt.matched_losses); the
    largest relative difference against the 1e-3 goal."""
    import torch
    cfg, data, vocab, name = gpt_inputs(quick, text_path)
    got, got_eval = gpt.matched_losses(torchic, cfg, data, vocab, steps, eval_iters=2)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    want, want_eval = gpt.matched_losses(torch, cfg, data, vocab, steps, device=dev,
                                         eval_iters=2)
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    # the control: torch against itself from weights moved by float32 rounding (1e-7)
    ctl, _ = gpt.matched_losses(torch, cfg, data, vocab, steps, device=dev, eval_iters=1,
                                perturb=1e-7)
    ctl_rel = [abs(a - b) / abs(b) for a, b in zip(ctl, want)]
    out = {"config": gpt.label(cfg), "text": name, "steps": steps,
           "max_rel_diff": max(rel), "worst_step": rel.index(max(rel)),
           "rel_diff_by_10_steps": [max(rel[i:i + 10]) for i in range(0, steps, 10)],
           "torch_perturbed_max_rel_diff": max(ctl_rel),
           "torch_perturbed_by_10_steps": [max(ctl_rel[i:i + 10]) for i in range(0, steps, 10)],
           "torchic_losses": got[::10] + got[-1:], "torch_losses": want[::10] + want[-1:],
           "torchic_eval": got_eval, "torch_eval": want_eval}
    print("gpt match", out, flush=True)
    return out


def gpt_training(quick, with_torch, steps, text_path=None, eval_iters=None):
    """`steps` training steps of the GPT on torchic (compiled; eager if compile fails) and on
    torch CUDA eager, same weights, batches and seed: wall time, final train / val loss."""
    cfg, data, vocab, name = gpt_inputs(quick, text_path)
    eval_iters = eval_iters or (2 if quick else 20)
    out = {"config": gpt.label(cfg), "text": name, "steps": steps, "eval_iters": eval_iters}

    def run(lib, make):
        lib.manual_seed(1337)
        step = make()
        t = time.perf_counter()
        losses = [step() for _ in range(steps)]
        wall = time.perf_counter() - t
        dev = "cuda" if lib.__name__ == "torch" else None
        est = gpt.estimate_loss(lib, step.model, step.batches, eval_iters, device=dev)
        return {"wall_s": wall, "ms_per_step": wall / steps * 1e3, "first_loss": losses[0],
                "last_loss": losses[-1], "train_loss": est["train"], "val_loss": est["val"]}

    out["torchic"] = _guarded(lambda: dict(run(torchic, lambda: gpt.training_step(
        torchic, cfg, data, vocab, compile=torchic.compile)), mode="compiled"))
    if isinstance(out["torchic"], str):
        out["torchic_compiled_error"] = out["torchic"]
        out["torchic"] = dict(run(torchic, lambda: gpt.training_step(torchic, cfg, data, vocab)),
                              mode="eager")
    if with_torch:
        import torch
        out["torch_cuda"] = dict(run(torch, lambda: _torch_gpt_step(cfg, data, vocab, False,
                                                                    schedule=True)),
                                 mode="eager")
    print("gpt training", out, flush=True)
    return out


def gpt_markdown(r):
    lines = []
    if "gpt" in r:
        g = r["gpt"]

        def ms(key):
            v = g.get(key)
            return f"{v:.1f}" if isinstance(v, float) else (v or "-")

        def ratio(key):
            v = g.get(key)
            return f"{v:.2f}x" if isinstance(v, float) else "-"
        lines += [f"| GPT step {g['config']} ({g['params']} params, {g['text']}) | ms/step | "
                  f"/ torch CUDA eager |", "|---|---|---|",
                  f"| torchic webgpu eager ({g['dispatches_per_step']} dispatches, "
                  f"{g['submits_per_step']} submits) | {ms('torchic_ms')} | "
                  f"{ratio('torchic_over_torch')} |",
                  f"| torchic webgpu, torchic.compile | {ms('compiled_ms')} | "
                  f"{ratio('compiled_over_torch')} |",
                  f"| torch CUDA eager | {ms('torch_cuda_ms')} | "
                  f"{'1.00x' if 'torch_cuda_ms' in g else '-'} |",
                  f"| torch CUDA, torch.compile | {ms('torch_compile_ms')} | "
                  f"{ratio('torch_compile_over_torch')} |", ""]
    for g in (r.get("gpt_profile"), r.get("gpt_profile_compiled")):
        if not isinstance(g, dict):
            continue
        lines += [f"| GPT step {g['config']} per kernel ({g['dispatches']} dispatches, "
                  f"{g['gpu_ms']:.1f} GPU ms) | count | GPU ms | share |", "|---|---|---|---|"]
        lines += [f"| {k['kernel']} | {k['count']} | {k['ms']:.2f} | {k['share']:.1%} |"
                  for k in g["kernels"]]
        lines.append("")
    if isinstance(r.get("gpt_match"), dict):
        g = r["gpt_match"]
        lines += [f"| GPT loss match {g['config']}, {g['steps']} eager steps, shared dropout "
                  f"masks | max relative difference | worst step | goal |", "|---|---|---|---|",
                  f"| torchic webgpu vs torch CUDA | {g['max_rel_diff']:.2e} | "
                  f"{g['worst_step']} | <= 1e-3 |",
                  f"| (control) torch CUDA vs itself, weights * (1 + 1e-7 z) | "
                  f"{g['torch_perturbed_max_rel_diff']:.2e} | | |",
                  f"| per 10 steps: torchic {' '.join(f'{x:.0e}' for x in g['rel_diff_by_10_steps'])}"
                  f"; control {' '.join(f'{x:.0e}' for x in g['torch_perturbed_by_10_steps'])} "
                  f"| | | |", ""]
    if "gpt_training" in r:
        g = r["gpt_training"]
        lines += [f"| GPT training {g['config']}, {g['steps']} steps ({g['text']}) | wall s | "
                  f"ms/step | first loss | final train loss | final val loss |",
                  "|---|---|---|---|---|---|"]
        for who in ("torchic", "torch_cuda"):
            x = g.get(who)
            if isinstance(x, dict):
                lines.append(f"| {who} ({x['mode']}) | {x['wall_s']:.1f} | {x['ms_per_step']:.1f} | "
                             f"{x['first_loss']:.4f} | {x['train_loss']:.4f} | {x['val_loss']:.4f} |")
        lines.append("")
    return lines


def cuda_seconds(fn, reps):
    """Median GPU seconds of one fn(): CUDA events around reps back-to-back calls, 5 samples
    after 3 warm-up calls."""
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e-3 / reps)
    return median(ts)


def torch_matmul(sizes):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    res = {}
    for n in sizes:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        reps = max(1, min(50, int(2e12 / (2 * n ** 3))))
        res[n] = 2 * n ** 3 / cuda_seconds(lambda: a @ b, reps) / 1e12
        print(f"torch cuda fp32 matmul {n}^3: {res[n]:.2f} TFLOPS", flush=True)
    return res


def print_tflops(name, per, err):
    print(f"matmul {name}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in per.items()) + f" TFLOPS (err {err:.1e})",
          flush=True)


# name: (B, M, K, N, A stored transposed, B stored transposed); n^3 squares and the
# products of one GPT step (B*H 384, T 256, head 64; B*T 16384, C 384), forward and backward
def matmul_shapes(quick):
    if quick:
        return {"sq 256": (1, 256, 256, 256, 0, 0),
                "att q@k^T": (8, 64, 16, 64, 0, 1), "att p^T@dy": (8, 64, 64, 16, 1, 0)}
    BH, T, hd, BT, C = 384, 256, 64, 16384, 384
    return {"sq 1024": (1, 1024, 1024, 1024, 0, 0), "sq 2048": (1, 2048, 2048, 2048, 0, 0),
            "sq 4096": (1, 4096, 4096, 4096, 0, 0),
            "att q@k^T (BH,T,hd)@(BH,hd,T)^": (BH, T, hd, T, 0, 1),
            "att p@v (BH,T,T)@(BH,T,hd)": (BH, T, T, hd, 0, 0),
            "att p^T@dy (BH,T,T)^@(BH,T,hd)": (BH, T, T, hd, 1, 0),
            "mlp x@W (BT,C)@(C,4C)": (1, BT, C, 4 * C, 0, 0),
            "mlp dy@W^T (BT,4C)@(4C,C)^": (1, BT, 4 * C, C, 0, 1),
            "mlp x^T@dy (C,BT)^@(BT,4C)": (1, C, BT, 4 * C, 1, 0),
            "mlp h@W2 (BT,4C)@(4C,C)": (1, BT, 4 * C, C, 0, 0),
            # the GPT step's other weight gradients: its Linear layers see (B, T, C) inputs,
            # whose rows MatMul.backward folds into one x^T @ dy over K = B*T (fc's is the
            # mlp x^T@dy row above)
            "gpt dW qkv (C,BT)^@(BT,3C)": (1, C, BT, 3 * C, 1, 0),
            "gpt dW proj (C,BT)^@(BT,C)": (1, C, BT, C, 1, 0),
            "gpt dW fc2 (4C,BT)^@(BT,C)": (1, 4 * C, BT, C, 1, 0)}


def torch_matmul_shapes(shapes):
    """torch CUDA fp32 (TF32 off) on the same shapes and layouts, CUDA events."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    res = {}
    for name, (B, M, K, N, ta, tb) in shapes.items():
        a = torch.randn(B, K, M, device="cuda").transpose(1, 2) if ta else torch.randn(B, M, K, device="cuda")
        b = torch.randn(B, N, K, device="cuda").transpose(1, 2) if tb else torch.randn(B, K, N, device="cuda")
        if B == 1:
            a, b = a[0], b[0]
        flop = 2.0 * B * M * N * K
        reps = max(1, min(200, int(4e11 / flop)))
        res[name] = flop / cuda_seconds(lambda: a @ b, reps) / 1e12
        print(f"torch cuda fp32 matmul {name}: {res[name]:.2f} TFLOPS", flush=True)
    return res


def suggest_table(res):
    """{shape class: best tile} from a tile sweep, the rows for matmul_table.py (the
    shape with the most work decides a class several shapes share)."""
    best = {}
    for name, row in res.items():
        B, M, K, N = row["shape"][:4]
        swept = [(v, k) for k, v in row["tflops"].items()
                 if isinstance(v, float) and k in wmm.CONFIGS]
        if not swept:
            continue
        work = B * M * N * K
        if row["class"] not in best or best[row["class"]][0] < work:
            best[row["class"]] = (work, max(swept)[1], name)
    return {cls: (tile, name) for cls, (_, tile, name) in sorted(best.items())}


def torch_copy_bw(n):
    import torch
    x = torch.empty(n, device="cuda")
    y = torch.empty(n, device="cuda")
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            y.copy_(x)
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e-3 / 10)
    return 2 * n * 4 / median(ts) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--tiles", default="", help="comma list of matmul tiles to sweep")
    ap.add_argument("--splits", default="",
                    help="comma list of split-K workgroup targets to time beside the default")
    ap.add_argument("--envs", default="",
                    help="comma list of VAR=VALUE: the backend's choice timed with each set")
    ap.add_argument("--a-transposed", action="store_true",
                    help="also time the squares and the MLP products with A stored transposed")
    ap.add_argument("--occupancy", action="store_true",
                    help="also count the matmul workgroups resident at once per shape and tile")
    ap.add_argument("--shapes", default="",
                    help="comma list of substrings: time only the matmul shapes whose name has one")
    ap.add_argument("--skip", default="",
                    help="comma list of parts to skip: matmul,squares,bw,makemore,gpt,gpt_match,"
                         "latency,torch,torch_profile")
    ap.add_argument("--gpt-steps", type=int, default=500,
                    help="training steps of the gpt part's loss run (0: step times only)")
    ap.add_argument("--gpt-text", default=None,
                    help="train the gpt part on this local text file (default: the names package)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    outdir = os.environ.get("OUT") or "bench-results"
    os.makedirs(outdir, exist_ok=True)
    b = Bench(args.quick)
    info = b.be.describe()
    with_torch = False
    if "torch" not in skip:
        try:
            import torch
            with_torch = torch.cuda.is_available()
        except ImportError:
            pass
    sizes = (256, 512) if args.quick else (1024, 2048, 4096)
    tiles = [None] + (list(args.tiles.split(",")) if args.tiles else
                      list(wmm.CONFIGS) if args.tune else [])
    result = {"machine": {"adapter": info["adapter"], "backend_type": info["backend_type"],
                          "adapter_type": info["adapter_type"], "python": platform.python_version(),
                          "wgpu": __import__("wgpu").__version__, "timestamps": b.ts,
                          "host": platform.node(),
                          "matmul_table": wmm.table_adapter(b.be.gpu.adapter_info)}}
    if with_torch:
        import torch
        result["machine"]["torch"] = torch.__version__
        result["machine"]["cuda_device"] = torch.cuda.get_device_name(0)
    print(result["machine"], flush=True)
    b.warm_up()
    if "latency" not in skip:
        result["latency"] = latency(b)
    if "matmul" not in skip:
        b.warm_up()
        shapes = matmul_shapes(args.quick)
        if args.shapes:
            keep = args.shapes.split(",")
            shapes = {k: v for k, v in shapes.items() if any(w in k for w in keep)}
        if args.a_transposed:
            shapes.update({f"{k} A^T": v[:4] + (1, v[5]) for k, v in list(shapes.items())
                           if not v[4] and (k.startswith("sq") or k.startswith("mlp"))})
        splits = [int(x) for x in args.splits.split(",") if x] or \
            ((528, 1056) if args.tune else ())
        if args.occupancy:
            result["matmul_occupancy"] = b.matmul_occupancy(shapes, tiles)
        result["matmul_shapes"] = b.matmul_shapes(shapes, tiles, checks=args.tune,
                                                  splits=splits,
                                                  envs=[e for e in args.envs.split(",") if e])
        if args.tune:
            rows = result["suggested_table"] = suggest_table(result["matmul_shapes"])
            key = wmm.adapter_key(b.be.gpu.adapter_info)
            text = (f"    {key!r}: {{\n" + "".join(f"        {c!r}: {t!r},  # {n}\n"
                                               for c, (t, n) in rows.items()) + "    },\n")
            with open(os.path.join(outdir, "matmul_table_rows.txt"), "w") as f:
                f.write(text)
            print("matmul_table.TABLE rows (matmul_table_rows.txt):\n" + text, flush=True)
        if with_torch:
            result["torch_matmul_shapes"] = torch_matmul_shapes(shapes)
    if "squares" not in skip and "matmul" not in skip:
        result["matmul"] = b.matmul(sizes, [None])
        if with_torch:
            result["torch_matmul"] = torch_matmul(sizes)
    if "bw" not in skip:
        n = (1 << 20) if args.quick else (64 << 20)
        result["bandwidth"] = b.bandwidth(n)
        if with_torch:
            result["bandwidth"]["torch_copy_GBs"] = torch_copy_bw(n)
    if "makemore" not in skip:
        result["makemore"] = makemore(args.quick, with_torch)
        if not args.quick:
            result["makemore_matmuls"] = makemore_matmuls(b)
    if "gpt" not in skip and "gpt_match" not in skip and with_torch:
        result["gpt_match"] = _guarded(lambda: gpt_match(args.quick, args.gpt_text))
    if "gpt" not in skip:
        result["gpt_profile"] = gpt_profile(args.quick, args.gpt_text)
        result["gpt_profile_compiled"] = _guarded(lambda: gpt_profile(args.quick, args.gpt_text,
                                                                      compiled=True))
        if with_torch and "torch_profile" not in skip:
            result["torch_gpt_profile"] = _guarded(lambda: torch_gpt_profile(args.quick,
                                                                              args.gpt_text))
        result["gpt"] = gpt_step_times(args.quick, with_torch, args.gpt_text)
        if args.gpt_steps:
            result["gpt_training"] = gpt_training(args.quick, with_torch, args.gpt_steps,
                                                  args.gpt_text)
    result["backend_stats"] = b.be.describe()
    with open(os.path.join(outdir, "gpu_bench.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    md = to_markdown(result)
    with open(os.path.join(outdir, "gpu_bench.md"), "w") as f:
        f.write(md)
    print(md)


def num(x):
    return f"{x:.0f}" if x >= 10 else f"{x:.2f}"


def to_markdown(r):
    m = r["machine"]
    lines = [f"### webgpu backend on {m['adapter']} ({m['backend_type']}, {m['adapter_type']}), "
             f"wgpu {m['wgpu']}" + (f", torch {m['torch']} on {m['cuda_device']}" if "torch" in m else ""),
             "", f"tile choice: the matmul table rows of {m['matmul_table']!r}"
             if m.get("matmul_table") else "tile choice: the general ladder (no matmul table rows)",
             ""]
    if "matmul" in r:
        def fl(t):
            return f"{t:.2f} TFLOPS" if t >= 1 else f"{t * 1e3:.1f} GFLOPS"
        lines += ["| matmul f32 | torchic webgpu (tile) | torch CUDA fp32 | rel. error |",
                  "|---|---|---|---|"]
        for n, row in r["matmul"].items():
            best = max((v, k) for k, v in row["tflops"].items() if isinstance(v, float))
            auto = row["tflops"].get("auto")
            tt = r.get("torch_matmul", {}).get(n)
            also = f"; best swept {fl(best[0])} ({best[1]})" if best[1] != "auto" else ""
            lines.append(f"| {n}^3 | {fl(auto)} ({row['auto_tile']}){also} | "
                         f"{fl(tt) if tt else '-'} | {row['rel_err']:.1e} |")
        lines.append("")
    if "matmul_shapes" in r:
        tt = r.get("torch_matmul_shapes", {})
        lines += ["| matmul f32 (B, M, K, N, A^T, B^T) | torchic webgpu TFLOPS (tile) | best swept | "
                  "torch CUDA fp32 | webgpu / torch |", "|---|---|---|---|---|"]
        for name, row in r["matmul_shapes"].items():
            auto = row["tflops"].get("auto")
            swept = [(v, k) for k, v in row["tflops"].items() if isinstance(v, float) and k != "auto"]
            best = max(swept) if swept else None
            t = tt.get(name)
            ratio = f"{auto / t:.2f}" if t and isinstance(auto, float) else "-"
            lines.append(f"| {name} {tuple(row['shape'])} | {auto if not isinstance(auto, float) else round(auto, 2)} "
                         f"({row['auto_tile']}) | {f'{best[0]:.2f} ({best[1]})' if best else '-'} | "
                         f"{f'{t:.2f}' if t else '-'} | {ratio} |")
        lines.append("")
    if "bandwidth" in r:
        bw = r["bandwidth"]
        lines += [f"| op over {bw['n']} floats | GB/s | fraction of copy |", "|---|---|---|",
                  f"| copy (best of shader {bw['copy_shader_GBs']:.0f}, buffer copy {bw['copy_b2b_GBs']:.0f}) | "
                  f"{num(bw['copy_GBs'])} | 1.00 |",
                  f"| add | {num(bw['add_GBs'])} | {bw['add_frac']:.2f} |",
                  f"| softmax {bw['softmax_shape']} | {num(bw['softmax_GBs'])} | {bw['softmax_frac']:.2f} |"]
        if "torch_copy_GBs" in bw:
            lines.append(f"| (torch CUDA copy, for reference) | {bw['torch_copy_GBs']:.0f} | |")
        lines.append("")
    if "makemore" in r:
        lines += ["| makemore MLP step (incl. loss.item()) | torchic steps/s | compiled steps/s | "
                  "torch CUDA steps/s | torch / torchic | compiled / torch | submits per step | "
                  "dispatches per step |", "|---|---|---|---|---|---|---|---|"]
        for row in r["makemore"]:
            tcs = row.get("torch_cuda_steps_s")
            lines.append(f"| {row['config']} | {num(row['torchic_steps_s'])} | "
                         f"{num(row['compiled_steps_s'])} | "
                         f"{'%.0f' % tcs if tcs else '-'} | "
                         f"{'%.2f' % row['ratio_torch_over_torchic'] if tcs else '-'} | "
                         f"{'%.2f' % row['compiled_over_torch'] if tcs else '-'} | "
                         f"{row['submits_per_step']} | {row['dispatches_per_step']} |")
        lines.append("")
    lines += gpt_markdown(r)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
