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
One ``Slice`` writes each operand's loads and stores: what it emits depends only on how
the mode relates to the operand's layout in workgroup memory (a vec4 along the stored vec4,
4x4 blocks along the other dim, or scalars), so A in either layout and B share the code.
A B^T against many rows of A (a Linear weight) is instead copied row-major first
(``_row_major``, RELAYOUT_MIN): the copy is cheap beside the product and v4 runs faster.
Likewise a row-major A against many columns of B is copied transposed when the tile the
table gives the copied layout is a km tile (RELAYOUT_A_MIN).
Edge checks are baked in only for the dims that need them (M % BM, N % BN, K % BK).
The programs are compiled without wgpu's runtime bounds checks (``_program``).

The tile: the adapter's row of the tuner table (matmul_table.py, keyed by
``table_key``: the shape class and the operands' load modes, then "*/" + the modes, then
``shape_class`` alone), else the general ladder: the largest tile that still gives the GPU
enough workgroups.
"""

import os
from dataclasses import dataclass

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
    # "-km": A's slice stored transposed in workgroup memory (As[k][m/4], see Slice)
    "128x128x8-km": (128, 128, 8, 8, 8),
    "64x128x16-km": (64, 128, 16, 8, 8),
    "128x64x16-km": (128, 64, 16, 8, 8),
    "64x64x16-8x8-km": (64, 64, 16, 8, 8),
    # "-p": pipelined across the slice's barrier (_slice_loop)
    "128x64x16-km-p": (128, 64, 16, 8, 8),
    "64x128x16-km-p": (64, 128, 16, 8, 8),
    "128x128x8-km-p": (128, 128, 8, 8, 8),
    "64x64x16-8x8-km-p": (64, 64, 16, 8, 8),
    # "-sb": one slice buffer in workgroup memory instead of two (_slice_loop)
    "64x64x16-8x8-km-p-sb": (64, 64, 16, 8, 8),
    "128x64x16-km-p-sb": (128, 64, 16, 8, 8),
    "128x128x16-8x16-km-p-sb": (128, 128, 16, 8, 16),
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
    """Whether tile `name` stores A's slice transposed (As[k][m/4]), not As[m][k/4]."""
    return "-km" in name


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


def table_adapter(info):
    """The key of matmul_table.TABLE whose rows an adapter takes, or None (the ladder)."""
    key = adapter_key(info)
    return next((name for name in matmul_table.TABLE if name in key), None)


def tuned_table(gpu):
    """{shape class: tile} measured on gpu's adapter, or {} (cached on the GPU object)."""
    table = getattr(gpu, "matmul_table", None)
    if table is None:
        name = table_adapter(gpu.adapter_info)
        table = gpu.matmul_table = matmul_table.TABLE[name] if name else {}
    return table


def table_key(B, M, N, K, modes):
    """The tuner's key for a problem with operand load modes `modes` (amode + bmode, such as
    "t4v4"): its shape class, "/", the modes. The table is looked up by this key first,
    then by "*/" + the modes (the adapter's tile for those modes), then by the shape class
    alone (p @ v and p^T @ dy share a class and want other tiles)."""
    return f"{shape_class(B, M, N, K)}/{modes}"


def choose_tile(B, M, N, K, smem_limit, table=None, modes=None):
    """The tile for a problem: TORCHIC_WEBGPU_MATMUL_TILE, else the table's row, else the
    ladder's first tile that gives MIN_GROUPS workgroups."""
    return choose_tile_and_split(B, M, N, K, smem_limit, table, modes)[0]


