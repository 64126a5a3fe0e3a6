"""Errors: bad indices and invalid op records surface as KernelError at the next read
(an invalid record never runs); the runtime stays usable afterwards."""

import os

import numpy as np
import pytest

from torchic import dispatcher
from torchic.dispatcher import KernelError, View


@pytest.mark.parametrize("bad", [-1, 50, 2**31 - 1])
def test_bad_gather_index_raises_at_next_read(h, bad):
    table = h.put(np.ones((50, 4), np.float32))
    idx = h.put(np.int32([0, bad, 3]))
    out = h.empty((3, 4))
    h.rt.run("gather_rows", out, (table, idx), {})      # no error at issue time
    later = h.empty((2,))
    h.rt.run("fill", later, (), {"value": 3.0})         # the stream keeps going
    with pytest.raises(KernelError, match=r"gather_rows.*IndexError.*out of range \[0, 50\)"):
        h.rt.read(later)
    # reported once; the runtime still works and the op after the failure ran
    np.testing.assert_array_equal(h.rt.read(later), [3.0, 3.0])


def test_bad_scatter_and_target_indices(h):
    out = h.empty((5, 2))
    h.rt.run("fill", out, (), {"value": 0.0})
    h.rt.run("scatter_add_rows", out, (h.put(np.ones((2, 2), np.float32)), h.put(np.int32([1, 5]))), {})
    with pytest.raises(KernelError, match="scatter_add_rows"):
        h.rt.sync()
    # nothing was written: indices are checked before any row is touched
    np.testing.assert_array_equal(h.rt.read(out), np.zeros((5, 2)))
    logits = h.put(np.zeros((2, 3), np.float32))
    for op, extra in (("cross_entropy", ()), ("cross_entropy_grad", (h.put(np.ones(2, np.float32)),))):
        shape = (2,) if op == "cross_entropy" else (2, 3)
        h.rt.run(op, h.empty(shape), (logits, h.put(np.int32([0, 3]))) + extra, {})
        with pytest.raises(KernelError, match=f"{op}.*target class 3"):
            h.rt.sync()


def _refused(h, op, out, inputs, params=None, match=""):
    """The op is not run: its record fails validation in Rust, and the error names the
    op at the next sync (values Python cannot even pack fail at the call)."""
    try:
        h.rt.run(op, out, inputs, params or {})
    except (ValueError, KeyError, TypeError):
        return
    with pytest.raises(KernelError, match=f"{op}.*ValueError.*{match}"):
        h.rt.sync()


def test_views_outside_their_block_are_refused_before_they_run(h):
    a = h.put(np.zeros((8, 8), np.float32))     # a 256-byte block: 64 floats
    out = h.put(np.full((8, 8), 7.0, np.float32))
    bad_views = [
        View(a.block, 1, (8, 8), (8, 1), "f32"),          # one element past the end
        View(a.block, 0, (8, 9), (8, 1), "f32"),          # too many columns (shape mismatch too)
        View(a.block, 0, (8, 8), (9, 1), "f32"),          # stride walks off the block
        View(a.block, 62, (8, 8), (-8, -1), "f32"),       # negative strides leaving the block
        View(a.block, -1, (8, 8), (8, 1), "f32"),
        View(a.block, 0, (8, 8), (8, 1), "f64"),
        View(a.block, 0, (8, 8), (8, 1.5), "f32"),        # not an int
        View(a.block, 0, (8, 8), (8, 2**63), "f32"),      # does not fit int64
    ]
    for v in bad_views:
        _refused(h, "add", out, (v, v))
    # none of them ran: out still holds what was written
    np.testing.assert_array_equal(h.rt.read(out), np.full((8, 8), 7.0))
    # negative strides inside the block are fine
    h.rt.run("add", out, (View(a.block, 63, (8, 8), (-8, -1), "f32"),) * 2, {})
    np.testing.assert_array_equal(h.rt.read(out), np.zeros((8, 8)))
    # wrong dtypes / counts / shapes for the op contract
    i32 = h.put(np.zeros(4, np.int32))
    _refused(h, "exp", h.empty((4,)), (i32,), match="dtype")
    _refused(h, "add", out, (a,), match="inputs")
    _refused(h, "matmul", h.empty((1, 8, 8)), (View(a.block, 0, (1, 8, 8), (0, 8, 1), "f32"),
                                               View(a.block, 0, (1, 7, 8), (0, 8, 1), "f32")),
             match="shapes")
    # two batch dims: the batch dims must agree, and every view have four dims
    _refused(h, "matmul", h.empty((2, 2, 4, 4)),
             (View(a.block, 0, (2, 2, 4, 4), (16, 0, 4, 1), "f32"),
              View(a.block, 0, (2, 1, 4, 4), (16, 0, 4, 1), "f32")), match="shapes")
    _refused(h, "matmul", h.empty((2, 2, 4, 4)),
             (View(a.block, 0, (4, 4, 4), (16, 4, 1), "f32"),
              View(a.block, 0, (2, 2, 4, 4), (16, 0, 4, 1), "f32")), match="dims")
    _refused(h, "softmax", View(out.block, 0, (8, 8), (1, 8), "f32"), (a,), match="contiguous")
    # an invalid record among valid ones: the ops around it run
    h.rt.run("fill", out, (), {"value": 1.0})
    h.rt.run("exp", h.empty((4,)), (i32,), {})
    h.rt.run("add", out, (out, out), {})
    with pytest.raises(KernelError, match="exp"):
        h.rt.sync()
    np.testing.assert_array_equal(h.rt.read(out), np.full((8, 8), 2.0))


