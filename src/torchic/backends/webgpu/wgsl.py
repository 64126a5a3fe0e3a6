"""Small helpers shared by the WGSL generators.

Every program sees the same binding layout (so bind groups are shared by all
programs with the same number of operands):

    @binding(0 .. n-1)  the operands: whole heap arenas (or internal buffers),
                        declared ``array<f32>``, ``array<i32>``, ``array<vec4<f32>>``
                        (or native float16's ``array<f16>``: STORAGE's comment) as the
                        program needs (one buffer may be bound several times)
    @binding(n)         ``P``: 64 u32 words of op parameters (element offsets, shapes,
                        strides...) at a dynamic offset in the batch's uniform buffer
    @binding(n + 1)     ``ST``: the status words (index errors), see gpu.py

Parameters are read with constant indices (``P.v[2].z``) so nothing is clamped.
"""

import numpy as np

PARAM_WORDS = 64
WG = 256  # workgroup size of the elementwise / gather programs

# Mesa's llvmpipe (lavapipe) stops every loop of an invocation once the invocation has run
# 65535 loop iterations in total (all its loops together, nested ones included) and carries
# on silently: a longer row would leave outputs unwritten or a reduction short. So every
# generator keeps one invocation's loop iterations, summed over its loops, under
# LOOP_BUDGET, cutting long rows over more workgroups or passes instead.
LOOP_BUDGET = 16384

# dtypes (docs/DTYPES.md, "Per backend"). STORAGE: the 32-bit word a kernel computes each
# code webgpu holds in, an f32 or an i32 word. Kernels get Views of the logical code and
# compute on these words: bool / uint8 / int8 / int16 / int64 as i32 words (bool 0 / 1;
# int64 within int32: the backend's int64 rule), float16 / bfloat16 as f32 words holding
# values the half type holds exactly (rounded to nearest even where written: host writes,
# copy, fill). float64 is refused (WGSL has no 64-bit floats).
STORAGE = {"f32": "f32", "f16": "f32", "bf16": "f32",
           "i32": "i32", "i64": "i32", "i16": "i32", "i8": "i32", "u8": "i32", "b8": "i32"}
# How a device lays each code out in memory (`storage_table`, THE place that decides it, once
# per device: GPU.storage): the word above, except float16 where the device has WGSL's
# `shader-f16` (and TORCHIC_WEBGPU_F16 is not 0): natively, 2 bytes an element, bound as
# `array<f16>` (or `array<vec4<f16>>`), loaded into an f32 register and stored back by
# WGSL's conversion, exact for the f16 values kernels store (a cast rounds to nearest even
# first: casts.round_f16). bfloat16 stays an f32 word (WGSL has no bf16 type).
NATIVE_F16 = {**STORAGE, "f16": "f16"}
F64_REFUSAL = ("webgpu has no float64 (WGSL has no 64-bit floats): use float32, or the "
               "workers / simd backend")
TYPES = {**NATIVE_F16, "u32": "u32", "v4": "vec4<f32>", "v4i": "vec4<i32>", "v4h": "vec4<f16>"}
ITEMSIZE = {"f32": 4, "i32": 4, "f16": 2}     # bytes an element of each memory type


def storage_table(native_f16):
    """code -> its memory type ("f32" / "i32" / "f16") on a device with native float16
    storage or without (see NATIVE_F16)."""
    return NATIVE_F16 if native_f16 else STORAGE


def storage(code):
    """The word ("f32" / "i32") a kernel computes a code webgpu holds in; TypeError otherwise."""
    st = STORAGE.get(code)
    if st is None:
        raise TypeError(F64_REFUSAL if code == "f64" else
                        f"the 'webgpu' backend does not hold dtype {code!r}")
    return st


def f32_bits(x):
    """The u32 parameter word holding float32(x)'s bits (read back with bitcast<f32>)."""
    return int(np.array(x, np.float32).view(np.uint32))


def par(i):
    """WGSL expression for u32 parameter word i."""
    if not 0 <= i < PARAM_WORDS:
        raise ValueError(f"parameter word {i} out of range")
    return f"P.v[{i // 4}].{'xyzw'[i % 4]}"


def header(bindings):
    """bindings: list of (name, type key) in binding order."""
    lines = ["enable f16;"] if any(t in ("f16", "v4h") for _, t in bindings) else []
    for i, (name, t) in enumerate(bindings):
        lines.append(f"@group(0) @binding({i}) var<storage, read_write> {name}: "
                     f"array<{TYPES[t]}>;")
    n = len(bindings)
    lines.append(f"struct Params {{ v: array<vec4<u32>, {PARAM_WORDS // 4}> }}")
    lines.append(f"@group(0) @binding({n}) var<uniform> P: Params;")
    lines.append(f"@group(0) @binding({n + 1}) var<storage, read_write> ST: "
                 f"array<atomic<u32>, {STATUS_WORDS}>;")
    lines.append(ERROR_FN)
    return "\n".join(lines) + "\n"


# An out-of-range integer index: set the op's tag bit (checked ops get tags 1, 2, ...
# between two status reads, at most MAX_TAGS) and keep a bad value for the message.
MAX_TAGS = 1024
STATUS_WORDS = 32 + MAX_TAGS
ERROR_FN = """
fn report_error(tag: u32, bad: i32) {
  atomicOr(&ST[tag >> 5u], 1u << (tag & 31u));
  atomicStore(&ST[32u + tag], bitcast<u32>(bad));
}
"""

# Shared float helpers. NaN is tested on the bits, never with `x != x`: shader
# compilers may assume no NaNs (Mesa's lavapipe folds `x != x` to false and turns
# `select(b, a, a > b)` into a NaN-dropping max), so only integer tests are safe.
FLOAT_FNS = """
fn isnan1(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nanmax(a: f32, b: f32) -> f32 { return select(max(a, b), f32_nan(), isnan1(a) || isnan1(b)); }
fn nanmin(a: f32, b: f32) -> f32 { return select(min(a, b), f32_nan(), isnan1(a) || isnan1(b)); }
fn f32_inf() -> f32 { return bitcast<f32>(0x7f800000u); }
fn f32_nan() -> f32 { return bitcast<f32>(0x7fc00000u); }
"""


def linear_id(wg=WG):
    """Statement computing the flat invocation index `i` over a 2-D grid."""
    return f"let i = gid.y * (nwg.x * {wg}u) + gid.x;"


ENTRY = ("@compute @workgroup_size({wg})\n"
         "fn main(@builtin(global_invocation_id) gid: vec3<u32>, "
         "@builtin(num_workgroups) nwg: vec3<u32>, "
         "@builtin(workgroup_id) wid: vec3<u32>, "
         "@builtin(local_invocation_index) lid: u32) {{\n")


def entry(wg=WG):
    return ENTRY.format(wg=wg)


def grid(groups, max_dim=65535):
    """Split a 1-D number of workgroups into a 2-D grid (x, y, 1)."""
    if groups <= max_dim:
        return (max(groups, 1), 1, 1)
    gy = -(-groups // max_dim)
    gx = -(-groups // gy)
    return (gx, gy, 1)


def linear_program(bindings, lines):
    """A one-invocation-per-element shader: the header of `bindings`, the entry point and
    its body `lines` (statements); with its binding count, as program builders return."""
    return header(bindings) + entry() + "  " + "\n  ".join(lines) + "\n}\n", len(bindings)
