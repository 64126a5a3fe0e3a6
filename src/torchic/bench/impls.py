"""The things a benchmark compares: each torchic backend and each reference library.

Every implementation answers the same small interface, so a suite is written
once and runs on all of them:

    impl.available()            -> (ok, why)
    with impl.session(threads): ...   (torchic.init / threadpool limits / torch threads)
    impl.tensor(ndarray)        -> a native tensor (float32 or int32 data)
    impl.kernel(op, *xs)        -> zero-argument callable: one op, issue to result
    impl.op(op, *xs)            -> issue one op the way user code would (allocating)
    impl.read(x)                -> ndarray (waits for x)
    impl.mlp_step(cfg, data)    -> zero-argument callable: one makemore training step
                                   (torchic: compiled=True records it with torchic.compile)
    impl.transformer_step(cfg, data) -> the same for makemore's Transformer (AdamW)
    impl.gpt_step(cfg, compiled)     -> one step of the nanoGPT-shaped GPT (bench/gpt.py)

Fairness rules (also stated in the generated report):
* torchic is timed issue to result: every call ends with ``torchic.sync()`` (or a
  read), so queued work is never left running outside the timer.
* GPU implementations in the throughput suites (matmul, elementwise, reduce) are
  timed as a stream: a sample is many back-to-back ops and one final sync (at least
  20 ms of work per sample), so the figure is the device's throughput, not the
  ~0.1-0.4 ms submit / read-back round trip (that latency is what the overhead
  suite shows). ``defer_sync`` switches the kernels' per-call sync off for that.
* References are given their best case: NumPy and PyTorch write into preallocated
  outputs (``out=``) where their API allows, so neither pays for page faults of
  fresh large arrays in throughput cases.
* Threads: torchic runs with ``torchic.init(backend, threads=t)`` and OpenBLAS
  limited to one thread (torchic's own threads do the parallel work); NumPy runs
  under ``threadpool_limits(t)`` (only BLAS calls are threaded in NumPy);
  PyTorch under ``torch.set_num_threads(t)``. GPU implementations ignore t.
"""

import contextlib
import importlib
import math
import operator
import statistics

import numpy as np

from . import conv, gpt, lstm, suites

OPS = ("matmul", "add", "mul", "exp", "tanh", "copy", "sum", "softmax", "cross_entropy")

GPU_BACKENDS = {"webgpu"}


class NotSupported(Exception):
    """This implementation does not have the op / case (reported as a skip)."""


# -- thread limits for BLAS / OpenMP pools -------------------------------------------------
def threadpoolctl_available():
    try:
        importlib.import_module("threadpoolctl")
        return True
    except ImportError:
        return False


@contextlib.contextmanager
def blas_limits(n, user_api="blas"):
    """Limit native thread pools (OpenBLAS by default) to n threads, if threadpoolctl exists."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield False
        return
    with threadpool_limits(limits=n, user_api=user_api):
        yield True


class Impl:
    name = "?"
    label = "?"
    kind = "reference"   # or "torchic"
    gpu = False          # GPU implementations run once, not per thread count
    threaded = True      # False: has no thread setting, runs once per suite
    defer_sync = False   # set by the runner: kernel() closures leave the sync to the timer

    def available(self):
        return True, ""

    def describe(self):
        return {}

    @contextlib.contextmanager
    def session(self, threads):
        yield

    def tensor(self, arr):
        raise NotImplementedError

    def sync(self):
        pass

    def read(self, x):
        raise NotImplementedError

    def op_fn(self, name):
        """The library's own function for op `name` (allocating its result, as users call it)."""
        raise NotSupported(name)

    def op(self, name, *xs):
        return self.op_fn(name)(*xs)

    def sync_fn(self):
        """The function kernel() calls to wait (the library's own, with no wrapper)."""
        return self.sync

    def fused(self, op, x, grad):
        """fn(): fused op `op` ("layer_norm", "gelu" (tanh), "causal_softmax") on (R, C) /
        (B, T, T) array x, forward and (grad) backward (bench reduce's fused cases)."""
        raise NotSupported(op)

    def kernel(self, name, *xs):
        fn, sync = self.op_fn(name), self.sync_fn()
        if self.defer_sync:
            return lambda: fn(*xs)

        def call():
            r = fn(*xs)
            sync()
            return r
        return call

    def mlp_step(self, cfg, data):
        raise NotSupported("train")

    def transformer_step(self, cfg, data):
        raise NotSupported("train transformer")

    def gpt_step(self, cfg, compiled=False):
        raise NotSupported("train gpt")

    def lstm_step(self, cfg, compiled=False):   # the LSTM language model (bench/lstm.py)
        raise NotSupported("train lstm")

    def lenet_step(self, cfg, compiled=False):  # the LeNet step (bench/conv.py)
        raise NotSupported("conv")

    def gpt_size_check(self, cfg):
        if cfg == gpt.FULL and not self.gpu:
            raise NotSupported("the full-size GPT runs on GPU implementations only")
        if cfg in gpt.CPU_MODELS.values() and self.gpu:
            # issue 45's CPU rows (lavapipe takes ~6 s a nanogpt step)
            raise NotSupported("the CPU GPT models run on CPU implementations only")


