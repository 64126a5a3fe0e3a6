"""Row gather / scatter-add (embedding lookup and its gradient).

gather_rows: one invocation per output element; the index is checked and a
bad one reports the op's tag (and writes 0).

scatter_add_rows, deterministic by construction (no float atomics, whose
summation order would change from run to run): every output element is summed
in the order of ``r``, exactly like ``np.add.at``, on one of two paths:

* sorted (any size): the index is sorted by (value, position) on the GPU (a
  bitonic sort), then each output row's sources, now one run of the sorted
  order, are summed by invocations over fixed chunks of sorted positions (a row
  crossing a chunk boundary adds its pieces in chunk order in a second pass).
  Linear in R (plus the sort) whatever the table's size V; about 2 log2(R)
  dispatches.
* direct (a small table: V * D * R within CHUNKED_WORK, as makemore's 96 indices
  into 27 rows or a GPT's 16384 tokens into 27): an invocation per output element
  and chunk of CL index rows sums that chunk's sources of its row; one chunk (R <=
  CL) writes out in one dispatch, with the sorted path's bits (one chunk: the same
  order from the same 0.0); more write per-chunk partials that a second dispatch
  adds in chunk order. It saves the sort's ~2 log2(R) dispatches (a GPT step's two
  embedding gradients: 27 sort passes, ~0.5 ms of an H200).

Slices and chunks keep every invocation's loop under ``wgsl.LOOP_BUDGET``
(lavapipe silently ends longer loops).
"""

from . import wgsl
from .wgsl import par

SW = 64  # scatter workgroup width


def _gather_src(t):
    """(t: the rows' memory type: "f32", for every 32-bit word, or native "f16")"""
    bind = [("O", t), ("TB", t), ("IX", "i32")]
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
    t = "f16" if gpu.storage[out.dtype] == "f16" else "f32"     # (a pure copy of the bits)
    prog = gpu.program(("gather", t), lambda: _gather_src(t))
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


# -- scatter_add_rows: sort the index, then sum each output row's run of sources in order --
SENT = 0x7FFFFFFF   # the sort key of padding and of out-of-range indices (after every row)
M = 4               # one invocation runs M stages of the bitonic sort on 2^M pairs


def _keys_src():
    """keys[i] = idx[i] (SENT when out of range, reported) and vals[i] = i, for i < N."""
    bind = [("KV", "i32"), ("IX", "i32")]
    R, V, N, ib, isr, tag = (par(i) for i in range(6))
    L = [wgsl.linear_id(), f"if (i >= {N}) {{ return; }}",
         f"var k = {SENT};",
         f"if (i < {R}) {{",
         f"  let x = IX[{ib} + i * {isr}];",
         f"  if (x < 0 || u32(x) >= {V}) {{ report_error({tag}, x); }} else {{ k = x; }}",
         "}",
         "KV[i] = k;", f"KV[{N} + i] = i32(i);"]
    return wgsl.linear_program(bind, L)


def _bitonic_src(m, presort):
    """Stages of the bitonic sort of the N (key, val) pairs KV[0:N], KV[N:2N], unrolled.

    (key, val) pairs compare lexicographically; vals are distinct, so the order is total
    and the sort stable by construction. An invocation loads the 2^m pairs at base + s *
    jl (s < 2^m) into registers and runs the stages j = jl * 2^(m-1) .. jl of merge k
    (presort: every stage of k = 2 .. 2^m on 2^m consecutive pairs): the 2^m pairs are
    closed under those stages, so no barrier is needed. No loops (lavapipe's budget)."""
    bind = [("KV", "i32")]
    N, k, jl = par(0), par(1), par(2)
    g = 1 << m
    L = [wgsl.linear_id(), f"if (i >= {N} >> {m}u) {{ return; }}",
         f"let base = (i / {jl}) * ({jl} << {m}u) + i % {jl};",
         f"let up = (base & {k}) == 0u;",
         f"var K: array<i32, {g}>;", f"var W: array<i32, {g}>;"]
    L += [f"K[{s}] = KV[base + {s}u * {jl}]; W[{s}] = KV[{N} + base + {s}u * {jl}];"
          for s in range(g)]

    def cx(a, b, direction):   # order pair positions a < b ascending when direction holds
        gt = f"(K[{a}] > K[{b}] || (K[{a}] == K[{b}] && W[{a}] > W[{b}]))"
        return (f"if ({gt} == {direction}) {{ let t = K[{a}]; K[{a}] = K[{b}]; K[{b}] = t; "
                f"let u = W[{a}]; W[{a}] = W[{b}]; W[{b}] = u; }}")
    stages = ([(kk, j) for kk in (1 << e for e in range(1, m + 1))
               for j in (kk >> e for e in range(1, kk.bit_length()))] if presort
              else [(None, g >> e) for e in range(1, m + 1)])
    for kk, j in stages:
        for a in range(g):
            if a & j == 0:
                # inside the group (presort, k < 2^m) the direction is known here
                d = ("up" if kk is None or kk == g else
                     "true" if a & kk == 0 else "false")
                L.append(cx(a, a + j, d))
    L += [f"KV[base + {s}u * {jl}] = K[{s}]; KV[{N} + base + {s}u * {jl}] = W[{s}];"
          for s in range(g)]
    return wgsl.linear_program(bind, L)


