"""dropout: out = x * mask in one pass, the mask never stored; Threefry-2x32 with 20 rounds
in WGSL u32 arithmetic, one invocation per element (the same bits as the workers and simd
kernels: see ops.py's row).

Element i (flat, row-major in the contiguous out) is x[i] * m, m = `scale` where the first
word of threefry2x32_20(key, (i, 0)), shifted right by 8, is >= threshold, else 0.0. x may
have any strides: out and x are collapsed together (elementwise.collapse) and walked as the
elementwise kernels walk them (scheme "c": both contiguous; "s{D}": D collapsed dims). The
counter is `first` plus the element's offset in out: windows.py cuts a large op like an
elementwise one and passes each part's first flat index as params["first"] (an offset in the
contiguous whole out is a flat index, so a part may be any slice of it).

The 0.0 of a dropped element is a parameter word (always 0), not a constant: a compiler that
sees `x * 0.0` may fold it to 0, where a NaN or inf x must give NaN, as `x * mask` did.

Words: n, out base, x base, key base, key stride, threshold, scale bits, first, 0 (the zero),
then D shape words, D out strides, D x strides.
"""

import numpy as np

from ...shape import numel
from . import elementwise, wgsl
from .wgsl import WG, par

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
HEAD = 9        # parameter words before the shape and strides


def _rounds():
    """The 20 rounds, unrolled, with a key injection after every 4 (WGSL statements)."""
    lines = []
    for r in range(20):
        lines.append("x0 = x0 + x1;")
        if r == 19:     # (the last round's x1 no longer reaches word 0)
            break
        rot = ROTATIONS[r % 8]
        lines.append(f"x1 = ((x1 << {rot}u) | (x1 >> {32 - rot}u)) ^ x0;")
        if r % 4 == 3:
            s = r // 4 + 1
            lines += [f"x0 = x0 + ks{s % 3};", f"x1 = x1 + ks{(s + 1) % 3} + {s}u;"]
    return lines + ["x0 = x0 + ks2;"]      # injection 5: ks[5 % 3]


def _build(ndim):
    """The program of one scheme: ndim 0 is "c" (both contiguous), else "s{ndim}"."""
    n, ob, xb, kb, kst, thr, scale, first, zero = (par(i) for i in range(HEAD))
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}"]
    if ndim == 0:
        lines += ["let oi = i;", "let xi = i;"]
    else:   # unravel i over the collapsed shape, innermost dim last
        shape = [par(HEAD + d) for d in range(ndim)]
        ost = [par(HEAD + ndim + d) for d in range(ndim)]
        xst = [par(HEAD + 2 * ndim + d) for d in range(ndim)]
        lines.append("var r = i;")
        for d in range(ndim - 1, 0, -1):
            lines.append(f"let c{d} = r % {shape[d]}; r = r / {shape[d]};")
        lines.append("let c0 = r;")
        lines.append("let oi = " + " + ".join(f"c{d} * {ost[d]}" for d in range(ndim)) + ";")
        lines.append("let xi = " + " + ".join(f"c{d} * {xst[d]}" for d in range(ndim)) + ";")
    lines += [f"let ks0 = bitcast<u32>(K[{kb}]);", f"let ks1 = bitcast<u32>(K[{kb} + {kst}]);",
              "let ks2 = ks0 ^ ks1 ^ 0x1BD11BDAu;",
              f"var x0 = {first} + oi + ks0;", "var x1 = ks1;", *_rounds(),
              f"let m = bitcast<f32>(select({zero}, {scale}, (x0 >> 8u) >= {thr}));",
              f"O[{ob} + oi] = X[{xb} + xi] * m;"]
    return wgsl.linear_program([("O", "f32"), ("X", "f32"), ("K", "i32")], lines)


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
    gpu.dispatch(prog, bufs, words, wgsl.grid(-(-n // WG), gpu.max_groups))


def kernel(be, out, ins, params):
    """The kernel table's entry: encode out = x * mask (out contiguous, or a part of a
    contiguous whole from windows.py; x any strides)."""
    n = numel(out.shape)
    if n == 0:
        return
    x, key = ins
    (obuf, ob), (xbuf, xb), (kbuf, kb) = be.buffers(out), be.buffers(x), be.buffers(key)
    scale_bits = int(np.array(params["scale"], np.float32).view(np.uint32))
    key_words = (kb, key.strides[0], int(params["threshold"]), scale_bits)
    shape, strides = elementwise.collapse(out.shape, [out.strides, x.strides])
    _encode(be.gpu, [obuf, xbuf, kbuf], n, ob, xb, int(params.get("first", 0)), shape, strides,
            key_words)
