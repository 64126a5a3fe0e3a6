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

from ...dispatcher import View
from . import epilogue, rowwise, wgsl
from .wgsl import par

_PASSES = {"layer_norm": 3, "layer_norm_grad": 4, "softmax_grad": 2}
SOFTMAX_GRAD_WORDS = 9      # softmax_grad's own words; a fused epilogue's follow


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


def _rows(w, vpt, C, loads):
    """(prelude, each) for one invocation's share of a row: columns lid, lid + w, ...

    `loads` maps a name to its element's load (WGSL in `c`). With vpt > 0 (rows up to
    rowwise.MAX_CACHED) the prelude loads the vpt values of each name into registers (a
    private array indexed with constants only: nothing is clamped; the loads all in flight
    at once) and every pass reads them there; else every pass re-reads the row. each(body)
    runs body (lines that see `c` and the names) for every column of the share, in order."""
    if not vpt:
        def each(body):
            return ([f"for (var c = lid; c < {C}; c = c + {w}u) {{"]
                    + [f"  let {n} = {ld};" for n, ld in loads.items()]
                    + ["  " + b for b in body] + ["}"])
        return [], each
    pre = [f"var {n}v: array<f32, {vpt}>;" for n in loads]
    for j in range(vpt):
        pre.append(f"let c{j} = lid + {j * w}u;")
        for n, ld in loads.items():
            at = ld.replace("{c}", f"min(c{j}, {C} - 1u)")
            pre.append(f"{n}v[{j}] = select(0.0, {at}, c{j} < {C});")

    def each(body):
        out = []
        for j in range(vpt):
            names = " ".join(f"let {n} = {n}v[{j}];" for n in loads)
            out += [f"if (c{j} < {C}) {{ let c = c{j}; {names}"] + ["  " + b for b in body] + ["}"]
        return out
    return pre, each


def _build(mode, w, vpt, xg=False, epi=None):
    """mode's program for workgroups of w, vpt values per invocation in registers (0: the
    row re-read per pass); xg: the backward also writes g * xhat (binding Q); epi
    (softmax_grad): an epilogue.Bound applied to each stored element."""
    if mode == "softmax_grad":
        return _build_softmax_grad(w, vpt, epi)
    R, C, ob, xb, xr, xc, wb, ws, yb, yr, yc, eps, qb = (par(i) for i in range(13))
    src = wgsl.header([("O", "f32"), ("X", "f32"), ("W", "f32"), ("Y", "f32")]
                      + [("Q", "f32")] * xg)
    src += f"var<workgroup> s1: array<f32, {w}>;\nvar<workgroup> s2: array<f32, {w}>;\n"
    loads = {"x": f"X[x0 + {{c}} * {xc}]"}
    if mode != "layer_norm":
        loads["g"] = f"Y[y0 + {{c}} * {yc}]"
    pre, each = _rows(w, vpt, C, {n: ld.replace("{c}", "c") if not vpt else ld
                                  for n, ld in loads.items()})
    L = ["let row = wid.y * nwg.x + wid.x;", f"if (row >= {R}) {{ return; }}",
         f"let x0 = {xb} + row * {xr};", f"let y0 = {yb} + row * {yr};", f"let n = f32({C});",
         *pre, "var a = 0.0;", *each(["a = a + x;"]), "s1[lid] = a;", *_tree(w, ["s1"]),
         "let mean = s1[0] / n;", "workgroupBarrier();",
         "var v = 0.0;", *each(["let d = x - mean;", "v = v + d * d;"]),
         "s1[lid] = v;", *_tree(w, ["s1"]),
         f"let rstd = 1.0 / sqrt(s1[0] / n + bitcast<f32>({eps}));", "workgroupBarrier();"]
    wc = f"W[{wb} + c * {ws}]"
    if mode == "layer_norm":
        L += each([f"O[{ob} + row * {C} + c] = (x - mean) * rstd * {wc} + Y[y0 + c * {yc}];"])
    else:
        L += ["var p = 0.0;", "var q = 0.0;",
              *each([f"let gw = g * {wc};", "p = p + gw;", "q = q + gw * (x - mean) * rstd;"]),
              "s1[lid] = p;", "s2[lid] = q;", *_tree(w, ["s1", "s2"]),
              "let mp = s1[0] / n;", "let mq = s2[0] / n;",
              *each([f"let gw = g * {wc};",
                     f"O[{ob} + row * {C} + c] = rstd * (gw - mp - (x - mean) * rstd * mq);",
                     *[f"Q[{qb} + row * {C} + c] = g * ((x - mean) * rstd);"] * xg])]
    return src + wgsl.entry(w) + "  " + "\n  ".join(L) + "\n}\n", 4 + xg


