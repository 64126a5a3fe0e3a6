"""Row gather / scatter-add (embedding lookup and its gradient).

gather_rows: one invocation per output element; the index is checked and a
bad one reports the op's tag (and writes 0).

scatter_add_rows, deterministic by construction (no float atomics, whose
summation order would change from run to run): a 64-wide workgroup owns one
output row ``v`` and 64 columns; it walks the index vector in order (staged
64 at a time through workgroup memory) and adds the source rows whose index
is ``v``. Every output element is summed in the order of ``r``, exactly like
``np.add.at``. The work is O(V * ceil(D / 64) * R) comparisons, tiny for an
embedding table's gradient (makemore: V = 27). When that leaves the GPU idle
(few rows, long index) the index is cut into ``S`` slices: pass 1 writes each
slice's partial sums to scratch, pass 2 adds the ``S`` partials to ``out`` in
slice order, still a fixed order. Slices are also cut so that no invocation loops
past ``wgsl.LOOP_BUDGET`` (lavapipe silently ends longer loops).
"""

from . import wgsl
from .wgsl import par

SW = 64  # scatter workgroup width


def _gather_src():
    bind = [("O", "f32"), ("TB", "f32"), ("IX", "i32")]
    R, D, V, ob, tb, tsv, tsd, ib, isr, tag = (par(i) for i in range(10))
    L = [wgsl.linear_id(), f"if (i >= {R} * {D}) {{ return; }}",
         f"let r = i / {D};", f"let d = i % {D};",
         f"let k = IX[{ib} + r * {isr}];",
         f"if (k < 0 || u32(k) >= {V}) {{ report_error({tag}, k); O[{ob} + i] = 0.0; return; }}",
         f"O[{ob} + i] = TB[{tb} + u32(k) * {tsv} + d * {tsd}];"]
    return wgsl.linear_program(bind, L)


