"""Fusion in compiled programs never changes results beyond float32 reassociation: a
compiled step replayed with fusion on (the default) and off (TORCHIC_SIMD_FUSE=0,
TORCHIC_WEBGPU_FUSE=0, read when a program is prepared) against a float64 reference.

The fused runs of simd (fuse.rs: elementwise runs tile by tile, adam_update records as one
multi-tensor pass) and webgpu (fuse.py: one shader per run, the optimizer's records as one
dispatch) compute every element with the eager kernels' arithmetic, so fused and unfused
replays agree bit for bit; both stay within float32 rounding of the float64 reference.
"""

import numpy as np
import pytest

import torchic
from torchic.bench import gpt

torch = pytest.importorskip("torch")

SWITCHES = ("TORCHIC_SIMD_FUSE", "TORCHIC_WEBGPU_FUSE")
# a small nanoGPT (AdamW with its two parameter groups, no dropout): 2 layers, 2 heads
CFG = dict(gpt.SMALL, n_embd=32, block=16, batch=4, dropout=0.0)
STEPS = 4


def _set_fusion(monkeypatch, on):
    for name in SWITCHES:
        monkeypatch.setenv(name, "1" if on else "0")


def _gpt_run(lib, vocab, data, dtype=None):
    """(losses of STEPS compiled steps, final parameters as float64 arrays)."""
    model = gpt.build(lib, CFG, vocab)
    if dtype is not None:
        model = model.to(dtype)
    opt = gpt.optimizer(lib, model, CFG)
    train = gpt.train_fn(lib, model, opt, 0.0)
    if lib is torchic:
        train = torchic.compile(train)
    batches = gpt.Batches(data, CFG["block"], CFG["batch"])
    index = gpt.index_fn(lib)
    losses = [float(train(index(x), index(y)).item())
              for x, y in (batches.get("train") for _ in range(STEPS))]
    params = [p.detach().numpy().astype(np.float64) for p in model.parameters()]
    return np.array(losses), params


def test_fused_and_unfused_gpt_steps_match_a_float64_reference(backend, monkeypatch):
    data, vocab = gpt.encode(gpt.names_text())
    runs = {}
    for on in (True, False):
        _set_fusion(monkeypatch, on)
        runs[on] = _gpt_run(torchic, vocab, data)
    want_losses, want_params = _gpt_run(torch, vocab, data, torch.float64)
    for on, (losses, params) in runs.items():
        np.testing.assert_allclose(losses, want_losses, rtol=2e-5, err_msg=f"fusion {on}")
        # (AdamW normalises each step: an element whose gradient is near 0 moves by up
        # to ~lr on float32 rounding; a wrong update moves elements by lr = 1e-3)
        for got, want in zip(params, want_params):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5, err_msg=f"fusion {on}")
    # fusion reorders nothing here: the same bits
    np.testing.assert_array_equal(runs[True][0], runs[False][0])
    for a, b in zip(runs[True][1], runs[False][1]):
        np.testing.assert_array_equal(a, b)


def test_fused_elementwise_run_and_multi_tensor_update_match_float64(backend, monkeypatch):
    """Tensors large enough for simd's tiled runs (1 MiB of views), several parameters
    for the multi-tensor AdamW pass (sizes that cut into pieces unevenly)."""
    rng = np.random.default_rng(5)
    x64 = rng.standard_normal((300, 1000))
    b64 = rng.standard_normal(1000)
    shapes = [(300, 1000), (7,), (1000,), (33, 65)]
    p0 = [rng.standard_normal(s) for s in shapes]
    g0 = [rng.standard_normal(s) for s in shapes]
    results = {}
    for on in (True, False):
        _set_fusion(monkeypatch, on)
        x = torchic.tensor(x64.astype(np.float32))
        b = torchic.tensor(b64.astype(np.float32))
        params = [torchic.tensor(p.astype(np.float32), requires_grad=True) for p in p0]
        grads = [torchic.tensor(g.astype(np.float32)) for g in g0]
        opt = torchic.optim.AdamW(params, lr=0.01, weight_decay=0.1)

        @torchic.compile
        def step(x):
            y = torchic.tanh(x * 0.5 + b)
            z = (1.0 - y * y) * x - y
            for p, g in zip(params, grads):
                p.grad = g.clone()
            opt.step()
            return z
        outs = [step(x).numpy() for _ in range(3)]
        results[on] = outs, [p.detach().numpy() for p in params]
    y = np.tanh(x64 * 0.5 + b64)
    z = (1.0 - y * y) * x64 - y
    # AdamW in float64, 3 steps (torch's, on the same numbers)
    tp = [torch.tensor(p, requires_grad=True) for p in p0]
    topt = torch.optim.AdamW(tp, lr=0.01, weight_decay=0.1)
    for _ in range(3):
        for p, g in zip(tp, g0):
            p.grad = torch.tensor(g)
        topt.step()
    for on, (outs, params) in results.items():
        for out in outs:
            np.testing.assert_allclose(out, z, rtol=1e-5, atol=1e-6, err_msg=f"fusion {on}")
        for got, want in zip(params, tp):
            np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"fusion {on}")
    for a, b_ in zip(results[True][0] + results[True][1], results[False][0] + results[False][1]):
        np.testing.assert_array_equal(a, b_)