def test_op_batches_keep_issue_order_across_flushes(h):
    from torchic.backends import simd
    x = h.put(np.zeros(4, np.float32))
    one = h.put(np.ones(4, np.float32))
    n = 3 * simd.BATCH_OPS + 5            # several full batches and a partial one
    for _ in range(n):
        h.rt.run("add", x, (x, one), {})
    np.testing.assert_array_equal(h.rt.read(x), np.full(4, float(n)))
    # a large op is pushed at once, with everything queued before it
    big = h.empty((1 << 16,))
    h.rt.run("fill", x, (), {"value": 5.0})
    h.rt.run("fill", big, (), {"value": 2.0})
    assert not h.rt.backend._pending
    np.testing.assert_array_equal(h.rt.read(x), np.full(4, 5.0))


def test_bad_dropout_records_are_refused(h):
    key, fkey = h.put(np.int32([1, 2])), h.put(np.float32([1, 2]))
    x = h.put(np.float32([1, -2, 3, -4]))
    ok = {"threshold": 1 << 23, "scale": 2.0}

    def refused(out, ins, params, match):
        _refused(h, "dropout", out, ins, params, match)
    refused(h.empty((4,)), (x, key), {"threshold": (1 << 24) + 1, "scale": 2.0}, "threshold")
    refused(h.empty((4,)), (x, key), {"threshold": -1, "scale": 2.0}, "threshold")
    refused(h.empty((4,)), (x, key), {"threshold": 5, "scale": float("inf")}, "scale")
    refused(h.empty((4,)), (x, key), {"threshold": 5, "scale": 0.1},
            "scale")      # (0.1 is no float32: Python rounds the scale before it packs it)
    refused(h.empty((4,)), (x, fkey), ok, "key")
    refused(h.empty((4,)), (x, h.put(np.int32([1, 2, 3]))), ok, "key")
    refused(h.empty((4,)), (x, h.put(np.int32([[1, 2]]))), ok, "key")
    refused(h.empty((4,), "i32"), (x, key), ok, "out")
    refused(h.empty((4,)), (h.put(np.int32([1, 2, 3, 4])), key), ok, "x")
    refused(h.empty((4,)), (h.put(np.float32([1, 2, 3])), key), ok, "x shape")
    refused(h.empty((2, 2)), (x, key), ok, "x shape")
    strided = h.empty((4, 2))
    refused(View(strided.block, 0, (4,), (2,), "f32"), (x, key), ok, "contiguous")
    out = h.empty((4,))             # and a good record runs after the refused ones
    h.rt.run("dropout", out, (x, key), {"threshold": 0, "scale": 2.0})
    np.testing.assert_array_equal(h.rt.read(out), [2.0, -4.0, 6.0, -8.0])
    # x with any strides: a reversed view of x (the mask of out's flat index, all kept)
    h.rt.run("dropout", out, (View(x.block, 3, (4,), (-1,), "f32"), key), {"threshold": 0,
                                                                          "scale": 2.0})
    np.testing.assert_array_equal(h.rt.read(out), [-8.0, 6.0, -4.0, 2.0])


def test_bad_adam_update_records_are_refused(h):
    """adam_update writes three of its views: Rust refuses overlapping, strided or
    mis-shaped ones (and a wrong scalar count) before anything is written."""
    p0 = np.arange(6, dtype=np.float32)
    p, g, m, v = (h.put(p0 + k) for k in range(4))
    s = h.put(np.float32([0.9, 0.1, 0.999, 0.001, 1e-8, 1.0, -0.1, 1.0, 0.0, 0.0]))
    _refused(h, "adam_update", p, (g, p, v, s), match="overlap")
    _refused(h, "adam_update", p, (g, m, h.put(np.zeros(5, np.float32)), s), match="shape")
    _refused(h, "adam_update", p, (g, m, v, h.put(np.zeros(9, np.float32))), match="s must")
    _refused(h, "adam_update", p, (h.put(np.zeros(6, np.int32)), m, v, s), match="dtype")
    wide = h.put(np.zeros(12, np.float32))
    _refused(h, "adam_update", p, (View(wide.block, 0, (6,), (2,), "f32"), m, v, s),
             match="contiguous")
    np.testing.assert_array_equal(h.rt.read(p), p0)      # nothing ran
    h.rt.run("adam_update", p, (g, m, v, s), {})           # a good record runs after them
    mm = np.float32(0.9) * (p0 + 2) + (p0 + 1) * np.float32(0.1)
    np.testing.assert_array_equal(h.rt.read(m), mm)