def gather(gpu, out, ins, *, buffers):
    table, idx = ins
    R, D = out.shape
    V = table.shape[0]
    if R * D == 0 and R == 0:
        return
    obuf, ob = buffers(out)
    tbuf, tb = buffers(table)
    ibuf, ib = buffers(idx)
    tag = gpu.new_tag("gather_rows", f"index {{bad}} is out of range [0, {V})")
    if D == 0:   # still check the indices: run one invocation per row with D = 1 writing nothing
        return _check_only(gpu, idx, V, tag, buffers)
    prog = gpu.program(("gather",), _gather_src)
    words = [R, D, V, ob, tb, table.strides[0], table.strides[1], ib, idx.strides[0], tag]
    gpu.dispatch(prog, [obuf, tbuf, ibuf], words, wgsl.grid(-(-R * D // wgsl.WG), gpu.max_groups))


def _check_src():
    bind = [("IX", "i32")]
    R, V, ib, isr, tag = (par(i) for i in range(5))
    L = [wgsl.linear_id(), f"if (i >= {R}) {{ return; }}",
         f"let k = IX[{ib} + i * {isr}];",
         f"if (k < 0 || u32(k) >= {V}) {{ report_error({tag}, k); }}"]
    return wgsl.linear_program(bind, L)


def _check_only(gpu, idx, V, tag, buffers):
    R = idx.shape[0]
    if R == 0:
        return
    ibuf, ib = buffers(idx)
    prog = gpu.program(("index-check",), _check_src)
    gpu.dispatch(prog, [ibuf], [R, V, ib, idx.strides[0], tag],
                 wgsl.grid(-(-R // wgsl.WG), gpu.max_groups))


def _scatter_src(partial):
    bind = [("O", "f32"), ("S", "f32"), ("IX", "i32")]
    V, D, R, ob, sb, ssr, ssd, ib, isr, tag, nsl, rlen = (par(i) for i in range(12))
    src = wgsl.header(bind) + f"var<workgroup> sidx: array<i32, {SW}>;\n"
    L = ["let g = wid.y * nwg.x + wid.x;",
         f"let dcs = ({D} + {SW - 1}u) / {SW}u;",
         f"let slice = g % {nsl};", f"let rest = g / {nsl};",
         "let v = rest / dcs;", f"if (v >= {V}) {{ return; }}",
         f"let d = (rest % dcs) * {SW}u + lid;",
         f"let r0 = slice * {rlen};", f"let r1 = min({R}, r0 + {rlen});",
         "let vi = i32(v);", "var acc = 0.0;",
         f"for (var rb = r0; rb < r1; rb = rb + {SW}u) {{",
         "  let r = rb + lid;",
         "  var k = -1;",
         f"  if (r < r1) {{ k = IX[{ib} + r * {isr}]; }}",
         f"  if (g == 0u && r < r1 && (k < 0 || u32(k) >= {V})) {{ report_error({tag}, k); }}",
         "  sidx[lid] = k;",
         "  workgroupBarrier();",
         f"  let cnt = min({SW}u, r1 - rb);",
         f"  if (d < {D}) {{",
         "    for (var j = 0u; j < cnt; j = j + 1u) {",
         f"      if (sidx[j] == vi) {{ acc = acc + S[{sb} + (rb + j) * {ssr} + d * {ssd}]; }}",
         "    }",
         "  }",
         "  workgroupBarrier();",
         "}"]
    if partial:   # scratch layout [slice][v][d], contiguous
        L += [f"if (d < {D}) {{ O[(slice * {V} + v) * {D} + d] = acc; }}"]
    else:
        L += [f"if (d < {D}) {{ O[{ob} + v * {D} + d] = O[{ob} + v * {D} + d] + acc; }}"]
    # g == 0 checks slice 0's indices; with several slices run() adds a check pass
    return src + wgsl.entry(SW) + "  " + "\n  ".join(L) + "\n}\n", 3


def _sum_partials_src():
    bind = [("O", "f32"), ("PS", "f32")]
    n, nsl, ob = par(0), par(1), par(2)
    L = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", f"var acc = O[{ob} + i];",
         f"for (var s = 0u; s < {nsl}; s = s + 1u) {{ acc = acc + PS[s * {n} + i]; }}",
         f"O[{ob} + i] = acc;"]
    return wgsl.linear_program(bind, L)


def scatter_add(gpu, out, ins, *, buffers):
    src, idx = ins
    V, D = out.shape
    R = idx.shape[0]
    if R == 0:
        return
    tag = gpu.new_tag("scatter_add_rows", f"index {{bad}} is out of range [0, {V})")
    if V == 0 or D == 0:
        return _check_only(gpu, idx, V, tag, buffers)
    obuf, ob = buffers(out)
    sbuf, sb = buffers(src)
    ibuf, ib = buffers(idx)
    bufs = (obuf, sbuf, ibuf)
    # an invocation walks a slice of rlen rows (about rlen loop trips): at most half the
    # loop budget (wgsl.LOOP_BUDGET). Partials take at most 64 MiB, so a longer index is
    # cut into pieces added to out one after the other (still in the order of r).
    max_rlen = max(SW, wgsl.LOOP_BUDGET // 2 // SW * SW)
    max_slices = max(1, min((16 << 20) // (V * D), wgsl.LOOP_BUDGET // 2))  # (sum loop)
    piece = max_rlen * max_slices
    sliced = False
    for r0 in range(0, R, piece):
        sliced |= _scatter_piece(gpu, bufs, out, src, idx, ob, sb + r0 * src.strides[0],
                                 ib + r0 * idx.strides[0], min(piece, R - r0), tag, max_rlen)
    if sliced:   # the sliced kernel checks slice 0's indices only
        _check_only(gpu, idx, V, tag, buffers)


def _scatter_piece(gpu, bufs, out, src, idx, ob, sb, ib, R, tag, max_rlen):
    """Add R index rows (from bases sb, ib) into out; True if it used partial slices."""
    obuf, sbuf, ibuf = bufs
    V, D = out.shape
    dcs = -(-D // SW)
    groups = V * dcs
    # slices of the index: enough workgroups to fill a GPU, partials at most 64 MiB
    nsl = 1
    if groups < 256 and R >= 4 * SW:
        nsl = min(-(-R // (2 * SW)), max(1, 512 // groups), max(1, (16 << 20) // (V * D)))
    nsl = max(nsl, -(-R // max_rlen))
    rlen = -(-R // nsl)
    rlen = -(-rlen // SW) * SW
    nsl = -(-R // rlen)
    words = [V, D, R, ob, sb, src.strides[0], src.strides[1], ib, idx.strides[0], tag, nsl, rlen]
    if nsl == 1:
        prog = gpu.program(("scatter", False), lambda: _scatter_src(False))
        gpu.dispatch(prog, [obuf, sbuf, ibuf], words, wgsl.grid(groups, gpu.max_groups))
        return False
    scratch = gpu.scratch_buffer("scatter", nsl * V * D * 4)
    prog = gpu.program(("scatter", True), lambda: _scatter_src(True))
    gpu.dispatch(prog, [scratch, sbuf, ibuf], words, wgsl.grid(groups * nsl, gpu.max_groups))
    prog = gpu.program(("scatter-sum",), _sum_partials_src)
    gpu.dispatch(prog, [obuf, scratch], [V * D, nsl, ob],
                 wgsl.grid(-(-V * D // wgsl.WG), gpu.max_groups))
    return True