def _build_softmax_grad(w, vpt, epi=None):
    """out = y (g - sum(g y)) over each row: softmax's gradient from its output y."""
    R, C, ob, yb, yr, yc, gb, gr, gc = (par(i) for i in range(9))
    src = wgsl.header([("O", "f32"), ("Y", "f32"), ("G", "f32")] +
                      (epi.bindings() if epi else []))
    if epi:
        src += epilogue.functions(epi, SOFTMAX_GRAD_WORDS)
    src += f"var<workgroup> s1: array<f32, {w}>;\n"
    loads = {"y": f"Y[y0 + {{c}} * {yc}]", "g": f"G[g0 + {{c}} * {gc}]"}
    pre, each = _rows(w, vpt, C, {n: ld.replace("{c}", "c") if not vpt else ld
                                  for n, ld in loads.items()})
    L = ["let row = wid.y * nwg.x + wid.x;", f"if (row >= {R}) {{ return; }}",
         f"let y0 = {yb} + row * {yr};", f"let g0 = {gb} + row * {gr};",
         *pre, "var a = 0.0;", *each(["a = a + g * y;"]), "s1[lid] = a;", *_tree(w, ["s1"]),
         "let dot = s1[0];"]
    store = f"O[{ob} + row * {C} + c] = y * (g - dot);"
    if epi:
        bz, m = epilogue.rows(SOFTMAX_GRAD_WORDS, "row")
        L += epilogue.setup(epi, SOFTMAX_GRAD_WORDS, bz) + [f"let m = {m};"]
        store = ("" if epi.skip_out else store + " ") + \
            epilogue.element(epi, SOFTMAX_GRAD_WORDS, "y * (g - dot)", "m", "c")
    L += each([store])
    nbind = 3 + (len(epi.buffers) if epi else 0)
    return src + wgsl.entry(w) + "  " + "\n  ".join(L) + "\n}\n", nbind


def run(gpu, mode, out, ins, params, *, buffers, stages=None):
    """Encode `mode`; softmax_grad applies `stages` (a fuse.Epilogue) to each element it
    stores, and returns True then (not when the stages' words do not fit)."""
    xg = len(out.shape) == 3     # layer_norm_grad's (2, R, C): dx, then g * xhat
    outs = planes(out) if xg else (out,)
    R, C = outs[0].shape
    if R == 0 or C == 0:
        return
    w, vpt = rowwise.plan(C)
    if not vpt and _PASSES[mode] * -(-C // w) + 16 > wgsl.LOOP_BUDGET:
        raise ValueError(f"{mode}: rows of {C} elements exceed this device's loop budget")
    (obuf, ob), *operands = (buffers(v) for v in (outs[0], *ins, *outs[1:]))
    bufs = [obuf] + [b for b, _ in operands]
    if mode == "softmax_grad":
        (y, g), ((_, yb), (_, gb)) = ins, operands
        words = [R, C, ob, yb, *y.strides, gb, *g.strides]
    else:
        (x, wt, y), ((_, xb), (_, wb), (_, yb)) = ins, operands[:3]
        yr, yc = (0, y.strides[0]) if len(y.shape) == 1 else y.strides
        eps = wgsl.f32_bits(params["eps"])
        words = [R, C, ob, xb, *x.strides, wb, wt.strides[0], yb, yr, yc, eps]
        words += [operands[3][1]] if xg else []
    epi = epilogue.Bound.of(stages, buffers, 1, SOFTMAX_GRAD_WORDS) \
        if mode == "softmax_grad" else None
    prog = gpu.program(("norm", mode, w, vpt, xg) + ((epi.key,) if epi else ()),
                       lambda: _build(mode, w, vpt, xg, epi))
    gpu.dispatch(prog, bufs + (epi.buffers if epi else []), words + (epi.words if epi else []),
                 wgsl.grid(R, gpu.max_groups))
    return epi is not None


def kernel(mode):
    """The kernel table's entry for `mode` (layer_norm, layer_norm_grad or softmax_grad)."""
    def run_op(be, out, ins, params):
        run(be.gpu, mode, out, ins, params, buffers=be.buffers)
    return run_op