def _runs_src():
    """Per (chunk c of L sorted positions, column d): sum each run of equal keys in order.

    A run that is a whole output row's sources is added to out at once; a row that
    crosses a chunk boundary leaves its pieces in PS: its first chunk's piece in
    LAST[c] (the chunk's last run), the pieces of later chunks in FIRST[c] (the chunk's
    first run), for the combine pass."""
    bind = [("O", "f32"), ("S", "f32"), ("KV", "i32"), ("PS", "f32")]
    D, R, N, ob, sb, ssr, ssd, CL, nch = (par(i) for i in range(9))
    emit = ("fn emit(v: i32, start: u32, acc: f32, after: bool, c: u32, d: u32, "
            "before: bool) {\n"
            f"  if (before) {{ PS[c * {D} + d] = acc; }}\n"
            f"  else if (after) {{ PS[({nch} + c) * {D} + d] = acc; }}\n"
            f"  else {{ let o = {ob} + u32(v) * {D} + d; O[o] = O[o] + acc; }}\n"
            "}\n")
    L = [wgsl.linear_id(), f"if (i >= {nch} * {D}) {{ return; }}",
         f"let c = i / {D};", f"let d = i % {D};",
         f"let p0 = c * {CL};", f"let p1 = min({R}, p0 + {CL});",
         "var cur = KV[p0];", f"if (cur == {SENT}) {{ return; }}",
         "let prev = p0 > 0u && KV[p0 - 1u] == cur;",
         "var start = p0;", "var acc = 0.0;", "var done = false;",
         "for (var p = p0; p < p1; p = p + 1u) {",
         "  let kp = KV[p];",
         "  if (kp != cur) {",
         "    emit(cur, start, acc, false, c, d, prev && start == p0);",
         f"    if (kp == {SENT}) {{ done = true; break; }}",
         "    cur = kp; start = p; acc = 0.0;",
         "  }",
         f"  acc = acc + S[{sb} + u32(KV[{N} + p]) * {ssr} + d * {ssd}];",
         "}",
         f"if (!done) {{ emit(cur, start, acc, p1 < {R} && KV[p1] == cur, c, d, "
         "prev && start == p0); }"]
    return (wgsl.header(bind) + emit + wgsl.entry() + "  " + "\n  ".join(L) + "\n}\n",
            len(bind))


def _combine_src():
    """Per (chunk boundary b, column d): a row whose sources start in chunk b - 1 and cross
    into chunk b adds LAST[b - 1], then FIRST[b], FIRST[b + 1] ... while it lasts."""
    bind = [("O", "f32"), ("KV", "i32"), ("PS", "f32")]
    D, R, ob, CL, nch = (par(i) for i in range(5))
    L = [wgsl.linear_id(), f"if (i >= ({nch} - 1u) * {D}) {{ return; }}",
         f"let b = i / {D} + 1u;", f"let d = i % {D};", f"let q = b * {CL};",
         "let cur = KV[q];",
         f"if (cur == {SENT} || KV[q - 1u] != cur) {{ return; }}",
         f"if (b >= 2u && KV[(b - 1u) * {CL} - 1u] == cur) {{ return; }}   // not its first",
         f"var acc = PS[({nch} + b - 1u) * {D} + d];",
         f"for (var c = b; c < {nch}; c = c + 1u) {{",
         f"  acc = acc + PS[c * {D} + d];",
         f"  let e = (c + 1u) * {CL};",
         f"  if (e >= {R} || KV[e] != cur) {{ break; }}",
         "}",
         f"let o = {ob} + u32(cur) * {D} + d;", "O[o] = O[o] + acc;"]
    return wgsl.linear_program(bind, L)


