"""Row-wise family: softmax, log_softmax, cross_entropy, cross_entropy_grad over (R, C).

One workgroup per row. For rows up to 2048 elements each invocation keeps its
``VPT`` values in registers (a private array indexed only with constants, so
nothing is clamped), and the row is read from memory once: max, sum of exps
and the output all come from registers. The workgroup size follows C (32 ..
256, about C / 8 invocations: the fastest, docs/perf/webgpu.md) so short rows
(makemore's 27 classes) don't idle 256 invocations. The max and the sum are reduced in one tree over (max, sum) pairs. Longer
rows stream: an online (max, sum) pass, then a second read for the output. Rows too long
for one workgroup's loop budget (``wgsl.LOOP_BUDGET``) are cut into ``S`` chunks: pass 1
("stats") writes each chunk's (max, sum) to scratch, pass 2 combines a row's ``S``
partials (in order) and writes its chunk of the output.

Targets are checked: a class outside [0, C) reports the op's tag (see gpu.py)
and writes NaN, unless it is the ignore_index (words 13, 14: its value and whether there
is one): an ignored row's loss and gradient are 0. A cross_entropy out of (R, 2) (word 15
= 2) also gets each row's 0/1 count beside its loss, for the mean. The four ops share one
program; ``MODES`` holds what each adds.
"""

import re
from typing import NamedTuple

from ...dispatcher import env_int
from . import wgsl
from .wgsl import par

COMBINE = """
fn combine(s1: f32, m1: f32, s2: f32, m2: f32, m: f32) -> f32 {
  // rescale two partial sums of exp(x - m_i) to the common max m (an empty part adds 0)
  return select(s1 * exp(m1 - m), 0.0, s1 == 0.0) + select(s2 * exp(m2 - m), 0.0, s2 == 0.0);
}
"""


class Mode(NamedTuple):
    """What one op of the family adds to the shared row program (see _build)."""
    targets: bool     # binds T, int class targets (one per row), checked against [0, C)
    grad: bool        # binds G, the upstream gradient (one per row): ``g``
    per_row: tuple    # WGSL lines run once the row's max ``mx`` and ``tot`` are known
    value: str        # the output element from x, its probability p and column c (WGSL);
                      # "" for one output per row: ``(mx - x[t]) + log(tot)``
    causal: bool = False   # (B, Tq, Tk) input, row i keeps columns c < lim = i + diagonal + 1
                           # (words 16-18: Tq, B's stride, diagonal): the others read as -inf


# one row per op, like elementwise.py's snippet tables
MODES = {
    "softmax": Mode(False, False, ("let inv = 1.0 / tot;",), "p"),
    "log_softmax": Mode(False, False, ("let lt = log(tot);",), "x - mx - lt"),
    "cross_entropy": Mode(True, False, (), ""),
    "cross_entropy_grad": Mode(True, True, ("let inv = 1.0 / tot;",),
                               "select(select((p - select(0.0, 1.0, i32(c) == t)) * g, "
                               "f32_nan(), !tok), 0.0, ign)"),
    "causal_softmax": Mode(False, False, ("let inv = 1.0 / tot;",), "p", True),
}
_STATS = Mode(False, False, (), "")     # pass 1 of a split row: its chunks' (max, sum)
MAX_CACHED = 2048


VALUES_PER_INVOCATION = env_int("TORCHIC_WEBGPU_ROW_VPT", 8)


