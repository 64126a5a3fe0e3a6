"""dropout: out = x * mask in one pass, the mask never stored; Threefry-2x32 with 20 rounds
in WGSL u32 arithmetic, one invocation per evaluation, i.e. per pair of elements (the same
bits as the workers and simd kernels: see ops.py's row).

Element i (flat, row-major in the contiguous out) is x[i] * m, m = `scale` where word i & 1
of threefry2x32_20(key, (i >> 1, 0)), shifted right by 8, is >= threshold, else 0.0. x may
have any strides: out and x are collapsed together (elementwise.collapse) and walked as the
elementwise kernels walk them (scheme "c": both contiguous; "s{D}": D collapsed dims). The
flat index is `first` plus the element's offset in out: windows.py cuts a large op like an
elementwise one and passes each part's first flat index as params["first"] (an offset in the
contiguous whole out is a flat index, so a part may be any slice of it).

Invocation j takes the part's elements e = 2 j - (first & 1) and e + 1 (those in [0, n)): a
part starting at an odd flat index begins with the second half of a pair. Where out is
contiguous (always, but for windows.py's parts cut across out's rows) the two are flat
indices 2c, 2c + 1 and one evaluation serves both; otherwise the second element's pair may
differ and gets an evaluation of its own (the same bits, twice the work).

The 0.0 of a dropped element is a parameter word (always 0), not a constant: a compiler that
sees `x * 0.0` may fold it to 0, where a NaN or inf x must give NaN, as `x * mask` did.

Words: n, out base, x base, key base, key stride, threshold, scale bits, first, 0 (the zero),
then D shape words, D out strides, D x strides.
"""

from ...shape import numel
from . import elementwise, wgsl
from .wgsl import WG, par

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
HEAD = 9        # parameter words before the shape and strides


def threefry_fn():
    """WGSL function threefry(c, ks0, ks1, ks2): both words of threefry2x32_20(key, (c, 0))
    (ks2 = ks0 ^ ks1 ^ parity): the 20 rounds unrolled, a key injection after every 4."""
    lines = ["var x0 = c + ks0;", "var x1 = ks1;"]
    for r in range(20):
        rot = ROTATIONS[r % 8]
        lines += ["x0 = x0 + x1;", f"x1 = ((x1 << {rot}u) | (x1 >> {32 - rot}u)) ^ x0;"]
        if r % 4 == 3:      # injection s = 1..5 (the 5th after the last round)
            s = r // 4 + 1
            lines += [f"x0 = x0 + ks{s % 3};", f"x1 = x1 + ks{(s + 1) % 3} + {s}u;"]
    return ("fn threefry(c: u32, ks0: u32, ks1: u32, ks2: u32) -> vec2<u32> {\n  "
            + "\n  ".join(lines + ["return vec2<u32>(x0, x1);"]) + "\n}\n")


