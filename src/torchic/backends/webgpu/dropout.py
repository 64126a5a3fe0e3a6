"""dropout_mask: Threefry-2x32 with 20 rounds in WGSL u32 arithmetic, one invocation per
element (the same bits as the workers and simd kernels: see ops.py's row).

Element i (flat, row-major in the contiguous out) is `scale` where the first word of
threefry2x32_20(key, (i, 0)), shifted right by 8, is >= threshold, else 0. An out larger
than one storage binding is cut here into flat ranges that each fit a window, the range's
first index travelling as a parameter word (windows.py leaves this op to us: its generic
cuts would slice the (2,) key along out's axes).

Words: n, out base, key base, key stride, threshold, scale bits, first index.
"""

import numpy as np

from ...dispatcher import View
from ...shape import numel
from . import wgsl, windows
from .wgsl import WG, par

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


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


def _build():
    n, ob, kb, kst, thr, scale, first = (par(i) for i in range(7))
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}",
             f"let ks0 = bitcast<u32>(K[{kb}]);", f"let ks1 = bitcast<u32>(K[{kb} + {kst}]);",
             "let ks2 = ks0 ^ ks1 ^ 0x1BD11BDAu;",
             f"var x0 = {first} + i + ks0;", "var x1 = ks1;", *_rounds(),
             f"O[{ob} + i] = select(0.0, bitcast<f32>({scale}), (x0 >> 8u) >= {thr});"]
    return wgsl.linear_program([("O", "f32"), ("K", "i32")], lines)


def _encode(be, out, n, key, first, threshold, scale_bits):
    (obuf, ob), (kbuf, kb) = be.buffers(out), be.buffers(key)
    words = [n, ob, kb, key.strides[0], threshold, scale_bits, first]
    prog = be.gpu.program(("dropout_mask",), _build)
    be.gpu.dispatch(prog, [obuf, kbuf], words, wgsl.grid(-(-n // WG), be.gpu.max_groups))


def kernel(be, out, ins, params):
    """The kernel table's entry: encode the mask into the contiguous out."""
    n = numel(out.shape)
    if n == 0:
        return
    key, threshold = ins[0], int(params["threshold"])
    scale_bits = int(np.array(params["scale"], np.float32).view(np.uint32))
    if not (be.gpu.any_big and windows.too_big(be.gpu, View(out.block, out.offset, (n,), (1,),
                                                                 out.dtype))):
        _encode(be, out, n, key, 0, threshold, scale_bits)
        return
    step = windows.limit(be.gpu)
    for first in range(0, n, step):
        m = min(step, n - first)
        part = View(out.block, out.offset + first, (m,), (1,), out.dtype)
        _encode(be, part, m, key, first, threshold, scale_bits)
