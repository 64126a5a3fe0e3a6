"""dtypes on webgpu (docs/DTYPES.md, "Per backend"): casts, narrow ints, half rounding, and
the int64 rule's overflow checks, as WGSL expressions for elementwise.py's generator.

Every code webgpu holds is computed in one 32-bit word per element (wgsl.STORAGE): bool,
uint8, int8, int16 and int64 as i32 words, float16 and bfloat16 as f32 words (float16 is
stored natively, 2 bytes, where the device has shader-f16: wgsl.storage_table; loaded into
an f32 word and stored back, exact for the half values written here). So one kernel serves
a word type, and what differs by logical code is said here:

* **narrow ints** (u8 / i8 / i16 / b8): a result computed on i32 words is narrowed as
  PyTorch narrows it where it is stored (`narrow`): wrapped to the type (two's
  complement), bool as 0 / 1 (!= 0);
* **half types**: the f32 word holds a value the half type holds exactly; a cast into
  f16 / bf16 rounds to nearest even (`round_f16` / `round_bf16`, integer arithmetic on
  the bits: WGSL's own f32 -> f16 conversion may round either way and is undefined past
  f16's range); an int goes through float32 first, as PyTorch's casts do;
* **int64** (webgpu's int64 rule): WGSL has no 64-bit integers, so an i64 tensor holds
  values within int32. Arithmetic that makes an i64 result (add, sub, mul, sum, a cast of
  a float) checks for 32-bit overflow (`ck_add`, `ck_sub`, `ck_mul`, `f32_to_i64`) and
  flags it in the status words under the op's tag (gpu.new_tag, kind OverflowError):
  the next read or sync raises OverflowError naming the op. Never a silently wrong value.
"""

from .wgsl import STORAGE

# the message an int64 overflow flag raises (with the op's name: Backend.record_error)
INT64_OVERFLOW = ("an int64 result outside int32's range: webgpu stores int64 tensors as "
                  "32-bit words (WGSL has no 64-bit integers) and refuses any value outside "
                  "[-2^31, 2^31 - 1] rather than wrap it; use the workers or simd backend "
                  "for full int64")
INT64_WRITE = ("webgpu stores int64 tensors as 32-bit words (WGSL has no 64-bit integers): "
               "a value outside [-2^31, 2^31 - 1] cannot be written ({lo} .. {hi} given); "
               "use the workers or simd backend for full int64")

# -- WGSL helpers (elementwise.prelude adds the ones an expression names) ----------------
MUL_WIDE = """
fn mul_wide(a: u32, b: u32) -> vec2<u32> {   // a * b as (high, low) words
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let mid = al * bh + ah * bl;
  let mid_carry = select(0u, 0x10000u, mid < al * bh);
  let lo = al * bl + (mid << 16u);
  let lo_carry = select(0u, 1u, lo < al * bl);
  return vec2<u32>(ah * bh + (mid >> 16u) + mid_carry + lo_carry, lo);
}
"""

# i32 arithmetic of int64 operands: the wrapped result, and the tag's flag where the exact
# result leaves int32 (the status word's value is the wrapped result)
CHECKED = """
fn ck_add(a: i32, b: i32, tag: u32) -> i32 {
  let r = a + b;
  if (((a ^ r) & (b ^ r)) < 0) { report_error(tag, r); }
  return r;
}
fn ck_sub(a: i32, b: i32, tag: u32) -> i32 {
  let r = a - b;
  if (((a ^ b) & (a ^ r)) < 0) { report_error(tag, r); }
  return r;
}
fn ck_mul(a: i32, b: i32, tag: u32) -> i32 {
  let ua = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0);
  let ub = select(bitcast<u32>(b), 0u - bitcast<u32>(b), b < 0);
  let p = mul_wide(ua, ub);
  let limit = select(0x7fffffffu, 0x80000000u, (a < 0) != (b < 0));
  let r = a * b;
  if (p.x != 0u || p.y > limit) { report_error(tag, r); }
  return r;
}
fn ck_shl(a: i32, b: i32, tag: u32) -> i32 {      // int64's a << b (0 past the width)
  if (b < 0 || b >= 64) { return 0; }
  if (b >= 32) {
    if (a != 0) { report_error(tag, 0); }
    return 0;
  }
  let r = a << u32(b);
  if ((r >> u32(b)) != a) { report_error(tag, r); }
  return r;
}
"""

# float -> int: truncate toward zero, saturate to int32, NaN -> 0 (Rust's `as`, the simd
# backend's rule); WGSL's i32(f32) clamps to 2147483520 and leaves NaN undefined. Into
# int64 a value outside int32 is flagged instead (the int64 rule; NaN -> 0 stays).
F32_TO_I32 = """
fn f32_to_i32(x: f32) -> i32 {
  if (isnan1(x)) { return 0; }
  if (x >= 2147483648.0) { return 2147483647; }
  if (x < -2147483648.0) { return bitcast<i32>(0x80000000u); }
  return i32(x);
}
"""
# float -> uint8 / int8 / int16 goes through int64 (ops.py's copy row: truncated,
# saturated to int64's range, NaN -> 0, then wrapped): the low 32 bits of that int64. Past
# 2^31 a float is an integer (a multiple of 2^8): x - trunc(x / 2^32) 2^32 is exact
F32_LOW = """
fn f32_low(x: f32) -> i32 {
  if (isnan1(x) || x < -9.2233720368547758e18) { return 0; }
  if (x >= 9.2233720368547758e18) { return -1; }
  if (abs(x) < 2147483648.0) { return i32(x); }
  var lo = x - trunc(x * 2.3283064365386963e-10) * 4294967296.0;
  if (lo < 0.0) { lo = lo + 4294967296.0; }
  return bitcast<i32>(u32(lo));
}
"""
F32_TO_I64 = """
fn f32_to_i64(x: f32, tag: u32) -> i32 {
  if (!isnan1(x) && (x >= 2147483648.0 || x < -2147483648.0)) { report_error(tag, 0); }
  return f32_to_i32(x);
}
"""

