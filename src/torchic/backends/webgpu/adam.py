"""adam_update: Adam / AdamW's whole update of one parameter, one invocation per element
(the same bits as the workers and simd kernels: see ops.py's row).

Every product that an add consumes goes through `keep` (its bits OR-ed with a parameter
word that is always 0): a shader compiler may fuse `a * b + c` into one fused multiply-add
(rounded once), which the compiler cannot do to a value it cannot see through, so each
product is rounded on its own as in the NumPy and Rust kernels.

Words: n, p base, g base, m base, v base, s base, s stride, 0 (the `keep` mask).
"""

from ...shape import numel
from . import wgsl
from .wgsl import WG, par

KEEP = "fn keep(x: f32, z: u32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | z); }\n"


def _build():
    n, pb, gb, mb, vb, sb, sst, z = (par(i) for i in range(8))
    s = [f"S[{sb} + {k}u * {sst}]" for k in range(10)]
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}",
             f"let z = {z};", f"var g = G[{gb} + i];", f"var p = O[{pb} + i];",
             f"if ({s[9]} != 0.0) {{ g = -g; }}",
             f"let l2 = {s[8]};", "if (l2 != 0.0) { g = g + keep(p * l2, z); }",
             f"let decay = {s[7]};", "if (decay != 1.0) { p = keep(p * decay, z); }",
             f"let m = keep({s[0]} * M[{mb} + i], z) + keep(g * {s[1]}, z);",
             f"let v = keep({s[2]} * V[{vb} + i], z) + keep(keep(g * g, z) * {s[3]}, z);",
             f"M[{mb} + i] = m;", f"V[{vb} + i] = v;",
             f"let d = keep(sqrt(v) * {s[5]}, z) + {s[4]};",
             f"O[{pb} + i] = p + keep(keep(m / d, z) * {s[6]}, z);"]
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