def _build(ndim):
    """The program of one scheme: ndim 0 is "c" (both contiguous), else "s{ndim}"."""
    n, ob, xb, kb, kst, thr, scale, first, zero = (par(i) for i in range(HEAD))
    lines = [wgsl.linear_id(), f"let a = {first} & 1u;",
             f"if (i >= ({n} + a + 1u) / 2u) {{ return; }}",
             "let e0 = 2u * i - a;",          # (wraps to 2^32 - 1 >= n when i = 0, a = 1)
             f"let v0 = e0 < {n};", f"let v1 = e0 + 1u < {n};"]
    if ndim == 0:
        lines += ["let oi0 = e0;", "let xi0 = e0;", "let oi1 = e0 + 1u;", "let xi1 = e0 + 1u;"]
    else:   # unravel each element over the collapsed shape, innermost dim last
        shape = [par(HEAD + d) for d in range(ndim)]
        ost = [par(HEAD + ndim + d) for d in range(ndim)]
        xst = [par(HEAD + 2 * ndim + d) for d in range(ndim)]
        for k in (0, 1):
            lines.append(f"var r{k} = select(0u, {'e0 + 1u' if k else 'e0'}, v{k});")
            for d in range(ndim - 1, 0, -1):
                lines.append(f"let c{k}_{d} = r{k} % {shape[d]}; r{k} = r{k} / {shape[d]};")
            lines.append(f"let c{k}_0 = r{k};")
            lines.append(f"let oi{k} = " + " + ".join(f"c{k}_{d} * {ost[d]}"
                                                      for d in range(ndim)) + ";")
            lines.append(f"let xi{k} = " + " + ".join(f"c{k}_{d} * {xst[d]}"
                                                      for d in range(ndim)) + ";")
    word = "select(w{k}.x, w{k}.y, (f{k} & 1u) == 1u)"     # word i & 1 of element i
    keep = f"bitcast<f32>(select({zero}, {scale}, ({word} >> 8u) >= {thr}))"
    lines += [f"let ks0 = bitcast<u32>(K[{kb}]);", f"let ks1 = bitcast<u32>(K[{kb} + {kst}]);",
              "let ks2 = ks0 ^ ks1 ^ 0x1BD11BDAu;",
              f"let f0 = {first} + oi0;", f"let f1 = {first} + oi1;",
              "let c = select(f1 >> 1u, f0 >> 1u, v0);",
              "let w0 = threefry(c, ks0, ks1, ks2);",
              "var w1 = w0;",
              "if (v1 && (f1 >> 1u) != c) { w1 = threefry(f1 >> 1u, ks0, ks1, ks2); }",
              f"if (v0) {{ O[{ob} + oi0] = X[{xb} + xi0] * {keep.format(k=0)}; }}",
              f"if (v1) {{ O[{ob} + oi1] = X[{xb} + xi1] * {keep.format(k=1)}; }}"]
    src, nbind = wgsl.linear_program([("O", "f32"), ("X", "f32"), ("K", "i32")], lines)
    return threefry_fn() + src, nbind


def _encode(gpu, bufs, n, ob, xb, first, shape, strides, key_words):
    """One dispatch over the collapsed (shape, [out strides, x strides]); a shape of more
    than elementwise.MAX_DIMS dims is peeled a leading index at a time (rare)."""
    if len(shape) > elementwise.MAX_DIMS:
        so, sx = strides[0][0], strides[1][0]
        for j in range(shape[0]):
            _encode(gpu, bufs, n // shape[0], ob + j * so, xb + j * sx, first + j * so,
                    shape[1:], [s[1:] for s in strides], key_words)
        return
    contiguous = len(shape) == 1 and strides[0][0] == 1 and strides[1][0] == 1
    ndim = 0 if contiguous else len(shape)
    words = [n, ob, xb, *key_words, first, 0]
    if ndim:
        words += [*shape, *strides[0], *strides[1]]
    prog = gpu.program(("dropout", ndim), lambda: _build(ndim))
    pairs = (n + (first & 1) + 1) // 2      # one invocation per pair (see the docstring)
    gpu.dispatch(prog, bufs, words, wgsl.grid(-(-pairs // WG), gpu.max_groups))


def kernel(be, out, ins, params):
    """The kernel table's entry: encode out = x * mask (out contiguous, or a part of a
    contiguous whole from windows.py; x any strides)."""
    n = numel(out.shape)
    if n == 0:
        return
    x, key = ins
    (obuf, ob), (xbuf, xb), (kbuf, kb) = be.buffers(out), be.buffers(x), be.buffers(key)
    scale_bits = wgsl.f32_bits(params["scale"])
    key_words = (kb, key.strides[0], int(params["threshold"]), scale_bits)
    shape, strides = elementwise.collapse(out.shape, [out.strides, x.strides])
    _encode(be.gpu, [obuf, xbuf, kbuf], n, ob, xb, int(params.get("first", 0)), shape, strides,
            key_words)
