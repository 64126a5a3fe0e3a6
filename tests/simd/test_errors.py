"""Errors: bad indices surface as KernelError at the next read; bad views are refused
at the call; the runtime stays usable afterwards."""

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


def test_views_outside_their_block_are_refused_at_the_call(h):
    a = h.put(np.zeros((8, 8), np.float32))     # a 256-byte block: 64 floats
    out = h.empty((8, 8))
    bad_views = [
        View(a.block, 1, (8, 8), (8, 1), "f32"),          # one element past the end
        View(a.block, 0, (8, 9), (8, 1), "f32"),          # too many columns (shape mismatch too)
        View(a.block, 0, (8, 8), (9, 1), "f32"),          # stride walks off the block
        View(a.block, 63, (8, 8), (-8, -1), "f32"),       # negative strides are fine...
        View(a.block, 62, (8, 8), (-8, -1), "f32"),       # ...until they leave the block
        View(a.block, -1, (8, 8), (8, 1), "f32"),
        View(a.block, 0, (8, 8), (8, 1), "f64"),
        View(a.block, 0, (8, 8), (8, 1.5), "f32"),        # not an int
        View(a.block, 0, (8, 8), (8, 2**63), "f32"),      # does not fit int64
    ]
    expect_ok = {3}
    for i, v in enumerate(bad_views):
        if i in expect_ok:
            h.rt.run("add", out, (v, v), {})
            continue
        with pytest.raises((ValueError, KeyError, TypeError)):
            h.rt.run("add", out, (v, v), {})
    # wrong dtypes / counts / shapes for the op contract
    i32 = h.put(np.zeros(4, np.int32))
    with pytest.raises(ValueError, match="dtype"):
        h.rt.run("exp", h.empty((4,)), (i32,), {})
    with pytest.raises(ValueError, match="inputs"):
        h.rt.run("add", out, (a,), {})
    with pytest.raises(ValueError, match="shapes"):
        h.rt.run("matmul", h.empty((1, 8, 8)), (View(a.block, 0, (1, 8, 8), (0, 8, 1), "f32"),
                                                View(a.block, 0, (1, 7, 8), (0, 8, 1), "f32")), {})
    with pytest.raises(ValueError, match="contiguous"):
        h.rt.run("softmax", View(out.block, 0, (8, 8), (1, 8), "f32"), (a,), {})
    h.rt.sync()
    np.testing.assert_array_equal(h.rt.read(out), np.zeros((8, 8)))


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
