"""Elementwise family: unary, binary, compare, where, copy (with casts), fill.

One generator covers them all. An op is a WGSL expression over the loaded
inputs ``a``, ``b``, ``c`` (snippet tables below); the generator wraps it in
one of three index schemes, picked per call after collapsing dims:

* ``v4``: every operand contiguous, 4-element aligned, f32 (or native f16: ``vec4<f16>``
  loaded into ``vec4<f32>``), length % 4 == 0 (or every one i32 words, the expression one
  of ``V4_INT``: ``vec4<i32>``):
  one ``vec4<f32>`` per invocation (the expression is evaluated on vec4s:
  snippets use ``T`` for the value type, ``f32`` or ``vec4<f32>``);
* ``c``: every operand contiguous: ``x[base + i]``;
* ``s{D}``: general strides (broadcast stride 0, transposed, sliced) over up to
  ``MAX_DIMS`` collapsed dims, the index decomposition unrolled for that D.

The collapsed shape, bases and strides travel as parameter words, so one
pipeline serves every shape with the same (op, dtypes, scheme).
"""

from . import casts, wgsl
from .wgsl import WG, par

MAX_DIMS = 6

UNARY = {
    "neg": "-a",
    "exp": "texp(a)",
    "log": "tlog(a)",
    "relu": "select(max(a, T(0.0)), a, isn(a))",
    "tanh": "ttanh(a)",
    "sigmoid": "T(1.0) / (T(1.0) + exp(-a))",
    "sqrt": "sqrt(a)",
    "abs": "abs(a)",
    "sin": "tsin(a, 0u)",
    "cos": "tsin(a, 1u)",
    "gelu": "a * tgelu_cdf(a)",
    "gelu_tanh": "T(0.5) * a * (T(1.0) + tgelu_tanh(a))",
}

# the GELU gradients (ops of family "other" with the binary contract: x = a, g = b)
GELU_GRAD = {
    "gelu_grad": "b * tgelu_d(a)",
    "gelu_tanh_grad": "b * tgelu_tanh_d(a)",
}

# tanh as simd's (kernels/src/math.rs): an odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x|
# + 1) above (no cancellation, and e^2|x| = inf gives 1). The drivers' tanh is not accurate
# near 0 (lavapipe's tanh(1e-8) is 2.98e-8: an (e^2x - 1) / (e^2x + 1) formula); -0 kept
TTANH = """
fn ttanh(x: T) -> T {
  let a = abs(x);
  let big = T(1.0) - T(2.0) / (exp(a + a) + T(1.0));
  let s = x * x;
  let p = (((T(-5.70498872745e-3) * s + T(2.06390887954e-2)) * s + T(-5.37397155531e-2)) * s
    + T(1.33314422036e-1)) * s + T(-3.33332819422e-1);
  let small = select(p * s * x + x, x, x == T(0.0));
  return select(select(big, -big, x < T(0.0)), small, a < T(0.625) | isn(x));
}
"""

# exp into the subnormal range (x < ln 2^-126) through e^(x + 64 ln 2) * 2^-64: lavapipe's
# exp flushes it (exp(-100) was 0, not 3.8e-44)
TEXP = """
fn texp(x: T) -> T {
  return select(exp(x), exp(x + T(44.3614195558365)) * T(5.421010862427522e-20),
                x < T(-87.33654475));
}
"""

# log of a subnormal through x * 2^23 (lavapipe's log flushes it: log(1e-45) was -88.0,
# not -103.3)
TLOG = """
fn tlog(x: T) -> T {
  let sub = (x < T(1.17549435e-38)) & (x > T(0.0));
  return select(log(x), log(x * T(8388608.0)) - T(15.942385152878742), sub);
}
"""