# f32 -> the nearest float16 (ties to even) as an f32: the 13 low mantissa bits rounded
# off; below 2^-14 (f16's subnormals) to a multiple of 2^-24; past 65504 (65520 and up
# round there) inf; NaN stays NaN, signs (and -0) stay
ROUND_F16 = """
fn round_f16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let s = b & 0x80000000u;
  let a = b & 0x7fffffffu;
  if (a > 0x7f800000u) { return x; }
  if (a < 0x38800000u) {
    return bitcast<f32>(s | bitcast<u32>(round(bitcast<f32>(a) * 16777216.0) * 5.9604644775390625e-8));
  }
  let r = (a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u;
  return bitcast<f32>(s | select(r, 0x7f800000u, r >= 0x47800000u));
}
"""
# f32 -> the nearest bfloat16 (ties to even) as an f32: the 16 low bits rounded off (a
# carry into the exponent is the right result, up to inf); NaN stays a (quiet) NaN
ROUND_BF16 = """
fn round_bf16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>((b | 0x00400000u) & 0xffff0000u); }
  return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}
"""
# name -> (snippet, the snippets it needs), in the order they must come
SNIPPETS = {"mul_wide": (MUL_WIDE, ()), "ck_": (CHECKED, ("mul_wide",)),
            "f32_to_i32": (F32_TO_I32, ()), "f32_to_i64": (F32_TO_I64, ("f32_to_i32",)),
            "f32_low": (F32_LOW, ()),
            "round_f16": (ROUND_F16, ()), "round_bf16": (ROUND_BF16, ())}
# (scalar code only: never evaluated on vec4s)
SCALAR_ONLY = ("ck_", "f32_to_i", "f32_low", "round_f16", "round_bf16")


def prelude(text):
    """The helper functions `text` (WGSL expressions) calls, each once, in order."""
    want = []

    def need(name):
        for dep in SNIPPETS[name][1]:
            need(dep)
        if name not in want:
            want.append(name)
    for name in SNIPPETS:
        if name in text:
            need(name)
    return "".join(SNIPPETS[n][0] for n in want)


# -- expressions by dtype --------------------------------------------------------------------
def narrow(code, expr):
    """An i32 expression stored into a `code` tensor: wrapped (u8 / i8 / i16), 0 / 1 (b8)."""
    if code == "u8":
        return f"(({expr}) & 255)"
    if code == "i8":
        return f"((({expr}) << 24u) >> 24u)"
    if code == "i16":
        return f"((({expr}) << 16u) >> 16u)"
    if code == "b8":
        return f"select(0, 1, ({expr}) != 0)"
    return expr


CHECKED_OPS = {"add": "ck_add(a, b, {p0})", "sub": "ck_sub(a, b, {p0})",
               "mul": "ck_mul(a, b, {p0})"}


def int_binary(op, code, plain):
    """(expression, checked?) of int binary op `op` into a `code` tensor, `plain` its i32
    expression: int64's add / sub / mul checked (the tag in {p0}), narrow ints narrowed."""
    if code == "i64" and op in CHECKED_OPS:
        return CHECKED_OPS[op], True
    return narrow(code, plain), False


def cast(src, dst):
    """(expression of `a`, checked?) of copy from a `src` to a `dst` tensor (PyTorch's
    casts: float -> int truncates toward zero (saturating at the int's range, NaN -> 0;
    uint8 / int8 / int16 through int64, then wrapped), -> bool is != 0 (NaN too), bool / ints -> float exact or rounded to
    nearest even; int64 from a float outside int32 checked, the tag in {p0})."""
    s, d = STORAGE[src], STORAGE[dst]
    if src == dst:
        return "a", False
    if s == "f32":
        if dst == "f32":
            return "a", False
        if dst == "f16":
            return ("a" if src == "f16" else "round_f16(a)"), False
        if dst == "bf16":
            return ("a" if src == "bf16" else "round_bf16(a)"), False
        if dst == "b8":     # (on the bits: NaN is True, -0.0 False; no float compare)
            return "select(0, 1, (bitcast<u32>(a) & 0x7fffffffu) != 0u)", False
        if dst == "i64":
            return "f32_to_i64(a, {p0})", True
        if dst == "i32":
            return "f32_to_i32(a)", False
        return narrow(dst, "f32_low(a)"), False
    # an i32 word (every value in range of its code)
    if dst == "f32":
        return "f32(a)", False
    if dst == "f16":        # (exact in f32 below 2^24; past 65519 inf either way)
        return "round_f16(f32(a))", False
    if dst == "bf16":       # (through float32, as PyTorch: its bits, rounded again)
        return "round_bf16(f32(a))", False
    if dst in ("i32", "i64") or (dst == "i16" and src in ("b8", "u8", "i8")) or \
            (dst in ("u8", "i8") and src == "b8"):
        return "a", False   # (every value fits)
    assert d == "i32"
    return narrow(dst, "a"), False


# every pair of codes webgpu holds -> cast(src, dst)
CASTS = {(s, d): cast(s, d) for s in STORAGE for d in STORAGE}