# the direct path's bound on V * D * R, its index comparisons (a GPT's 16384 tokens into
# 27 rows of 384: 1.7e8, tens of microseconds on an H200; the sort costs ~0.25 ms)
CHUNKED_WORK = 1 << 28


DIRECT_COLS = 4   # output columns per invocation of the direct path (one index walk for 4)


def _direct_src(chunked):
    """Per output row v, DIRECT_COLS columns d0.. and chunk c of CL index rows: the chunk's
    sources whose index is v, summed in position order; the chunk's first invocation
    checks its indices. One chunk adds the sums into O (a row no source hits keeps its
    bits: -0.0 stays); several write partial sums O[c][v][d] and after them (from word 11
    on) 1.0 where a source hit, 0.0 where none did."""
    bind = [("O", "f32"), ("S", "f32"), ("IX", "i32")]
    V, D, R, ob, sb, ssr, ssd, ib, isr, tag, CL, total = (par(i) for i in range(12))
    k = DIRECT_COLS
    L = [wgsl.linear_id(), f"let nd = ({D} + {k - 1}u) / {k}u;",
         f"if (i >= {V} * nd * ((({R}) + {CL} - 1u) / {CL})) {{ return; }}",
         f"let e = i % ({V} * nd);", f"let c = i / ({V} * nd);",
         "let v = i32(e / nd);", f"let d0 = (e % nd) * {k}u;",
         f"let r0 = c * {CL};", f"let r1 = min({R}, r0 + {CL});",
         f"var acc: array<f32, {k}>;", "var hit = false;",
         "for (var r = r0; r < r1; r = r + 1u) {",
         f"  let ix = IX[{ib} + r * {isr}];",
         f"  if (e == 0u && (ix < 0 || u32(ix) >= {V})) {{ report_error({tag}, ix); }}",
         "  if (ix == v) {", "    hit = true;", f"    let s0 = {sb} + r * {ssr};"]
    for j in range(k):
        d = f"d0 + {j}u"
        L.append(f"    if ({d} < {D}) {{ acc[{j}] = acc[{j}] + S[s0 + ({d}) * {ssd}]; }}")
    L += ["  }", "}"]
    for j in range(k):
        d = f"d0 + {j}u"
        at, o = f"(c * {V} + u32(v)) * {D} + {d}", f"{ob} + u32(v) * {D} + {d}"
        store = (f"O[{at}] = acc[{j}]; O[{total} + {at}] = select(0.0, 1.0, hit);" if chunked
                 else f"if (hit) {{ O[{o}] = O[{o}] + acc[{j}]; }}")
        L.append(f"if ({d} < {D}) {{ {store} }}")
    return wgsl.linear_program(bind, L)


def _direct_sum_src():
    """out[v][d] += the chunks' partials PS[c][v][d], in chunk order, where any hit."""
    bind = [("O", "f32"), ("PS", "f32")]
    n, nch, ob = (par(i) for i in range(3))
    L = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", "var acc = PS[i];",
         f"var hit = PS[{nch} * {n} + i];",
         f"for (var c = 1u; c < {nch}; c = c + 1u) {{",
         f"  acc = acc + PS[c * {n} + i];", f"  hit = max(hit, PS[({nch} + c) * {n} + i]);", "}",
         f"if (hit != 0.0) {{ O[{ob} + i] = O[{ob} + i] + acc; }}"]
    return wgsl.linear_program(bind, L)


def _pow2(n):
    return 1 << max(0, int(n) - 1).bit_length()


