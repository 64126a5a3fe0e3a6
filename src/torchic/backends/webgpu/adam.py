"""adam_update: Adam / AdamW's whole update of one parameter, one invocation per element
(the same bits as the workers and simd kernels: see ops.py's row).

Every product that an add consumes goes through `keep` (its bits OR-ed with a parameter
word that is always 0): a shader compiler may fuse `a * b + c` into one fused multiply-add
(rounded once), which the compiler cannot do to a value it cannot see through, so each
product is rounded on its own as in the NumPy and Rust kernels.

Eager: one dispatch per parameter. Words: n, p base, g base, m base, v base, s base,
s stride, 0 (the `keep` mask).

A recorded program (torchic.compile) issues a run of adam_update records that touch no
element another one writes (fuse.plan: an optimizer step's parameters) as one dispatch
(`Tables`), not one per parameter: each dispatch waits for the one before (every tensor
lives in one heap), so a step of 76 parameters paid 76 launches and barriers. Its
workgroups cover every parameter's elements in turn; a workgroup finds its parameter by a
binary search in the run's table, written once at pack time into a storage buffer of the
program's own (ROW words per parameter: its first workgroup, n, the p, g, m, v, s bases,
s's stride, and which bound heap buffer holds each operand, 5 bits each: the operands may
lie in several arenas, up to MAX_BUFFERS bound at once, picked per access by an index
uniform over the workgroup). Words: parameters in the table, 0 (the mask), the table's
first word. Every element runs the eager statements (`_update`): the same bits. The table
holds element offsets, so no operand may be a slot of the program (a replay moves a slot
by patching parameter words: replay.py): fuse.plan leaves such records alone.
"""

import numpy as np

from ...shape import numel
from . import wgsl
from .wgsl import WG, par

KEEP = "fn keep(x: f32, z: u32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | z); }\n"
ROW = 9             # table words per parameter
MAX_BUFFERS = 16    # heap buffers one dispatch of a run binds at most


def _update(load, store, s):
    """The update's statements (ops.py's order): load[x] / store(x, value) an element of
    x in p, g, m, v; s[k] the k-th scalar; `i`, `z` defined."""
    return [f"var g = {load['g']};", f"var p = {load['p']};",
            f"if ({s[9]} != 0.0) {{ g = -g; }}",
            f"let l2 = {s[8]};", "if (l2 != 0.0) { g = g + keep(p * l2, z); }",
            f"let decay = {s[7]};", "if (decay != 1.0) { p = keep(p * decay, z); }",
            f"let m = keep({s[0]} * {load['m']}, z) + keep(g * {s[1]}, z);",
            f"let v = keep({s[2]} * {load['v']}, z) + keep(keep(g * g, z) * {s[3]}, z);",
            store("m", "m"), store("v", "v"),
            f"let d = keep(sqrt(v) * {s[5]}, z) + {s[4]};",
            store("p", f"p + keep(keep(m / d, z) * {s[6]}, z)")]


def _build():
    n, pb, gb, mb, vb, sb, sst, z = (par(i) for i in range(8))
    at = {"p": f"O[{pb} + i]", "g": f"G[{gb} + i]", "m": f"M[{mb} + i]", "v": f"V[{vb} + i]"}
    s = [f"S[{sb} + {k}u * {sst}]" for k in range(10)]
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", f"let z = {z};"]
    lines += _update(at, lambda x, value: f"{at[x]} = {value};", s)
    src, count = wgsl.linear_program([("O", "f32"), ("G", "f32"), ("M", "f32"), ("V", "f32"),
                                      ("S", "f32")], lines)
    return KEEP + src, count