def makemore_step(lib, params, X, Y, batch, lr, rng, to_index, compile=None):
    """One makemore MLP training step, written once in PyTorch's spelling.

    `lib` is torchic or torch (the same code runs on both, which is the point of the
    PyTorch-compatible API); `to_index` turns a NumPy index array into lib's index tensor.
    `compile` (torchic.compile) wraps the part that runs on tensors: forward, backward
    and the update; the batch draw and the loss read stay outside, as a user writes it.
    """
    C, W1, b1, W2, b2 = params
    n = len(Y)

    def train(xb, yb):
        emb = C[xb]                                   # (B, context, emb)
        h = lib.tanh(emb.view(batch, -1) @ W1 + b1)
        logits = h @ W2 + b2
        loss = lib.nn.functional.cross_entropy(logits, yb)
        for p in params:
            p.grad = None
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= lr * p.grad
        return loss
    if compile is not None:
        train = compile(train)

    def step():
        ix = rng.integers(0, n, batch)
        return train(to_index(X[ix]), to_index(Y[ix])).item()
    return step


def transformer_step(lib, params, cfg, X, Y, rng, to_index):
    """One training step of a makemore-style Transformer (pre-LayerNorm blocks, causal
    self-attention masked with masked_fill on a tril buffer, the tanh GELU, AdamW),
    written once in PyTorch's spelling like makemore_step. `params` are the tensors in
    suites.transformer_param_names order."""
    F = lib.nn.functional
    P = dict(zip(suites.transformer_param_names(cfg["n_layer"]), params))
    B, T, C, nh = cfg["batch"], cfg["block"], cfg["n_embd"], cfg["n_head"]
    hs = C // nh
    mask = lib.tril(lib.ones(T, T)).view(1, 1, T, T)
    opt = lib.optim.AdamW(params, lr=cfg["lr"], betas=cfg["betas"], eps=cfg["eps"],
                          weight_decay=cfg["weight_decay"])
    gelu_c = math.sqrt(2.0 / math.pi)

    def forward(idx, targets):
        x = P["wte"][idx] + P["wpe"][:T]
        for i in range(cfg["n_layer"]):
            p = lambda name, i=i: P[f"h{i}.{name}"]   # noqa: E731
            h = F.layer_norm(x, (C,), p("ln1.w"), p("ln1.b"))
            q, k, v = (h @ p("attn.w") + p("attn.b")).split(C, dim=2)
            q, k, v = [t.view(B, T, nh, hs).transpose(1, 2) for t in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = F.softmax(att.masked_fill(mask[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + (y @ p("proj.w") + p("proj.b"))
            h = F.layer_norm(x, (C,), p("ln2.w"), p("ln2.b")) @ p("fc.w") + p("fc.b")
            h = 0.5 * h * (1.0 + lib.tanh(gelu_c * (h + 0.044715 * lib.pow(h, 3.0))))
            x = x + (h @ p("fcp.w") + p("fcp.b"))
        logits = F.layer_norm(x, (C,), P["lnf.w"], P["lnf.b"]) @ P["head.w"]
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def step():
        ix = rng.integers(0, len(Y), B)
        loss = forward(to_index(X[ix]), to_index(Y[ix]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def library_fused(impl, lib, causal, op, x, grad):
    """Impl.fused for torchic and torch (PyTorch's spelling; `causal` is the library's
    causal softmax: torchic's fused op, torch's masked_fill + softmax)."""
    F, t = lib.nn.functional, impl.tensor(x)
    fn = {"layer_norm": lambda a: F.layer_norm(a, (x.shape[-1],)),
          "gelu": lambda a: F.gelu(a, approximate="tanh"), "causal_softmax": causal}[op]
    # (as Impl.kernel: no sync inside the call when the runner times a stream of calls)
    sync = (lambda: None) if impl.defer_sync else impl.sync_fn()
    if not grad:
        return lambda: (fn(t), sync())[0]
    t.requires_grad_(True)

    def step():
        t.grad = None
        with lib.enable_grad():     # (the bench runs torch under no_grad)
            y = fn(t)
            y.backward(y)
        sync()
        return t.grad
    return step


# -- torchic ---------------------------------------------------------------------------------
class TorchicImpl(Impl):
    kind = "torchic"

    def __init__(self, backend):
        self.name = backend
        self.label = f"torchic {backend}"
        self.gpu = backend in GPU_BACKENDS
        self._describe = {}

    def available(self):
        from torchic import dispatcher
        try:
            return dispatcher.backend_class(self.name).available()
        except Exception as exc:  # noqa: BLE001
            return False, f"{type(exc).__name__}: {exc}"

    def describe(self):
        return self._describe

    @contextlib.contextmanager
    def session(self, threads):
        import torchic
        with blas_limits(1):
            torchic.init(self.name, threads=None if self.gpu else threads)
            try:
                try:
                    self._describe = dict(torchic.dispatcher.runtime().backend.describe())
                except Exception as exc:  # noqa: BLE001
                    self._describe = {"describe_error": str(exc)}
                yield
            finally:
                torchic.shutdown()

    def tensor(self, arr):
        import torchic
        return torchic.tensor(np.ascontiguousarray(arr))

    def sync(self):
        import torchic
        torchic.sync()

    def sync_fn(self):
        import torchic
        return torchic.sync

    def gpu_seconds(self, fn, calls=8, repeats=5):
        """Median GPU time of one fn() from GPU timestamps around `calls` back-to-back
        calls in one compute pass; None where the backend or adapter has no timestamps."""
        import torchic
        backend = torchic.dispatcher.runtime().backend
        gpu = getattr(backend, "gpu", None)
        if not hasattr(backend, "timed") or gpu is None or not gpu.has_timestamps():
            return None

        def many():
            for _ in range(calls):
                fn()
        samples = [backend.timed(many) * 1e-9 / calls for _ in range(repeats)]
        return statistics.median(samples)

    def read(self, x):
        return x.numpy() if hasattr(x, "numpy") else np.asarray(x)

    def op_fn(self, name):
        import torchic as tc
        fns = {"matmul": operator.matmul, "add": operator.add, "mul": operator.mul,
               "exp": tc.exp, "tanh": tc.tanh, "copy": lambda a: a.clone(),
               "sum": lambda a: a.sum(), "sum0": lambda a: a.sum(0),
               "softmax": lambda a: tc.softmax(a, dim=-1), "cross_entropy": tc.cross_entropy}
        if name not in fns:
            raise NotSupported(name)
        return fns[name]

    def fused(self, op, x, grad):
        import torchic
        from ..functions import CausalSoftmax
        return library_fused(self, torchic, lambda a: CausalSoftmax.apply(a, diagonal=0),
                             op, x, grad)

    def mlp_step(self, cfg, data, compiled=False):
        import torchic as tc
        params = [tc.tensor(w, requires_grad=True) for w in data["weights"]]
        return makemore_step(tc, params, data["X"], data["Y"], cfg["batch"], cfg["lr"],
                             np.random.default_rng(data["seed"]), tc.tensor,
                             tc.compile if compiled else None)

    def chain(self, a, b, ops, compiled=False):
        """fn(): ops adds of b onto a and the result read (compiled: with torchic.compile)."""
        import torchic as tc

        def body(x, y):
            for _ in range(ops):
                x = x + y
            return x
        fn = tc.compile(body) if compiled else body
        return lambda: fn(a, b).numpy()

    def transformer_step(self, cfg, data):
        import torchic as tc
        params = [tc.tensor(w, requires_grad=True) for w in data["weights"]]
        return transformer_step(tc, params, cfg, data["X"], data["Y"],
                                np.random.default_rng(data["seed"]), tc.tensor)

    def lstm_step(self, cfg, compiled=False):   # the LSTM language model (bench/lstm.py)
        import torchic as tc
        return lstm.training_step(tc, cfg, compile=tc.compile if compiled else None)

    def lenet_step(self, cfg, compiled=False):
        return conv.lenet_step(self, cfg, compiled)

    def gpt_step(self, cfg, compiled=False):
        import torchic as tc
        self.gpt_size_check(cfg)
        tc.manual_seed(suites.SEED)     # torchic's dropout masks
        return gpt.training_step(tc, cfg, *suites.gpt_data(),
                                 compile=tc.compile if compiled else None, schedule=False)


# -- NumPy -----------------------------------------------------------------------------------
class NumpyImpl(Impl):
    name = "numpy"
    label = "NumPy"

    def describe(self):
        return {"version": np.__version__, "dtype": "float32",
                "threads": "BLAS (matmul) only; ufuncs are single-threaded"}

    @contextlib.contextmanager
    def session(self, threads):
        with blas_limits(threads):
            yield

    def tensor(self, arr):
        return np.ascontiguousarray(arr)

    def read(self, x):
        return np.asarray(x)

    def op_fn(self, name):
        fns = {"matmul": np.matmul, "add": np.add, "mul": np.multiply, "exp": np.exp,
               "tanh": np.tanh, "copy": np.copy, "sum": np.sum,
               "sum0": lambda a: a.sum(axis=0)}
        if name in fns:
            return fns[name]
        return lambda *xs: self.kernel(name, *xs)()

    def kernel(self, name, *xs):
        a = xs[0]
        if name == "matmul":
            b = xs[1]
            out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))   # (f32, f64 rows)
            return lambda: np.matmul(a, b, out=out)
        if name in ("add", "mul"):
            fn, b, out = getattr(np, "add" if name == "add" else "multiply"), xs[1], np.empty_like(a)
            return lambda: fn(a, b, out=out)
        if name in ("exp", "tanh"):
            fn, out = getattr(np, name), np.empty_like(a)
            return lambda: fn(a, out=out)
        if name == "copy":
            out = np.empty_like(a)

            def copy():
                np.copyto(out, a)
                return out
            return copy
        if name == "sum":
            return lambda: a.sum()
        if name == "sum0":
            return lambda: a.sum(axis=0)
        if name == "softmax":
            # max, exp, sum, divide: NumPy's best with no temporaries of the full size
            out = np.empty_like(a)
            mx = np.empty((a.shape[0], 1), np.float32)
            s = np.empty((a.shape[0], 1), np.float32)

            def softmax():
                np.max(a, axis=1, keepdims=True, out=mx)
                np.subtract(a, mx, out=out)
                np.exp(out, out=out)
                np.sum(out, axis=1, keepdims=True, out=s)
                np.divide(out, s, out=out)
                return out
            return softmax
        if name == "cross_entropy":
            t = xs[1]
            rows = np.arange(a.shape[0])
            tmp = np.empty_like(a)
            mx = np.empty((a.shape[0], 1), np.float32)

            def cross_entropy():
                np.max(a, axis=1, keepdims=True, out=mx)
                np.subtract(a, mx, out=tmp)
                np.exp(tmp, out=tmp)
                lse = np.log(tmp.sum(axis=1)) + mx[:, 0]
                return np.float32((lse - a[rows, t]).mean())
            return cross_entropy
        raise NotSupported(name)

    def fused(self, op, x, grad):
        """The workers backend's NumPy kernels (forward, and the backward kernels; the causal
        softmax's backward is the softmax backward with g = y, as the libraries' y.backward(y))."""
        from ..backends.cpu import numpy_kernels as nk
        out, params = np.empty_like(x), {"eps": 1e-5, "diagonal": 0}
        w, b = np.ones(x.shape[-1], np.float32), np.zeros(x.shape[-1], np.float32)
        ins = {"layer_norm": (x, w, b)}.get(op, (x,))
        name = "gelu_tanh" if op == "gelu" else op
        fwd, bwd = getattr(nk, name), getattr(nk, name + "_grad", None)
        if not grad:
            return lambda: fwd(out, ins, params) or out
        dx = np.empty_like(x)
        if bwd is None:
            return lambda: (fwd(out, ins, params), np.multiply(
                out, out - (out * out).sum(axis=-1, keepdims=True), out=dx))[-1]
        gins = (x, w, x) if op == "layer_norm" else (x, x)
        return lambda: (fwd(out, ins, params), bwd(dx, gins, params), dx)[-1]

    def mlp_step(self, cfg, data):
        C, W1, b1, W2, b2 = [w.copy() for w in data["weights"]]
        X, Y = data["X"], data["Y"]
        rng = np.random.default_rng(data["seed"])
        B, n, lr = cfg["batch"], len(Y), np.float32(cfg["lr"])
        rows = np.arange(B)

        def step():
            # forward
            ix = rng.integers(0, n, B)
            xb, yb = X[ix], Y[ix]
            x = C[xb].reshape(B, -1)
            h = np.tanh(x @ W1 + b1)
            logits = h @ W2 + b2
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            loss = -np.log(p[rows, yb]).mean()
            # backward (hand-written)
            p[rows, yb] -= 1
            p *= np.float32(1.0 / B)
            dW2, db2 = h.T @ p, p.sum(axis=0)
            dh = (p @ W2.T) * (1 - h * h)
            dW1, db1 = x.T @ dh, dh.sum(axis=0)
            dx = (dh @ W1.T).reshape(-1, C.shape[1])
            dC = np.zeros_like(C)
            np.add.at(dC, xb.ravel(), dx)
            for w, g in ((C, dC), (W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
                w -= lr * g
            return float(loss)
        return step


# -- PyTorch ---------------------------------------------------------------------------------
class TorchImpl(Impl):
    def __init__(self, device="cpu"):
        self.device = device
        self.gpu = device != "cpu"
        self.name = "torch" if device == "cpu" else f"torch-{device}"
        self.label = "PyTorch CPU" if device == "cpu" else f"PyTorch {device.upper()}"

    def available(self):
        try:
            import torch
        except ImportError:
            return False, "torch is not installed"
        if self.device == "cuda" and not torch.cuda.is_available():
            return False, "no CUDA device"
        return True, ""

    def describe(self):
        import torch
        d = {"version": torch.__version__, "device": self.device}
        if self.device == "cuda":
            d["gpu"] = torch.cuda.get_device_name(0)
            d["tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
        return d

    @contextlib.contextmanager
    def session(self, threads):
        import torch
        old = torch.get_num_threads()
        if not self.gpu:
            torch.set_num_threads(threads)
        try:
            with torch.no_grad():
                yield
        finally:
            torch.set_num_threads(old)

    def tensor(self, arr):
        import torch
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if t.dtype in (torch.int32, torch.int64):
            t = t.long()   # PyTorch's index / target dtype
        return t.to(self.device) if self.gpu else t

    def sync(self):
        if self.gpu:
            import torch
            torch.cuda.synchronize()

    def read(self, x):
        import torch
        if isinstance(x, torch.Tensor):
            if x.requires_grad:
                x = x.detach()
            return x.numpy() if x.device.type == "cpu" else x.cpu().numpy()
        return np.asarray(x)

    def op_fn(self, name):
        import torch
        fns = {"matmul": torch.matmul, "add": torch.add, "mul": torch.mul, "exp": torch.exp,
               "tanh": torch.tanh, "copy": torch.clone, "sum": torch.sum,
               "sum0": lambda a: a.sum(0), "softmax": lambda a: torch.softmax(a, dim=-1),
               "cross_entropy": torch.nn.functional.cross_entropy}
        if name not in fns:
            raise NotSupported(name)
        return fns[name]

    def kernel(self, name, *xs):
        import torch
        a, sync = xs[0], self.sync
        out = None
        if name == "matmul":
            out = torch.empty((a.shape[0], xs[1].shape[1]), dtype=a.dtype, device=a.device)
            fn = lambda: torch.matmul(a, xs[1], out=out)  # noqa: E731
        elif name in ("add", "mul", "exp", "tanh"):
            out = torch.empty_like(a)
            f = getattr(torch, name)
            fn = (lambda: f(a, xs[1], out=out)) if name in ("add", "mul") else \
                (lambda: f(a, out=out))
        elif name == "copy":
            out = torch.empty_like(a)
            fn = lambda: out.copy_(a)  # noqa: E731
        else:
            return super().kernel(name, *xs)
        if self.defer_sync:
            return fn

        def call():
            r = fn()
            sync()
            return r
        return call

    def fused(self, op, x, grad):
        import torch
        mask = torch.ones(x.shape[-2:], device=self.device).tril() == 0
        return library_fused(self, torch,
                             lambda a: a.masked_fill(mask, float("-inf")).softmax(-1),
                             op, x, grad)

    def mlp_step(self, cfg, data):
        import torch
        dev = self.device
        params = [torch.tensor(w, device=dev, requires_grad=True) for w in data["weights"]]
        step = makemore_step(torch, params, data["X"].astype(np.int64),
                             data["Y"].astype(np.int64), cfg["batch"], cfg["lr"],
                             np.random.default_rng(data["seed"]),
                             lambda a: torch.from_numpy(a).to(dev))

        def step_with_grad():
            with torch.enable_grad():
                return step()
        return step_with_grad

    def transformer_step(self, cfg, data):
        import torch
        dev = self.device
        params = [torch.tensor(w, device=dev, requires_grad=True) for w in data["weights"]]
        step = transformer_step(torch, params, cfg, data["X"].astype(np.int64),
                                data["Y"].astype(np.int64), np.random.default_rng(data["seed"]),
                                lambda a: torch.from_numpy(a).to(dev))

        def step_with_grad():
            with torch.enable_grad():
                return step()
        return step_with_grad

    def lstm_step(self, cfg, compiled=False):   # the LSTM language model (bench/lstm.py)
        import torch
        return lstm.training_step(torch, cfg, None if self.device == "cpu" else self.device,
                                  compile=torch.compile if compiled else None)

    def lenet_step(self, cfg, compiled=False):
        return conv.lenet_step(self, cfg, compiled)

    def gpt_step(self, cfg, compiled=False):
        import torch
        self.gpt_size_check(cfg)
        torch.manual_seed(suites.SEED)
        step = gpt.training_step(torch, cfg, *suites.gpt_data(), device=self.device,
                                 compile=torch.compile if compiled else None, schedule=False)

        def step_with_grad():
            with torch.enable_grad():
                return step()
        return step_with_grad


class TorchCompileImpl(TorchImpl):
    """PyTorch (CPU: inductor's C++ kernels; CUDA: its Triton kernels) with torch.compile of
    the GPT, LeNet and LSTM training steps (those cases only): the peer of torchic.compile
    (issue 45)."""

    def __init__(self, device="cuda"):
        super().__init__(device)
        self.name = "torch-compile" if device == "cpu" else f"torch-{device}-compile"
        self.label = f"PyTorch {'CPU' if device == 'cpu' else device.upper()} + torch.compile"

    def available(self):
        ok, why = super().available()
        if ok:
            try:
                import torch._dynamo  # noqa: F401
            except Exception as exc:  # noqa: BLE001
                return False, f"torch.compile unavailable: {exc}"
        return ok, why

    def op_fn(self, *_):
        raise NotSupported("torch.compile rows are the gpt, lenet and lstm steps only")

    kernel = op = mlp_step = transformer_step = op_fn

    # Each step is compiled from a clean slate: dynamo keys its cache on the code object
    # (one `train` for every GPT size, one optimizer `step` for every model) and, past
    # config.recompile_limit (8) guard failures, runs that code eagerly from then on: a
    # run's later rounds and cases were timing PyTorch eager under this name.
    def gpt_step(self, cfg, compiled=False):
        reset_dynamo()
        return super().gpt_step(cfg, compiled=True)

    def lstm_step(self, cfg, compiled=False):
        reset_dynamo()
        return super().lstm_step(cfg, compiled=True)

    def lenet_step(self, cfg, compiled=False):
        reset_dynamo()
        return super().lenet_step(cfg, compiled=True)


def reset_dynamo():
    import torch._dynamo
    torch._dynamo.reset()


# -- tinygrad --------------------------------------------------------------------------------
class TinygradImpl(Impl):
    """tinygrad on its default device; it has no thread setting, so it runs once."""

    name = "tinygrad"
    label = "tinygrad"
    threaded = False   # runs once: tinygrad picks its own parallelism

    def available(self):
        try:
            import tinygrad  # noqa: F401
        except ImportError:
            return False, "tinygrad is not installed"
        except Exception as exc:  # noqa: BLE001
            return False, f"tinygrad failed to import: {exc}"
        try:
            from tinygrad import Tensor
            (Tensor([1.0, 2.0]) + 1).numpy()
        except Exception as exc:  # noqa: BLE001  (e.g. no clang for the CPU device)
            return False, f"tinygrad cannot run here: {type(exc).__name__}: {exc}"[:300]
        return True, ""

    def describe(self):
        import tinygrad
        from tinygrad import Device
        from .machine import _dist_version
        return {"version": getattr(tinygrad, "__version__", None) or _dist_version("tinygrad"),
                "device": Device.DEFAULT}

    def tensor(self, arr):
        from tinygrad import Tensor
        return Tensor(np.ascontiguousarray(arr)).realize()

    def sync(self):
        from tinygrad import Device
        Device[Device.DEFAULT].synchronize()

    def read(self, x):
        return x.numpy() if hasattr(x, "numpy") else np.asarray(x)

    def op_fn(self, name):
        fns = {"matmul": lambda a, b: a @ b, "add": lambda a, b: a + b,
               "mul": lambda a, b: a * b, "exp": lambda a: a.exp(), "tanh": lambda a: a.tanh(),
               "sum": lambda a: a.sum(), "sum0": lambda a: a.sum(0),
               "softmax": lambda a: a.softmax(-1),
               "cross_entropy": lambda a, t: a.sparse_categorical_crossentropy(t)}
        if name not in fns:
            raise NotSupported(name)
        fn = fns[name]
        return lambda *xs: fn(*xs).realize()

REFERENCES = {
    "numpy": NumpyImpl,
    "torch": TorchImpl,
    "torch-cuda": lambda: TorchImpl("cuda"),
    "torch-cuda-compile": TorchCompileImpl,
    "torch-compile": lambda: TorchCompileImpl("cpu"),
    "tinygrad": TinygradImpl,
}
# not in the default set (asked for by name): compiling each step takes minutes on CPU
OPT_IN = ("torch-compile",)


def resolve(backends=None, references=None):
    """(impls, skipped): the implementations to run and (name, why) for the ones skipped."""
    from torchic import dispatcher
    known = dispatcher.backend_names()
    names = known if backends is None else [b for b in backends if b != "none"]
    impls, skipped = [], []
    for name in names:
        if name not in known:
            raise ValueError(f"unknown torchic backend {name!r}; known: {', '.join(known)}")
        impl = TorchicImpl(name)
        ok, why = impl.available()
        (impls.append(impl) if ok else skipped.append((name, why or "not available")))
    refs = [r for r in REFERENCES if r not in OPT_IN] if references is None else references
    for name in refs:
        if name not in REFERENCES:
            raise ValueError(f"unknown reference {name!r}; known: {', '.join(REFERENCES)}")
        impl = REFERENCES[name]()
        try:
            ok, why = impl.available()
        except Exception as exc:  # noqa: BLE001
            ok, why = False, f"{type(exc).__name__}: {exc}"
        (impls.append(impl) if ok else skipped.append((name, why or "not available")))
    return impls, skipped