def scatter_add(gpu, out, ins, *, buffers):
    """out[idx[r]] += src[r] for every r, each output row summed in a fixed order.

    A short index into a small table takes the direct path, anything else the sorted one
    (module docstring): the index is sorted by (value, position) on the GPU (a bitonic
    sort; deterministic, no atomics), then each output row's sources, now one run of the
    sorted order, are summed in position order by invocations over fixed chunks of CL
    sorted positions (a row that crosses a chunk boundary adds its chunk pieces in chunk
    order in a second pass). No invocation loops more than CL or (chunks) times, both kept
    under wgsl.LOOP_BUDGET; a longer index is cut into pieces added to out one after the
    other."""
    src, idx = ins
    V, D = out.shape
    R = idx.shape[0]
    if R == 0:
        return
    tag = gpu.new_tag("scatter_add_rows", f"index {{bad}} is out of range [0, {V})")
    if V == 0 or D == 0:
        return _check_only(gpu, idx, V, tag, buffers)
    bufs = (buffers(out), buffers(src), buffers(idx))
    budget = max(4, wgsl.LOOP_BUDGET // 2)
    cl = max(2, min(256, budget // 2))
    # chunks per piece: within the loop budget and with partials of at most 16 MiB
    nch = max(1, min(budget, (2 << 20) // D))
    piece = cl * nch
    chunks = -(-R // cl)
    if V * D * R <= CHUNKED_WORK and chunks <= budget and chunks * V * D <= (4 << 20):
        (obuf, ob), (sbuf, sb), (ibuf, ib) = bufs
        chunked = chunks > 1
        prog = gpu.program(("scatter-direct", chunked), lambda: _direct_src(chunked))
        ps = gpu.scratch_buffer("scatter-direct", 2 * chunks * V * D * 4) if chunked else obuf
        gpu.dispatch(prog, [ps, sbuf, ibuf], [V, D, R, ob, sb, src.strides[0], src.strides[1],
                                              ib, idx.strides[0], tag, cl, chunks * V * D],
                     wgsl.grid(-(-chunks * V * -(-D // DIRECT_COLS) // wgsl.WG),
                               gpu.max_groups))
        if chunked:
            prog = gpu.program(("scatter-direct-sum",), _direct_sum_src)
            gpu.dispatch(prog, [obuf, ps], [V * D, chunks, ob],
                         wgsl.grid(-(-V * D // wgsl.WG), gpu.max_groups))
        return
    for r0 in range(0, R, piece):
        _scatter_piece(gpu, bufs, out, src, idx, r0, min(piece, R - r0), tag, cl)


def _scatter_piece(gpu, bufs, out, src, idx, r0, R, tag, cl):
    """Add the R index rows from row r0 into out."""
    (obuf, ob), (sbuf, sb), (ibuf, ib) = bufs
    V, D = out.shape
    sb += r0 * src.strides[0]
    ib += r0 * idx.strides[0]
    N = max(1 << M, _pow2(R))
    kv = gpu.scratch_buffer("scatter-keys", 2 * N * 4)
    prog = gpu.program(("scatter-keys",), _keys_src)
    gpu.dispatch(prog, [kv, ibuf], [R, V, N, ib, idx.strides[0], tag],
                 wgsl.grid(-(-N // wgsl.WG), gpu.max_groups))
    groups = wgsl.grid(-(-(N >> M) // wgsl.WG), gpu.max_groups)
    prog = gpu.program(("bitonic", M, True), lambda: _bitonic_src(M, True))
    gpu.dispatch(prog, [kv], [N, 1 << M, 1], groups)     # blocks of 2^M pairs sorted
    k = 2 << M
    while k <= N:                                         # then merges of doubling size
        j = k // 2                                        # stages j = k/2 .. 1, M at a time
        while j >= 1:
            m = min(M, j.bit_length())
            prog = gpu.program(("bitonic", m, False), lambda m=m: _bitonic_src(m, False))
            gpu.dispatch(prog, [kv], [N, k, j >> (m - 1)],
                         wgsl.grid(-(-(N >> m) // wgsl.WG), gpu.max_groups))
            j >>= m
        k *= 2
    nch = -(-R // cl)
    ps = gpu.scratch_buffer("scatter", 2 * nch * D * 4)
    prog = gpu.program(("scatter-runs",), _runs_src)
    gpu.dispatch(prog, [obuf, sbuf, kv, ps],
                 [D, R, N, ob, sb, src.strides[0], src.strides[1], cl, nch],
                 wgsl.grid(-(-nch * D // wgsl.WG), gpu.max_groups))
    if nch > 1:
        prog = gpu.program(("scatter-combine",), _combine_src)
        gpu.dispatch(prog, [obuf, kv, ps], [D, R, ob, cl, nch],
                     wgsl.grid(-(-(nch - 1) * D // wgsl.WG), gpu.max_groups))
