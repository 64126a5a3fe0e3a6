"""Benchmark the simd backend's kernels beside NumPy, in one process.

    python kernels/bench_simd.py                 # the issue's table (~1-2 minutes on 2 cores)
    python kernels/bench_simd.py --quick         # smaller sizes, fewer repeats
    python kernels/bench_simd.py --handoff       # thread hand-off / FFI costs (the design numbers)

Every number is a median over repeats after a warm-up. The simd backend is
driven directly through the Dispatcher (rt.run / rt.read / rt.sync), so a
kernel figure is "issue to result": it includes the op record, the hand-off to
the coordinator thread and the wait. NumPy's BLAS thread count is switched in
this same process through OpenBLAS's own API (threadpoolctl when installed),
so both columns of a row come from one run on one machine state; runs on a
shared 2-core machine vary by +-20% between processes.
"""

import argparse
import ctypes
import os
import platform
import statistics
import sys
import time

import numpy as np

try:
    import torchic  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from torchic import dispatcher  # noqa: E402
from torchic.dispatcher import View  # noqa: E402


# -- NumPy's BLAS -------------------------------------------------------------------------------
class Blas:
    """NumPy's OpenBLAS: its core name and a thread-count switch (no threadpoolctl needed)."""

    def __init__(self):
        self.lib, self.prefix, self.suffix, self.path = None, "", "", None
        try:
            with open("/proc/self/maps") as f:
                paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
        except OSError:
            paths = set()
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            for prefix, suffix in (("scipy_openblas_", "64_"), ("openblas_", "")):
                if hasattr(lib, f"{prefix}set_num_threads{suffix}"):
                    self.lib, self.prefix, self.suffix, self.path = lib, prefix, suffix, path
                    return

    def fn(self, name, restype=ctypes.c_int):
        f = getattr(self.lib, f"{self.prefix}{name}{self.suffix}")
        f.restype = restype
        return f

    def corename(self):
        if self.lib is None:
            return "unknown (no OpenBLAS found)"
        return self.fn("get_corename", ctypes.c_char_p)().decode()

    def config(self):
        return self.fn("get_config", ctypes.c_char_p)().decode() if self.lib else "?"

    def set_threads(self, n):
        try:
            import threadpoolctl
            threadpoolctl.threadpool_limits(n, user_api="blas")
            return
        except ImportError:
            pass
        if self.lib is not None:
            self.fn("set_num_threads", None)(ctypes.c_int(n))


