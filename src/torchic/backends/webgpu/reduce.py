"""Reduce family: sum / max / min over trailing axes, argmax over the last axis.

The input is split into ``R`` kept rows (the leading dims) and ``C`` reduced
elements per row (the trailing ``naxes`` dims); each part is collapsed and
decomposed separately, so any strides work. Three layouts:

* ``t``: one invocation per row (short rows, many of them);
* ``w``: one 256-invocation workgroup per row, strided loop + tree in workgroup memory;
* ``r``: many contiguous rows of moderate length (softmax's backward over (B*H*T, T)):
  ``RPW`` rows per workgroup, 32 invocations per row (coalesced 128-byte loads), a 5-step
  tree; a workgroup per row left 224 of its 256 invocations idle on 256-element rows;
* ``columns``: the kept rows lie next to each other in memory and the reduced elements
  do not (a bias gradient: ``(B*T, C)`` summed over axis 0 is ``C`` rows of ``B*T`` elements
  ``C`` apart): a workgroup takes ``COLS`` neighbouring rows, its ``LANES`` invocations per
  row walk one chunk of the reduced elements, so every load is coalesced; the row is cut
  into ``S`` chunks so that there are enough workgroups, and a second pass of the same
  kernel adds the ``S`` partials. A row per workgroup (``w``) read such rows 4 bytes at a
  time ``C`` apart: 29% of a GPT step's GPU time on the H200.
* split: few very long rows (e.g. a full sum of 64M floats), or rows too long
  for one workgroup's loop budget (``wgsl.LOOP_BUDGET``): pass 1 reduces
  ``S`` chunks per row into a scratch buffer, pass 2 reduces those ``R x S``
  partials with ``w`` (argmax carries (value, row index) pairs: values, then
  indices, in one scratch buffer). Deterministic: no atomics, a fixed order.

max / min propagate NaN as NumPy does; argmax returns the first index of the
maximum (a NaN counts as the maximum).

dtypes: f32 words (float32) or i32 words (int32, int64: exact, a sum wraps around, as on
the CPUs). An int64 sum checks every addition for 32-bit overflow (casts.py, the int64
rule: its tag is the last parameter word, ``TAG_WORD``); argmax of ints compares ints.
"""

from . import casts, wgsl
from .elementwise import collapse, overflow_tag
from .wgsl import PARAM_WORDS, par

TAG_WORD = PARAM_WORDS - 1    # an int64 sum's overflow tag

WGR = 256
THREAD_ROW_MAX_C = 32
SPLIT_MIN_C = 1 << 16
RPW, ROW_LANES = 8, 32        # r layout: rows per workgroup, invocations per row
R_LAYOUT_MIN_ROWS = 1024      # ... used from this many rows (fewer: a workgroup per row)
R_LAYOUT_MAX_C = 4096         # ... and up to this row length
COLS, LANES = 64, 4           # columns layout: rows per workgroup, invocations per row
COLUMN_GROUPS = 1024          # aim: workgroups of a columns pass (chunks cut to reach it)
COLUMN_MIN_CHUNK = 64         # ... but no chunk under this many elements
UNROLL = 4                    # elements a w / columns invocation loads per trip of its loop

COMBINE = {
    "sum": ("0.0", "{a} + {b}"),
    "max": ("-f32_inf()", "nanmax({a}, {b})"),
    "min": ("f32_inf()", "nanmin({a}, {b})"),
}
# int32 input (int32 out): exact; a sum wraps around (WGSL's i32 addition), as on the CPUs
COMBINE_I32 = {
    "sum": ("0i", "{a} + {b}"),
    "max": ("(-2147483647i - 1i)", "max({a}, {b})"),
    "min": ("2147483647i", "min({a}, {b})"),
}
# an int64 sum: every addition checked (the flag under the tag in TAG_WORD)
COMBINE_I64 = {**COMBINE_I32, "sum": ("0i", f"ck_add({{a}}, {{b}}, {par(TAG_WORD)})")}
EMPTY = {"f32": {"sum": 0.0, "max": float("-inf"), "min": float("inf")},
         "i32": {"sum": 0, "max": -2 ** 31, "min": 2 ** 31 - 1}}

