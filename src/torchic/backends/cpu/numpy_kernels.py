"""The `workers` kernel table: one NumPy function per primitive op (ops.py).

Each kernel takes NumPy arrays that alias the heap, ``kernel(out, inputs, params)``,
and writes ``out`` in place. They run on the coordinator or worker threads,
never on the calling thread. ``SPLIT`` says how a large op is cut into row
ranges for the worker threads (``None``: run whole on one thread); it is derived
from the ``split`` field of each op's row in ops.py.
"""

import math

import numpy as np

from ... import ops
from ...dtypes import from_float32, to_float32


def _unary(fn):
    def kernel(out, ins, params):
        fn(ins[0], out=out)
    return kernel


def _relu(a, out):
    np.maximum(a, np.float32(0), out=out)


def _negative(a, out):
    """-a, as a product by -1 (the same bits: signed zeros, NaN's sign, ints wrapping):
    NumPy 2.4's float32 np.negative writes a strided `out` wrongly on AVX-512 (np.negative
    (x[:, 1], out=y[:, 2]) stored row 0's input neighbours), and lstm_cell's sigmoid
    writes into column slices."""
    np.multiply(a, -1, out=out)


def _sigmoid(a, out):
    # 1 / (1 + exp(-a)); exp overflow to inf gives the right limit 0
    _negative(a, out)
    np.exp(out, out=out)
    out += np.float32(1)
    np.reciprocal(out, out=out)


def _binary(fn):
    def kernel(out, ins, params):
        fn(ins[0], ins[1], out=out)
    return kernel


def _shift(left):
    """PyTorch's shifts: a shift by b outside [0, width) gives 0 (left) or the sign (right)."""
    def kernel(out, ins, params):
        a, b = ins
        width = a.dtype.itemsize * 8
        inside = (b >= 0) & (b < width)
        s = np.where(inside, b, 0).astype(a.dtype)
        if left:
            np.copyto(out, np.where(inside, np.left_shift(a, s), 0))
        else:
            np.copyto(out, np.where(inside, np.right_shift(a, s), np.right_shift(a, width - 1)))
    return kernel


def _compare(fn):
    def kernel(out, ins, params):
        fn(ins[0], ins[1], out=out, casting="unsafe")
    return kernel


def fill(out, ins, params):
    value = params["value"]
    out[...] = from_float32(value) if out.dtype == np.uint16 else value   # (uint16: bf16 bits)


_BF16 = np.dtype(np.uint16)     # the one uint16 host dtype: bfloat16's bits (dispatcher.DTYPES)
_SATURATE = {np.dtype(np.int32): np.int32}      # float -> these saturate at their own range


def copy(out, ins, params):
    """The copy op's cast (its row in ops.py), on the host arrays' dtypes (uint16: bf16)."""
    a = ins[0]
    if a.dtype == out.dtype:
        np.copyto(out, a)
        return
    if a.dtype == _BF16:
        a = to_float32(a)
    if out.dtype == _BF16:
        out[...] = from_float32(a)
    elif out.dtype.kind == "b":
        np.not_equal(a, 0, out=out)
    elif a.dtype.kind == "f" and out.dtype.kind in "iu":
        # float -> int as on every backend (Rust's `as`): truncate toward zero, saturate to
        # int32's range for int32, int64's for the others (u8 / i8 / i16 then wrap), NaN -> 0
        # (NumPy's own cast leaves these undefined)
        wide = np.dtype(_SATURATE.get(out.dtype, np.int64))
        r = out if out.dtype == wide else np.empty(out.shape, wide)
        info = np.iinfo(wide)
        edge = np.float64(2.0 ** (info.bits - 1))       # (exact; float16 compares widened)
        with np.errstate(invalid="ignore"):
            np.copyto(r, a, casting="unsafe")                  # truncates; the rest fixed:
        np.copyto(r, info.max, where=a >= edge)
        np.copyto(r, info.min, where=a < -edge)
        np.copyto(r, 0, where=np.isnan(a))
        if r is not out:
            np.copyto(out, r, casting="unsafe")               # (u8 / i8 / i16: wraps)
    else:
        np.copyto(out, a, casting="unsafe")