# -- timing -------------------------------------------------------------------------------------
def median_time(fn, repeats, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


class Simd:
    def __init__(self, threads):
        self.rt = dispatcher.init("simd", threads=threads)

    def put(self, x):
        x = np.ascontiguousarray(x)
        dt = "i32" if x.dtype.kind in "iu" else "f32"
        x = x.astype(np.int32 if dt == "i32" else np.float32)
        v = View(self.rt.alloc(max(x.nbytes, 4)), 0, x.shape, tuple(s // 4 for s in x.strides), dt)
        self.rt.write(v, x)
        return v

    def empty(self, shape):
        n = int(np.prod(shape))
        st = tuple(int(s) for s in np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1])
        return View(self.rt.alloc(max(4 * n, 4)), 0, tuple(shape), st, "f32")

    def op(self, name, out, *ins, **params):
        def call():
            self.rt.run(name, out, ins, params)
            self.rt.sync()
        return call


# -- the suites ---------------------------------------------------------------------------------
def bench_matmul(blas, sizes, quick):
    rows = []
    for threads in (1, 2):
        blas.set_threads(threads)
        dispatcher.shutdown()
        s = Simd(threads)
        for n in sizes:
            a = np.random.rand(n, n).astype(np.float32)
            b = np.random.rand(n, n).astype(np.float32)
            reps = max(3, min(200, int((0.3 if quick else 1.5) * 1e9 / (2 * n ** 3) * 50)))
            t_np = median_time(lambda: a @ b, reps)
            out = s.empty((1, n, n))
            va, vb = s.put(a[None]), s.put(b[None])
            t_simd = median_time(s.op("matmul", out, va, vb), reps)
            got = s.rt.read(out)[0]
            err = float(np.abs(got - a @ b).max() / n)
            gf = lambda t: 2 * n ** 3 / t / 1e9  # noqa: E731
            rows.append((f"matmul {n}^3, {threads} thread{'s' if threads > 1 else ''}",
                         f"{gf(t_np):7.1f} GFLOPS", f"{gf(t_simd):7.1f} GFLOPS",
                         gf(t_simd) / gf(t_np), f"err/n {err:.1e}"))
        dispatcher.shutdown()
    blas.set_threads(os.cpu_count() or 1)
    return rows


def bench_rowwise(quick, threads):
    rows = []
    s = Simd(threads)
    # exp over 16M floats
    x = np.random.randn(16 << 20).astype(np.float32)
    vx, out = s.put(x), s.empty(x.shape)
    reps = 5 if quick else 15
    t_np = median_time(lambda: np.exp(x), reps)
    t_simd = median_time(s.op("exp", out, vx), reps)
    rows.append(("exp, 16M floats", f"{t_np * 1e3:7.2f} ms", f"{t_simd * 1e3:7.2f} ms", t_np / t_simd, ""))
    # softmax over 4096 x 1024 rows
    z = np.random.randn(4096, 1024).astype(np.float32)

    def np_softmax():
        m = z.max(axis=1, keepdims=True)
        e = np.exp(z - m)
        return e / e.sum(axis=1, keepdims=True)
    vz, out = s.put(z), s.empty(z.shape)
    t_np = median_time(np_softmax, reps)
    t_simd = median_time(s.op("softmax", out, vz), reps)
    rows.append(("softmax 4096 x 1024", f"{t_np * 1e3:7.2f} ms", f"{t_simd * 1e3:7.2f} ms", t_np / t_simd, ""))
    # sum of 10M
    y = np.random.rand(10_000_000).astype(np.float32)
    vy, out = s.put(y), s.empty(())
    t_np = median_time(lambda: y.sum(), reps)
    t_simd = median_time(s.op("sum", out, vy, naxes=1), reps)
    rel = abs(float(s.rt.read(out)) - y.astype(np.float64).sum()) / y.astype(np.float64).sum()
    rows.append(("sum, 10M floats", f"{t_np * 1e3:7.2f} ms", f"{t_simd * 1e3:7.2f} ms", t_np / t_simd,
                 f"rel err {rel:.1e}"))
    dispatcher.shutdown()
    return rows


def bench_overhead(quick, threads):
    """32x32 add in a 100-op chain, issue to result: backend-level and through Tensors."""
    rows = []
    a = np.random.rand(32, 32).astype(np.float32)
    b = np.random.rand(32, 32).astype(np.float32)

    def np_chain():
        x = a
        for _ in range(100):
            x = x + b
        return x
    reps = 50 if quick else 300
    t_np = median_time(np_chain, reps) / 100
    s = Simd(threads)
    va, vb, out = s.put(a), s.put(b), s.empty((32, 32))
    run = s.rt.run

    def be_chain():
        run("add", out, (va, vb), {})
        for _ in range(99):
            run("add", out, (out, vb), {})
        s.rt.read(out)
    t_be = median_time(be_chain, reps) / 100
    rows.append(("32x32 add, per op (Dispatcher)", f"{t_np * 1e6:7.2f} us", f"{t_be * 1e6:7.2f} us",
                 t_np / t_be, "100-op chain + read"))
    dispatcher.shutdown()
    try:
        import torchic as tc
        tc.init("simd", threads=threads)
        ta, tb = tc.tensor(a), tc.tensor(b)

        def tc_chain():
            x = ta
            for _ in range(100):
                x = x + tb
            x.numpy()
        t_tc = median_time(tc_chain, reps) / 100
        rows.append(("32x32 add, per op (Tensor)", f"{t_np * 1e6:7.2f} us", f"{t_tc * 1e6:7.2f} us",
                     t_np / t_tc, "PyTorch eager: 3.1-3.8 us"))
        tc.shutdown()
    except Exception as exc:  # noqa: BLE001 -- the frontend may be mid-change
        rows.append(("32x32 add, per op (Tensor)", "-", f"unavailable: {exc}", float("nan"), ""))
    return rows


def bench_makemore(quick, threads):
    """One training step of the classic makemore MLP (batch 32, emb 10, ctx 3, hidden 200)."""
    try:
        import torchic as tc
    except ImportError as exc:
        return [("makemore step", "-", f"unavailable: {exc}", float("nan"), "")]
    rng = np.random.default_rng(0)
    V, E, CTX, H, B = 27, 10, 3, 200, 32
    X = rng.integers(0, V, (20000, CTX))
    Y = rng.integers(0, V, 20000)
    tc.init("simd", threads=threads)
    ws = [rng.standard_normal((V, E)), rng.standard_normal((CTX * E, H)) * 0.2,
          rng.standard_normal(H) * 0.01, rng.standard_normal((H, V)) * 0.01, np.zeros(V)]
    params = [tc.tensor(w.astype(np.float32), requires_grad=True) for w in ws]
    C, W1, b1, W2, b2 = params

    def step():
        ix = rng.integers(0, len(Y), B)
        xb, yb = tc.tensor(X[ix].astype(np.int32)), tc.tensor(Y[ix].astype(np.int32))
        h = tc.tanh(C[xb].view(B, -1) @ W1 + b1)
        loss = tc.cross_entropy(h @ W2 + b2, yb)
        for p in params:
            p.grad = None
        loss.backward()
        with tc.no_grad():
            for p in params:
                p -= 0.1 * p.grad
        return loss.item()
    t = median_time(step, 100 if quick else 500, warmup=20)
    tc.shutdown()
    return [(f"makemore step, {threads} thread{'s' if threads > 1 else ''}", "-",
             f"{t * 1e3:7.3f} ms", float("nan"), "PyTorch CPU: 0.63 ms")]


def bench_handoff():
    """The measurements behind the simd backend's design (see its __init__.py)."""
    import queue
    import struct
    import threading

    from torchic.backends.simd import native
    lib = native.load()

    def med_us(f, n=20000):
        return median_time(f, n, warmup=100) * 1e6

    qa, qb = queue.SimpleQueue(), queue.SimpleQueue()

    def echo():
        while (x := qa.get()) is not None:
            qb.put(x)
    th = threading.Thread(target=echo)
    th.start()
    print(f"Python thread hand-off (SimpleQueue round trip)  {med_us(lambda: (qa.put(1), qb.get()), 5000):7.2f} us")
    qa.put(None)
    th.join()
    ctx = lib.new(2)
    arena = np.zeros(1 << 20, np.uint8)
    lib.add_arena(ctx, arena.ctypes.data, arena.nbytes)
    print(f"ctypes call, PyDLL / CDLL                         {med_us(lambda: lib.pydll.tk_done(ctx)):7.2f} / "
          f"{med_us(lambda: lib.cdll.tk_done(ctx)):.2f} us")
    print(f"ndarray.ctypes.data                               {med_us(lambda: arena.ctypes.data):7.2f} us")
    fmt = struct.Struct("<5qd8q")
    args = (lib.op_names().index("fill"), 1, 0, 0, 0, 1.0, 0, 0, 256, 0, 0, 1, 1, 1)
    rec = fmt.pack(*args)
    print(f"struct.pack of a 14-word op record                {med_us(lambda: fmt.pack(*args)):7.2f} us")
    print(f"tk_push (decode + validate + enqueue)             {med_us(lambda: lib.push(ctx, rec, 14)):7.2f} us")
    lib.wait(ctx, 0)

    def chain():
        for _ in range(100):
            s = lib.push(ctx, rec, 14)
        lib.wait(ctx, s)
    print(f"100 pushes + one wait, per op                     {med_us(chain, 300) / 100:7.2f} us")

    def rt():
        lib.wait(ctx, lib.push(ctx, rec, 14))
    print(f"push + wait round trip of one tiny op             {med_us(rt, 5000):7.2f} us")
    lib.free(ctx)


def machine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return cpu


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    p.add_argument("--handoff", action="store_true", help="only the hand-off / FFI measurements")
    p.add_argument("--sizes", default=None, help="matmul sizes, e.g. 128,256,1024,2048")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="simd threads for the non-matmul rows (default: the core count)")
    p.add_argument("--skip", default="", help="comma list of suites to skip: matmul,rowwise,overhead,makemore")
    args = p.parse_args(argv)
    ok, why = dispatcher.backend_class("simd").available()
    if not ok:
        print(f"simd backend unavailable: {why}")
        return 1
    if args.handoff:
        bench_handoff()
        return 0
    from torchic.backends.simd import describe_isa
    blas = Blas()
    threads = args.threads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {machine()}, {cores} cores usable, {platform.system()} {platform.machine()}")
    print(f"simd backend ISA: {describe_isa()}")
    print(f"NumPy {np.__version__}, BLAS: {blas.config()} (core: {blas.corename()})")
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
                                      "OMP_NUM_THREADS") if k in os.environ}
    print(f"BLAS environment: {env or 'none set'}")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        ([128, 256, 1024] if args.quick else [128, 256, 1024, 2048])
    skip = set(filter(None, args.skip.split(",")))
    rows = []
    if "matmul" not in skip:
        rows += bench_matmul(blas, sizes, args.quick)
    if "rowwise" not in skip:
        rows += bench_rowwise(args.quick, threads)
    if "overhead" not in skip:
        rows += bench_overhead(args.quick, threads)
    if "makemore" not in skip:
        for t in sorted({1, threads}):
            rows += bench_makemore(args.quick, t)
    print()
    print(f"{'benchmark':36} {'NumPy':>16} {'torchic simd':>18} {'simd/NumPy':>10}  note")
    for name, a, b, ratio, note in rows:
        r = "" if ratio != ratio else f"{ratio:9.2f}x"
        print(f"{name:36} {a:>16} {b:>18} {r:>10}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