ARG_BETTER = """
fn better(v1: f32, i1: u32, v2: f32, i2: u32) -> bool {
  if (i2 == 0xffffffffu) { return false; }
  if (i1 == 0xffffffffu) { return true; }
  let n1 = isnan1(v1);
  let n2 = isnan1(v2);
  if (n1 || n2) { return n2 && (!n1 || i2 < i1); }
  return v2 > v1 || (v2 == v1 && i2 < i1);
}
"""
ARG_BETTER_I32 = """
fn better(v1: i32, i1: u32, v2: i32, i2: u32) -> bool {
  if (i2 == 0xffffffffu) { return false; }
  if (i1 == 0xffffffffu) { return true; }
  return v2 > v1 || (v2 == v1 && i2 < i1);
}
"""
ARG_LOWEST = {"f32": "-f32_inf()", "i32": "(-2147483647i - 1i)"}


def _combines(dtype, checked):
    return COMBINE_I64 if checked else COMBINE_I32 if dtype == "i32" else COMBINE


def _index_code(prefix, var, dims, k):
    """Statements turning `var` into an element offset `{prefix}off` over dims collapsed dims.

    Parameter words from k: shape[0..dims), strides[0..dims). Returns (code, next k).
    """
    shape = [par(k + d) for d in range(dims)]
    strides = [par(k + dims + d) for d in range(dims)]
    lines = [f"var {prefix}r = {var};"]
    terms = []
    for d in range(dims - 1, 0, -1):
        lines.append(f"let {prefix}c{d} = {prefix}r % {shape[d]}; {prefix}r = {prefix}r / {shape[d]};")
        terms.append(f"{prefix}c{d} * {strides[d]}")
    terms.append(f"{prefix}r * {strides[0]}")
    lines.append(f"let {prefix}off = {' + '.join(terms)};")
    return lines, k + 2 * dims


def _unrolled_loop(comb, dtype, ident, idims, k, abase, first, step, end):
    """Lines that set `acc` (declared before) to the combination of A[abase + ooff + ioff(c)]
    for c = first, first + step, ... < end, the index code of c from parameter word k on.
    A trip of the loop takes UNROLL elements into as many accumulators, so that many loads
    are in flight at once (one load per trip waited on the memory's latency: the columns
    layout ran at a third of the copy bandwidth); they combine in a fixed order."""
    def add(u, c):      # acc{u} takes element c (its index code, then the load)
        icode, _ = _index_code(f"i{u}", c, idims, k)
        return icode + [f"acc{u} = {comb.format(a=f'acc{u}', b=f'A[{abase} + ooff + i{u}off]')};"]
    total = "acc0"
    for u in range(1, UNROLL):
        total = comb.format(a=total, b=f"acc{u}")
    return [f"var acc{u}: {dtype} = {ident};" for u in range(UNROLL)] + \
        [f"var c = {first};", f"for (; c + {(UNROLL - 1)}u * {step} < {end}; "
                               f"c = c + {UNROLL}u * {step}) {{"] + \
        [line for u in range(UNROLL) for line in add(u, f"c + {u}u * {step}")] + \
        ["}", f"for (; c < {end}; c = c + {step}) {{"] + add(0, "c") + ["}", f"acc = {total};"]