# Phi(x) through erfc(z) = t Q(t) e^(-z^2), the fit of numpy_kernels.ERFC_Q (relative error
# 2.2e-7 in float32), given g = e^(-x^2 / 2), which the gradient's pdf shares (one exp);
# tanh's argument clamped as UNARY's tanh (the driver's tanh of a large value may be NaN)
TGELU = """
fn tgelu_cdf_g(x: T, g: T) -> T {
  let t = T(1.0) / (T(1.0) + T(0.5) * abs(x) * T(0.7071067811865476));
  let q = 2.8208799386e-01 + t * (2.8234801194e-01 + t * (2.4330023937e-01
    + t * (2.0191651320e-01 + t * (-2.4819101408e-02 + t * (2.7546227992e-01
    + t * (-4.8493625602e-01 + t * (2.8348731445e-01 + t * -5.8847037331e-02)))))));
  let e = T(0.5) * t * q * g;
  return select(T(1.0) - e, e, x < T(0.0));
}
fn tgelu_cdf(x: T) -> T {
  return tgelu_cdf_g(x, exp(T(-0.5) * x * x));
}
fn tgelu_d(x: T) -> T {
  let g = exp(T(-0.5) * x * x);
  return tgelu_cdf_g(x, g) + x * g * T(0.3989422804014327);
}
fn tgelu_tanh(x: T) -> T {
  let u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
  return select(tanh(clamp(u, T(-15.0), T(15.0))), u, isn(u));
}
fn tgelu_tanh_d(x: T) -> T {
  let t = tgelu_tanh(x);
  let du = T(0.7978845608028654) * (T(1.0) + T(3.0 * 0.044715) * x * x);
  return T(0.5) * (T(1.0) + t) + T(0.5) * x * (T(1.0) - t * t) * du;
}
"""

BINARY = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b",
    "pow": "tpow(a, b)",
    "maximum": "select(max(a, b), T(f32_nan()), isn(a) | isn(b))",
    "minimum": "select(min(a, b), T(f32_nan()), isn(a) | isn(b))",
    "atan2": "tatan2(a, b)",     # elementwise math
}

# the binary ops that also take int32 operands (ops.INT_BINARY): WGSL's i32 arithmetic wraps
BINARY_I32 = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "maximum": "max(a, b)",
    "minimum": "min(a, b)",
}

# elementwise math: the integer bitwise ops on i32 words (a shift by b outside [0, 32): 0 to
# the left, the sign to the right, as PyTorch's for int32)
BITWISE = {
    "bitwise_and": "a & b", "bitwise_or": "a | b", "bitwise_xor": "a ^ b",
    "shift_left": "select(0, a << u32(b), b >= 0 && b < 32)",
    "shift_right": "select(a >> 31u, a >> u32(b), b >= 0 && b < 32)",
}

COMPARE = {
    "eq": "a == b", "ne": "a != b", "lt": "a < b",
    "le": "a <= b", "gt": "a > b", "ge": "a >= b",
}
# float comparisons with NaN made explicit (see wgsl.FLOAT_FNS): any NaN -> false, ne -> true
COMPARE_F32 = {op: f"({e}) & !(isn(a) | isn(b))" for op, e in COMPARE.items()}
COMPARE_F32["ne"] = "(a != b) | isn(a) | isn(b)"

WHERE = "select(c, b, (a != T(0.0)) | isn(a))"

# i32 expressions that are the same on vec4<i32> (int arithmetic and copies of i32 words:
# int32 / int64's max, min and unchecked ops, every narrow int and bool copied as is)
V4_INT = {"a", "a + b", "a - b", "a * b", "max(a, b)", "min(a, b)"}
# expressions over f32 and i32 words that are the same on vec4s (T and IT: a compare into
# bool, where on a bool condition), whatever the operands' storage (the kernels add them)
V4_ANY = set()

# ops whose snippet only works on scalars
SCALAR_ONLY = {"tpow", "tsin", "tatan2", *casts.SCALAR_ONLY}

