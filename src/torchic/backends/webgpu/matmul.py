"""Batched matmul: register-blocked tiles, generated per (tile, operand layout, edges).

C[b] (M x N) = A[b] (M x K) @ B[b] (K x N); A and B may have any strides
(transposed, sliced, broadcast batch), C is contiguous.

Tiling (one workgroup per BM x BN block of C, T = (BM/TM) * (BN/TN) invocations,
each owning a TM x TN block of accumulators):

* workgroup memory holds one BK slice of A as ``As[m][k/4]`` (vec4 along K) and of
  B as ``Bs[k][n/4]`` (vec4 along N), double-buffered: while the tile in one
  buffer is multiplied, the next slice is loaded from global memory into
  registers and stored into the other buffer; one barrier per slice;
* the inner product is fully unrolled with constant indices: per 4 k values an
  invocation reads TM vec4s of A and 4 * TN/4 vec4s of B and issues TM * TN/4 * 4
  vec4 FMAs into named accumulator variables (no private arrays, so nothing the
  compiler must clamp: see DESIGN.md on WGSL bounds checks);
* an invocation's columns are TN/4 vec4 groups spaced BN/(TN/4) apart and its
  rows TM rows spaced BM/TM apart, so a warp's loads from workgroup memory are
  broadcasts (A) or 256 contiguous bytes (B), and its stores to C coalesce.

Global loads are picked per operand: ``v4`` (16-byte vector loads along the
contiguous dim, when it is unit-stride and everything is 4-aligned) or scalar
with the invocation -> element mapping chosen so neighbouring invocations
read neighbouring addresses (``sk`` / ``sm`` / ``sn``). Edge checks are baked
in only for the dims that need them (M % BM, N % BN, K % BK). The tile is
chosen by problem size: the largest tile that still gives the GPU enough
workgroups.
"""

from ...dispatcher import env_choice
from . import wgsl
from .wgsl import par

# name: (BM, BN, BK, TM, TN)
CONFIGS = {
    "128x128x8": (128, 128, 8, 8, 8),
    "128x128x16": (128, 128, 16, 8, 8),
    "128x64x8": (128, 64, 8, 8, 8),
    "64x128x8": (64, 128, 8, 8, 8),
    "64x64x8": (64, 64, 8, 8, 8),
    "64x128x16": (64, 128, 16, 8, 8),
    "128x64x16": (128, 64, 16, 8, 8),
    "64x64x16": (64, 64, 16, 4, 4),
    "32x32x16": (32, 32, 16, 4, 4),
}
# largest first; a tile is used when it gives at least MIN_GROUPS workgroups (the
# fastest tiles by size: docs/perf/webgpu.md, scripts/gpu_bench.py --tune)
LADDER = ("128x64x16", "64x64x8", "32x32x16")
MIN_GROUPS = 192
# split K when even the smallest tile leaves the GPU this short of workgroups
SPLIT_TARGET_GROUPS = 264
SPLIT_MIN_K = 128           # the least K one split handles
SPLIT_MAX_BYTES = 256 << 20
ENV_TILE = "TORCHIC_WEBGPU_MATMUL_TILE"