def _build(mode, layout, od, idims, split, partial=False, dtype="f32", checked=False):
    """mode: sum/max/min/argmax; layout 't' or 'w'; od/idims: collapsed outer/inner dims;
    dtype: the input's (and, but for argmax, out's) storage type; checked: an int64 sum.

    argmax only: ``split`` (pass 1) writes each chunk's best value to O and its index to OI;
    ``partial`` (pass 2) reads the candidates' indices from AI instead of using positions.
    """
    arg = mode == "argmax"
    bind = [("O", "i32" if arg else dtype), ("A", dtype)]
    combine = _combines(dtype, checked)
    if arg and split:
        bind = [("O", dtype), ("A", dtype), ("OI", "i32")]
    elif arg and partial:
        bind.append(("AI", "i32"))
    src = wgsl.header(bind) + wgsl.FLOAT_FNS + (
        (ARG_BETTER_I32 if dtype == "i32" else ARG_BETTER) if arg else "") + (
        casts.prelude("ck_") if checked else "")
    k = 4
    ocode, k = _index_code("o", "row", od, k)
    k_in = k     # (the reduced dims' words)
    icode, k = _index_code("i", "c", idims, k)
    chunk = par(k) if split else None
    R, C, obase, abase = par(0), par(1), par(2), par(3)
    if arg:
        ci = f"u32(AI[{par(k)} + ooff + ioff])" if partial else "c"
        init = [f"var best = {ARG_LOWEST[dtype]};", "var bi = 0xffffffffu;"]
        step = [f"let ci = {ci};", "if (better(best, bi, x, ci)) { best = x; bi = ci; }"]
    else:
        ident, comb = combine[mode]
        init = [f"var acc: {dtype} = {ident};"]
        step = [f"acc = {comb.format(a='acc', b='x')};"]
    lines = []
    if layout == "r":
        src += f"var<workgroup> sv: array<{dtype}, {WGR}>;\n"
        ident, comb = combine[mode]
        lines += ["let g = wid.y * nwg.x + wid.x;", f"let row = g * {RPW}u + lid / {ROW_LANES}u;",
                  f"let lane = lid % {ROW_LANES}u;"] + init + [f"if (row < {R}) {{"] + ocode + \
                 [f"for (var c = lane; c < {C}; c = c + {ROW_LANES}u) {{"] + icode + \
                 [f"let x = A[{abase} + ooff + ioff];"] + step + ["}", "}",
                                                                 "sv[lid] = acc;", "workgroupBarrier();"]
        s_ = ROW_LANES // 2
        while s_:
            lines += [f"if (lane < {s_}u) {{ sv[lid] = {comb.format(a='sv[lid]', b=f'sv[lid + {s_}u]')}; }}",
                      "workgroupBarrier();"]
            s_ //= 2
        lines.append(f"if (lane == 0u && row < {R}) {{ O[{obase} + row] = sv[lid]; }}")
        src += wgsl.entry(WGR) + "  " + "\n  ".join(lines) + "\n}\n"
        return src, len(bind)
    if layout == "t":
        wg = wgsl.WG
        lines += [wgsl.linear_id(wg), "let row = i;", f"if (row >= {R}) {{ return; }}"]
        lines += ocode + init
        lines += [f"for (var c = 0u; c < {C}; c = c + 1u) {{"] + icode + \
                 [f"let x = A[{abase} + ooff + ioff];"] + step + ["}"]
        if arg:
            lines.append(f"O[{obase} + row] = i32(select(bi, 0u, bi == 0xffffffffu));")
        else:
            lines.append(f"O[{obase} + row] = acc;")
    else:
        wg = WGR
        if arg:
            src += f"var<workgroup> sv: array<{dtype}, {wg}>;\nvar<workgroup> si: array<u32, {wg}>;\n"
        else:
            src += f"var<workgroup> sv: array<{dtype}, {wg}>;\n"
        lines += ["let g = wid.y * nwg.x + wid.x;"]
        if split:
            lines += [f"let S = {par(k + 1)};", "let row = g / S;", "let part = g % S;",
                      f"if (row >= {R}) {{ return; }}",
                      f"let c0 = part * {chunk};", f"let c1 = min({C}, c0 + {chunk});"]
        else:
            lines += ["let row = g;", f"if (row >= {R}) {{ return; }}", "let c0 = 0u;",
                      f"let c1 = {C};"]
        lines += ocode + init
        if arg:
            lines += [f"for (var c = c0 + lid; c < c1; c = c + {wg}u) {{"] + icode + \
                     [f"let x = A[{abase} + ooff + ioff];"] + step + ["}"]
            lines += ["sv[lid] = best;", "si[lid] = bi;", "workgroupBarrier();",
                      f"for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{",
                      "  if (lid < s && better(sv[lid], si[lid], sv[lid + s], si[lid + s])) {",
                      "    sv[lid] = sv[lid + s]; si[lid] = si[lid + s];", "  }",
                      "  workgroupBarrier();", "}"]
            if split:   # the chunk's candidate: value, and its index at word k + 2's base
                lines += [f"if (lid == 0u) {{ O[row * S + part] = sv[0]; "
                          f"OI[{par(k + 2)} + row * S + part] = bitcast<i32>(si[0]); }}"]
            else:
                lines += [f"if (lid == 0u) {{ O[{obase} + row] = "
                          f"i32(select(si[0], 0u, si[0] == 0xffffffffu)); }}"]
        else:
            lines += _unrolled_loop(comb, dtype, ident, idims, k_in, abase, "c0 + lid",
                                    f"{wg}u", "c1")
            tree = comb.format(a="sv[lid]", b="sv[lid + s]")
            out_at = f"{obase} + row * S + part" if split else f"{obase} + row"
            lines += ["sv[lid] = acc;", "workgroupBarrier();",
                      f"for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{",
                      f"  if (lid < s) {{ sv[lid] = {tree}; }}",
                      "  workgroupBarrier();", "}",
                      f"if (lid == 0u) {{ O[{out_at}] = sv[0]; }}"]
    src += wgsl.entry(wg) + "  " + "\n  ".join(lines) + "\n}\n"
    return src, len(bind)