# sin / cos without the driver's own range reduction (GPUs' fast sin is accurate only near
# [-pi, pi]; lavapipe's gives -1 for sin(1e30)): x = k * pi/2 + r with |r| <= pi/4, where
# the driver's sin and cos are accurate, and the quadrant k mod 4 picks sin / cos / signs.
# |x| <= 1e5: Cody-Waite, pi/2 in 8-bit pieces so every k * piece is exact. Beyond:
# Payne-Hanek, the 24-bit mantissa times the 96 bits of 2/pi around the binary point
# (2/pi's bits in TWO_OVER_PI, 32 per word), in 16-bit halves (WGSL has no u64).
TSIN = """
const TWO_OVER_PI = array<u32, 10>(0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
  0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u);
fn bits_of_two_over_pi(pos: i32) -> u32 {    // its bits pos+1 .. pos+32 (bit 1 = 1/2)
  if (pos <= -32) { return 0u; }
  if (pos < 0) { return TWO_OVER_PI[0] >> u32(-pos); }
  let w = u32(pos) / 32u;
  let sh = u32(pos) % 32u;
  if (sh == 0u) { return TWO_OVER_PI[w]; }
  return (TWO_OVER_PI[w] << sh) | (TWO_OVER_PI[w + 1u] >> (32u - sh));
}
fn tsin(x: f32, shift: u32) -> f32 {          // sin(x), or cos(x) = sin(x + pi/2) when shift = 1
  let ax = abs(x);
  if (!(ax <= 3.4e38)) { return f32_nan(); }   // nan, +-inf (tested on the bits: see isnan1)
  var q: u32;
  var r: f32;
  if (ax <= 1e5) {
    let k = round(ax * 0.63661975);
    r = select(((ax - k * 1.5703125) - k * 4.825592e-4) - k * 1.2665987e-6 - k * 9.920936e-10,
               ax, k == 0.0);
    q = u32(k);
  } else {
    let bits = bitcast<u32>(ax);
    let m = (bits & 0x7fffffu) | 0x800000u;
    let s = i32(bits >> 23u) - 152;           // ax = m * 2^(s + 2); bits before s+1 give multiples of 4
    let p2 = mul_wide(m, bits_of_two_over_pi(s));
    let p1 = mul_wide(m, bits_of_two_over_pi(s + 32));
    let p0 = mul_wide(m, bits_of_two_over_pi(s + 64));
    let l1 = p0.x + p1.y;
    let c1 = select(0u, 1u, l1 < p0.x);
    let l2 = p1.x + p2.y + c1;                 // bits 64..95: the quadrant is its top 2 bits
    q = l2 >> 30u;
    var fh = (l2 << 2u) | (l1 >> 30u);        // the fraction of a turn's quarter, 64 bits
    var fl = (l1 << 2u) | (p0.y >> 30u);
    var sign = 1.0;
    if ((fh >> 31u) == 1u) {                  // past a half: the next quadrant, r negative
      q = q + 1u;
      fh = ~fh; fl = ~fl + 1u;
      fh = fh + select(0u, 1u, fl == 0u);
      sign = -1.0;
    }
    r = sign * (f32(fh) * 2.3283064e-10 + f32(fl) * 5.421011e-20) * 1.5707964;
  }
  let quadrant = (q + shift) & 3u;            // cos(|x|) = sin(|x| + pi/2); cos is even
  // sin(r) rounds to r below 2^-12 (some GPUs' fast sin flushes tiny r to 0)
  let sin_r = select(sin(r), r, abs(r) < 2.4414062e-4);
  var y = select(sin_r, cos(r), (quadrant & 1u) == 1u);
  if (quadrant >= 2u) { y = -y; }
  let negative = (bitcast<u32>(x) >> 31u) == 1u;   // (-0.0 too: sin(-0) = -0)
  return select(y, -y, negative && shift == 0u);
}
"""

# atan2 written out (lavapipe's atan2 is 4e-6 off at (inf, inf) and wrong on NaN, zeros and
# infinities): atan of t = min / max of |a|, |b| by Cephes' atanf (reduction at tan(pi/8) and
# tan(3pi/8), an odd degree-9 polynomial: 2 ulp), then the quadrant from the sign bits (so
# atan2(+-0, -0) is +-pi, as C's)
TATAN2 = """
fn tatan_pos(x: f32) -> f32 {
  var y = 0.0;
  var z = x;
  if (x > 2.414213562373095) {
    y = 1.5707963267948966;
    z = -1.0 / x;
  } else if (x > 0.41421356237309503) {
    y = 0.7853981633974483;
    z = (x - 1.0) / (x + 1.0);
  }
  let s = z * z;
  return y + ((((8.05374449538e-2 * s - 1.38776856032e-1) * s + 1.99777106478e-1) * s
    - 3.33329491539e-1) * s * z + z);
}
fn tatan2(a: f32, b: f32) -> f32 {
  if (isnan1(a) || isnan1(b)) { return f32_nan(); }
  let ya = abs(a);
  let xb = abs(b);
  var r: f32;
  if (ya == f32_inf() && xb == f32_inf()) {
    r = 0.7853981633974483;
  } else if (ya == 0.0 && xb == 0.0) {
    r = 0.0;
  } else {
    r = tatan_pos(ya / xb);
  }
  if ((bitcast<u32>(b) & 0x80000000u) != 0u) { r = 3.141592653589793 - r; }
  return select(r, -r, (bitcast<u32>(a) & 0x80000000u) != 0u);
}
"""

