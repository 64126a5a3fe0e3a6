"""max_pool_index: the first maximum of each (kh, kw) window of a (N, C, Ho, Wo, kh, kw) view
(max pooling's windows read in place through their strides; the last NaN where it holds
one), as its element offset in its (n, c) plane; one invocation per window (ops.py's row).
Words: n (windows), out base, a base, C, Ho, Wo, kh, kw, then a's six strides.

col2im: a convolution's columns (R1, R2, kh, kw, La) summed into rows (R1, R2, L), each
(ki, kj) shifted by ki * row_step + kj * col_step; one invocation per out element, its kh * kw
terms in row-major order. Words: n, out base, a base, L, La, R2, kh, kw, row_step, col_step,
then a's five strides.
"""

from ...backend import KernelValueError
from ...shape import numel
from . import wgsl
from .wgsl import WG, par

HEAD = 8


def _build():
    n, ob, ab, c, ho, wo, kh, kw = (par(i) for i in range(HEAD))
    s = [par(HEAD + d) for d in range(6)]
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}",
             f"let j = i % {wo};", f"let r = i / {wo};",
             f"let y = r % {ho};", f"let plane = r / {ho};",
             f"let base = {ab} + (plane / {c}) * {s[0]} + (plane % {c}) * {s[1]};",
             f"let start = y * {s[2]} + j * {s[3]};",
             "var best = start;",
             "var m = A[base + start];",
             "var nan = false;",
             f"for (var ki = 0u; ki < {kh}; ki = ki + 1u) {{",
             f"  for (var kj = 0u; kj < {kw}; kj = kj + 1u) {{",
             f"    let at = start + ki * {s[4]} + kj * {s[5]};",
             "    let v = A[base + at];",
             "    if (isnan1(v)) { best = at; nan = true; }",
             "    else if (!nan && v > m) { m = v; best = at; }",
             "  }",
             "}",
             f"O[{ob} + i] = i32(best);"]
    src, nbind = wgsl.linear_program([("O", "i32"), ("A", "f32")], lines)
    return wgsl.FLOAT_FNS + src, nbind


def kernel(be, out, ins, params):
    """The kernel table's entry: encode max_pool_index (out contiguous, a any strides)."""
    n = numel(out.shape)
    if n == 0:
        return
    (a,) = ins
    kh, kw = a.shape[4], a.shape[5]
    if kh * kw > wgsl.LOOP_BUDGET:
        raise KernelValueError(f"max_pool_index: a {kh}x{kw} window is more than the "
                               f"{wgsl.LOOP_BUDGET} elements one invocation may read here")
    (obuf, ob), (abuf, ab) = be.buffers(out), be.buffers(a)
    words = [n, ob, ab, a.shape[1], a.shape[2], a.shape[3], kh, kw, *a.strides]
    prog = be.gpu.program(("max_pool_index",), _build)
    be.gpu.dispatch(prog, [obuf, abuf], words, wgsl.grid(-(-n // WG), be.gpu.max_groups))


def _build_col2im():
    n, ob, ab, ln, la, r2, kh, kw = (par(i) for i in range(HEAD))
    rs, cs = par(HEAD), par(HEAD + 1)
    s = [par(HEAD + 2 + d) for d in range(5)]
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}",
             f"let j = i % {ln};", f"let r = i / {ln};",
             f"let src = {ab} + (r / {r2}) * {s[0]} + (r % {r2}) * {s[1]};",
             "var acc = 0.0;",
             f"for (var ki = 0u; ki < {kh}; ki = ki + 1u) {{",
             f"  for (var kj = 0u; kj < {kw}; kj = kj + 1u) {{",
             f"    let shift = ki * {rs} + kj * {cs};",
             f"    if (shift <= j && j - shift < {la}) {{",
             f"      acc = acc + A[src + ki * {s[2]} + kj * {s[3]} + (j - shift) * {s[4]}];",
             "    }",
             "  }",
             "}",
             f"O[{ob} + i] = acc;"]
    return wgsl.linear_program([("O", "f32"), ("A", "f32")], lines)


def col2im(be, out, ins, params):
    """The kernel table's entry: encode col2im (out contiguous (R1, R2, L), a any strides)."""
    n = numel(out.shape)
    if n == 0:
        return
    (a,) = ins
    kh, kw = a.shape[2], a.shape[3]
    if kh * kw > wgsl.LOOP_BUDGET:
        raise KernelValueError(f"col2im: a {kh}x{kw} kernel is more than the "
                               f"{wgsl.LOOP_BUDGET} terms one invocation may sum here")
    (obuf, ob), (abuf, ab) = be.buffers(out), be.buffers(a)
    words = [n, ob, ab, out.shape[2], a.shape[4], a.shape[1], kh, kw,
             int(params["row_step"]), int(params["col_step"]), *a.strides]
    prog = be.gpu.program(("col2im",), _build_col2im)
    be.gpu.dispatch(prog, [obuf, abuf], words, wgsl.grid(-(-n // WG), be.gpu.max_groups))
