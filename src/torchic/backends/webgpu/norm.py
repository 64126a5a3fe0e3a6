"""Layer norm forward and backward over the rows of (R, C), one workgroup per row.

Each invocation strides over the row's columns; the row sums (mean, then the biased
variance around it: two passes, as the other backends, so no cancellation; the
backward's mean(g w) and mean(g w xhat) together) are reduced in one unrolled tree in
workgroup memory. The row is re-read per pass (it stays in cache: C floats). Each
invocation runs `passes * ceil(C / w)` loop trips, kept under ``wgsl.LOOP_BUDGET``.

Words: R, C, out base, x base, x row / column stride, w base, w stride, y base, y row /
column stride, eps bits; y is the bias (row stride 0) forward, the gradient g backward.
"""

import numpy as np

from . import wgsl
from .wgsl import par

_PASSES = {"layer_norm": 3, "layer_norm_grad": 4}


def _tree(w, arrays):
    """Sum each workgroup array into its element 0 (the values written before)."""
    L = ["workgroupBarrier();"]
    k = w // 2
    while k:
        L += [f"if (lid < {k}u) {{ " + " ".join(f"{a}[lid] = {a}[lid] + {a}[lid + {k}u];"
                                                for a in arrays) + " }", "workgroupBarrier();"]
        k //= 2
    return L


def _build(mode, w):
    R, C, ob, xb, xr, xc, wb, ws, yb, yr, yc, eps = (par(i) for i in range(12))
    src = wgsl.header([("O", "f32"), ("X", "f32"), ("W", "f32"), ("Y", "f32")])
    src += f"var<workgroup> s1: array<f32, {w}>;\nvar<workgroup> s2: array<f32, {w}>;\n"
    cols = f"for (var c = lid; c < {C}; c = c + {w}u) {{"
    x = f"X[x0 + c * {xc}]"
    L = ["let row = wid.y * nwg.x + wid.x;", f"if (row >= {R}) {{ return; }}",
         f"let x0 = {xb} + row * {xr};", f"let y0 = {yb} + row * {yr};", f"let n = f32({C});",
         "var a = 0.0;", cols, f"  a = a + {x};", "}", "s1[lid] = a;", *_tree(w, ["s1"]),
         "let mean = s1[0] / n;", "workgroupBarrier();",
         "var v = 0.0;", cols, f"  let d = {x} - mean;", "  v = v + d * d;", "}",
         "s1[lid] = v;", *_tree(w, ["s1"]),
         f"let rstd = 1.0 / sqrt(s1[0] / n + bitcast<f32>({eps}));", "workgroupBarrier();"]
    wc, yv = f"W[{wb} + c * {ws}]", f"Y[y0 + c * {yc}]"
    if mode == "layer_norm":
        L += [cols, f"  O[{ob} + row * {C} + c] = ({x} - mean) * rstd * {wc} + {yv};", "}"]
    else:
        L += ["var p = 0.0;", "var q = 0.0;", cols, f"  let gw = {yv} * {wc};",
              "  p = p + gw;", f"  q = q + gw * ({x} - mean) * rstd;", "}",
              "s1[lid] = p;", "s2[lid] = q;", *_tree(w, ["s1", "s2"]),
              "let mp = s1[0] / n;", "let mq = s2[0] / n;",
              cols, f"  let gw = {yv} * {wc};",
              f"  O[{ob} + row * {C} + c] = rstd * (gw - mp - ({x} - mean) * rstd * mq);", "}"]
    return src + wgsl.entry(w) + "  " + "\n  ".join(L) + "\n}\n", 4


def run(gpu, mode, out, ins, params, *, buffers):
    x, wt, y = ins
    R, C = x.shape
    if R == 0 or C == 0:
        return
    w = 32
    while w < 256 and w * 8 < C:
        w *= 2
    if _PASSES[mode] * -(-C // w) + 16 > wgsl.LOOP_BUDGET:
        raise ValueError(f"{mode}: rows of {C} elements exceed this device's loop budget")
    (obuf, ob), (xbuf, xb), (wbuf, wb), (ybuf, yb) = (buffers(v) for v in (out, x, wt, y))
    yr, yc = (0, y.strides[0]) if len(y.shape) == 1 else y.strides
    eps = int(np.array(params["eps"], np.float32).view(np.uint32))
    words = [R, C, ob, xb, *x.strides, wb, wt.strides[0], yb, yr, yc, eps]
    prog = gpu.program(("norm", mode, w), lambda: _build(mode, w))
    gpu.dispatch(prog, [obuf, xbuf, wbuf, ybuf], words, wgsl.grid(R, gpu.max_groups))


def kernel(mode):
    """The kernel table's entry for `mode` (layer_norm or layer_norm_grad)."""
    def run_op(be, out, ins, params):
        run(be.gpu, mode, out, ins, params, buffers=be.buffers)
    return run_op