TPOW = """
fn tpow(a: f32, b: f32) -> f32 {
  // NumPy's float power: exact 1 for b == 0, signs for integral b, NaN otherwise
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (isnan1(a) || isnan1(b)) { return f32_nan(); }
  let m = abs(a);
  if (m == 1.0 && abs(b) == f32_inf()) { return 1.0; }   // C99: pow(-1, +-inf) == 1
  var r: f32;
  if (m == 0.0) {
    r = select(0.0, f32_inf(), b < 0.0);
  } else if (m == f32_inf()) {
    r = select(f32_inf(), 0.0, b < 0.0);
  } else {
    // subnormals through 2^23 / 2^-64 factors: lavapipe's log2 and exp2 flush them
    // ((1e-45) ** 0.5 was 7.7e-20, (1e-38) ** 1 was 0)
    let e = b * select(log2(m), log2(m * 8388608.0) - 23.0, m < 1.17549435e-38);
    r = select(exp2(e), exp2(e + 64.0) * 5.421010862427522e-20, e < -126.0);
  }
  let odd = floor(b) == b && abs(b) < 16777216.0 && fract(b * 0.5) != 0.0;
  if ((bitcast<u32>(a) & 0x80000000u) != 0u) {                  // a < 0, also -0 and -inf
    if (floor(b) != b && m != f32_inf() && m != 0.0) { return f32_nan(); }
    if (odd) { r = -r; }                                         // C99: the sign survives
  }                                                              // only for odd integer b
  return r;
}
"""


# copy between dtypes (ops.py's cast rule): casts.cast gives the expression per pair of
# codes (f32 -> i32 truncates toward zero, saturates to int32's range, NaN -> 0: Rust's
# `as`, as on simd; WGSL's own i32(f32) clamps to 2147483520 and leaves NaN undefined)
CAST = {"i32": casts.cast("f32", "i32")[0], "f32": casts.cast("i32", "f32")[0]}


def overflow_tag(gpu, op):
    """The status tag of an int64 op's overflow check (casts.py: the int64 rule)."""
    return gpu.new_tag(op, casts.INT64_OVERFLOW, OverflowError, shared=True)


def binary(gpu, op, out, ins, *, buffers):
    """Encode binary op `op` (ops.py's add ... minimum) of out's dtype: f32 words, or i32
    words (int64's add / sub / mul checked for overflow, narrow ints narrowed: casts.py)."""
    if wgsl.storage(out.dtype) == "f32":
        run(gpu, op, BINARY[op], out, ins, buffers=buffers)
        return
    expr, checked = casts.int_binary(op, out.dtype, BINARY_I32[op])
    run(gpu, op, expr, out, ins, buffers=buffers,
        extra=(overflow_tag(gpu, op),) if checked else ())


def collapse(shape, strides_list):
    """Drop size-1 dims and merge dims that are contiguous in every operand."""
    dims = [(n, [s[d] for s in strides_list]) for d, n in enumerate(shape) if n != 1]
    if not dims:
        return (1,), [(0,) for _ in strides_list]
    merged = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = merged[-1]
        if all(ps == s * n for ps, s in zip(pst, st)):
            merged[-1] = (pn * n, st)
        else:
            merged.append((n, st))
    shape = tuple(n for n, _ in merged)
    strides = [tuple(st[k] for _, st in merged) for k in range(len(strides_list))]
    return shape, strides


