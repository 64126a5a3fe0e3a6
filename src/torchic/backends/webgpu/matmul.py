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
  vec4 FMAs into named accumulator variables (no private arrays: nothing indexed
  dynamically but workgroup memory);
* an invocation's columns are TN/4 vec4 groups spaced BN/(TN/4) apart and its
  rows TM rows spaced BM/TM apart, so a warp's loads from workgroup memory are
  broadcasts (A) or 256 contiguous bytes (B), and its stores to C coalesce.
* km tiles (a name with "-km") store A's slice transposed, ``As[k][m/4]``, and give an
  invocation TM/4 groups of 4 contiguous rows (groups 4 * BM/TM apart): per k it reads
  TM/4 vec4 of A and TN/4 of B. There an A^T operand (``t4``) is stored as loaded and a
  row-major A (``v4``) goes through the 4x4 register transpose. "-p" km tiles also
  move the slice's store and barrier before the last k, whose operands are already in
  registers, and read the next slice's first operands right after the barrier.
* "-sb" tiles keep a single slice buffer: the next slice is stored after a barrier that
  ends this slice's reads (two barriers per slice, half the workgroup memory). Workgroup
  memory, not registers, is what bounds the H200's occupancy for the 24 KiB tiles (2
  workgroups an SM; 12 KiB: 3), measured by counting the workgroups resident at once.

Global loads are picked per operand: ``v4`` (16-byte vector loads along the dim the
tile stores contiguously: K for A, N for B), ``t4`` (vector loads along the other dim:
M for A^T, K for B^T, the layouts autograd's backward and ``q @ k^T`` give; a 4x4
block per invocation, transposed in registers before the workgroup store), or scalar
with the invocation -> element mapping chosen so neighbouring invocations read
neighbouring addresses (``sk`` / ``sm`` / ``sn``). Vector modes need the vector's dim
unit-stride and every other stride, the offset and the vector's extent 4-aligned.
A B^T against many rows of A (a Linear weight) is instead copied row-major first
(``_row_major``, RELAYOUT_MIN): the copy is cheap beside the product and v4 runs faster.
Likewise a row-major A against many columns of B is copied transposed when the tile the
table gives the copied layout is a km tile (RELAYOUT_A_MIN).
Edge checks are baked in only for the dims that need them (M % BM, N % BN, K % BK).
The programs are compiled without wgpu's runtime bounds checks (``_program``).