def _build_columns(mode, od, idims, dtype, checked=False):
    """The columns layout (module docstring): workgroup g takes rows (g / S) * COLS + [0,
    COLS) and chunk g % S of their reduced elements; writes O[obase + chunk * R + row]."""
    ident, comb = _combines(dtype, checked)[mode]
    src = wgsl.header([("O", dtype), ("A", dtype)]) + wgsl.FLOAT_FNS + (
        casts.prelude("ck_") if checked else "")
    src += f"var<workgroup> sv: array<{dtype}, {WGR}>;\n"
    R, C, obase, abase = par(0), par(1), par(2), par(3)
    ocode, k = _index_code("o", "row", od, 4)
    chunk, S = par(k + 2 * idims), par(k + 2 * idims + 1)
    total = "sv[lid]"
    for lane in range(1, LANES):
        total = comb.format(a=total, b=f"sv[lid + {lane * COLS}u]")
    lines = ["let g = wid.y * nwg.x + wid.x;", f"let part = g % {S};",
             f"let row = (g / {S}) * {COLS}u + lid % {COLS}u;", f"let lane = lid / {COLS}u;",
             f"let c0 = part * {chunk};", f"let c1 = min({C}, c0 + {chunk});",
             f"var acc: {dtype} = {ident};", f"if (row < {R}) {{"] + ocode + \
        _unrolled_loop(comb, dtype, ident, idims, k, abase, "c0 + lane", f"{LANES}u", "c1") + \
        ["}", "sv[lid] = acc;", "workgroupBarrier();",
         f"if (lane == 0u && row < {R}) {{ O[{obase} + part * {R} + row] = {total}; }}"]
    return src + wgsl.entry(WGR) + "  " + "\n  ".join(lines) + "\n}\n", 2