def prelude(text, v4):
    """The WGSL an elementwise program over expression `text` needs before its body: the
    helper functions the text calls, and the T / UT / BT aliases (vec4 ones when v4)."""
    src = ""
    for name, snippet in (("tpow", TPOW), ("tsin", TSIN), ("tgelu", TGELU), ("ttanh", TTANH),
                          ("texp", TEXP), ("tlog", TLOG), ("tatan2", TATAN2)):
        if name in text:
            src += snippet
    src += casts.prelude(text + (" mul_wide" if "tsin" in text else ""))   # (tsin's too)
    src += f"alias T = {'vec4<f32>' if v4 else 'f32'};\n"
    src += f"alias UT = {'vec4<u32>' if v4 else 'u32'};\n"
    src += f"alias BT = {'vec4<bool>' if v4 else 'bool'};\n"
    src += f"alias IT = {'vec4<i32>' if v4 else 'i32'};\n"
    src += "fn isn(x: T) -> BT { return (bitcast<UT>(x) & UT(0x7fffffffu)) > UT(0x7f800000u); }\n"
    return src


def opaque_fn(zero_word):
    """WGSL `opaque`: x XOR a parameter word that is 0, so no shader compiler contracts
    one fused stage's multiply into the next stage's add (the bits stay the eager ones)."""
    return f"fn opaque(x: T) -> T {{ return bitcast<T>(bitcast<UT>(x) ^ UT({zero_word})); }}\n"


def stage_fn(s, expr, extra_words, nin):
    """WGSL `stage{s}` over T of a fused run's stage `expr` with `nin` inputs (a, b, c),
    its {p0}, {p1}, ... placeholders read from the parameter words `extra_words`."""
    for q, word in enumerate(extra_words):
        expr = expr.replace(f"{{p{q}}}", word)
    args = ", ".join(f"{name}: T" for name in "abc"[:nin])
    return f"fn stage{s}({args}) -> T {{ return {expr}; }}\n"


def operand_indices(scheme, nops, k):
    """Element index expressions of `nops` operands under `scheme` ("v4" / "c": a base word
    each, "sN": the N dims, then a base and N strides each), their parameter words from
    word k on -> (statements that unravel i into c0..cN-1, the indices, the next word)."""
    if scheme in ("v4", "c"):
        return [], [f"{par(k + j)} + i" for j in range(nops)], k + nops
    ndim = int(scheme[1:])
    dims = [par(k + d) for d in range(ndim)]
    k += ndim
    idx = []
    for _ in range(nops):
        idx.append(" + ".join([par(k)] + [f"c{d} * {par(k + 1 + d)}" for d in range(ndim)]))
        k += 1 + ndim
    unravel = ["var r = i;"] + [f"let c{d} = r % {dims[d]}; r = r / {dims[d]};"
                                for d in range(ndim - 1, 0, -1)] + ["let c0 = r;"]
    return unravel, idx, k


def _build(expr, out_t, in_ts, scheme, nextra):
    """WGSL source for one (expression, dtypes, scheme)."""
    names = "abc"[:len(in_ts)]
    v4 = scheme == "v4"
    vt = {"f32": "v4", "i32": "v4i", "f16": "v4h"}
    bind = [("O", vt[out_t] if v4 else out_t)] + [(n.upper(), vt[t] if v4 else t)
                                             for n, t in zip(names, in_ts)]
    half = "vec4<f16>" if v4 else "f16"     # (native float16: loaded into f32, stored back)
    src = wgsl.header(bind) + wgsl.FLOAT_FNS + prelude(expr, v4)
    body = [wgsl.linear_id(), f"let n = {par(0)};", "if (i >= n) { return; }"]
    nin = len(in_ts)
    unravel, idx, k = operand_indices(scheme, nin + 1, 1)
    body += unravel
    extra = [par(k + e) for e in range(nextra)]
    for j, (name, t) in enumerate(zip(names, in_ts)):
        load = f"{name.upper()}[{idx[j + 1]}]"
        body.append(f"let {name} = {f'T({load})' if t == 'f16' else load};")
    e = expr
    for q, p in enumerate(extra):
        e = e.replace(f"{{p{q}}}", p)
    body.append(f"O[{idx[0]}] = {f'{half}({e})' if out_t == 'f16' else e};")
    src += wgsl.entry() + "  " + "\n  ".join(body) + "\n}\n"
    return src, nin + 1