def _encode(be, out, g, m, v, s, n):
    bufs, words = [], [n]
    for view in (out, g, m, v, s):
        buf, base = be.buffers(view)
        bufs.append(buf)
        words.append(base)
    words += [s.strides[0], 0]
    prog = be.gpu.program(("adam_update",), _build)
    be.gpu.dispatch(prog, bufs, words, wgsl.grid(-(-n // WG), be.gpu.max_groups))


def kernel(be, out, ins, params):
    """The kernel table's entry: encode the update of the contiguous (N,) out, g, m, v."""
    n = numel(out.shape)
    if n:
        _encode(be, out, *ins, n)


# -- runs of a recorded program: one dispatch for many parameters ------------------------
def _build_run(nbuf):
    """The run kernel over nbuf heap buffers B0.. and the table TB (see the docstring)."""
    ld = ["fn ld(b: u32, i: u32) -> f32 {"]
    ld += [f"  if (b == {k}u) {{ return B{k}[i]; }}" for k in range(nbuf - 1)]
    ld += [f"  return B{nbuf - 1}[i];", "}"]
    st = ["fn st(b: u32, i: u32, x: f32) {"]
    st += [f"  if (b == {k}u) {{ B{k}[i] = x; return; }}" for k in range(nbuf - 1)]
    st += [f"  B{nbuf - 1}[i] = x;", "}"]
    count, z, tb = par(0), par(1), par(2)
    lines = ["let w = wid.y * nwg.x + wid.x;", "var lo = 0u;", f"var hi = {count};",
             "loop {", "  if (hi - lo <= 1u) { break; }", "  let mid = (lo + hi) >> 1u;",
             f"  if (TB[{tb} + mid * {ROW}u] <= w) {{ lo = mid; }} else {{ hi = mid; }}", "}",
             f"let e = {tb} + lo * {ROW}u;", f"let i = (w - TB[e]) * {WG}u + lid;",
             "if (i >= TB[e + 1u]) { return; }", f"let z = {z};", "let which = TB[e + 8u];"]
    for k, x in enumerate("pgmvs"):
        lines += [f"let {x}b = TB[e + {k + 2}u];", f"let {x}x = (which >> {5 * k}u) & 31u;"]
    lines.append("let sst = TB[e + 7u];")
    load = {x: f"ld({x}x, {x}b + i)" for x in "pgmv"}
    s = [f"ld(sx, sb + {k}u * sst)" for k in range(10)]
    lines += _update(load, lambda x, value: f"st({x}x, {x}b + i, {value});", s)
    bindings = [(f"B{k}", "f32") for k in range(nbuf)] + [("TB", "u32")]
    src = wgsl.header(bindings) + KEEP + "\n".join(ld + st) + "\n"
    return src + wgsl.entry() + "  " + "\n  ".join(lines) + "\n}\n", len(bindings)


class Tables:
    """The tables of a recorded program's runs of adam_update records (fuse.plan), in one
    storage buffer that the program keeps (`attach`); `issue(k)` encodes run k."""

    def __init__(self, gpu, runs, buffers):
        limit = int(gpu.limits.get("max-storage-buffers-per-shader-stage", 8))
        self.nmax = max(5, min(MAX_BUFFERS, limit - 2))   # (- the table, the status words)
        self.parts, words = {}, []     # run index -> [(buffers, first word, count, groups)]
        for k, run in enumerate(runs):
            if len(run) > 1 and run[0][0] == "adam_update":
                self.parts[k] = self._cut(run, buffers, words)
        self.buffer = None
        if words:
            table = np.array(words, np.uint32)
            with gpu.guard:
                U = gpu.wgpu.BufferUsage
                self.buffer = gpu.device.create_buffer(size=table.nbytes,
                                                       usage=U.STORAGE | U.COPY_DST,
                                                       label="torchic-adam-table")
                gpu.queue.write_buffer(self.buffer, 0, table)

    def _cut(self, run, buffers, words):
        """The run's dispatches, each binding at most nmax buffers; their rows into words."""
        parts, bufs, first, count, groups = [], [], len(words), 0, 0
        for _, out, (g, m, v, s), _ in run:
            n = numel(out.shape)
            if n == 0:
                continue
            located = [buffers(x) for x in (out, g, m, v, s)]
            need = _joined(bufs, located)
            if len(need) > self.nmax:       # a dispatch of its own from here
                parts.append((tuple(bufs), first, count, groups))
                need, first, count, groups = _joined([], located), len(words), 0, 0
            bufs = need
            index = 0
            for k, (b, _) in enumerate(located):
                index |= next(q for q, c in enumerate(bufs) if c is b) << (5 * k)
            words += [groups, n] + [base for _, base in located] + [s.strides[0], index]
            count += 1
            groups += -(-n // WG)
        if count:
            parts.append((tuple(bufs), first, count, groups))
        return parts

    def issue(self, gpu, k):
        """Encode run k (only while replay.capture collects: the bind groups of
        gpu.dispatch's own batches do not know the table's buffer)."""
        for bufs, first, count, groups in self.parts[k]:
            prog = gpu.program(("adam_update", "run", len(bufs)),
                               lambda n=len(bufs): _build_run(n))
            gpu.dispatch(prog, bufs + (self.buffer,), [count, 0, first],
                         wgsl.grid(groups, gpu.max_groups))

    def attach(self, recording):
        """Give the recording (replay.capture's, or None) the table buffer to keep."""
        if recording is not None and self.buffer is not None:
            recording.keep.append(self.buffer)
        return recording


def _joined(bufs, located):
    """bufs and the buffers of located [(buffer, base)] not among them, in order."""
    out = list(bufs)
    for b, _ in located:
        if not any(b is c for c in out):
            out.append(b)
    return out
