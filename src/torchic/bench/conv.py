"""The conv suite (issue 42): a LeNet-style CNN training step and a ResNet-shaped conv2d
forward + backward, torchic beside PyTorch CPU in one run (same threads).

Both are written once in PyTorch's spelling with `lib` = torchic or torch, from the same
NumPy weights and batches, so the first step's loss must agree (checked before timing).
"""

import numpy as np

from . import impls as _impls   # (a partly loaded module here: impls imports suites)

LENET = {"batch": 64, "lr": 0.01}
RESNET = {"batch": 8, "channels": 64, "size": 56, "kernel": 3}
QUICK_LENET = {"batch": 8, "lr": 0.01}          # --quick (CI): toy sizes
QUICK_RESNET = {"batch": 1, "channels": 8, "size": 14, "kernel": 3}


def _lib(impl, compiled=False):
    """torchic or torch (CPU or CUDA) for this impl (the others have no conv); the
    torch.compile references only for a compiled step."""
    if impl.kind == "torchic":
        import torchic
        return torchic
    compiles = ("torch-compile", "torch-cuda-compile") if compiled else ()
    if impl.name in ("torch", "torch-cuda") + compiles:
        import torch                           # (impl.tensor puts the data on its device)
        return torch
    raise _impls.NotSupported("conv: torchic and PyTorch only")


def lenet_data(cfg):
    rng = np.random.default_rng([1234, 42])
    shapes = {"c1.w": (6, 1, 5, 5), "c1.b": (6,), "c2.w": (16, 6, 5, 5), "c2.b": (16,),
              "f1.w": (120, 256), "f1.b": (120,), "f2.w": (84, 120), "f2.b": (84,),
              "f3.w": (10, 84), "f3.b": (10,)}
    weights = {}
    for name, shape in shapes.items():
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        bound = 1.0 / np.sqrt(fan_in)
        weights[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    x = rng.standard_normal((cfg["batch"], 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, cfg["batch"]).astype(np.int64)
    return weights, x, y


def lenet_loss(lib, P, x, y):
    F = lib.nn.functional
    h = F.max_pool2d(F.relu(F.conv2d(x, P["c1.w"], P["c1.b"])), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, P["c2.w"], P["c2.b"])), 2)
    h = h.reshape(h.shape[0], -1)
    h = F.relu(F.linear(h, P["f1.w"], P["f1.b"]))
    h = F.relu(F.linear(h, P["f2.w"], P["f2.b"]))
    return F.cross_entropy(F.linear(h, P["f3.w"], P["f3.b"]), y)


def lenet_step(impl, cfg, compiled=False):
    """fn(): one SGD step of LeNet on the same batch; returns the loss before the step.
    compiled: the step (zero_grad, forward, backward, update) is compiled by the impl's
    library (torchic.compile; torch.compile for the torch-compile references)."""
    lib = _lib(impl, compiled)
    weights, x, y = lenet_data(cfg)
    with lib.enable_grad():
        P = {k: impl.tensor(v).requires_grad_() for k, v in weights.items()}
    params = list(P.values())
    opt = lib.optim.SGD(params, lr=cfg["lr"])
    xt, yt = impl.tensor(x), impl.tensor(y)
    if getattr(yt, "dtype", None) is not None and "int" in str(yt.dtype):
        yt = yt.long()

    def train(xt, yt):
        opt.zero_grad()
        loss = lenet_loss(lib, P, xt, yt)
        loss.backward()
        opt.step()
        return loss
    if compiled:
        train = lib.compile(train)

    def step():
        with lib.enable_grad():
            return train(xt, yt).item()
    return step


def model_step(name, lib, compiled=False):
    """fn(): one training step of the bench's "lenet" or "lstm" model on `lib` (the torchic
    or torch module itself, not a bench impl: scripts/profile_ops.py, scripts/ab_step.py,
    scripts/bench_compiled_nets.py); compiled: by lib.compile (torchic.compile /
    torch.compile)."""
    if name == "lstm":
        from . import lstm
        return lstm.training_step(lib, dict(lstm.CFG), compile=lib.compile if compiled else None)
    if name != "lenet":
        raise ValueError(f"model must be 'lenet' or 'lstm', got {name!r}")

    class LibImpl:
        kind = "torchic" if lib.__name__ == "torchic" else "reference"
        name = "torchic" if lib.__name__ == "torchic" else "torch"
        tensor = staticmethod(lib.tensor)
    return lenet_step(LibImpl, dict(LENET), compiled)


def lenet_first_loss(cfg):
    import torch
    weights, x, y = lenet_data(cfg)
    P = {k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()}
    return float(lenet_loss(torch, P, torch.tensor(x, dtype=torch.float64), torch.tensor(y)))


def resnet_conv_step(impl, cfg):
    """fn(): conv2d forward + backward (input and weight gradients) at a ResNet shape."""
    lib = _lib(impl)
    rng = np.random.default_rng([1234, 43])
    b, c, s, k = cfg["batch"], cfg["channels"], cfg["size"], cfg["kernel"]
    x_np = rng.standard_normal((b, c, s, s)).astype(np.float32)
    w_np = (rng.standard_normal((c, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    with lib.enable_grad():
        x, w = impl.tensor(x_np).requires_grad_(), impl.tensor(w_np).requires_grad_()
    g = impl.tensor(rng.standard_normal((b, c, s, s)).astype(np.float32) / s)

    def step():
        with lib.enable_grad():
            x.grad = w.grad = None
            y = lib.nn.functional.conv2d(x, w, padding=k // 2)
            y.backward(g)
        return float(w.grad.reshape(-1)[0].item())
    return step


def resnet_conv_expected(cfg):
    import torch
    rng = np.random.default_rng([1234, 43])
    b, c, s, k = cfg["batch"], cfg["channels"], cfg["size"], cfg["kernel"]
    x = torch.tensor(rng.standard_normal((b, c, s, s)).astype(np.float32), dtype=torch.float64,
                     requires_grad=True)
    w = torch.tensor((rng.standard_normal((c, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32),
                     dtype=torch.float64, requires_grad=True)
    g = torch.tensor(rng.standard_normal((b, c, s, s)).astype(np.float32) / s, dtype=torch.float64)
    with torch.enable_grad():
        torch.nn.functional.conv2d(x, w, padding=k // 2).backward(g)
    return float(w.grad.reshape(-1)[0])


def lenet_label(cfg):
    return f"b{cfg['batch']} 28x28"


def resnet_label(b):
    k, c, s = b["kernel"], b["channels"], b["size"]
    return f"b{b['batch']} {c}->{c} {k}x{k} {s}x{s}"


def conv_suite(ctx, case_cls):
    """The cases; `case_cls` is suites.Case (passed in: suites imports this module)."""
    lenet, b = (QUICK_LENET, QUICK_RESNET) if ctx.get("quick") else (LENET, RESNET)
    flops = 3 * 2 * b["batch"] * b["channels"] ** 2 * b["kernel"] ** 2 * b["size"] ** 2
    return [
        case_cls("conv", "lenet", lenet_label(lenet), dict(lenet), "ms/step", 1,
                 lambda impl: impl.lenet_step(lenet), lambda: lenet_first_loss(lenet),
                 rtol=1e-4, atol=1e-4),
        case_cls("conv", "conv2d_fwd_bwd", resnet_label(b), dict(b), "GFLOPS", flops,
                 lambda impl: resnet_conv_step(impl, b), lambda: resnet_conv_expected(b),
                 rtol=1e-3, atol=1e-4),
    ]
