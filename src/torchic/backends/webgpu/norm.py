"""Layer norm forward and backward, and softmax's backward, over the rows of (R, C), one
workgroup per row.

Each invocation strides over the row's columns; the row sums (mean, then the biased
variance around it: two passes, as the other backends, so no cancellation; the
backward's mean(g w) and mean(g w xhat) together; softmax_grad's sum(g y)) are reduced in
one unrolled tree in workgroup memory. The row is re-read per pass (it stays in cache: C
floats). Each invocation runs `passes * ceil(C / w)` loop trips, kept under
``wgsl.LOOP_BUDGET``.

Layer norm's words: R, C, out base, x base, x row / column stride, w base, w stride, y base,
y row / column stride, eps bits; y is the bias (row stride 0) forward, the gradient g
backward. The backward's (2, R, C) out (dx, then g * xhat) is bound as its two (R, C)
planes, each a binding of its own (a plane, not the pair, has to fit a window: windows.py
cuts both by rows), plane 1's base the last word. softmax_grad's: R, C, out base, y base,
y row / column stride, g base, g row / column stride.
"""

import numpy as np

from ...dispatcher import View
from . import wgsl
from .wgsl import par

_PASSES = {"layer_norm": 3, "layer_norm_grad": 4, "softmax_grad": 2}


def _tree(w, arrays):
    """Sum each workgroup array into its element 0 (the values written before)."""
    L = ["workgroupBarrier();"]
    k = w // 2
    while k:
        L += [f"if (lid < {k}u) {{ " + " ".join(f"{a}[lid] = {a}[lid] + {a}[lid + {k}u];"
                                                for a in arrays) + " }", "workgroupBarrier();"]
        k //= 2
    return L


def planes(out):
    """The (R, C) planes of layer_norm_grad's (2, R, C) out (any plane stride)."""
    return tuple(View(out.block, out.offset + k * out.strides[0], out.shape[1:],
                      out.strides[1:], out.dtype) for k in range(out.shape[0]))


def _build(mode, w, xg=False):
    """mode's program for workgroups of w; xg: the backward also writes g * xhat (binding Q)."""
    if mode == "softmax_grad":
        return _build_softmax_grad(w)
    R, C, ob, xb, xr, xc, wb, ws, yb, yr, yc, eps, qb = (par(i) for i in range(13))
    src = wgsl.header([("O", "f32"), ("X", "f32"), ("W", "f32"), ("Y", "f32")]
                      + [("Q", "f32")] * xg)
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
              f"  O[{ob} + row * {C} + c] = rstd * (gw - mp - ({x} - mean) * rstd * mq);",
              *[f"  Q[{qb} + row * {C} + c] = {yv} * (({x} - mean) * rstd);"] * xg, "}"]
    return src + wgsl.entry(w) + "  " + "\n  ".join(L) + "\n}\n", 4 + xg


def _build_softmax_grad(w):
    """out = y (g - sum(g y)) over each row: softmax's gradient from its output y."""
    R, C, ob, yb, yr, yc, gb, gr, gc = (par(i) for i in range(9))
    src = wgsl.header([("O", "f32"), ("Y", "f32"), ("G", "f32")])
    src += f"var<workgroup> s1: array<f32, {w}>;\n"
    cols = f"for (var c = lid; c < {C}; c = c + {w}u) {{"
    y, g = f"Y[y0 + c * {yc}]", f"G[g0 + c * {gc}]"
    L = ["let row = wid.y * nwg.x + wid.x;", f"if (row >= {R}) {{ return; }}",
         f"let y0 = {yb} + row * {yr};", f"let g0 = {gb} + row * {gr};",
         "var a = 0.0;", cols, f"  a = a + {g} * {y};", "}", "s1[lid] = a;", *_tree(w, ["s1"]),
         "let dot = s1[0];",
         cols, f"  O[{ob} + row * {C} + c] = {y} * ({g} - dot);", "}"]
    return src + wgsl.entry(w) + "  " + "\n  ".join(L) + "\n}\n", 3


def run(gpu, mode, out, ins, params, *, buffers):
    xg = len(out.shape) == 3     # layer_norm_grad's (2, R, C): dx, then g * xhat
    outs = planes(out) if xg else (out,)
    R, C = outs[0].shape
    if R == 0 or C == 0:
        return
    w = 32
    while w < 256 and w * 8 < C:
        w *= 2
    if _PASSES[mode] * -(-C // w) + 16 > wgsl.LOOP_BUDGET:
        raise ValueError(f"{mode}: rows of {C} elements exceed this device's loop budget")
    (obuf, ob), *operands = (buffers(v) for v in (outs[0], *ins, *outs[1:]))
    bufs = [obuf] + [b for b, _ in operands]
    if mode == "softmax_grad":
        (y, g), ((_, yb), (_, gb)) = ins, operands
        words = [R, C, ob, yb, *y.strides, gb, *g.strides]
    else:
        (x, wt, y), ((_, xb), (_, wb), (_, yb)) = ins, operands[:3]
        yr, yc = (0, y.strides[0]) if len(y.shape) == 1 else y.strides
        eps = int(np.array(params["eps"], np.float32).view(np.uint32))
        words = [R, C, ob, xb, *x.strides, wb, wt.strides[0], yb, yr, yc, eps]
        words += [operands[3][1]] if xg else []
    prog = gpu.program(("norm", mode, w, xg), lambda: _build(mode, w, xg))
    gpu.dispatch(prog, bufs, words, wgsl.grid(R, gpu.max_groups))


def kernel(mode):
    """The kernel table's entry for `mode` (layer_norm, layer_norm_grad or softmax_grad)."""
    def run_op(be, out, ins, params):
        run(be.gpu, mode, out, ins, params, buffers=be.buffers)
    return run_op