def where(out, ins, params):
    cond, a, b = ins
    np.copyto(out, b)
    np.copyto(out, a, where=cond)


def _axes(a, params):
    n = params["naxes"]
    return tuple(range(a.ndim - n, a.ndim))


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def reduce_sum(out, ins, params):
    a = ins[0]
    np.sum(a, axis=_axes(a, params), out=out)


def reduce_max(out, ins, params):
    a = ins[0]
    np.max(a, axis=_axes(a, params), out=out, initial=_lowest(a.dtype))


def reduce_min(out, ins, params):
    a = ins[0]
    np.min(a, axis=_axes(a, params), out=out, initial=_highest(a.dtype))


def argmax(out, ins, params):
    np.copyto(out, np.argmax(ins[0], axis=-1), casting="unsafe")


def max_pool_index(out, ins, params):
    """The first maximum of each (kh, kw) window of a (N, C, Ho, Wo, kh, kw) view, as its
    element offset in its (n, c) plane (ops.py's contract)."""
    a = ins[0]
    if not out.size:
        return
    n, c, ho, wo, kh, kw = a.shape
    s = [st // a.itemsize for st in a.strides]
    win = a.reshape(n, c, ho, wo, kh * kw)
    nan = np.isnan(win)
    k = np.where(nan.any(-1), kh * kw - 1 - np.argmax(nan[..., ::-1], -1), np.argmax(win, -1))
    ki, kj = np.divmod(k, kw)
    pos = (np.arange(ho)[:, None] * s[2] + np.arange(wo)[None, :] * s[3]) + ki * s[4] + kj * s[5]
    np.copyto(out, pos, casting="unsafe")


def col2im(out, ins, params):
    """Columns (R1, R2, kh, kw, La) summed into rows (R1, R2, L), (ki, kj) shifted by
    ki * row_step + kj * col_step (ops.py's contract)."""
    a = ins[0]
    out[...] = 0
    length, la = out.shape[-1], a.shape[-1]
    for ki in range(a.shape[2]):
        for kj in range(a.shape[3]):
            shift = ki * params["row_step"] + kj * params["col_step"]
            hi = min(length, shift + la)
            if shift < hi:
                out[..., shift:hi] += a[:, :, ki, kj, :hi - shift]


def _shifted(a):
    """a - rowmax(a) in a new array of a's dtype."""
    return a - a.max(axis=1, keepdims=True)


def softmax(out, ins, params):
    if out.shape[1] == 0:
        return
    np.exp(_shifted(ins[0]), out=out)
    out /= out.sum(axis=1, keepdims=True)


def log_softmax(out, ins, params):
    if out.shape[1] == 0:
        return
    shifted = _shifted(ins[0])
    np.subtract(shifted, np.log(np.exp(shifted).sum(axis=1, keepdims=True)), out=out)


def _check_index(idx, bound, what):
    if idx.size and (idx.min() < 0 or idx.max() >= bound):
        bad = idx[(idx < 0) | (idx >= bound)][0]
        raise IndexError(f"{what} {int(bad)} is out of range [0, {bound})")


def _targets(target, classes, params):
    """(target, rows to ignore or None), every other target checked against [0, C).

    The bounds check's min / max also tell whether ignore_index can occur (it cannot
    outside them: the usual -100 with valid targets), so that case adds no pass. An
    ignored row's target becomes class 0, a stand-in whose result the caller zeroes."""
    ignore = params.get("ignore_index") if params else None
    if not target.size:
        return target, None
    lo, hi = int(target.min()), int(target.max())
    if ignore is not None and lo <= ignore <= hi:
        hit = target == ignore
        _check_index(target[~hit], classes, "target class")
        return np.where(hit, 0, target), hit
    if lo < 0 or hi >= classes:
        _check_index(target, classes, "target class")
    return target, None


def cross_entropy(out, ins, params):
    logits, target = ins
    rows, classes = logits.shape
    target, ignored = _targets(target, classes, params)
    loss = out if out.ndim == 1 else out[:, 0]
    if classes:
        m = logits.max(axis=1, keepdims=True)
        # (max - x[t]) + log(sum exp(x - max)): the large terms cancel first, so equal
        # logits of 1e30 still give log C (logsumexp(x) - x[t] would round away log C)
        loss[...] = (m[:, 0] - logits[np.arange(rows), target]) + \
            np.log(np.exp(logits - m).sum(axis=1))
    else:       # (only reached when every row is ignored)
        loss[...] = 0
    if ignored is not None:
        loss[ignored] = 0
    if out.ndim == 2:     # the mean's count column
        out[:, 1] = 1 if ignored is None else ~ignored


def cross_entropy_grad(out, ins, params):
    logits, target, g = ins
    rows, classes = logits.shape
    target, ignored = _targets(target, classes, params)
    if classes == 0:
        return
    softmax(out, (logits,), params)
    out[np.arange(rows), target] -= 1
    out *= g[:, None]
    if ignored is not None:
        out[ignored] = 0      # whatever g is (an all-ignored mean's g is 1 / 0)


def matmul(out, ins, params):
    np.matmul(ins[0], ins[1], out=out)


def matmul_bias(out, ins, params):
    np.matmul(ins[0], ins[1], out=out)
    np.add(out, ins[2], out=out)


def gather_rows(out, ins, params):
    table, idx = ins
    _check_index(idx, table.shape[0], "index")
    np.take(table, idx, axis=0, out=out)


def scatter_add_rows(out, ins, params):
    src, idx = ins
    _check_index(idx, out.shape[0], "index")
    np.add.at(out, idx, src)


# -- fused transformer ops ----------------------------------------------------------------
# Phi(x), the normal cdf, as erfc(|x| / sqrt 2) / 2 for x < 0 and 1 - that above, with
# erfc(z) = t Q(t) e^(-z^2), t = 1 / (1 + z / 2): Q is our own fit of erfc(z) e^(z^2) / t
# (weighted least squares toward the minimax relative error, t in [1 / 5.7, 1], i.e.
# z <= 9.4, past which e^(-z^2) underflows float32; relative error 4.2e-8 exactly, 2.2e-7
# evaluated in float32). The gradient's pdf is the same e^(-z^2) over sqrt(2 pi): one exp
# serves both. simd (norm.rs ERFC_Q) and webgpu (elementwise.TGELU) use the same fit in
# float32; float64 is exact (math.erfc).
ERFC_Q = (2.8208799386e-01, 2.8234801194e-01, 2.4330023937e-01, 2.0191651320e-01,
          -2.4819101408e-02, 2.7546227992e-01, -4.8493625602e-01, 2.8348731445e-01,
          -5.8847037331e-02)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _cdf_gauss(x, with_gauss=True):
    """(Phi(x), e^(-x^2 / 2)) in x's dtype: the fit above in float32; math.erfc's in
    float64 (full precision: float64 is checked against float64 references), where the
    exp is taken only `with_gauss` (the gradient's pdf; the fit needs it anyway)."""
    F = x.dtype.type
    if x.dtype == np.float64:
        cdf = 0.5 * np.asarray(_ERFC(x * -0.7071067811865476)).astype(np.float64)
        return cdf, np.exp(-0.5 * x * x) if with_gauss else None
    gauss = np.exp(F(-0.5) * x * x)
    z = np.abs(x) * F(0.7071067811865476)
    t = F(1) / (F(1) + F(0.5) * z)
    q = F(ERFC_Q[-1])
    for c in ERFC_Q[-2::-1]:
        q = q * t + F(c)
    e = F(0.5) * t * q * gauss
    return np.where(x < 0, e, F(1) - e), gauss


def _tanh_inner(x):
    F = x.dtype.type
    return np.tanh(F(0.7978845608028654) * (x + F(0.044715) * x * x * x))


def gelu(out, ins, params):
    x = ins[0]
    np.multiply(x, _cdf_gauss(x, with_gauss=False)[0], out=out)


def gelu_tanh(out, ins, params):
    x = ins[0]
    F = x.dtype.type
    np.multiply(F(0.5) * x, F(1) + _tanh_inner(x), out=out)


def gelu_grad(out, ins, params):
    x, g = ins
    cdf, gauss = _cdf_gauss(x)
    np.multiply(g, cdf + x * (gauss * x.dtype.type(0.3989422804014327)), out=out)


def gelu_tanh_grad(out, ins, params):
    x, g = ins
    F = x.dtype.type
    t = _tanh_inner(x)
    du = F(0.7978845608028654) * (F(1) + F(3 * 0.044715) * x * x)
    np.multiply(g, F(0.5) * (F(1) + t) + F(0.5) * x * (F(1) - t * t) * du, out=out)


def _normalized(x, eps):
    """(xhat, rstd (R, 1)) of each row of x, mean and biased variance in two passes."""
    centered = x - x.mean(axis=1, keepdims=True, dtype=x.dtype)
    rstd = 1 / np.sqrt((centered * centered).mean(axis=1, keepdims=True) + x.dtype.type(eps))
    return np.multiply(centered, rstd, out=centered), rstd


def layer_norm(out, ins, params):
    x, w, b = ins
    if out.size:
        xhat, _ = _normalized(x, params["eps"])
        np.add(xhat * w, b, out=out)


def layer_norm_grad(out, ins, params):
    """out (R, C): dx; out (2, R, C): dx, then g * xhat (the weight gradient's rows)."""
    x, w, g = ins
    if out.size:
        xhat, rstd = _normalized(x, params["eps"])
        gw = g * w
        mp, q = gw.mean(axis=1, keepdims=True), gw * xhat
        mq = q.mean(axis=1, keepdims=True)
        # rstd * (gw - mean(gw) - xhat * mean(gw xhat)), in place in the temporaries
        np.subtract(gw, mp, out=gw)
        np.subtract(gw, np.multiply(xhat, mq, out=q), out=gw)
        np.multiply(rstd, gw, out=out[0] if out.ndim == 3 else out)
        if out.ndim == 3:
            np.multiply(g, xhat, out=out[1])


def causal_softmax(out, ins, params):
    a = ins[0]
    _, tq, tk = a.shape
    keep = np.tri(tq, tk, params["diagonal"], dtype=bool)
    if out.size:    # masked columns: exp(-inf - max) = 0; a row with none kept: NaN
        np.copyto(out, np.where(keep, a, -np.inf))
        rows = out.reshape(-1, tk)
        softmax(rows, (rows,), params)


def softmax_grad(out, ins, params):
    """y * (g - rowsum(g * y)): softmax's gradient from its output y (the row sum in y's dtype,
    as softmax's own)."""
    y, g = ins
    np.subtract(g, (g * y).sum(axis=1, keepdims=True), out=out)
    out *= y


# -- dropout: x times a mask from Threefry-2x32, 20 rounds (Salmon et al. 2011), in uint32
# lanes, both output words used (flat index i: word i & 1 of counter (i >> 1, 0)); the simd
# (kernels/src/dropout.rs) and webgpu (webgpu/dropout.py) kernels compute the same bits
THREEFRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
THREEFRY_PARITY = 0x1BD11BDA
_MASK_CHUNK = 1 << 18      # elements per pass (even; keeps the uint32 temporaries in cache)


def threefry2x32_words(k0, k1, c0, c1=0):
    """(word 0, word 1) of threefry2x32_20(key (k0, k1), counter (c0, c1)) for a uint32 array
    c0 (c1: an int, or a uint32 array of c0's shape)."""
    ks = (k0, k1, k0 ^ k1 ^ THREEFRY_PARITY)
    x0 = c0 + np.uint32(ks[0])
    x1 = np.empty_like(x0)
    x1[...] = c1
    x1 += np.uint32(ks[1])
    t = np.empty_like(x0)
    for r in range(20):
        x0 += x1
        rot = THREEFRY_ROTATIONS[r % 8]
        np.left_shift(x1, rot, out=t)
        x1 >>= 32 - rot
        x1 |= t
        x1 ^= x0
        if r % 4 == 3:      # key injection s after every 4 rounds (the 5th after round 20)
            s = r // 4 + 1
            x0 += np.uint32(ks[s % 3])
            x1 += np.uint32((ks[(s + 1) % 3] + s) & 0xFFFFFFFF)
    return x0, x1


def dropout(out, ins, params):
    """out = x * mask, the mask (scale or 0.0 by flat index) made a chunk at a time, one
    Threefry evaluation per pair of elements (2j, 2j + 1)."""
    x, key = ins
    k0, k1 = (int(w) & 0xFFFFFFFF for w in key)
    threshold, scale = np.uint32(params["threshold"]), out.dtype.type(params["scale"])
    flat, xf = out.reshape(-1), x.reshape(-1)      # (a strided x: copied in row-major order)
    for lo in range(0, flat.size, _MASK_CHUNK):    # (lo even: a chunk starts on a pair)
        hi = min(lo + _MASK_CHUNK, flat.size)
        words = threefry2x32_words(k0, k1, np.arange(lo >> 1, (hi + 1) >> 1, dtype=np.uint32))
        keep = np.empty((words[0].size, 2), bool)   # element 2j + w <- word w of pair j
        for w, word in enumerate(words):
            word >>= 8
            np.greater_equal(word, threshold, out=keep[:, w])
        mask = np.multiply(keep.reshape(-1)[:hi - lo], scale, dtype=out.dtype)
        np.multiply(xf[lo:hi], mask, out=flat[lo:hi])


def adam_update(out, ins, params):
    """ops.py's adam_update: out (the parameter), m and v updated in place, in NumPy
    arithmetic of their dtype in the row's order (the simd and webgpu kernels give the same
    bits in float32)."""
    g, m, v, s = ins
    beta1, c1, beta2, c2, eps, inv_sqrt_bc2, neg_step, decay, l2, maximize = s.tolist()
    f = out.dtype.type
    if maximize != 0.0:
        g = -g
    if l2 != 0.0:
        g = g + out * f(l2)
    if decay != 1.0:
        out *= f(decay)
    m *= f(beta1)
    m += g * f(c1)
    v *= f(beta2)
    v += (g * g) * f(c2)
    denom = np.sqrt(v, out=np.empty_like(v))     # (an array even when 0-d)
    denom *= f(inv_sqrt_bc2)
    denom += f(eps)
    np.divide(m, denom, out=denom)
    denom *= f(neg_step)
    out += denom


# lstm cell (issue 42): one LSTM step each way, in the composite's order of operations
def lstm_cell(out, ins, params):
    """ops.py's lstm_cell: the gates' activations into a, the new cell into s[:, 1], the
    hidden state into out."""
    x, r, a, s = ins
    hs = out.shape[1]
    np.add(x, r, out=a)
    for k in (0, 1, 3):
        _sigmoid(a[:, k * hs:(k + 1) * hs], a[:, k * hs:(k + 1) * hs])
    np.tanh(a[:, 2 * hs:3 * hs], out=a[:, 2 * hs:3 * hs])
    c = s[:, 1]
    np.multiply(a[:, hs:2 * hs], s[:, 0], out=c)
    c += a[:, :hs] * a[:, 2 * hs:3 * hs]
    np.tanh(c, out=out)
    out *= a[:, 3 * hs:]


def lstm_cell_grad(out, ins, params):
    """ops.py's lstm_cell_grad: the gate gradients into out, dc_prev into s[:, 0, 1]."""
    a, s, dh, r = ins
    hs = dh.shape[1]
    one = out.dtype.type(1)
    ai, af, ag, ao = (a[:, k * hs:(k + 1) * hs] for k in range(4))
    d = dh + r
    t = np.tanh(s[:, 1, 0])
    dc = (d * ao) * (one - t * t) + s[:, 1, 1]
    np.multiply(dc, ag * (ai * (one - ai)), out=out[:, :hs])
    np.multiply(dc, s[:, 0, 0] * (af * (one - af)), out=out[:, hs:2 * hs])
    np.multiply(dc, ai * (one - ag * ag), out=out[:, 2 * hs:3 * hs])
    np.multiply(d, t * (ao * (one - ao)), out=out[:, 3 * hs:])
    np.multiply(dc, af, out=s[:, 0, 1])


KERNELS = {
    "neg": _unary(_negative), "exp": _unary(np.exp), "log": _unary(np.log),
    "relu": _unary(_relu), "tanh": _unary(np.tanh), "sigmoid": _unary(_sigmoid),
    "sqrt": _unary(np.sqrt), "abs": _unary(np.abs), "sin": _unary(np.sin), "cos": _unary(np.cos),
    "add": _binary(np.add), "sub": _binary(np.subtract), "mul": _binary(np.multiply),
    "div": _binary(np.divide), "pow": _binary(np.power),
    "maximum": _binary(np.maximum), "minimum": _binary(np.minimum),
    "eq": _compare(np.equal), "ne": _compare(np.not_equal), "lt": _compare(np.less),
    "le": _compare(np.less_equal), "gt": _compare(np.greater), "ge": _compare(np.greater_equal),
    "sum": reduce_sum, "max": reduce_max, "min": reduce_min,
    "fill": fill, "copy": copy, "where": where, "argmax": argmax,
    "softmax": softmax, "log_softmax": log_softmax,
    "cross_entropy": cross_entropy, "cross_entropy_grad": cross_entropy_grad,
    "matmul": matmul, "matmul_bias": matmul_bias, "gather_rows": gather_rows,
    "scatter_add_rows": scatter_add_rows,
    "gelu": gelu, "gelu_tanh": gelu_tanh, "gelu_grad": gelu_grad,
    "gelu_tanh_grad": gelu_tanh_grad, "layer_norm": layer_norm,
    "layer_norm_grad": layer_norm_grad, "causal_softmax": causal_softmax,
    "softmax_grad": softmax_grad,
    "dropout": dropout, "adam_update": adam_update,
    "atan2": _binary(np.arctan2),     # elementwise math
    "bitwise_and": _binary(np.bitwise_and), "bitwise_or": _binary(np.bitwise_or),
    "bitwise_xor": _binary(np.bitwise_xor), "shift_left": _shift(True),
    "shift_right": _shift(False),
    "max_pool_index": max_pool_index, "col2im": col2im,     # convolution / pooling (issue 42)
    "lstm_cell": lstm_cell, "lstm_cell_grad": lstm_cell_grad,     # lstm cell (issue 42)
}


# -- how to cut an op into row ranges for the worker threads ---------------------
def _rows_of_all(out, ins, lo, hi):
    """ops.ROWS: out and every input share axis 0 (elementwise, rowwise)."""
    return out[lo:hi], tuple(a[lo:hi] for a in ins)


def _rows_of_index(out, ins, lo, hi):
    """ops.INDEX_ROWS: only the index (the last input) shares out's axis 0 (gather)."""
    return out[lo:hi], (*ins[:-1], ins[-1][lo:hi])


def _rows_and_weights(out, ins, lo, hi):
    """ops.ROWS_WEIGHTS: out's rows (axis -2: each plane of a (2, R, C) out) and the (R, C)
    inputs' axis 0; the (C,) weights are whole."""
    return out[..., lo:hi, :], tuple(a[lo:hi] if a.ndim == 2 else a for a in ins)


def _rows_but_last(out, ins, lo, hi):
    """ops.ROWS_BUT_LAST: out and every input but the last share axis 0 (adam_update)."""
    return out[lo:hi], (*(a[lo:hi] for a in ins[:-1]), ins[-1])


# op name -> cut function, or None: run whole on one thread (from each op's row in ops.py)
_CUTS = {ops.ROWS: _rows_of_all, ops.INDEX_ROWS: _rows_of_index,
         ops.ROWS_WEIGHTS: _rows_and_weights, ops.ROWS_BUT_LAST: _rows_but_last,
         ops.WHOLE: None}
SPLIT = {op.name: _CUTS[op.split] for op in ops.OPS}


def split_length(op, out):
    """Length of the axis an op is cut along (0 when it cannot be cut)."""
    if SPLIT.get(op) is None or not out.shape:
        return 0
    return out.shape[-2] if SPLIT[op] is _rows_and_weights else out.shape[0]