def test_layer_norm_grad_out_of_two_planes_and_bad_norm_records(h):
    """layer_norm_grad's out is x's shape (dx) or (2, R, C) contiguous (dx, then g * xhat,
    xhat the forward's with w = 1, b = 0, bit for bit); Rust refuses any other out."""
    rng = np.random.default_rng(0)
    x64, g64 = rng.standard_normal((2, 5, 37))
    x, g = h.put(x64, "transposed"), h.put(g64)
    w, b = h.put(rng.standard_normal(37)), h.put(rng.standard_normal(37))
    eps = {"eps": 1e-5}
    for shape in [(3, 5, 37), (1, 5, 37), (2, 4, 37), (2, 5, 36), (5, 36), (1, 2, 5, 37)]:
        _refused(h, "layer_norm_grad", h.empty(shape), (x, w, g), eps, "shape|dims")
    wide = h.empty((2, 6, 37))
    _refused(h, "layer_norm_grad", View(wide.block, 0, (2, 5, 37), (222, 37, 1), "f32"),
             (x, w, g), eps, "contiguous")
    _refused(h, "layer_norm", h.empty((2, 5, 37)), (x, w, b), eps, "shape")
    both, dx, xhat = h.empty((2, 5, 37)), h.empty((5, 37)), h.empty((5, 37))
    h.rt.run("layer_norm_grad", both, (x, w, g), eps)       # good records run after them
    h.rt.run("layer_norm_grad", dx, (x, w, g), eps)
    h.rt.run("layer_norm", xhat, (x, h.put(np.ones(37)), h.put(np.zeros(37))), eps)
    got = h.rt.read(both)
    np.testing.assert_array_equal(got[0], h.rt.read(dx))
    np.testing.assert_array_equal(got[1], g64.astype(np.float32) * h.rt.read(xhat))
    want = g64 * (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got[1], want, rtol=1e-5, atol=1e-5)


# lstm cell (issue 42)
def test_bad_lstm_cell_records_are_refused(h):
    """lstm_cell writes a and s, lstm_cell_grad s: Rust refuses mis-shaped operands, mixed
    dtypes, a written view overlapping another or repeating elements, before any write."""
    n, hs = 3, 5
    x, r, a = (h.put(np.full((n, 4 * hs), k, np.float32)) for k in (0.5, 0.25, 0.0))
    s = h.put(np.ones((n, 2, hs), np.float32))
    out = h.empty((n, hs))
    _refused(h, "lstm_cell", out, (x, r, a, h.put(np.ones((n, 3, hs), np.float32))),
             match="s shape")
    _refused(h, "lstm_cell", out, (x, r, x, s), match="overlaps")
    _refused(h, "lstm_cell", out, (x, r, a, h.view(s, 0, (n, 2, hs), (0, hs, 1))),
             match="repeats")
    _refused(h, "lstm_cell", out, (h.put(np.zeros((n, 4 * hs)), dtype="f64"), r, a, s),
             match="dtype")
    np.testing.assert_array_equal(h.rt.read(a), np.zeros((n, 4 * hs)))      # nothing ran
    h.rt.run("lstm_cell", out, (x, r, a, s), {})       # a good record runs after them
    sig = 1 / (1 + np.exp(-0.75))
    np.testing.assert_allclose(h.rt.read(s)[:, 1], sig + sig * np.tanh(0.75), rtol=1e-6)
    s4 = h.put(np.ones((n, 2, 2, hs), np.float32))
    dh = h.put(np.ones((n, hs), np.float32))
    _refused(h, "lstm_cell_grad", h.empty((n, 4 * hs)),
             (a, s4, dh, h.put(np.ones((n, 4), np.float32))), match="r shape")
    _refused(h, "lstm_cell_grad", h.empty((n, 4 * hs)), (a, s4, s4, dh), match="dh shape")


# (last: it replaces the module's runtime, which the tests above share)
def test_close_is_idempotent_with_work_queued():
    rt = dispatcher.init("simd", threads=2)
    blk = rt.alloc(4 << 20)
    v = View(blk, 0, (1 << 20,), (1,), "f32")
    for _ in range(10):
        rt.run("fill", v, (), {"value": 1.0})
        rt.run("exp", v, (v,), {})
    rt.close()
    rt.close()
    assert rt.backend.describe()["isa"] in ("avx512f", "avx2+fma", "neon", "scalar")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_closing_a_runtime_joins_its_threads():
    # the coordinator and the pool's helpers go with close (the Rust context itself is kept:
    # abi.rs tk_free), so re-initializing in a loop does not pile up threads
    def threads():
        return len(os.listdir("/proc/self/task"))
    dispatcher.init("simd", threads=3).close()
    before = threads()
    for _ in range(4):
        rt = dispatcher.init("simd", threads=3)
        assert threads() >= before + 3       # the coordinator and two helpers
        blk = rt.alloc(1 << 20)
        rt.run("fill", View(blk, 0, (1 << 18,), (1,), "f32"), (), {"value": 1.0})
        rt.close()
        assert threads() == before