def plan(C):
    """(workgroup size, values per invocation; 0 = streaming) for rows of C."""
    if C <= MAX_CACHED:
        w = 32
        while w < 256 and w * VALUES_PER_INVOCATION < C:
            w *= 2
        return w, max(1, -(-C // w))
    return 256, 0


def _build(mode, w, vpt, split=False):
    """One row program; ``split``: chunk ``part`` of a row cut into S (words 11, 12)."""
    m = _STATS if mode == "stats" else MODES[mode]
    bind = [("O", "f32"), ("X", "f32")]
    if m.targets:
        bind.append(("T", "i32"))
    if m.grad:
        bind.append(("G", "f32"))
    if split and mode != "stats":
        bind.append(("PT", "f32"))   # pass 1's partials: R * S maxes, then R * S sums
    src = wgsl.header(bind) + wgsl.FLOAT_FNS
    src += f"var<workgroup> sm: array<f32, {w}>;\nvar<workgroup> ss: array<f32, {w}>;\n"
    src += COMBINE
    R, C, ob, xb, sr, sc = (par(i) for i in range(6))
    tb, ts, gb, gs, tag = (par(i) for i in range(6, 11))
    chunk, S = par(11), par(12)
    ignore, has_ignore, ostep = par(13), par(14), par(15)
    if split:
        L = ["let wg = wid.y * nwg.x + wid.x;", f"let row = wg / {S};", f"let part = wg % {S};",
             f"if (row >= {R}) {{ return; }}", f"let cb0 = part * {chunk};",
             f"let cb1 = min({C}, cb0 + {chunk});"]
    else:
        L = ["let row = wid.y * nwg.x + wid.x;", f"if (row >= {R}) {{ return; }}",
             "let part = 0u;", "let cb0 = 0u;", f"let cb1 = {C};"]
    if m.causal:
        L += [f"let qi = row % {par(16)};", f"let x0 = {xb} + (row / {par(16)}) * {par(17)} + qi * {sr};",
              f"let lim = u32(clamp(i32(qi) + bitcast<i32>({par(18)}) + 1, 0, i32({C})));"]
    else:
        L += [f"let x0 = {xb} + row * {sr};"]
    lim = "lim" if m.causal else C
    if m.targets:
        L += [f"let t = T[{tb} + row * {ts}];",
              f"let ign = {has_ignore} != 0u && t == bitcast<i32>({ignore});",
              f"let tok = ign || (t >= 0 && u32(t) < {C});"]
    # -- per-invocation (max, sum of exp(x - max)) -------------------------------------
    if split and mode != "stats":   # pass 2: the row's S chunk partials, combined in order
        L += ["var mx = -f32_inf();", "var tot = 0.0;", f"let pk = row * {S};",
              f"let nps = {R} * {S};",
              f"for (var p = 0u; p < {S}; p = p + 1u) {{",
              "  let m2 = PT[pk + p];", "  let mm = nanmax(mx, m2);",
              "  tot = combine(tot, mx, PT[nps + pk + p], m2, mm);", "  mx = mm;", "}"]
    elif vpt:
        L += [f"var v: array<f32, {vpt}>;", f"var e: array<f32, {vpt}>;", "var m = -f32_inf();"]
        for j in range(vpt):
            L += [f"let c{j} = lid + {j * w}u;",
                  f"v[{j}] = select(-f32_inf(), X[x0 + min(c{j}, {C} - 1u) * {sc}], c{j} < {lim});",
                  f"m = nanmax(m, v[{j}]);"]
        L += ["var s = 0.0;"]
        for j in range(vpt):
            L += [f"e[{j}] = select(0.0, exp(v[{j}] - m), bitcast<u32>(v[{j}]) != 0xff800000u);",
                  f"s = s + e[{j}];"]
    else:
        L += ["var m = -f32_inf();", "var s = 0.0;",
              "for (var c = cb0 + lid; c < " + ("min(cb1, lim)" if m.causal else "cb1")
              + f"; c = c + {w}u) {{",
              f"  let x = X[x0 + c * {sc}];",
              "  if (isnan1(x) || isnan1(m)) { m = f32_nan(); s = f32_nan(); }",
              "  else if (x > m) { s = s * exp(m - x) + 1.0; m = x; }",
              "  else if (bitcast<u32>(x) != 0xff800000u) { s = s + exp(x - m); }", "}"]
    # -- one tree over (max, sum) pairs: sum' = s1 e^(m1 - m) + s2 e^(m2 - m) -----------------
    if not (split and mode != "stats"):
        L += ["sm[lid] = m;", "ss[lid] = s;", "workgroupBarrier();"]
        k = w // 2
        while k:
            L += [f"if (lid < {k}u) {{",
                  f"  let m1 = sm[lid]; let m2 = sm[lid + {k}u];",
                  "  let mm = nanmax(m1, m2);",
                  f"  ss[lid] = combine(ss[lid], m1, ss[lid + {k}u], m2, mm);",
                  "  sm[lid] = mm;", "}", "workgroupBarrier();"]
            k //= 2
        L += ["let mx = sm[0];", "let tot = ss[0];"]
    if mode == "stats":   # pass 1: this chunk's (max, sum)
        L += [f"if (lid == 0u) {{ O[row * {S} + part] = mx; O[{R} * {S} + row * {S} + part] = tot; }}"]
        src += wgsl.entry(w) + "  " + "\n  ".join(L) + "\n}\n"
        return src, len(bind)
    if vpt:
        L += ["let scale = select(exp(m - mx), 0.0, s == 0.0);"]
    # -- outputs ------------------------------------------------------------------------
    if not m.value:    # cross_entropy: one value per row (and its count, if out is (R, 2))
        o1 = f"{ob} + row * {ostep}"
        L += ["if (lid == 0u && part == 0u) {",
              f"  if (!tok) {{ report_error({tag}, t); O[{o1}] = f32_nan(); }}",
              f"  else if (ign) {{ O[{o1}] = 0.0; }}",
              # (max - x[t]) + log(sum): large equal logits cancel exactly first
              f"  else {{ O[{o1}] = (mx - X[x0 + u32(t) * {sc}]) + log(tot); }}",
              f"  if ({ostep} == 2u) {{ O[{o1} + 1u] = select(1.0, 0.0, ign); }}",
              "}"]
    else:
        if m.grad:
            L += [f"let g = G[{gb} + row * {gs}];"]
        if m.targets:
            L += [f"if (!tok && lid == 0u && part == 0u) {{ report_error({tag}, t); }}"]
        L += list(m.per_row)
        uses_p = re.search(r"\bp\b", m.value) is not None
        o0 = f"{ob} + row * {C}"
        if vpt:
            if uses_p:
                L += ["let sinv = scale * inv;"]
            for j in range(vpt):
                p = f"let p = e[{j}] * sinv; " if uses_p else ""
                L += [f"if (c{j} < {C}) {{ let x = v[{j}]; let c = c{j}; {p}"
                      f"O[{o0} + c] = {m.value}; }}"]
        else:
            L += ["for (var c = cb0 + lid; c < cb1; c = c + " + f"{w}u) {{",
                  f"  let x = select(-f32_inf(), X[x0 + c * {sc}], c < lim);" if m.causal
                  else f"  let x = X[x0 + c * {sc}];",
                  "  let p = exp(x - mx) * inv;" if uses_p else "",
                  f"  O[{o0} + c] = {m.value};", "}"]
    src += wgsl.entry(w) + "  " + "\n  ".join(line for line in L if line) + "\n}\n"
    return src, len(bind)


def run(gpu, mode, out, ins, params=None, *, buffers):
    x = ins[0]
    m = MODES[mode]
    if m.causal:    # (B, Tq, Tk): rows b * Tq + i
        B, Tq, C = x.shape
        R, row_strides = B * Tq, x.strides[1:]
    else:
        (R, C), row_strides = x.shape, x.strides
    if R == 0 or (C == 0 and m.value):    # (cross_entropy of no classes: every target is bad)
        return
    w, vpt = plan(max(C, 1))
    obuf, ob = buffers(out)
    xbuf, xb = buffers(x)
    words = [R, C, ob, xb, *row_strides, 0, 0, 0, 0, 0, 0, 0, 0, 0,
             2 if len(out.shape) == 2 else 1]
    if m.causal:
        words += [Tq, x.strides[0], params["diagonal"] & 0xFFFFFFFF]
    bufs = [obuf, xbuf]
    if m.targets:
        t = ins[1]
        tbuf, tb = buffers(t)
        bufs.append(tbuf)
        words[6:8] = [tb, t.strides[0]]
        words[10] = gpu.new_tag(mode, f"target class {{bad}} is out of range [0, {C})")
        ignore = params.get("ignore_index") if params else None
        if ignore is not None and -2 ** 31 <= ignore < 2 ** 31:   # (else no target equals it)
            words[13:15] = [ignore & 0xFFFFFFFF, 1]
    if m.grad:
        g = ins[2]
        gbuf, gb = buffers(g)
        bufs.append(gbuf)
        words[8:10] = [gb, g.strides[0]]
    if vpt == 0 and 2 * -(-C // w) + 16 > wgsl.LOOP_BUDGET:
        # too long for one workgroup's loop budget: chunks of budget / 2 loop trips each
        if m.causal:
            raise ValueError(f"{mode}: rows of {C} elements exceed this device's loop budget")
        chunk = wgsl.LOOP_BUDGET // 2 * w
        S = -(-C // chunk)
        if S + chunk // w + 16 > wgsl.LOOP_BUDGET:
            raise ValueError(f"{mode}: rows of {C} elements exceed this device's loop budget")
        words[11:13] = [chunk, S]
        scratch = gpu.scratch_buffer("rowwise", 2 * R * S * 4)
        stats = gpu.program(("row-split", "stats", w), lambda: _build("stats", w, 0, True))
        gpu.dispatch(stats, [scratch, xbuf], words, wgsl.grid(R * S, gpu.max_groups))
        prog = gpu.program(("row-split", mode, w), lambda: _build(mode, w, 0, True))
        gpu.dispatch(prog, bufs + [scratch], words, wgsl.grid(R * S, gpu.max_groups))
        return
    key = ("row", mode, w, vpt)
    prog = gpu.program(key, lambda: _build(mode, w, vpt))
    gpu.dispatch(prog, bufs, words, wgsl.grid(R, gpu.max_groups))