The tile: the adapter's row of the tuner table (matmul_table.py, keyed by
``table_key``: the shape class and the operands' load modes, then ``shape_class`` alone),
else the general ladder: the largest tile that still gives the GPU enough workgroups.
"""

import os

from ...dispatcher import View, env_choice
from . import epilogue, matmul_table, wgsl
from .gpu import Program, _env_count
from .wgsl import par

XYZW = "xyzw"

# name: (BM, BN, BK, TM, TN); a name without "-TMxTN" has 8x8 (or, at 64x64x16 and
# 32x32x16, 4x4) accumulators per invocation
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
    "128x128x8-8x16": (128, 128, 8, 8, 16),
    "128x128x16-8x16": (128, 128, 16, 8, 16),
    "64x64x16-8x8": (64, 64, 16, 8, 8),
    "64x32x16-4x4": (64, 32, 16, 4, 4),
    # "-km": A's slice stored transposed in workgroup memory (As[k][m/4], see _build)
    "128x128x8-km": (128, 128, 8, 8, 8),
    "64x128x16-km": (64, 128, 16, 8, 8),
    "128x64x16-km": (128, 64, 16, 8, 8),
    "64x64x16-8x8-km": (64, 64, 16, 8, 8),
    # "-p": pipelined across the slice's barrier (_build)
    "128x64x16-km-p": (128, 64, 16, 8, 8),
    "64x128x16-km-p": (64, 128, 16, 8, 8),
    "128x128x8-km-p": (128, 128, 8, 8, 8),
    "64x64x16-8x8-km-p": (64, 64, 16, 8, 8),
    # "-sb": one slice buffer in workgroup memory instead of two (_build)
    "64x64x16-8x8-km-p-sb": (64, 64, 16, 8, 8),
    "128x64x16-km-p-sb": (128, 64, 16, 8, 8),
    "64x128x16-sb": (64, 128, 16, 8, 8),
}
# The general path: largest first, a tile is used when it gives at least MIN_GROUPS
# workgroups. An adapter the tuner measured picks from its table first (matmul_table.py).
LADDER = ("128x64x16", "64x64x8", "32x32x16")
MIN_GROUPS = 192
# split K when even the smallest tile leaves the GPU this short of workgroups (528: 4 per
# SM of an H200; against 264 the long-K backward product x^T @ dy of a GPT step went from
# 23.5 to 27.2 TFLOPS, no measured shape got slower: scripts/gpu_bench.py --tune)
SPLIT_TARGET_GROUPS = 528
ENV_SPLIT = "TORCHIC_WEBGPU_MATMUL_SPLIT_GROUPS"   # benchmarks: another SPLIT_TARGET_GROUPS
SPLIT_MIN_K = 128           # the least K one split handles
ENV_SPLIT_ROUND = "TORCHIC_WEBGPU_MATMUL_SPLIT_ROUND"   # benchmarks: "floor" / "ceil"
SPLIT_MAX_BYTES = 256 << 20
ENV_TILE = "TORCHIC_WEBGPU_MATMUL_TILE"
# "1": compile the matmul with wgpu's bounds checks (the default drops them: 5-9% faster on
# the H200, scripts/gpu_bench.py --tune's "auto checked" against "auto")
ENV_CHECKS = "TORCHIC_WEBGPU_MATMUL_CHECKS"
# A B operand the tile would load transposed (``t4``: B^T, as x @ W^T and dy @ W^T give with
# a Linear weight W) is first copied into a row-major scratch by a tiled transpose when the
# product makes at least RELAYOUT_MIN multiply-adds per copied element (M, the other
# side's length, times the batch when B is broadcast over it: a weight against a batch of
# rows), and then loaded with v4. H200, in one
# run: dy @ W^T (16384, 1536) @ (1536, 384)^T 33.0 -> 39.9 TFLOPS (0.79 -> 0.95 of cuBLAS),
# the GPT step's v4 t4 products 9.4 -> 8.1 ms. Measured and left out: the same for A^T
# (the weight gradients x^T @ dy: their products 13.6 -> 11.2 ms, but the copies of the
# activations took more than the gain) and for q @ k^T (M 256: 26.6 -> 23.3 TFLOPS with
# the copy). "0" turns it off (benchmarks).
RELAYOUT_MIN = 1024
ENV_RELAYOUT = "TORCHIC_WEBGPU_MATMUL_RELAYOUT"
RELAYOUT_TILE = 32
# H200, in one run: 4096^3 41.3 -> 45.4 TFLOPS (128x64x16-km-p after the copy), 2048^3
# 38.7 -> 41.0, (16384, 384) @ (384, 1536) 39.8 -> 41.9; at N = 384 the copy of A (100 MB
# for (16384, 1536)) would cost what the km tile gains, at 1024^3 27.5 against 30.3
ENV_RELAYOUT_A = "TORCHIC_WEBGPU_MATMUL_RELAYOUT_A"
RELAYOUT_A_MIN = 1024


def a_km(name):
    """How tile `name` stores A's slice: None (As[m][k/4]), else transposed (As[k][m/4]),
    with A unit-stride along K loaded as 4x4 blocks transposed in registers ("b")."""
    return "b" if "-km" in name else None


def smem_bytes(name):
    bm, bn, bk, _, _ = CONFIGS[name]
    return (1 if single_buffer(name) else 2) * (bm * bk + bk * bn) * 4


def single_buffer(name):
    """Whether tile `name` keeps one slice of A and B in workgroup memory ("-sb"), not two."""
    return name.endswith("-sb")


def shape_class(B, M, N, K):
    """The tuner's key for a problem: log2 buckets of the output size B*M*N and of K,
    and whether one side of the output is thin (< 64)."""
    ob = min(max((B * M * N - 1).bit_length(), 12), 26)
    kb = min(max((K - 1).bit_length(), 4), 14)
    return f"o{ob}k{kb}{'t' if min(M, N) < 64 else ''}"


def adapter_key(info):
    """The tuner table's key for an adapter: its name, lower case ("nvidia h200")."""
    return " ".join(str(info.get("device", "") or info.get("description", "")).lower().split())


def tuned_table(gpu):
    """{shape class: tile} measured on gpu's adapter, or {} (cached on the GPU object)."""
    table = getattr(gpu, "matmul_table", None)
    if table is None:
        key = adapter_key(gpu.adapter.info)
        table = gpu.matmul_table = next(
            (t for name, t in matmul_table.TABLE.items() if name in key), {})
    return table


def table_key(B, M, N, K, modes):
    """The tuner's key for a problem with operand load modes `modes` (amode + bmode, such as
    "t4v4"): its shape class, "/", the modes. The table is looked up by this key first,
    then by the shape class alone (p @ v and p^T @ dy share a class and want other tiles)."""
    return f"{shape_class(B, M, N, K)}/{modes}"