def _columns(gpu, mode, out, a, R, C, od, idims, geom, buffers, dt, tag):
    """Encode the columns layout: one pass when a chunk is the whole row, else a pass of
    S chunks per row into scratch (chunk-major: R partials per chunk) and a pass over them.
    (dt: the storage type; tag: an int64 sum's overflow tag, else None.)"""
    checked = tag is not None
    dispatch = _dispatcher(gpu, tag)
    col_groups = -(-R // COLS)
    S = max(1, min(-(-C // COLUMN_MIN_CHUNK), -(-COLUMN_GROUPS // col_groups)))
    S = max(S, -(-C // (LANES * (wgsl.LOOP_BUDGET - 16))))     # lavapipe's loop budget
    chunk = -(-C // S)
    S = -(-C // chunk)
    obuf, obase = buffers(out)
    abuf, abase = buffers(a)
    key = ("reduce", mode, "columns", od, idims, dt, checked)
    prog = gpu.program(key, lambda: _build_columns(mode, od, idims, dt, checked))
    if S == 1:
        dispatch(prog, [obuf, abuf], [R, C, obase, abase] + geom + [C, 1],
                 wgsl.grid(col_groups, gpu.max_groups))
        return
    scratch = gpu.scratch_buffer("reduce", R * S * 4)
    dispatch(prog, [scratch, abuf], [R, C, 0, abase] + geom + [chunk, S],
             wgsl.grid(col_groups * S, gpu.max_groups))
    key = ("reduce", mode, "columns", 1, 1, dt, checked)
    prog = gpu.program(key, lambda: _build_columns(mode, 1, 1, dt, checked))
    dispatch(prog, [obuf, scratch], [R, S, obase, 0, R, 1, S, R, S, 1],
             wgsl.grid(col_groups, gpu.max_groups))


def _dispatcher(gpu, tag):
    """gpu.dispatch, or (an int64 sum) one that puts the overflow tag in TAG_WORD."""
    if tag is None:
        return gpu.dispatch

    def dispatch(prog, bufs, words, groups):
        gpu.dispatch(prog, bufs, words + [0] * (TAG_WORD - len(words)) + [tag], groups)
    return dispatch


def _split_dims(view, naxes):
    nd = len(view.shape)
    outer, inner = view.shape[:nd - naxes], view.shape[nd - naxes:]
    os_, is_ = view.strides[:nd - naxes], view.strides[nd - naxes:]
    R = 1
    for s in outer:
        R *= s
    C = 1
    for s in inner:
        C *= s
    oshape, (ostr,) = collapse(outer, [os_])
    ishape, (istr,) = collapse(inner, [is_])
    return R, C, oshape, ostr, ishape, istr


def _reduce_copy(gpu, mode, out, a, naxes, buffers, fill):
    from . import elementwise
    from .gpu import RawView
    n = 1
    for s in a.shape:
        n *= s
    v = RawView(gpu.scratch_buffer("reduce-in", n * 4), 0, a.shape, a.dtype)
    elementwise.run(gpu, "copy", "a", v, (a,), buffers=buffers)
    run(gpu, mode, out, v, naxes, buffers=buffers, fill=fill)


def run(gpu, mode, out, a, naxes, *, buffers, fill):
    """Encode a reduction of a's trailing naxes dims into out (contiguous)."""
    R, C, oshape, ostr, ishape, istr = _split_dims(a, naxes)
    if R == 0:
        return
    dt = wgsl.storage(a.dtype)
    if C == 0:
        fill(out, EMPTY[dt][mode])
        return
    if max(len(oshape), len(ishape)) > 6:   # rare: materialize a contiguous copy first
        return _reduce_copy(gpu, mode, out, a, naxes, buffers, fill)
    obuf, obase = buffers(out)
    abuf, abase = buffers(a)
    geom = list(oshape) + list(ostr) + list(ishape) + list(istr)
    od, idims = len(oshape), len(ishape)
    checked = mode == "sum" and "i64" in (a.dtype, out.dtype)
    tag = overflow_tag(gpu, "sum") if checked else None
    dispatch = _dispatcher(gpu, tag)
    if (R > 1 and C > THREAD_ROW_MAX_C and mode != "argmax" and ostr[-1] == 1
            and istr[-1] != 1):
        return _columns(gpu, mode, out, a, R, C, od, idims, geom, buffers, dt, tag)
    # one workgroup per row loops C / WGR times plus its 8-step tree: past the budget, split
    too_long = -(-C // WGR) + 16 > wgsl.LOOP_BUDGET
    if C > THREAD_ROW_MAX_C and (too_long or (C >= SPLIT_MIN_C and R < 256)):
        S = max(2, min(1024 // R, C // 4096), -(-C // (WGR * (wgsl.LOOP_BUDGET - 16))))
        chunk = -(-C // S)
        S = -(-C // chunk)
        arg = mode == "argmax"
        scratch = gpu.scratch_buffer("reduce", R * S * (8 if arg else 4))
        key = ("reduce", mode, "w", od, idims, True, dt, checked)
        prog = gpu.program(key, lambda: _build(mode, "w", od, idims, True, dtype=dt,
                                               checked=checked))
        dispatch(prog, [scratch, abuf] + ([scratch] if arg else []),
                 [R, C, 0, abase] + geom + [chunk, S] + ([R * S] if arg else []),
                 wgsl.grid(R * S, gpu.max_groups))
        # pass 2: R rows of S partials, contiguous (argmax: their indices follow at R * S)
        key = ("reduce", mode, "w", 1, 1, False, arg, dt, checked)
        prog = gpu.program(key, lambda: _build(mode, "w", 1, 1, False, partial=arg,
                                               dtype=dt, checked=checked))
        dispatch(prog, [obuf, scratch] + ([scratch] if arg else []),
                 [R, S, obase, 0, R, S, S, 1] + ([R * S] if arg else []),
                 wgsl.grid(R, gpu.max_groups))
        return
    layout = "t" if C <= THREAD_ROW_MAX_C else "w"
    if (layout == "w" and mode != "argmax" and R >= R_LAYOUT_MIN_ROWS and C <= R_LAYOUT_MAX_C
            and istr[-1] == 1):
        layout = "r"
    key = ("reduce", mode, layout, od, idims, False, dt, checked)
    prog = gpu.program(key, lambda: _build(mode, layout, od, idims, False, dtype=dt,
                                           checked=checked))
    groups = {"t": -(-R // wgsl.WG), "r": -(-R // RPW)}.get(layout, R)
    dispatch(prog, [obuf, abuf], [R, C, obase, abase] + geom,
             wgsl.grid(groups, gpu.max_groups))