def choose_tile_and_split(B, M, N, K, smem_limit, table=None, modes=None):
    """(tile, split-K workgroup target): a table row is a tile, or (tile, target) where the
    tuner measured that tile best with its own target (0: never split); None is split_k's
    default, SPLIT_TARGET_GROUPS."""
    forced = env_choice(ENV_TILE, None, tuple(CONFIGS))
    if forced:
        return forced, None
    table = table or {}
    keys = (table_key(B, M, N, K, modes), f"*/{modes}") if modes else ()
    for key in keys + (shape_class(B, M, N, K),):
        hit = table.get(key)
        tile, target = hit if isinstance(hit, tuple) else (hit, None)
        if tile in CONFIGS and smem_bytes(tile) <= smem_limit:
            return tile, target
    for name in LADDER:
        bm, bn, _, _, _ = CONFIGS[name]
        if smem_bytes(name) > smem_limit:
            continue
        if B * (-(-M // bm)) * (-(-N // bn)) >= MIN_GROUPS:
            return name, None
    return LADDER[-1], None


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


# -- operand slices: global memory -> registers -> workgroup memory ------------------------
# Each operand's BK slice lives in workgroup memory as S[outer][inner / 4]: vec4s along its
# inner dim. A is As[m][k/4] (As[k][m/4] in km tiles), B is Bs[k][n/4]. The operand's
# layout in memory relates to that in one of three ways:
#   "same":   unit-stride along inner: one vec4 load, stored as it is;
#   "cross":  unit-stride along outer: 4x4 blocks (one vec4 along outer at each of 4
#             consecutive inner elements), transposed in registers before the store;
#   "scalar": 4 scalar loads a vec4, neighbouring invocations along the dim with the
#             smaller stride (the mode's letter), so that they read neighbouring addresses.
# A's v4 / t4 load modes are vector loads along K / M, B's along N / K; "sk" / "sm" / "sn"
# are scalar loads whose neighbouring invocations take neighbouring k / m / n.
VECTOR_DIM = {"A": {"v4": "k", "t4": "m"}, "B": {"v4": "n", "t4": "k"}}


@dataclass(frozen=True)
class Dim:
    """A slice's dim: its letter, its extent in the slice, the operand's stride along it (a
    WGSL expression, in vec4s for the vector load modes), and the bounds test its loads
    need: `edge` against `limit`. `start` is the tile's first index along it (m0 / n0);
    K's (the slice's k0) is added at each load."""
    letter: str
    size: int
    stride: str
    edge: bool
    limit: str
    start: str = ""

    @property
    def is_k(self):
        return self.letter == "k"


@dataclass(frozen=True)
class Slice:
    """How one operand ("A" / "B") is loaded into its workgroup array (name + "s") by T
    invocations in load mode `mode` (v4 / t4 / sk / sm / sn). Its registers are r{p}{j}
    (cross: r{p}{j}_{c}); {p} = "a" / "b" prefixes every name it declares."""
    name: str
    outer: Dim
    inner: Dim
    mode: str
    T: int

    @property
    def p(self):
        return self.name.lower()

    @property
    def vector(self):        # the letter of the dim its vec4 loads run along (scalar: None)
        return VECTOR_DIM[self.name].get(self.mode)

    @property
    def relation(self):
        if self.vector is None:
            return "scalar"
        return "same" if self.vector == self.inner.letter else "cross"

    @property
    def size(self):          # vec4s in one buffer
        return self.outer.size * self.inner.size // 4

    @property
    def loads(self):         # per invocation: vec4s, or (cross) 4x4 blocks
        if self.relation == "cross":
            return -(-(self.size // 4) // self.T)
        return self.size // self.T

    @property
    def whole(self):         # every invocation has each of its loads (cross blocks may not)
        return self.relation != "cross" or (self.size // 4) % self.T == 0

    @property
    def k(self):
        return self.outer if self.outer.is_k else self.inner

    @property
    def free(self):          # M for A, N for B
        return self.inner if self.outer.is_k else self.outer

    def k_offset(self, k):
        """The offset of K index `k` in the operand's words (vec4s along a unit-stride K)."""
        return f"{k} / 4u" if self.vector == "k" else f"{k} * {self.k.stride}"

    def index(self, dim, j):
        """Load j's element coordinate in the slice along `dim` (an index variable counts
        elements along a scalar or same-relation outer dim, vec4s otherwise)."""
        var = f"{self.p}{dim.letter}{j}"
        scaled = dim is self.inner or self.relation == "cross"
        return f"{var} * 4u" if scaled else var

    def setup(self):
        """The hoisted per-load coordinates: indices, store slot st, global offset g (from
        the batch item's first word, {p}bat)."""
        p, O, I4, rel, L = self.p, self.outer.size, self.inner.size // 4, self.relation, []
        for j in range(self.loads):
            e = f"(lid + {j * self.T}u)"
            o, i = f"{p}{self.outer.letter}{j}", f"{p}{self.inner.letter}{j}"
            if rel == "cross":
                L += [f"let {o} = {e} % {O // 4}u;", f"let {i} = {e} / {O // 4}u;",
                      f"let {p}st{j} = {o} * {4 * I4}u + {i};"]
            else:
                fast_outer = rel == "scalar" and self.mode[1] == self.outer.letter
                L += [f"let {o} = {e} % {O}u;", f"let {i} = {e} / {O}u;"] if fast_outer \
                    else [f"let {o} = {e} / {I4}u;", f"let {i} = {e} % {I4}u;"]
                L += [f"let {p}st{j} = {o} * {I4}u + {i};"]
            parts = []
            for dim, var in ((self.outer, o), (self.inner, i)):
                if dim.letter == self.vector:
                    parts.append(var if dim.is_k else f"{dim.start} / 4u + {var}")
                elif dim.is_k:
                    parts.append(f"{self.index(dim, j)} * {dim.stride}")
                else:
                    parts.append(f"({dim.start} + {self.index(dim, j)}) * {dim.stride}")
            L += [f"let {p}g{j} = {p}bat + {' + '.join(parts)};"]
            f = self.free
            if f.edge:
                L += [f"let {p}{f.letter * 2}{j} = {f.start} + {self.index(f, j)};"]
            if not self.whole:
                L += [f"let {p}ok{j} = {e} < {self.size // 4}u;"]
            L += [f"var r{p}{j}{c} = vec4<f32>(0.0);"
                  for c in (("_0", "_1", "_2", "_3") if rel == "cross" else ("",))]
        return L

    def _conds(self, j, k0, c):
        """The bounds tests of load j's element c (None: the whole vec4)."""
        out, p = [], self.p
        each = c is not None and self.relation != "same"     # c steps along inner
        f = self.free
        if f.edge:
            step = f" + {c}u" if each and f is self.inner else ""
            out.append(f"{p}{f.letter * 2}{j}{step} < {f.limit}")
        if not self.whole:
            out.append(f"{p}ok{j}")
        if self.k.edge:
            step = f" + {c}u" if each and self.k is self.inner else ""
            out.append(f"{k0} + {self.index(self.k, j)}{step} < K")
        return out

    def load(self, k0):
        """Load the slice at K index k0 into the registers."""
        out, p, G = [], self.p, self.name
        for j in range(self.loads):
            base = f"{p}g{j} + {self.k_offset(k0)}"
            if self.relation == "same":
                out += _guarded(f"r{p}{j}", self._conds(j, k0, None),
                                f"r{p}{j} = {G}[{base}];")
                continue
            addr = [base] + [f"{base} + {c}u * {self.inner.stride}" for c in (1, 2, 3)]
            if self.relation == "cross":
                for c in range(4):
                    out += _guarded(f"r{p}{j}_{c}", self._conds(j, k0, c),
                                    f"r{p}{j}_{c} = {G}[{addr[c]}];")
            elif self.free.edge or self.k.edge:
                out.append(f"r{p}{j} = vec4<f32>(0.0);")
                out += [f"if ({' && '.join(self._conds(j, k0, c))}) "
                        f"{{ r{p}{j}.{XYZW[c]} = {G}[{addr[c]}]; }}" for c in range(4)]
            else:
                out.append(f"r{p}{j} = vec4<f32>({', '.join(f'{G}[{a}]' for a in addr)});")
        return out

    def store(self, buf):
        """Store the registers into slice buffer `buf` of the workgroup array."""
        p, S, I4 = self.p, self.name + "s", self.inner.size // 4
        at = f"{buf} * {self.size}u + {p}st"
        if self.relation != "cross":
            return [f"{S}[{at}{j}] = r{p}{j};" for j in range(self.loads)]
        out = []
        for j in range(self.loads):
            st = [f"{S}[{at}{j} + {r * I4}u] = "
                  f"vec4<f32>({', '.join(f'r{p}{j}_{c}.{XYZW[r]}' for c in range(4))});"
                  for r in range(4)]
            out += st if self.whole else [f"if ({p}ok{j}) {{ {' '.join(st)} }}"]
        return out


def _guarded(reg, conds, ld):
    if not conds:
        return [ld]
    return [f"{reg} = vec4<f32>(0.0);", f"if ({' && '.join(conds)}) {{ {ld} }}"]


@dataclass(frozen=True)
class Tile:
    """A tile's shape (CONFIGS) and what follows from it: NX x MY invocations, each owning
    TM rows and TG vec4 column groups of C; ASZ / BSZ vec4s in one A / B slice buffer."""
    BM: int
    BN: int
    BK: int
    TM: int
    TN: int

    NX = property(lambda t: t.BN // t.TN)
    MY = property(lambda t: t.BM // t.TM)
    T = property(lambda t: t.NX * t.MY)
    TG = property(lambda t: t.TN // 4)
    ASZ = property(lambda t: t.BM * t.BK // 4)
    BSZ = property(lambda t: t.BK * t.BN // 4)


def _build(cfg, amode, bmode, omode, cm, cn, ck, km=False, pipe=False, bias=False, epi=None,
           single=False):
    t = Tile(*cfg)
    assert km or not pipe
    nbuf = 1 if single else 2           # slice buffers
    assert t.ASZ % t.T == 0 and t.BSZ % t.T == 0 and t.ASZ >= t.T and t.BSZ >= t.T
    bind = [("C", "v4" if omode == "v4" else "f32"),
            ("A", "v4" if amode in ("v4", "t4") else "f32"),
            ("B", "v4" if bmode in ("v4", "t4") else "f32")] + ([("Bi", "f32")] if bias else [])
    if epi is not None:
        bind += epi.bindings()
    src = wgsl.header(bind)
    if epi is not None:
        src += epilogue.functions(epi, EPILOGUE_WORD0)
    src += f"var<workgroup> As: array<vec4<f32>, {nbuf * t.ASZ}>;\n"
    src += f"var<workgroup> Bs: array<vec4<f32>, {nbuf * t.BSZ}>;\n"
    (M, N, K, abase, asb, asm, ask, bbase, bsb, bsk, bsn, cbase, batch0, S, kc, btot,
     B2, asb2, bsb2, bias0, bias_s) = (par(i) for i in range(21))
    m, n = Dim("m", t.BM, asm, cm, "M", "m0"), Dim("n", t.BN, bsn, cn, "N", "n0")
    A = Slice("A", Dim("k", t.BK, ask, ck, "K"), m, amode, t.T) if km else \
        Slice("A", m, Dim("k", t.BK, ask, ck, "K"), amode, t.T)
    B = Slice("B", Dim("k", t.BK, bsk, ck, "K"), n, bmode, t.T)
    # split-K: z enumerates (batch, split); split sp covers K range [kst, kst + kc)
    L = [f"let M = {M};", f"let N = {N};",
         f"let zz = wid.z + {batch0};", f"let bz = zz / {S};", f"let sp = zz % {S};",
         f"let kst = sp * {kc};", f"let K = min({K} - kst, {kc});",
         f"let m0 = wid.y * {t.BM}u;", f"let n0 = wid.x * {t.BN}u;",
         f"let tx = lid % {t.NX}u;", f"let ty = lid / {t.NX}u;",
         # batch item bz: (bz / B2, bz % B2) over two batch strides (3-d: B2 1, inner 0)
         f"let abat = {abase} + (bz / {B2}) * {asb} + (bz % {B2}) * {asb2} + "
         f"{A.k_offset('kst')};",
         f"let bbat = {bbase} + (bz / {B2}) * {bsb} + (bz % {B2}) * {bsb2} + "
         f"{B.k_offset('kst')};",
         f"let nt = (K + {t.BK - 1}u) / {t.BK}u;"]
    # -- per-invocation load coordinates (hoisted) --------------------------------------
    L += A.setup() + B.setup()
    L += _slice_loop(t, A, B, km, pipe, single)
    words = (cbase, btot, bias0, bias_s)
    L += _store_c(t, omode, cm, cn, km, bias, epi, words)
    src += wgsl.entry(t.T) + "  " + "\n  ".join(L) + "\n}\n"
    return src, len(bind)


def _slice_loop(t, A, B, km, pipe, single):
    """The accumulators, the first slice's load, and the loop over K's slices: load the
    next slice into registers, multiply this one from workgroup memory, store the next."""
    nxt = "0u" if single else "(1u - cur)"      # the buffer the next slice goes to

    def load(k0):
        return A.load(k0) + B.load(k0)

    def store(buf):
        return A.store(buf) + B.store(buf)

    L = [f"var c{i}_{g} = vec4<f32>(0.0);" for i in range(t.TM) for g in range(t.TG)]
    L += [f"let ar{i} = (ty + {i * t.MY}u) * {t.BK // 4}u;" for i in range(t.TM if not km else 0)]
    L += [f"let bc{g} = tx + {g * t.NX}u;" for g in range(t.TG)]
    L.append("if (nt > 0u) {")
    L += ["  " + s for s in load("0u") + store("0u")]
    L.append("}")
    L.append("workgroupBarrier();")
    if pipe:
        # (pipelined: the next slice's first operands, read right after its barrier, while
        # the last k of this slice is multiplied from registers)
        L += [f"var fa{q} = As[{q * t.MY}u + ty];" for q in range(t.TM // 4)]
        L += [f"var fb{g} = Bs[bc{g}];" for g in range(t.TG)]
    L.append("for (var t = 0u; t < nt; t = t + 1u) {")
    body = ["let cur = 0u;" if single else "let cur = t & 1u;", "let more = t + 1u < nt;",
            f"let kn = (t + 1u) * {t.BK}u;",
            "if (more) {"] + ["  " + s for s in load("kn")] + ["}"]
    body += [f"let ab = cur * {t.ASZ}u;", f"let bb = cur * {t.BSZ}u;"]
    BM4, BN4 = t.BM // 4, t.BN // 4
    for k4 in range(t.BK // 4 if km else 0):
        for kk in range(4):
            k = k4 * 4 + kk
            for q in range(t.TM // 4):
                body.append(f"let a{k}_{q} = fa{q};" if pipe and k == 0 else
                            f"let a{k}_{q} = As[ab + {k * BM4 + q * t.MY}u + ty];")
            for g in range(t.TG):
                body.append(f"let b{k}_{g} = fb{g};" if pipe and k == 0 else
                            f"let b{k}_{g} = Bs[bb + {k * BN4}u + bc{g}];")
            if pipe and k == t.BK - 1:
                # (one buffer: every read of this slice is in registers after a barrier)
                body += ["workgroupBarrier();"] if single else []
                body += ["if (more) {"] + ["  " + s for s in store(nxt)] + ["}",
                                                                          "workgroupBarrier();"]
                body += [f"fa{q} = As[{nxt} * {t.ASZ}u + {q * t.MY}u + ty];"
                         for q in range(t.TM // 4)]
                body += [f"fb{g} = Bs[{nxt} * {t.BSZ}u + bc{g}];" for g in range(t.TG)]
            for i in range(t.TM):
                for g in range(t.TG):
                    body.append(f"c{i}_{g} = fma(vec4<f32>(a{k}_{i // 4}.{XYZW[i % 4]}), "
                                f"b{k}_{g}, c{i}_{g});")
    for k4 in range(t.BK // 4 if not km else 0):
        for i in range(t.TM):
            body.append(f"let a{k4}_{i} = As[ab + ar{i} + {k4}u];")
        for kk in range(4):
            k = k4 * 4 + kk
            for g in range(t.TG):
                body.append(f"let b{k}_{g} = Bs[bb + {k * BN4}u + bc{g}];")
            for i in range(t.TM):
                for g in range(t.TG):
                    body.append(f"c{i}_{g} = fma(vec4<f32>(a{k4}_{i}.{XYZW[kk]}), "
                                f"b{k}_{g}, c{i}_{g});")
    if not pipe:
        body += ["workgroupBarrier();"] if single else []
        body += ["if (more) {"] + ["  " + s for s in store(nxt)] + ["}", "workgroupBarrier();"]
    return L + ["  " + s for s in body] + ["}"]


def _store_c(t, omode, cm, cn, km, bias, epi, words):
    """Store the accumulators into C (vec4s, or scalars when omode is "s"), adding
    matmul_bias's bias and applying a fused epilogue's stages on the way."""
    cbase, btot, bias0, bias_s = words
    NX, MY = t.NX, t.MY
    L = [f"let cbat = {cbase} + (sp * {btot} + bz) * M * N{' / 4u' if omode == 'v4' else ''};"]
    for g in range(t.TG if bias else 0):
        # (matmul_bias: the bias of this invocation's columns, added where C is stored)
        L.append(f"var bv{g} = vec4<f32>(0.0);")
        for c in range(4):
            col = f"n0 + tx * 4u + {g * NX * 4 + c}u"
            L.append(f"if ({col} < N) {{ bv{g}.{'xyzw'[c]} = Bi[{bias0} + ({col}) * {bias_s}]; }}")
    if epi is not None:
        L += epilogue.setup(epi, EPILOGUE_WORD0, "bz")
    for i in range(t.TM):
        # the rows an invocation owns: TM rows spaced MY apart, or (km) TM/4 groups of 4
        # contiguous rows, the groups 4 * MY apart (one vec4 of the transposed As per group)
        row = f"(ty + {i * MY}u)" if not km else f"(ty + {(i // 4) * MY}u) * 4u + {i % 4}u"
        L.append(f"let om{i} = m0 + {row};")
        for g in range(t.TG):
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
    return L


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
    amode, aw, aw2 = load_mode("mk", ab, asb, asb2, asm, ask, M, K)
    bmode, bw, bw2 = load_mode("kn", bb, bsb, bsb2, bsk, bsn, K, N)
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
    name, target = (tile, None) if tile else \
        choose_tile_and_split(B, M, N, K, gpu.max_workgroup_storage, tuned_table(gpu), modes)
    gpu.matmul_last = (table_key(B, M, N, K, modes), name)     # (benchmarks read it)
    cfg = CONFIGS[name]
    BM, BN, BK = cfg[:3]
    omode = "v4" if N % 4 == 0 and cb % 4 == 0 else "s"
    cm, cn, ck = M % BM != 0, N % BN != 0, K % BK != 0
    gx, gy = -(-N // BN), -(-M // BM)
    if gx > gpu.max_groups or gy > gpu.max_groups:
        raise NotImplementedError(f"matmul of {M}x{N} exceeds the dispatch grid")
    S, kc = split_k(B * gx * gy, B * M * N, K, BK, target)
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


def load_mode(dims, base, sb, sb2, sr, sc, R, C):
    """How to load an operand of R x C matrices (its dims' letters `dims`: "mk" for A, "kn"
    for B) at element `base`, with batch strides sb, sb2 and strides sr, sc: (mode, its
    words [base, sb, sr, sc], sb2's word), the words in vec4s for the vector modes. "v4":
    vec4s along C, "t4": along R (each needs that dim unit-stride, and every other stride,
    the base and the vector's extent 4-aligned), else "s" + the letter of the dim with the
    smaller stride, which neighbouring invocations take."""
    whole = base % 4 == 0 and sb % 4 == 0 and sb2 % 4 == 0     # batch steps whole vec4s
    if sc == 1 and C % 4 == 0 and whole and sr % 4 == 0:
        return "v4", [base // 4, sb // 4, sr // 4, 1], sb2 // 4
    if sr == 1 and R % 4 == 0 and whole and sc % 4 == 0:
        return "t4", [base // 4, sb // 4, 1, sc // 4], sb2 // 4
    fast = dims[0] if (sr < sc or C == 1) and R > 1 else dims[1]
    return "s" + fast, [base, sb, sr, sc], sb2


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


def split_k(groups, outsize, K, BK, target=None):
    """(splits, K per split) for a matmul that gives `groups` workgroups unsplit; `target`:
    the workgroups to reach (0: never split; None: SPLIT_TARGET_GROUPS), the table row's."""
    target = _env_count(ENV_SPLIT, SPLIT_TARGET_GROUPS if target is None else target)
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