def run(gpu, opname, expr, out, ins, *, buffers, extra=(), vec_ok=True):
    """Encode ``out = expr(ins...)`` (views; buffers(view) -> (buffer, element base))."""
    views = (out,) + tuple(ins)
    bufs, bases = [], []
    for v in views:
        b, base = buffers(v)
        bufs.append(b)
        bases.append(base)
    # steady state: the plan for this (op, geometry) is cached; only the bases change
    key = (expr, out.shape, tuple([v.strides for v in views]), tuple([v.dtype for v in views]),
           all(b % 4 == 0 for b in bases), len(extra), vec_ok)
    plans = gpu.plans      # per device: (expr, geometry, alignment) -> program + word template
    plan = plans.get(key)
    if plan is None:
        if len(plans) > 4096:
            plans.clear()
        plan = plans[key] = _plan(gpu, expr, views, out.shape, bases, extra, vec_ok)
    prog, template, slots, div, groups = plan
    if prog is None:
        if template == "empty":
            return
        shape, strides = collapse(out.shape, [v.strides for v in views])
        return _encode(gpu, opname, expr, views, bufs, bases, shape, strides, extra, vec_ok)
    words = list(template)
    for slot, b in zip(slots, bases):
        words[slot] = b // div
    words.extend(extra)
    gpu.dispatch(prog, bufs, words, groups)


def _plan(gpu, expr, views, shape0, bases, extra, vec_ok):
    """(program, word template, base slots, base divisor, grid) for one geometry."""
    n = 1
    for s in shape0:
        n *= s
    if n == 0:
        return None, "empty", None, None, None
    shape, strides = collapse(shape0, [v.strides for v in views])
    if len(shape) > MAX_DIMS:
        return None, "split", None, None, None
    dtypes = tuple(gpu.storage[v.dtype] for v in views)
    scheme, words, count = _scheme(expr, dtypes, shape, strides, bases, vec_ok)
    slots = [1 + j for j in range(len(views))] if scheme in ("v4", "c") else \
        [1 + len(shape) + j * (1 + len(shape)) for j in range(len(views))]
    key = ("ew", expr, dtypes, scheme, len(extra))
    prog = gpu.program(key, lambda: _build(expr, dtypes[0], dtypes[1:], scheme, len(extra)))
    return (prog, words, slots, 4 if scheme == "v4" else 1,
            wgsl.grid(-(-count // WG), gpu.max_groups))


def _scheme(expr, dtypes, shape, strides, bases, vec_ok):
    n = 1
    for s in shape:
        n *= s
    contiguous = len(shape) == 1 and all(s[0] == 1 for s in strides)
    if (contiguous and vec_ok and n % 4 == 0 and all(b % 4 == 0 for b in bases) and (
            (all(d in ("f32", "f16") for d in dtypes) and
             not any(f in expr for f in SCALAR_ONLY))
            or (expr in V4_INT and all(d == "i32" for d in dtypes)) or expr in V4_ANY)):
        return "v4", [n // 4] + [b // 4 for b in bases], n // 4
    if contiguous:
        return "c", [n] + list(bases), n
    words = [n] + list(shape)
    for b, s in zip(bases, strides):
        words.append(b)
        words.extend(s)
    return f"s{len(shape)}", words, n


def _encode(gpu, opname, expr, views, bufs, bases, shape, strides, extra, vec_ok):
    if len(shape) > MAX_DIMS:   # rare: peel the leading dim off in a host loop
        for j in range(shape[0]):
            _encode(gpu, opname, expr, views, bufs,
                    [b + j * s[0] for b, s in zip(bases, strides)], shape[1:],
                    [s[1:] for s in strides], extra, vec_ok)
        return
    dtypes = tuple(gpu.storage[v.dtype] for v in views)
    scheme, words, count = _scheme(expr, dtypes, shape, strides, bases, vec_ok)
    words.extend(extra)
    key = ("ew", expr, dtypes, scheme, len(extra))
    prog = gpu.program(key, lambda: _build(expr, dtypes[0], dtypes[1:], scheme, len(extra)))
    gpu.dispatch(prog, bufs, words, wgsl.grid(-(-count // WG), gpu.max_groups))
