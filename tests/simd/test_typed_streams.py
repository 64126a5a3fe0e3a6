"""The element-type generic kernels (kernels/src/typed.rs: float64, int64, bool ...) write an
output of STREAM_MIN_BYTES (32 MiB) or more with streaming stores: whole 64-byte lines
computed into an aligned line, the elements before the first line and after the last
stored plainly. Checked against NumPy on every instruction-set path (a subprocess each:
AVX-512's one store a line, AVX2's two, the scalar path's plain stores), with outputs that
start at an element off a line (the head), end off one (the tail), and ops of one, two and
three operands, a broadcast scalar and a bool output."""

import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import numpy as np
    from torchic import dispatcher
    from torchic.dispatcher import DTYPES, ITEMSIZE, View

    rt = dispatcher.init("simd", threads=2)
    N = (32 << 20) // 8 + 37            # f64 / i64 outputs just past 32 MiB, odd length

    def put(x, code):
        blk = rt.alloc(x.size * ITEMSIZE[code])
        v = View(blk, 0, x.shape, (1,), code)
        rt.write(v, x.astype(DTYPES[code]))
        return v

    def out_at(offset, n, code):         # an output view `offset` elements into its block
        blk = rt.alloc((n + offset) * ITEMSIZE[code])
        return View(blk, offset, (n,), (1,), code)

    rng = np.random.default_rng(0)
    for code, x, y in (("f64", rng.standard_normal(N), rng.standard_normal(N)),
                       ("i64", rng.integers(-2**62, 2**62, N), rng.integers(-2**62, 2**62, N))):
        a, b = put(x, code), put(y, code)
        for offset in (0, 1, 3, 7):
            o = out_at(offset, N, code)
            if code == "f64":       # (integer negation is the frontend's 0 - x)
                rt.run("neg", o, (a,), None)
                assert np.array_equal(rt.read(o), -x), (code, "neg", offset)
            rt.run("add", o, (a, b), None)
            assert np.array_equal(rt.read(o), x + y), (code, "add", offset)
            scalar = View(b.block, 5, (N,), (0,), code)          # y[5] broadcast
            rt.run("mul", o, (a, scalar), None)
            assert np.array_equal(rt.read(o), x * y[5]), (code, "mul by a broadcast", offset)
        cond = put(x > y, "b8")
        o = out_at(3, N, code)
        rt.run("where", o, (cond, a, b), None)
        assert np.array_equal(rt.read(o), np.where(x > y, x, y)), (code, "where")
    # a bool output (1-byte elements: 64 a line)
    n = (32 << 20) + 61
    p, q = rng.random(n) < 0.5, rng.random(n) < 0.5
    bp, bq = put(p, "b8"), put(q, "b8")
    o = out_at(5, n, "b8")
    rt.run("ne", o, (bp, bq), None)
    assert np.array_equal(rt.read(o), p != q), "bool"
    print("ok")
""")


def _paths():
    from torchic.backends.simd import describe_isa
    paths = {"best": {}, "scalar": {"TORCHIC_SIMD_SCALAR": "1"}}
    if describe_isa() == "avx512f":
        paths["avx2"] = {"TORCHIC_SIMD_ISA": "avx2"}
    return paths


def test_streamed_outputs_of_the_typed_kernels_on_every_path(simd_ok):
    for name, env in _paths().items():
        full = {k: v for k, v in os.environ.items() if not k.startswith("TORCHIC_SIMD_")}
        full.update(env)
        res = subprocess.run([sys.executable, "-c", PROBE], env=full, timeout=300,
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.fail(f"{name} path: {res.stderr[-3000:]}")
        assert res.stdout.strip().endswith("ok"), (name, res.stdout)