def choose_tile(B, M, N, K, smem_limit):
    forced = env_choice(ENV_TILE, None, tuple(CONFIGS))
    if forced:
        return forced
    for name in LADDER:
        bm, bn, bk, _, _ = CONFIGS[name]
        if 2 * (bm * bk + bk * bn) * 4 > smem_limit:
            continue
        if B * (-(-M // bm)) * (-(-N // bn)) >= MIN_GROUPS:
            return name
    return LADDER[-1]


def _build(cfg, amode, bmode, omode, cm, cn, ck):
    BM, BN, BK, TM, TN = cfg
    NX, MY = BN // TN, BM // TM
    T = NX * MY
    BK4, BN4, TG = BK // 4, BN // 4, TN // 4
    LA, LB = BM * BK4 // T, BK * BN4 // T
    assert LA * T == BM * BK4 and LB * T == BK * BN4 and LA >= 1 and LB >= 1
    ASZ, BSZ = BM * BK4, BK * BN4
    bind = [("C", "v4" if omode == "v4" else "f32"),
            ("A", "v4" if amode == "v4" else "f32"),
            ("B", "v4" if bmode == "v4" else "f32")]
    src = wgsl.header(bind)
    src += f"var<workgroup> As: array<vec4<f32>, {2 * ASZ}>;\n"
    src += f"var<workgroup> Bs: array<vec4<f32>, {2 * BSZ}>;\n"
    (M, N, K, abase, asb, asm, ask, bbase, bsb, bsk, bsn, cbase, batch0, S, kc, btot) = (
        par(i) for i in range(16))
    # split-K: z enumerates (batch, split); split sp covers K range [kst, kst + kc)
    kst_a = "kst / 4u" if amode == "v4" else f"kst * {ask}"
    L = [f"let M = {M};", f"let N = {N};",
         f"let zz = wid.z + {batch0};", f"let bz = zz / {S};", f"let sp = zz % {S};",
         f"let kst = sp * {kc};", f"let K = min({K} - kst, {kc});",
         f"let m0 = wid.y * {BM}u;", f"let n0 = wid.x * {BN}u;",
         f"let tx = lid % {NX}u;", f"let ty = lid / {NX}u;",
         f"let abat = {abase} + bz * {asb} + {kst_a};",
         f"let bbat = {bbase} + bz * {bsb} + kst * {bsk};",
         f"let nt = (K + {BK - 1}u) / {BK}u;"]
    # -- per-invocation load coordinates (hoisted) --------------------------------------
    for j in range(LA):
        e = f"(lid + {j * T}u)"
        if amode == "sm":
            L += [f"let am{j} = {e} % {BM}u;", f"let ak{j} = {e} / {BM}u;"]
        else:
            L += [f"let am{j} = {e} / {BK4}u;", f"let ak{j} = {e} % {BK4}u;"]
        L += [f"let ast{j} = am{j} * {BK4}u + ak{j};"]
        if amode == "v4":
            L += [f"let ag{j} = abat + (m0 + am{j}) * {asm} + ak{j};"]
        else:
            L += [f"let ag{j} = abat + (m0 + am{j}) * {asm} + ak{j} * 4u * {ask};"]
        if cm:
            L += [f"let aokm{j} = m0 + am{j} < M;"]
        L += [f"var ra{j} = vec4<f32>(0.0);"]
    for j in range(LB):
        e = f"(lid + {j * T}u)"
        if bmode == "sk":
            L += [f"let bk{j} = {e} % {BK}u;", f"let bn{j} = {e} / {BK}u;"]
        else:
            L += [f"let bk{j} = {e} / {BN4}u;", f"let bn{j} = {e} % {BN4}u;"]
        L += [f"let bst{j} = bk{j} * {BN4}u + bn{j};"]
        if bmode == "v4":
            L += [f"let bg{j} = bbat + bk{j} * {bsk} + n0 / 4u + bn{j};"]
        else:
            L += [f"let bg{j} = bbat + bk{j} * {bsk} + (n0 + bn{j} * 4u) * {bsn};"]
        if cn:
            L += [f"let bnn{j} = n0 + bn{j} * 4u;"]
        L += [f"var rb{j} = vec4<f32>(0.0);"]

    def load(k0):
        out = []
        for j in range(LA):
            conds = []
            if cm:
                conds.append(f"aokm{j}")
            if amode == "v4":
                if ck:
                    conds.append(f"{k0} + ak{j} * 4u < K")
                ld = f"ra{j} = A[ag{j} + {k0} / 4u];"
                if conds:
                    out += [f"ra{j} = vec4<f32>(0.0);",
                            f"if ({' && '.join(conds)}) {{ {ld} }}"]
                else:
                    out.append(ld)
            else:
                base = f"ag{j} + {k0} * {ask}"
                comps = []
                for c in range(4):
                    addr = f"A[{base} + {c}u * {ask}]" if c else f"A[{base}]"
                    cc = list(conds)
                    if ck:
                        cc.append(f"{k0} + ak{j} * 4u + {c}u < K")
                    if cc:
                        comps.append(f"select(0.0, {addr}, {' && '.join(cc)})")
                    else:
                        comps.append(addr)
                if conds or ck:
                    # guarded loads (the select above would still read out of range)
                    out.append(f"ra{j} = vec4<f32>(0.0);")
                    for c in range(4):
                        cc = list(conds)
                        if ck:
                            cc.append(f"{k0} + ak{j} * 4u + {c}u < K")
                        addr = f"A[{base} + {c}u * {ask}]" if c else f"A[{base}]"
                        out.append(f"if ({' && '.join(cc)}) {{ ra{j}.{'xyzw'[c]} = {addr}; }}")
                else:
                    out.append(f"ra{j} = vec4<f32>({', '.join(comps)});")
        for j in range(LB):
            kcond = [f"{k0} + bk{j} < K"] if ck else []
            if bmode == "v4":
                conds = kcond + ([f"bnn{j} < N"] if cn else [])
                ld = f"rb{j} = B[bg{j} + {k0} * {bsk}];"
                if conds:
                    out += [f"rb{j} = vec4<f32>(0.0);",
                            f"if ({' && '.join(conds)}) {{ {ld} }}"]
                else:
                    out.append(ld)
            else:
                base = f"bg{j} + {k0} * {bsk}"
                if kcond or cn:
                    out.append(f"rb{j} = vec4<f32>(0.0);")
                    for c in range(4):
                        cc = kcond + ([f"bnn{j} + {c}u < N"] if cn else [])
                        addr = f"B[{base} + {c}u * {bsn}]" if c else f"B[{base}]"
                        out.append(f"if ({' && '.join(cc)}) {{ rb{j}.{'xyzw'[c]} = {addr}; }}")
                else:
                    comps = [f"B[{base} + {c}u * {bsn}]" if c else f"B[{base}]"
                             for c in range(4)]
                    out.append(f"rb{j} = vec4<f32>({', '.join(comps)});")
        return out

    def store(buf):
        out = []
        for j in range(LA):
            out.append(f"As[{buf} * {ASZ}u + ast{j}] = ra{j};")
        for j in range(LB):
            out.append(f"Bs[{buf} * {BSZ}u + bst{j}] = rb{j};")
        return out

    for i in range(TM):
        for g in range(TG):
            L.append(f"var c{i}_{g} = vec4<f32>(0.0);")
    for i in range(TM):
        L.append(f"let ar{i} = (ty + {i * MY}u) * {BK4}u;")
    for g in range(TG):
        L.append(f"let bc{g} = tx + {g * NX}u;")
    L.append("if (nt > 0u) {")
    L += ["  " + s for s in load("0u") + store("0u")]
    L.append("}")
    L.append("workgroupBarrier();")
    L.append("for (var t = 0u; t < nt; t = t + 1u) {")
    body = ["let cur = t & 1u;", "let more = t + 1u < nt;",
            f"let kn = (t + 1u) * {BK}u;",
            "if (more) {"] + ["  " + s for s in load("kn")] + ["}"]
    body += [f"let ab = cur * {ASZ}u;", f"let bb = cur * {BSZ}u;"]
    for k4 in range(BK4):
        for i in range(TM):
            body.append(f"let a{k4}_{i} = As[ab + ar{i} + {k4}u];")
        for kk in range(4):
            k = k4 * 4 + kk
            for g in range(TG):
                body.append(f"let b{k}_{g} = Bs[bb + {k * BN4}u + bc{g}];")
            comp = "xyzw"[kk]
            for i in range(TM):
                for g in range(TG):
                    body.append(f"c{i}_{g} = fma(vec4<f32>(a{k4}_{i}.{comp}), b{k}_{g}, c{i}_{g});")
    body += ["if (more) {"] + ["  " + s for s in store("(1u - cur)")] + ["}",
                                                                          "workgroupBarrier();"]
    L += ["  " + s for s in body]
    L.append("}")
    # -- write C ---------------------------------------------------------------------------
    L.append(f"let cbat = {cbase} + (sp * {btot} + bz) * M * N{' / 4u' if omode == 'v4' else ''};")
    for i in range(TM):
        L.append(f"let om{i} = m0 + ty + {i * MY}u;")
        for g in range(TG):
            L.append(f"let on{i}_{g} = n0 + tx * 4u + {g * NX * 4}u;")
            acc = f"c{i}_{g}"
            if omode == "v4":
                conds = ([f"om{i} < M"] if cm else []) + ([f"on{i}_{g} < N"] if cn else [])
                st = f"C[cbat + om{i} * (N / 4u) + on{i}_{g} / 4u] = {acc};"
                L.append(f"if ({' && '.join(conds)}) {{ {st} }}" if conds else st)
            else:
                for c in range(4):
                    conds = ([f"om{i} < M"] if cm else []) + [f"on{i}_{g} + {c}u < N"]
                    L.append(f"if ({' && '.join(conds)}) {{ C[cbat + om{i} * N + on{i}_{g} + {c}u]"
                             f" = {acc}.{'xyzw'[c]}; }}")
    src += wgsl.entry(T) + "  " + "\n  ".join(L) + "\n}\n"
    return src, 3


def run(gpu, out, ins, *, buffers, tile=None):
    a, b = ins
    B, M, K = a.shape
    N = b.shape[2]
    if B == 0 or M == 0 or N == 0:
        return
    if K == 0:
        return "zero"
    name = tile or choose_tile(B, M, N, K, gpu.max_workgroup_storage)
    cfg = CONFIGS[name]
    BM, BN, BK = cfg[:3]
    cbuf, cb = buffers(out)
    abuf, ab = buffers(a)
    bbuf, bb = buffers(b)
    asb, asm, ask = a.strides
    bsb, bsk, bsn = b.strides
    if ask == 1 and K % 4 == 0 and ab % 4 == 0 and asm % 4 == 0 and asb % 4 == 0:
        amode, aw = "v4", [ab // 4, asb // 4, asm // 4, 1]
    else:
        amode = "sm" if (asm < ask or K == 1) and M > 1 else "sk"
        aw = [ab, asb, asm, ask]
    if bsn == 1 and N % 4 == 0 and bb % 4 == 0 and bsk % 4 == 0 and bsb % 4 == 0:
        bmode, bw = "v4", [bb // 4, bsb // 4, bsk // 4, 1]
    else:
        bmode = "sk" if (bsk < bsn or N == 1) and K > 1 else "sn"
        bw = [bb, bsb, bsk, bsn]
    omode = "v4" if N % 4 == 0 and cb % 4 == 0 else "s"
    cm, cn, ck = M % BM != 0, N % BN != 0, K % BK != 0
    key = ("matmul", name, amode, bmode, omode, cm, cn, ck)
    prog = gpu.program(key, lambda: _build(cfg, amode, bmode, omode, cm, cn, ck))
    gx, gy = -(-N // BN), -(-M // BM)
    if gx > gpu.max_groups or gy > gpu.max_groups:
        raise NotImplementedError(f"matmul of {M}x{N} exceeds the dispatch grid")
    S, kc = split_k(B * gx * gy, B * M * N, K, BK)
    if S == 1:
        _dispatch(gpu, prog, [cbuf, abuf, bbuf], [M, N, K] + aw + bw,
                  cb // 4 if omode == "v4" else cb, B, 1, kc, (gx, gy))
        return None
    # split-K: partial products into scratch [S][B][M][N], then a fixed-order sum
    scratch = gpu.scratch_buffer("matmul-split", S * B * M * N * 4)
    _dispatch(gpu, prog, [scratch, abuf, bbuf], [M, N, K] + aw + bw, 0, B, S, kc, (gx, gy))
    sprog = gpu.program(("matmul-splitsum",), _splitsum_src)
    n = B * M * N
    gpu.dispatch(sprog, [cbuf, scratch], [n, S, cb], wgsl.grid(-(-n // wgsl.WG), gpu.max_groups))
    return None


def split_k(groups, outsize, K, BK):
    """(splits, K per split) for a matmul that gives `groups` workgroups unsplit."""
    if groups >= SPLIT_TARGET_GROUPS or K < 2 * SPLIT_MIN_K:
        return 1, K
    S = min(-(-SPLIT_TARGET_GROUPS // groups), K // SPLIT_MIN_K, 64,
            max(1, SPLIT_MAX_BYTES // (outsize * 4)))
    if S <= 1:
        return 1, K
    kc = -(-K // S)
    kc = -(-kc // BK) * BK
    return -(-K // kc), kc


def _dispatch(gpu, prog, bufs, words, cword, B, S, kc, grid2):
    total = B * S
    for z0 in range(0, total, gpu.max_groups):
        nz = min(gpu.max_groups, total - z0)
        gpu.dispatch(prog, bufs, words + [cword, z0, S, kc, B], grid2 + (nz,))


def _splitsum_src():
    bind = [("O", "f32"), ("PS", "f32")]
    n, S, ob = par(0), par(1), par(2)
    L = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", "var acc = PS[i];",
         f"for (var s = 1u; s < {S}; s = s + 1u) {{ acc = acc + PS[s * {n} + i]; }}",
         f"O[{ob} + i] = acc;"]
    return wgsl.linear_program(bind, L)
