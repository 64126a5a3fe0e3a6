"""The row-wise family's program on every one of its plans: registers (rows up to 2048,
several workgroup sizes), streaming (longer rows) and split rows (a lowered loop budget),
for each mode of rowwise.MODES, against float64 references; strided rows included. And
softmax_grad (norm.py's row program) on every workgroup size."""

import numpy as np
import pytest

from torchic import ops
from torchic.backends.webgpu import rowwise, wgsl


def test_modes_table_is_the_family():
    assert set(rowwise.MODES) == set(ops.ROWWISE)


def _ref(mode, x, t, g):
    z = x - x.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    if mode == "softmax":
        return np.exp(logp)
    if mode == "log_softmax":
        return logp
    rows = np.arange(len(x))
    if mode == "cross_entropy":
        return -logp[rows, t]
    grad = np.exp(logp)
    grad[rows, t] -= 1
    return grad * g[:, None]


@pytest.mark.parametrize("mode", ["softmax", "log_softmax", "cross_entropy", "cross_entropy_grad"])
@pytest.mark.parametrize("C, budget", [(1, None), (27, None), (300, None), (2048, None),
                                       (2049, None), (7000, 40)])
def test_every_mode_on_every_plan(rt, heap, monkeypatch, mode, C, budget):
    if budget:      # rows longer than one workgroup's budget: the split (stats) passes
        monkeypatch.setattr(wgsl, "LOOP_BUDGET", budget)    # (7000 columns: 2 chunks)
    rng = np.random.default_rng(C)
    R = 3
    full = rng.standard_normal((R, 2 * C)).astype(np.float32) * 4
    x = full[:, ::2]                               # strided columns
    t = rng.integers(0, C, R).astype(np.int32)
    g = rng.standard_normal(R).astype(np.float32)
    xv = heap.put(full)
    xv = type(xv)(xv.block, 0, (R, C), (2 * C, 2), "f32")
    ins = [xv]
    if mode.startswith("cross_entropy"):
        ins.append(heap.put(t))
    if mode == "cross_entropy_grad":
        ins.append(heap.put(g))
    out = heap.empty((R,) if mode == "cross_entropy" else (R, C))
    rt.run(mode, out, tuple(ins), None)
    ref = _ref(mode, x.astype(np.float64), t, g.astype(np.float64))
    np.testing.assert_allclose(rt.read(out), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("C", [1, 27, 300, 2049])
def test_softmax_grad_on_every_workgroup_size(rt, heap, C):
    """y * (g - sum(g y)) per row, y with strided columns, g read transposed."""
    rng = np.random.default_rng(C)
    R = 3
    y_full = rng.uniform(0, 1, (R, 2 * C)).astype(np.float32)
    g_t = rng.standard_normal((C, R)).astype(np.float32)
    yv, gv = heap.put(y_full), heap.put(g_t)
    yv = type(yv)(yv.block, 0, (R, C), (2 * C, 2), "f32")
    gv = type(gv)(gv.block, 0, (R, C), (1, R), "f32")
    out = heap.empty((R, C))
    rt.run("softmax_grad", out, (yv, gv), None)
    y, g = y_full[:, ::2].astype(np.float64), g_t.T.astype(np.float64)
    ref = y * (g - (g * y).sum(1, keepdims=True))
    np.testing.assert_allclose(rt.read(out), ref, rtol=1e-4, atol=1e-5)