def choose_tile(B, M, N, K, smem_limit, table=None, modes=None):
    forced = env_choice(ENV_TILE, None, tuple(CONFIGS))
    if forced:
        return forced
    table = table or {}
    for key in ((table_key(B, M, N, K, modes),) if modes else ()) + (shape_class(B, M, N, K),):
        hit = table.get(key)
        if hit in CONFIGS and smem_bytes(hit) <= smem_limit:
            return hit
    for name in LADDER:
        bm, bn, _, _, _ = CONFIGS[name]
        if smem_bytes(name) > smem_limit:
            continue
        if B * (-(-M // bm)) * (-(-N // bn)) >= MIN_GROUPS:
            return name
    return LADDER[-1]


def _program(gpu, key, build):
    """gpu.program, compiled without wgpu's runtime checks where wgpu-native offers that.

    WGSL's bounds checks clamp every dynamic index (each workgroup-memory read of the
    inner product gets an extra min), and loop bounding adds a counter to each loop.
    Every index this generator emits is in range by construction: global loads are
    guarded by the M / N / K edge tests, workgroup indices are bounded by the tile.
    The views the frontend passes lie inside their blocks (ops.py's contract), so those
    guards keep every access inside the bound buffers. Checked with
    TORCHIC_WEBGPU_MATMUL_CHECKS=1 (the unchecked compile measured 5-9% faster on the
    H200: scripts/gpu_bench.py --tune times both)."""
    lib = gpu._lib
    if os.environ.get(ENV_CHECKS, "0") == "1" or \
            not hasattr(lib, "wgpuDeviceCreateShaderModuleTrusted"):
        return gpu.program(key + ("checked",), build)
    prog = gpu.pipelines.get(key)
    if prog is not None:
        return prog
    from wgpu.backends.wgpu_native import _api
    code, nbind = build()
    with gpu.guard:
        ffi = gpu._ffi
        srcs = _api.new_struct_p("WGPUShaderSourceWGSL *", code=_api.to_c_string_view(code))
        srcs[0].chain.next = ffi.NULL
        srcs[0].chain.sType = lib.WGPUSType_ShaderSourceWGSL
        label = str(key)[:200]
        desc = _api.new_struct_p("WGPUShaderModuleDescriptor *",
                                 nextInChain=ffi.cast("WGPUChainedStruct *", srcs),
                                 label=_api.to_c_string_view(label))
        mid = _api.libf.wgpuDeviceCreateShaderModuleTrusted(
            gpu.device._internal, desc, lib.WGPUShaderRuntimeChecks_None)
        if mid == ffi.NULL:
            raise RuntimeError("matmul: shader module creation failed")
        module = _api.GPUShaderModule(label, mid, gpu.device)
        pipeline = gpu.device.create_compute_pipeline(
            layout=gpu._layout(nbind)[1], compute={"module": module, "entry_point": "main"},
            label=label)
        prog = gpu.pipelines[key] = Program(key, pipeline, nbind)
        prog.source = code
        gpu.stats["compiles"] += 1
    return prog


def _guarded(reg, conds, ld):
    if not conds:
        return [ld]
    return [f"{reg} = vec4<f32>(0.0);", f"if ({' && '.join(conds)}) {{ {ld} }}"]


# -- A's slice stored transposed (km tiles: As[k][m/4]) ------------------------------------
# v4 (A unit-stride along K): 4x4 blocks (4 rows, a vec4 along K each) transposed in
# registers into 4 vec4s along M; t4 (A^T: unit-stride along M): one vec4 along M stored as
# it is; scalar modes: 4 consecutive rows at one k per vec4 (sm: neighbouring invocations
# take neighbouring rows, sk: neighbouring k).

def _km_a_setup(amode, T, BM4, BK, BK4, LA, NBA, xa, ASZ, cm, M, asm, ask):
    L = []
    if amode == "v4":
        for j in range(NBA):
            e = f"(lid + {j * T}u)"
            L += [f"let ak{j} = {e} % {BK4}u;", f"let am{j} = {e} / {BK4}u;",
                  f"let ast{j} = ak{j} * {4 * BM4}u + am{j};",
                  f"let ag{j} = abat + (m0 + am{j} * 4u) * {asm} + ak{j};"]
            if cm:
                L += [f"let amm{j} = m0 + am{j} * 4u;"]
            if not xa:
                L += [f"let aok{j} = {e} < {ASZ // 4}u;"]
            L += [f"var ra{j}_{c} = vec4<f32>(0.0);" for c in range(4)]
        return L
    for j in range(LA):
        e = f"(lid + {j * T}u)"
        if amode == "sk":
            L += [f"let ak{j} = {e} % {BK}u;", f"let am{j} = {e} / {BK}u;"]
        else:
            L += [f"let am{j} = {e} % {BM4}u;", f"let ak{j} = {e} / {BM4}u;"]
        L += [f"let ast{j} = ak{j} * {BM4}u + am{j};"]
        if amode == "t4":
            L += [f"let ag{j} = abat + ak{j} * {ask} + m0 / 4u + am{j};"]
        else:
            L += [f"let ag{j} = abat + (m0 + am{j} * 4u) * {asm} + ak{j} * {ask};"]
        if cm:
            L += [f"let amm{j} = m0 + am{j} * 4u;"]
        L += [f"var ra{j} = vec4<f32>(0.0);"]
    return L


def _km_a_load(k0, amode, LA, NBA, xa, cm, ck, asm, ask):
    out = []
    if amode == "v4":
        for j in range(NBA):
            for c in range(4):
                conds = ([f"amm{j} + {c}u < M"] if cm else []) + ([] if xa else [f"aok{j}"])
                if ck:
                    conds.append(f"{k0} + ak{j} * 4u < K")
                out += _guarded(f"ra{j}_{c}", conds,
                                f"ra{j}_{c} = A[ag{j} + {c}u * {asm} + {k0} / 4u];")
        return out
    for j in range(LA):
        kc = [f"{k0} + ak{j} < K"] if ck else []
        if amode == "t4":
            conds = ([f"amm{j} < M"] if cm else []) + kc
            out += _guarded(f"ra{j}", conds, f"ra{j} = A[ag{j} + {k0} * {ask}];")
            continue
        base = f"ag{j} + {k0} * {ask}"
        if cm or ck:
            out.append(f"ra{j} = vec4<f32>(0.0);")
            for c in range(4):
                cc = ([f"amm{j} + {c}u < M"] if cm else []) + kc
                out.append(f"if ({' && '.join(cc)}) {{ ra{j}.{XYZW[c]} = A[{base} + {c}u * {asm}]; }}")
        else:
            comps = [f"A[{base} + {c}u * {asm}]" for c in range(4)]
            out.append(f"ra{j} = vec4<f32>({', '.join(comps)});")
    return out


def _km_a_store(buf, amode, LA, NBA, xa, ASZ, BM4):
    if amode != "v4":
        return [f"As[{buf} * {ASZ}u + ast{j}] = ra{j};" for j in range(LA)]
    out = []
    for j in range(NBA):
        st = [f"As[{buf} * {ASZ}u + ast{j} + {r * BM4}u] = "
              f"vec4<f32>({', '.join(f'ra{j}_{c}.{XYZW[r]}' for c in range(4))});"
              for r in range(4)]
        out += st if xa else [f"if (aok{j}) {{ {' '.join(st)} }}"]
    return out


def _build(cfg, amode, bmode, omode, cm, cn, ck, km=None, pipe=False, bias=False, epi=None,
           single=False):
    BM, BN, BK, TM, TN = cfg
    assert km or not pipe
    nbuf, nxt = (1, "0u") if single else (2, "(1u - cur)")   # slice buffers; the next one
    NX, MY = BN // TN, BM // TM
    T = NX * MY
    BM4, BK4, BN4, TG = BM // 4, BK // 4, BN // 4, TN // 4
    ASZ, BSZ = BM * BK4, BK * BN4           # vec4s of one A / B buffer
    LA, LB = ASZ // T, BSZ // T             # vec4 loads per invocation (v4 / scalar modes)
    assert LA * T == ASZ and LB * T == BSZ and LA >= 1 and LB >= 1
    # t4 modes: 4x4 blocks (4 vec4 loads along the operand's contiguous dim, transposed in
    # registers); when the blocks do not divide evenly the last invocations skip theirs
    NBA, NBB = -(-(ASZ // 4) // T), -(-(BSZ // 4) // T)
    xa, xb = (ASZ // 4) % T == 0, (BSZ // 4) % T == 0
    bind = [("C", "v4" if omode == "v4" else "f32"),
            ("A", "v4" if amode in ("v4", "t4") else "f32"),
            ("B", "v4" if bmode in ("v4", "t4") else "f32")] + ([("Bi", "f32")] if bias else [])
    if epi is not None:
        bind += epi.bindings()
    src = wgsl.header(bind)
    if epi is not None:
        src += epilogue.functions(epi, EPILOGUE_WORD0)
    src += f"var<workgroup> As: array<vec4<f32>, {nbuf * ASZ}>;\n"
    src += f"var<workgroup> Bs: array<vec4<f32>, {nbuf * BSZ}>;\n"
    (M, N, K, abase, asb, asm, ask, bbase, bsb, bsk, bsn, cbase, batch0, S, kc, btot,
     B2, asb2, bsb2, bias0, bias_s) = (par(i) for i in range(21))
    # split-K: z enumerates (batch, split); split sp covers K range [kst, kst + kc)
    kst_a = "kst / 4u" if amode == "v4" else f"kst * {ask}"
    kst_b = "kst / 4u" if bmode == "t4" else f"kst * {bsk}"
    L = [f"let M = {M};", f"let N = {N};",
         f"let zz = wid.z + {batch0};", f"let bz = zz / {S};", f"let sp = zz % {S};",
         f"let kst = sp * {kc};", f"let K = min({K} - kst, {kc});",
         f"let m0 = wid.y * {BM}u;", f"let n0 = wid.x * {BN}u;",
         f"let tx = lid % {NX}u;", f"let ty = lid / {NX}u;",
         # batch item bz: (bz / B2, bz % B2) over two batch strides (3-d: B2 1, inner 0)
         f"let abat = {abase} + (bz / {B2}) * {asb} + (bz % {B2}) * {asb2} + {kst_a};",
         f"let bbat = {bbase} + (bz / {B2}) * {bsb} + (bz % {B2}) * {bsb2} + {kst_b};",
         f"let nt = (K + {BK - 1}u) / {BK}u;"]
    # -- per-invocation load coordinates (hoisted) --------------------------------------
    if km:
        L += _km_a_setup(amode, T, BM4, BK, BK4, LA, NBA, xa, ASZ, cm, M, asm, ask)
    elif amode == "t4":
        for j in range(NBA):
            e = f"(lid + {j * T}u)"
            L += [f"let am{j} = {e} % {BM4}u;", f"let ak{j} = {e} / {BM4}u;",
                  f"let ast{j} = am{j} * {4 * BK4}u + ak{j};",
                  f"let ag{j} = abat + ak{j} * 4u * {ask} + m0 / 4u + am{j};"]
            if cm:
                L += [f"let aokm{j} = m0 + am{j} * 4u < M;"]
            if not xa:
                L += [f"let aok{j} = {e} < {ASZ // 4}u;"]
            L += [f"var ra{j}_{c} = vec4<f32>(0.0);" for c in range(4)]
    for j in range(LA if amode != "t4" and not km else 0):
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
    if bmode == "t4":
        for j in range(NBB):
            e = f"(lid + {j * T}u)"
            L += [f"let bk{j} = {e} % {BK4}u;", f"let bn{j} = {e} / {BK4}u;",
                  f"let bst{j} = bk{j} * {4 * BN4}u + bn{j};",
                  f"let bg{j} = bbat + (n0 + bn{j} * 4u) * {bsn} + bk{j};"]
            if cn:
                L += [f"let bnn{j} = n0 + bn{j} * 4u;"]
            if not xb:
                L += [f"let bok{j} = {e} < {BSZ // 4}u;"]
            L += [f"var rb{j}_{c} = vec4<f32>(0.0);" for c in range(4)]
    for j in range(LB if bmode != "t4" else 0):
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

    def guarded(reg, conds, ld):
        if not conds:
            return [ld]
        return [f"{reg} = vec4<f32>(0.0);", f"if ({' && '.join(conds)}) {{ {ld} }}"]

    def load_t4(k0):
        out = []
        if amode == "t4" and not km:
            for j in range(NBA):
                for c in range(4):
                    conds = ([f"aokm{j}"] if cm else []) + ([] if xa else [f"aok{j}"])
                    if ck:
                        conds.append(f"{k0} + ak{j} * 4u + {c}u < K")
                    out += guarded(f"ra{j}_{c}", conds,
                                   f"ra{j}_{c} = A[ag{j} + ({k0} + {c}u) * {ask}];")
        if bmode == "t4":
            for j in range(NBB):
                for c in range(4):
                    conds = ([f"bnn{j} + {c}u < N"] if cn else []) + ([] if xb else [f"bok{j}"])
                    if ck:
                        conds.append(f"{k0} + bk{j} * 4u < K")
                    out += guarded(f"rb{j}_{c}", conds,
                                   f"rb{j}_{c} = B[bg{j} + {c}u * {bsn} + {k0} / 4u];")
        return out

    def load(k0):
        out = load_t4(k0)
        if km:
            out += _km_a_load(k0, amode, LA, NBA, xa, cm, ck, asm, ask)
        for j in range(LA if amode != "t4" and not km else 0):
            conds = []
            if cm:
                conds.append(f"aokm{j}")
            if amode == "v4":
                if ck:
                    conds.append(f"{k0} + ak{j} * 4u < K")
                out += guarded(f"ra{j}", conds, f"ra{j} = A[ag{j} + {k0} / 4u];")
            else:
                base = f"ag{j} + {k0} * {ask}"
                if conds or ck:
                    # guarded loads (a select would still read out of range)
                    out.append(f"ra{j} = vec4<f32>(0.0);")
                    for c in range(4):
                        cc = list(conds)
                        if ck:
                            cc.append(f"{k0} + ak{j} * 4u + {c}u < K")
                        addr = f"A[{base} + {c}u * {ask}]" if c else f"A[{base}]"
                        out.append(f"if ({' && '.join(cc)}) {{ ra{j}.{'xyzw'[c]} = {addr}; }}")
                else:
                    comps = [f"A[{base} + {c}u * {ask}]" if c else f"A[{base}]"
                             for c in range(4)]
                    out.append(f"ra{j} = vec4<f32>({', '.join(comps)});")
        for j in range(LB if bmode != "t4" else 0):
            kcond = [f"{k0} + bk{j} < K"] if ck else []
            if bmode == "v4":
                conds = kcond + ([f"bnn{j} < N"] if cn else [])
                out += guarded(f"rb{j}", conds, f"rb{j} = B[bg{j} + {k0} * {bsk}];")
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

    def transposed(reg, j, r):
        return f"vec4<f32>({', '.join(f'{reg}{j}_{c}.{XYZW[r]}' for c in range(4))})"

    def store(buf):
        out = []
        if km:
            out += _km_a_store(buf, amode, LA, NBA, xa, ASZ, BM4)
        elif amode == "t4":
            for j in range(NBA):
                st = [f"As[{buf} * {ASZ}u + ast{j} + {r * BK4}u] = {transposed('ra', j, r)};"
                      for r in range(4)]
                out += st if xa else [f"if (aok{j}) {{ {' '.join(st)} }}"]
        else:
            out += [f"As[{buf} * {ASZ}u + ast{j}] = ra{j};" for j in range(LA)]
        if bmode == "t4":
            for j in range(NBB):
                st = [f"Bs[{buf} * {BSZ}u + bst{j} + {r * BN4}u] = {transposed('rb', j, r)};"
                      for r in range(4)]
                out += st if xb else [f"if (bok{j}) {{ {' '.join(st)} }}"]
        else:
            out += [f"Bs[{buf} * {BSZ}u + bst{j}] = rb{j};" for j in range(LB)]
        return out

    for i in range(TM):
        for g in range(TG):
            L.append(f"var c{i}_{g} = vec4<f32>(0.0);")
    # the rows an invocation owns: TM rows spaced MY apart, or (km) TM/4 groups of 4
    # contiguous rows, the groups 4 * MY apart (one vec4 of the transposed As per group)
    def row(i):
        return f"(ty + {i * MY}u)" if not km else f"(ty + {(i // 4) * MY}u) * 4u + {i % 4}u"
    for i in range(TM if not km else 0):
        L.append(f"let ar{i} = (ty + {i * MY}u) * {BK4}u;")
    for g in range(TG):
        L.append(f"let bc{g} = tx + {g * NX}u;")
    L.append("if (nt > 0u) {")
    L += ["  " + s for s in load("0u") + store("0u")]
    L.append("}")
    L.append("workgroupBarrier();")
    if pipe:
        # (pipelined: the next slice's first operands, read right after its barrier, while
        # the last k of this slice is multiplied from registers)
        L += [f"var fa{q} = As[{q * MY}u + ty];" for q in range(TM // 4)]
        L += [f"var fb{g} = Bs[bc{g}];" for g in range(TG)]
    L.append("for (var t = 0u; t < nt; t = t + 1u) {")
    body = ["let cur = 0u;" if single else "let cur = t & 1u;", "let more = t + 1u < nt;",
            f"let kn = (t + 1u) * {BK}u;",
            "if (more) {"] + ["  " + s for s in load("kn")] + ["}"]
    body += [f"let ab = cur * {ASZ}u;", f"let bb = cur * {BSZ}u;"]
    for k4 in range(BK4 if km else 0):
        for kk in range(4):
            k = k4 * 4 + kk
            for q in range(TM // 4):
                body.append(f"let a{k}_{q} = fa{q};" if pipe and k == 0 else
                            f"let a{k}_{q} = As[ab + {k * BM4 + q * MY}u + ty];")
            for g in range(TG):
                body.append(f"let b{k}_{g} = fb{g};" if pipe and k == 0 else
                            f"let b{k}_{g} = Bs[bb + {k * BN4}u + bc{g}];")
            if pipe and k == BK - 1:
                # (one buffer: every read of this slice is in registers after a barrier)
                body += ["workgroupBarrier();"] if single else []
                body += ["if (more) {"] + ["  " + s for s in store(nxt)] + ["}",
                                                                          "workgroupBarrier();"]
                body += [f"fa{q} = As[{nxt} * {ASZ}u + {q * MY}u + ty];"
                         for q in range(TM // 4)]
                body += [f"fb{g} = Bs[{nxt} * {BSZ}u + bc{g}];" for g in range(TG)]
            for i in range(TM):
                for g in range(TG):
                    body.append(f"c{i}_{g} = fma(vec4<f32>(a{k}_{i // 4}.{XYZW[i % 4]}), "
                                f"b{k}_{g}, c{i}_{g});")
    for k4 in range(BK4 if not km else 0):
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
    if not pipe:
        body += ["workgroupBarrier();"] if single else []
        body += ["if (more) {"] + ["  " + s for s in store(nxt)] + ["}", "workgroupBarrier();"]
    L += ["  " + s for s in body]
    L.append("}")
    # -- write C ---------------------------------------------------------------------------
    L.append(f"let cbat = {cbase} + (sp * {btot} + bz) * M * N{' / 4u' if omode == 'v4' else ''};")
    for g in range(TG if bias else 0):
        # (matmul_bias: the bias of this invocation's columns, added where C is stored)
        L.append(f"var bv{g} = vec4<f32>(0.0);")
        for c in range(4):
            col = f"n0 + tx * 4u + {g * NX * 4 + c}u"
            L.append(f"if ({col} < N) {{ bv{g}.{'xyzw'[c]} = Bi[{bias0} + ({col}) * {bias_s}]; }}")
    if epi is not None:
        L += epilogue.setup(epi, EPILOGUE_WORD0, "bz")
    for i in range(TM):
        L.append(f"let om{i} = m0 + {row(i)};")
        for g in range(TG):
            L.append(f"let on{i}_{g} = n0 + tx * 4u + {g * NX * 4}u;")
            acc = f"(c{i}_{g} + bv{g})" if bias else f"c{i}_{g}"
            if omode == "v4":
                conds = ([f"om{i} < M"] if cm else []) + ([f"on{i}_{g} < N"] if cn else [])
                st = f"C[cbat + om{i} * (N / 4u) + on{i}_{g} / 4u] = {acc};"
                if epi is not None:
                    st = ("" if epi.skip_out else st + " ") + \
                        epilogue.element(epi, EPILOGUE_WORD0, acc, f"om{i}", f"on{i}_{g}")
                L.append(f"if ({' && '.join(conds)}) {{ {st} }}" if conds else st)
            else:
                for c in range(4):
                    conds = ([f"om{i} < M"] if cm else []) + [f"on{i}_{g} + {c}u < N"]
                    L.append(f"if ({' && '.join(conds)}) {{ C[cbat + om{i} * N + on{i}_{g} + {c}u]"
                             f" = {acc}.{'xyzw'[c]}; }}")
    src += wgsl.entry(T) + "  " + "\n  ".join(L) + "\n}\n"
    return src, len(bind)


def run(gpu, out, ins, *, buffers, tile=None, stages=None):
    """out (B, M, N) = a @ b, or with two batch dims (B1, B2, ...): the programs take the
    batch as B1 * B2 items over two batch strides (ops.py's matmul); with a third input,
    matmul_bias's bias (N,), added where C is stored (by the split-K sum when K is split).
    `stages` (fuse.Epilogue): elementwise stages applied where the tile is stored; run
    returns True when it applied them (not when K is split, C is not stored as vec4s, or
    an operand's words do not fit), "zero" when K is 0 (nothing issued), else None."""
    a, b = ins[:2]
    bias = ins[2] if len(ins) > 2 else None
    if len(a.shape) == 4:
        B1, B2, M, K = a.shape
        asb, asb2, asm, ask = a.strides
        bsb, bsb2, bsk, bsn = b.strides
    else:
        (B1, M, K), B2 = a.shape, 1
        (asb, asm, ask), (bsb, bsk, bsn), asb2, bsb2 = a.strides, b.strides, 0, 0
    B, N = B1 * B2, b.shape[-1]
    if B == 0 or M == 0 or N == 0:
        return
    if K == 0:
        return "zero"
    cbuf, cb = buffers(out)
    abuf, ab = buffers(a)
    bbuf, bb = buffers(b)
    a4 = ab % 4 == 0 and asb % 4 == 0 and asb2 % 4 == 0     # batch steps whole vec4s
    b4 = bb % 4 == 0 and bsb % 4 == 0 and bsb2 % 4 == 0
    if ask == 1 and K % 4 == 0 and a4 and asm % 4 == 0:
        amode, aw, aw2 = "v4", [ab // 4, asb // 4, asm // 4, 1], asb2 // 4
    elif asm == 1 and M % 4 == 0 and a4 and ask % 4 == 0:
        amode, aw, aw2 = "t4", [ab // 4, asb // 4, 1, ask // 4], asb2 // 4
    else:
        amode = "sm" if (asm < ask or K == 1) and M > 1 else "sk"
        aw, aw2 = [ab, asb, asm, ask], asb2
    if bsn == 1 and N % 4 == 0 and b4 and bsk % 4 == 0:
        bmode, bw, bw2 = "v4", [bb // 4, bsb // 4, bsk // 4, 1], bsb2 // 4
    elif bsk == 1 and K % 4 == 0 and b4 and bsn % 4 == 0:
        bmode, bw, bw2 = "t4", [bb // 4, bsb // 4, 1, bsn // 4], bsb2 // 4
    else:
        bmode = "sk" if (bsk < bsn or N == 1) and K > 1 else "sn"
        bw, bw2 = [bb, bsb, bsk, bsn], bsb2
    # (a B broadcast over the batch, a Linear weight against (B, T, C) inputs, is copied once)
    nbc = 1 if bsb == bsb2 == 0 else B
    if bmode == "t4" and M * B // nbc >= RELAYOUT_MIN and N % 4 == 0 and \
            nbc * K * N * 4 <= min(SPLIT_MAX_BYTES, gpu.max_binding) and \
            os.environ.get(ENV_RELAYOUT, "1") != "0":
        bbuf = _row_major(gpu, "matmul-b", bbuf, bb, nbc, B2, K, N, bsb, bsb2, bsn)
        bmode, bw2 = "v4", (K * N // 4 if nbc > 1 else 0)
        bw = [0, B2 * bw2, N // 4, 1]
    # an A row-major along K against >= RELAYOUT_A_MIN columns of B (in all, for an A
    # broadcast over the batch) is copied transposed (unit-stride along M) when the tile for
    # the copied layout is a km tile: the km tiles load A^T directly into As[k][m/4]
    # (ENV_RELAYOUT_A "0" / "1": never / always)
    nba = 1 if asb == asb2 == 0 else B
    ra = os.environ.get(ENV_RELAYOUT_A, "auto")
    if amode == "v4" and N * B // nba >= RELAYOUT_A_MIN and M % 4 == 0 and \
            nba * K * M * 4 <= min(SPLIT_MAX_BYTES, gpu.max_binding) and ra != "0" and \
            (ra == "1" or a_km(tile or choose_tile(B, M, N, K, gpu.max_workgroup_storage,
                                                   tuned_table(gpu), "t4" + bmode))):
        abuf = _row_major(gpu, "matmul-a", abuf, ab, nba, B2, K, M, asb, asb2, asm)
        amode, aw2 = "t4", (K * M // 4 if nba > 1 else 0)
        aw = [0, B2 * aw2, 1, M // 4]
    modes = amode + bmode
    name = tile or choose_tile(B, M, N, K, gpu.max_workgroup_storage, tuned_table(gpu), modes)
    gpu.matmul_last = (table_key(B, M, N, K, modes), name)     # (benchmarks read it)
    cfg = CONFIGS[name]
    BM, BN, BK = cfg[:3]
    omode = "v4" if N % 4 == 0 and cb % 4 == 0 else "s"
    cm, cn, ck = M % BM != 0, N % BN != 0, K % BK != 0
    gx, gy = -(-N // BN), -(-M // BM)
    if gx > gpu.max_groups or gy > gpu.max_groups:
        raise NotImplementedError(f"matmul of {M}x{N} exceeds the dispatch grid")
    S, kc = split_k(B * gx * gy, B * M * N, K, BK)
    in_tile = bias is not None and S == 1
    if bias is not None:
        bibuf, bi0 = buffers(bias)
        bias_bufs, bias_words = [bibuf], [bi0, bias.strides[0]]
    epi = epilogue.Bound.of(stages, buffers, 4, EPILOGUE_WORD0) \
        if S == 1 and omode == "v4" else None
    key = ("matmul", name, amode, bmode, omode, cm, cn, ck) + (("bias",) if in_tile else ()) + \
        ((epi.key,) if epi else ())
    prog = _program(gpu, key, lambda: _build(cfg, amode, bmode, omode, cm, cn, ck, a_km(name),
                                              "-p" in name, in_tile, epi, single_buffer(name)))
    if S == 1:
        extra = (bias_words if in_tile else [0, 0]) + (epi.words if epi else [])
        _dispatch(gpu, prog, [cbuf, abuf, bbuf] + (bias_bufs if in_tile else []) +
                  (epi.buffers if epi else []),
                  [M, N, K] + aw + bw, cb // 4 if omode == "v4" else cb, B, 1, kc, (gx, gy),
                  [B2, aw2, bw2] + extra)
        return True if epi else None
    # split-K: partial products into scratch [S][B][M][N], then a fixed-order sum
    scratch = gpu.scratch_buffer("matmul-split", S * B * M * N * 4)
    _dispatch(gpu, prog, [scratch, abuf, bbuf], [M, N, K] + aw + bw, 0, B, S, kc, (gx, gy),
              [B2, aw2, bw2])
    with_bias = bias is not None
    sprog = gpu.program(("matmul-splitsum",) + (("bias",) if with_bias else ()),
                        lambda: _splitsum_src(with_bias))
    n = B * M * N
    gpu.dispatch(sprog, [cbuf, scratch] + (bias_bufs if with_bias else []),
                 [n, S, cb] + ([N] + bias_words if with_bias else []),
                 wgsl.grid(-(-n // wgsl.WG), gpu.max_groups))
    return None


EPILOGUE_WORD0 = 21     # a fused epilogue's parameter words follow the matmul's own 21


def _row_major(gpu, name, buf, base, B, B2, R, C, sb, sb2, sc):
    """Copy the (B, R, C) operand at element `base` of buf, unit-stride along R (C's stride
    sc, batch item bi at (bi / B2) * sb + (bi % B2) * sb2), into scratch `name` as a
    row-major (B, R, C); returns the scratch buffer."""
    scratch = gpu.scratch_buffer(name, B * R * C * 4)
    prog = gpu.program(("matmul-relayout",), _relayout_src)
    T = RELAYOUT_TILE
    grid = (-(-C // T), -(-R // T))
    for z0 in range(0, B, gpu.max_groups):
        nz = min(gpu.max_groups, B - z0)
        gpu.dispatch(prog, [scratch, buf], [R, C, base, sb, sb2, B2, sc, z0], grid + (nz,))
    return scratch


def _relayout_src():
    """Tiled transpose: a workgroup reads a T x T tile along R (unit stride: coalesced),
    and writes it along C through workgroup memory (coalesced again)."""
    T, rows = RELAYOUT_TILE, 256 // RELAYOUT_TILE
    R, C, base, sb, sb2, B2, sc, z0 = (par(i) for i in range(8))
    L = [f"let bi = wid.z + {z0};", f"let tx = lid % {T}u;", f"let ty = lid / {T}u;",
         f"let r0 = wid.y * {T}u;", f"let c0 = wid.x * {T}u;",
         f"let src = {base} + (bi / {B2}) * {sb} + (bi % {B2}) * {sb2};",
         f"let dst = bi * {R} * {C};",
         f"for (var j = 0u; j < {T}u; j = j + {rows}u) {{",
         f"  let r = r0 + tx; let c = c0 + ty + j;",
         f"  if (r < {R} && c < {C}) {{ tile[(ty + j) * {T + 1}u + tx] = X[src + c * {sc} + r]; }}",
         "}", "workgroupBarrier();",
         f"for (var j = 0u; j < {T}u; j = j + {rows}u) {{",
         f"  let r = r0 + ty + j; let c = c0 + tx;",
         f"  if (r < {R} && c < {C}) {{ O[dst + r * {C} + c] = tile[tx * {T + 1}u + ty + j]; }}",
         "}"]
    src = wgsl.header([("O", "f32"), ("X", "f32")])
    src += f"var<workgroup> tile: array<f32, {T * (T + 1)}>;\n"
    return src + wgsl.entry(256) + "  " + "\n  ".join(L) + "\n}\n", 2


def bias_rows(bias, shape):
    """matmul_bias's (N,) bias read as every row of an out of `shape` (stride 0 elsewhere)."""
    return View(bias.block, bias.offset, shape, (0,) * (len(shape) - 1) + bias.strides, "f32")


def split_k(groups, outsize, K, BK):
    """(splits, K per split) for a matmul that gives `groups` workgroups unsplit."""
    target = _env_count(ENV_SPLIT, SPLIT_TARGET_GROUPS)   # (0: never split)
    if groups >= target or K < 2 * SPLIT_MIN_K:
        return 1, K
    # splits that stay within the target (none from target / 2 workgroups up; "ceil": the
    # fewest splits that reach it). H200, in one run, floor against ceil: 2048^3 (512
    # workgroups) 41.2 -> 43.8 TFLOPS, x^T @ dy (72, K 16384) 38.7 -> 44.0, none slower
    floor = os.environ.get(ENV_SPLIT_ROUND, "floor") != "ceil"
    S = min(target // groups if floor else -(-target // groups), K // SPLIT_MIN_K, 64,
            max(1, SPLIT_MAX_BYTES // (outsize * 4)))
    if S <= 1:
        return 1, K
    kc = -(-K // S)
    kc = -(-kc // BK) * BK
    return -(-K // kc), kc


def _dispatch(gpu, prog, bufs, words, cword, B, S, kc, grid2, batch2):
    total = B * S
    for z0 in range(0, total, gpu.max_groups):
        nz = min(gpu.max_groups, total - z0)
        gpu.dispatch(prog, bufs, words + [cword, z0, S, kc, B] + batch2, grid2 + (nz,))


def _splitsum_src(bias):
    bind = [("O", "f32"), ("PS", "f32")] + ([("Bi", "f32")] if bias else [])
    n, S, ob, N, bias0, bias_s = (par(i) for i in range(6))
    L = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", "var acc = PS[i];",
         f"for (var s = 1u; s < {S}; s = s + 1u) {{ acc = acc + PS[s * {n} + i]; }}",
         f"O[{ob} + i] = acc{f' + Bi[{bias0} + (i % {N}) * {bias_s}]' if bias else ''};"]
    return wgsl.linear_program(bind, L)
