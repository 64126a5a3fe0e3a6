"""The closed list of primitive ops: the contract every backend implements.

Everything the frontend can do is built from these ops. A backend is a table
``{op name: kernel}`` covering every name below (``check_backend_table``
enforces that at registration, so a backend cannot silently miss one).

Every operand is a ``View``: a block of the backend's heap plus an element
offset, a shape and element strides (strides may be 0 for broadcast dims or
any sign-free value for transposed / sliced views). The frontend guarantees,
before a kernel is called:

* every view lies inside its block: views are only made from a tensor's own
  block by shape.py's view arithmetic (``reshape_strides``, ``slice_meta``,
  ``permute_meta``, ``broadcast_strides``); the simd backend re-checks every
  record in Rust (kernels/src/record.rs, ``decode_view``);
* ``out`` is contiguous (row-major, offset anywhere in its block) unless the op
  says "strided out";
* ``out`` never overlaps an input, except that an elementwise op (UNARY, BINARY)
  may get ``out`` equal to an input view exactly (same offset, shape and strides:
  the in-place fast path ``a += b``); reading element i before writing element i
  keeps that correct;
* inputs are read-only, except those an op's row lists in ``writes`` (adam_update's
  moment estimates, updated in place; no two operands of such an op overlap);
* inputs of elementwise ops are already broadcast to ``out.shape`` (broadcast
  dims have stride 0);
* dtypes are as the row's ``dtypes`` allows (below; docs/DTYPES.md's compute rules):
  ``raw`` looks every op's operand codes up in ``SIGNATURES`` (``out_dtype``) and refuses
  any other combination with a TypeError naming the op, so a kernel only ever sees the
  combinations its row lists. The frontend computes float16 / bfloat16 in float32 and
  uint8 / int8 / int16 in int64 (``COMPUTE_AS``, raw does it): no row but copy, fill,
  where and gather_rows names them. Bool is in those, in compare's inputs and output and
  where's condition only; raw computes the others in int64 and casts back (max of bools is
  any, a sum or product is or / and, as PyTorch's bool ops; which ones PyTorch allows on
  bool, `-` not, is the api layer's promotion to say).

A row's ``dtypes`` is one or more signatures separated by ``;``: input codes, ``->``,
the output code. A code is one of dispatcher.DTYPES's, or a type class (``CLASSES``):
``F`` = f32 | f64, ``I`` = i32 | i64 (also K: an index), ``N`` = F | I, ``C`` = N | b8,
``X`` = every code. A class letter is a variable: each occurrence of one letter in a
signature is the same code (``N, N -> N``: add of two int64s is int64); a letter with a
digit (``X2``) is another variable of that class (copy, ``X -> X2``, casts any code to
any code).

Each op is declared once, as a row of ``OPS`` below: what it is (name, family,
arity, dtypes, params, contract) and how the passes may treat it, so that no pass
re-learns an op by its name (as tinygrad's ``GroupOp`` sets: a pass asks a property):

* ``split``: how the ``workers`` pool cuts it into ranges of out's axis 0;
* ``cut``: how webgpu's windows cut it into several ops when an operand is larger than
  one storage binding (``CUTS``; windows.py derives its rules from it alone);
* ``fuse``: whether and how a compiled program fuses it with its neighbours (``FUSES``:
  webgpu's fuse.py plans from it; the simd library's own list of fusable ops is checked
  against it when the library loads);
* ``record``: where each param goes in a simd record's header (kernels/src/record.rs);
* ``combine``: the binary op that merges two partial results (reductions cut in pieces);
* ``writes``: the inputs it updates in place.

The family tuples, ``ALL_OPS``, the workers split rule and ``check_backend_table`` are
derived from the rows, and the table at the end of this docstring is printed from them.
Kernel tables are keyed by name.

Kernels that read integer *values* (gather / scatter / cross-entropy targets)
must check them against their bound and fail with an error naming the op;
the failure surfaces at the next read.

Host transfers are not ops but go through the same stream (Backend.write /
Backend.read) so that they are ordered with the ops around them.
"""


from typing import NamedTuple

# how the `workers` pool cuts a large op into ranges of out's axis 0 (ROWS_WEIGHTS: its rows)
ROWS = "rows"               # out and every input share axis 0 (elementwise, rowwise)
INDEX_ROWS = "index rows"   # out shares axis 0 with the last input only (gather: idx rows)
ROWS_WEIGHTS = "rows, whole weights"   # out's rows (its axis -2: layer_norm_grad's (2, R, C)
                                       # planes cut alike) and the (R, C) inputs' axis 0; the
                                       # (C,) weights are passed whole
ROWS_BUT_LAST = "rows, the last input whole"   # out and every input but the last share
                                               # axis 0 (adam_update's scalars are whole)
WHOLE = "whole"             # run whole on one thread

# how webgpu's windows may cut an op into several ops over ranges of one axis, so that
# every operand of each fits a storage binding (backends/webgpu/windows.py)
CUT_ELEMENTWISE = "elementwise"   # every operand has out's shape: along any axis, together
CUT_FLAT = "flat-indexed"   # out and input 0 as CUT_ELEMENTWISE, the others whole; each part
                            # gets params["first"], the flat index of its first element
CUT_LEADING_ROWS = "leading rows"   # every operand has out's shape: along any axis but the
                                    # last (rows stay whole); a part from row r0 of axis -2
                                    # gets params["diagonal"] + r0 (causal_softmax's mask)
CUT_ROWS = "rows"           # every operand along its axis 0 (the rows), rows whole
CUT_ROWS_WEIGHTS = "rows, whole weights"    # 2-d operands along axis 0, 1-d ones whole; a
                                            # (2, R, C) out plane by plane
CUT_ROWS_BUT_LAST = "rows, the last input whole"    # out and inputs but the last along axis 0
CUT_MATMUL = "matmul"       # over batches, rows of a and out, or K (partials added)
CUT_MATMUL_BIAS = "matmul, then an add"     # cut as CUT_MATMUL, then the bias added
CUT_GATHER = "index rows"   # out and the index along axis 0; the table whole
CUT_SCATTER = "source rows"     # the source and the index along axis 0, in order; out whole
CUT_REDUCE = "reduce"       # kept rows, or a reduced axis with partials merged (`combine`)
CUT_ARGMAX = "argmax"       # kept rows, or through contiguous copies of rows
CUTS = (CUT_ELEMENTWISE, CUT_FLAT, CUT_LEADING_ROWS, CUT_ROWS, CUT_ROWS_WEIGHTS,
        CUT_ROWS_BUT_LAST, CUT_MATMUL, CUT_MATMUL_BIAS, CUT_GATHER, CUT_SCATTER, CUT_REDUCE,
        CUT_ARGMAX)
# the workers splits each cut agrees with (both cut the same operands along axis 0)
CUT_SPLITS = {CUT_ELEMENTWISE: {ROWS}, CUT_FLAT: {WHOLE}, CUT_LEADING_ROWS: {ROWS},
              CUT_ROWS: {ROWS}, CUT_ROWS_WEIGHTS: {ROWS_WEIGHTS},
              CUT_ROWS_BUT_LAST: {ROWS_BUT_LAST}, CUT_MATMUL: {WHOLE}, CUT_MATMUL_BIAS: {WHOLE},
              CUT_GATHER: {INDEX_ROWS}, CUT_SCATTER: {WHOLE}, CUT_REDUCE: {ROWS},
              CUT_ARGMAX: {ROWS}}

# whether and how a compiled program fuses an op with its neighbours
STAGE = "stage"             # elementwise (every operand out's shape, element for element):
                            # a stage of a fused run (webgpu fuse.py, simd kernels/src/fuse.rs)
EPILOGUE = "epilogue stage"  # a stage only in a producer's epilogue, where each element's
                             # flat index is known (dropout's counter)
PRODUCER = "producer"       # its kernel applies a run of stages where it stores each element,
                            # addressed by (batch, row, column) (a matmul's tile store)
ROW_PRODUCER = "row producer"   # as PRODUCER, its out (R, C) rows cut into (batch, row) freely
APART = "apart"             # records that touch no element another writes run as one dispatch
NEVER = ""                  # never fused
FUSES = (STAGE, EPILOGUE, PRODUCER, ROW_PRODUCER, APART, NEVER)

# the dtype codes (dispatcher.DTYPES: the same keys) and the type classes of the rows
CODES = ("b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")
CLASSES = {"F": ("f32", "f64"), "I": ("i32", "i64"), "K": ("i32", "i64"),
           "N": ("i32", "i64", "f32", "f64"), "C": ("b8", "i32", "i64", "f32", "f64"),
           "X": CODES}
# the code the frontend computes a code in where a row does not take it (docs/DTYPES.md)
COMPUTE_AS = {"f16": "f32", "bf16": "f32", "u8": "i64", "i8": "i64", "i16": "i64",
              "b8": "i64"}     # (bool: max / min / add / mul, cast back: any / all / or / and)

# a simd record header's slots for params (kernels/src/record.rs): the int64 words i0 and
# i1 (i1's param may be None: i2 is then 0, else 1) and the float64 word "value"
RECORD_SLOTS = ("i0", "i1", "value")


class Op(NamedTuple):
    """One primitive op: everything about it that is not a kernel (see the docstring)."""
    name: str
    family: str        # "unary", "binary", "compare", "reduce", "rowwise" or "other"
    arity: int         # number of inputs (out not counted)
    dtypes: str        # signatures "in, in -> out; ...", in codes and CLASSES (docstring)
    params: tuple      # the params the kernel reads
    split: str         # SPLITS: how the workers pool cuts it
    cut: str           # CUTS: how webgpu's windows cut it
    fuse: str          # FUSES: how a compiled program fuses it
    contract: str      # shapes, strides and meaning
    record: tuple = ()  # ((param, RECORD_SLOTS entry), ...): one per param
    combine: str = ""   # the binary op merging two partial results (reductions)
    writes: tuple = ()  # indices of the inputs the kernel also writes, in place


def _unary(name):
    return Op(name, "unary", 1, "F -> F", (), ROWS, CUT_ELEMENTWISE, STAGE,
              "a -> out (a.shape)")


def _binary(name, ints=False):
    if ints:    # integer arithmetic wraps around (two's complement), as NumPy's and Rust's
        return Op(name, "binary", 2, "N, N -> N", (), ROWS, CUT_ELEMENTWISE,
                  STAGE, "a, b (same dtype) -> out (out.shape, their dtype); ints wrap around")
    return Op(name, "binary", 2, "F, F -> F", (), ROWS, CUT_ELEMENTWISE, STAGE,
              "a, b -> out (out.shape)")


def _compare(name):
    return Op(name, "compare", 2, "C, C -> b8", (), ROWS, CUT_ELEMENTWISE, STAGE,
              "a, b (same dtype) -> out bool")


def _reduce(name, combine):
    return Op(name, "reduce", 1, "N -> N", ("naxes",), ROWS, CUT_REDUCE, NEVER,
              "the trailing `naxes` dims of a are reduced; out.shape == a.shape[:-naxes], "
              "a's dtype (an empty reduction: sum 0, max -inf / the dtype's min, min +inf / "
              "its max; an integer sum wraps around)", record=(("naxes", "i0"),),
              combine=combine)


# One row per primitive op. The order is only the order of ALL_OPS (no backend
# depends on it: the simd library's op codes are looked up by name at load).
OPS = (
    _unary("neg"), _unary("exp"), _unary("log"), _unary("relu"), _unary("tanh"),
    _unary("sigmoid"), _unary("sqrt"), _unary("abs"), _unary("sin"), _unary("cos"),
    _binary("add", ints=True), _binary("sub", ints=True), _binary("mul", ints=True),
    _binary("div"), _binary("pow"), _binary("maximum", ints=True), _binary("minimum", ints=True),
    _compare("eq"), _compare("ne"), _compare("lt"), _compare("le"), _compare("gt"),
    _compare("ge"),
    _reduce("sum", "add"), _reduce("max", "maximum"), _reduce("min", "minimum"),
    Op("fill", "other", 0, "-> X", ("value",), ROWS, CUT_ELEMENTWISE, STAGE,
       "strided out, any shape: value (a Python int for an integer or bool out, exact in "
       "int64; a float otherwise, rounded to out's dtype: bf16 to nearest even)",
       record=(("value", "value"),)),
    Op("copy", "other", 1, "X -> X2", (), ROWS, CUT_ELEMENTWISE, STAGE,
       "a -> strided out (a.shape), cast to out's dtype: float -> int truncates toward zero, "
       "saturates to the int's range, NaN -> 0 (Rust's `as`; for u8 / i8 / i16 out through "
       "int64, then wrapped: (-1.5 -> u8) is 255); int -> narrower int wraps; -> bool is "
       "!= 0 (NaN is True); bool -> 1 / 0; to a float rounds to nearest even (bf16: the high "
       "16 bits of the float32, rounded to nearest even)"),
    Op("where", "other", 3, "b8, X, X -> X", (), ROWS, CUT_ELEMENTWISE, STAGE,
       "cond (bool), a, b -> out: cond picks a"),
    Op("argmax", "other", 1, "N -> K", (), ROWS, CUT_ARGMAX, NEVER,
       "a (.., n), n > 0 -> out a.shape[:-1]: the first index of the maximum (NaN is the "
       "maximum), as out's index dtype"),
    Op("softmax", "rowwise", 1, "F -> F", (), ROWS, CUT_ROWS, NEVER,
       "a (R, C) -> out (R, C): over the last axis, max-subtracted"),
    Op("log_softmax", "rowwise", 1, "F -> F", (), ROWS, CUT_ROWS, NEVER,
       "a (R, C) -> out (R, C)"),
    # ignore_index: an int, or None (absent) when no target is ignored
    Op("cross_entropy", "rowwise", 2, "F, K -> F", ("ignore_index",), ROWS, CUT_ROWS,
       NEVER,
       "logits (R, C), target (R,) -> out (R,) or (R, 2): out[r] (or out[r, 0]) = "
       "logsumexp(logits[r]) - logits[r, t[r]], 0 where t[r] == ignore_index; an (R, 2) "
       "out also gets out[r, 1] = 1 (0 where ignored), so one sum gives the mean's count "
       "(any other t[r] outside [0, C) is an error)", record=(("ignore_index", "i1"),)),
    Op("cross_entropy_grad", "rowwise", 3, "F, K, F -> F", ("ignore_index",), ROWS,
       CUT_ROWS, NEVER,
       "logits (R, C), target (R,), g (R,) -> out (R, C): "
       "out[r] = (softmax(logits[r]) - onehot(t[r])) * g[r]; 0 where t[r] == ignore_index "
       "(whatever g[r] is)", record=(("ignore_index", "i1"),)),
    # whole: NumPy's BLAS already spreads it over the cores, and cutting it into row
    # ranges would start BLAS threads inside each worker (oversubscription)
    Op("matmul", "other", 2, "F, F -> F", (), WHOLE, CUT_MATMUL, PRODUCER,
       "a (B, M, K), b (B, K, N) -> out (B, M, N), or with two batch dims (B1, B2, ...) "
       "for batches whose strides do not flatten into one; a, b any strides, incl. "
       "transposed"),
    # PyTorch's addmm: a Linear layer's bias added where the product is stored, instead of
    # an add that reads the product back (functions/matmul.py, Linear)
    Op("matmul_bias", "other", 3, "F, F, F -> F", (), WHOLE, CUT_MATMUL_BIAS, PRODUCER,
       "a, b as matmul's, bias (N,) any stride -> out as matmul's: out[.., m, n] = "
       "(a @ b)[.., m, n] + bias[n], the product rounded to its dtype before the add (the "
       "bits of matmul then add)"),
    Op("gather_rows", "other", 2, "X, K -> X", (), INDEX_ROWS, CUT_GATHER,
       NEVER,
       "table (V, D), idx (R,) -> out (R, D): out[r] = table[idx[r]] (idx outside [0, V) "
       "is an error; a pure copy of the elements: X[ix] of any dtype)"),
    # whole: rows of out collide (several idx may name one row)
    Op("scatter_add_rows", "other", 2, "F, K -> F", (), WHOLE, CUT_SCATTER, NEVER,
       "src (R, D), idx (R,) -> out (V, D): out[idx[r]] += src[r]; out is read and "
       "written (the frontend zero-fills it first)"),
    # -- fused transformer ops (functions/fused.py): one pass where the composite took several
    _unary("gelu"), _unary("gelu_tanh"),
    Op("gelu_grad", "other", 2, "F, F -> F", (), ROWS, CUT_ELEMENTWISE, STAGE,
       "x, g (out.shape, broadcast) -> out: g * (Phi(x) + x phi(x)), Phi / phi the normal "
       "cdf / pdf"),
    Op("gelu_tanh_grad", "other", 2, "F, F -> F", (), ROWS, CUT_ELEMENTWISE, STAGE,
       "x, g (out.shape, broadcast) -> out: g * d/dx of 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 "
       "x^3)))"),
    Op("layer_norm", "other", 3, "F, F, F -> F", ("eps",), ROWS_WEIGHTS,
       CUT_ROWS_WEIGHTS, NEVER,
       "x (R, C), w (C,), b (C,), any strides -> out (R, C): (x - mean) * rstd * w + b over each "
       "row, rstd = 1 / sqrt(biased variance + eps)", record=(("eps", "value"),)),
    Op("layer_norm_grad", "other", 3, "F, F, F -> F", ("eps",), ROWS_WEIGHTS,
       CUT_ROWS_WEIGHTS, NEVER,
       "x (R, C), w (C,), g (R, C), any strides -> out (R, C) or (2, R, C): dx = d/dx of "
       "sum(layer_norm(x) * g) = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w, "
       "the row's mean / rstd recomputed from x; out (R, C) is dx; out (2, R, C) is dx, then "
       "g * xhat (the weight gradient's rows, summed over R by the caller; the float32 product, "
       "xhat as layer_norm computes it with w = 1, b = 0), both from one pass over x and g",
       record=(("eps", "value"),)),
    Op("causal_softmax", "rowwise", 1, "F -> F", ("diagonal",), ROWS, CUT_LEADING_ROWS, NEVER,
       "a (B, Tq, Tk), any strides -> out (B, Tq, Tk): softmax of a[b, i, :] over the columns "
       "j <= i + diagonal, 0 at the others (a row keeping none is NaN, as softmax of -inf)",
       record=(("diagonal", "i0"),)),
    # softmax's (and causal_softmax's) backward from the saved output: reads y and g once
    Op("softmax_grad", "other", 2, "F, F -> F", (), ROWS, CUT_ROWS, ROW_PRODUCER,
       "y (R, C), g (R, C), any strides -> out (R, C): y * (g - sum_j g[r, j] y[r, j]) over "
       "each row r: the gradient of softmax from its output y (causal_softmax's too: y is 0 at "
       "its masked columns)"),
    # dropout in one pass, its mask never stored: recomputed from the key by a counter-based
    # generator, the same bits on every backend, in the forward and again (same key) in the
    # backward (raw.py draws the key on the host; threshold = ceil(p 2^24), scale =
    # float32(1 / (1 - p)))
    Op("dropout", "other", 2, "F, i32 -> F", ("threshold", "scale"), WHOLE, CUT_FLAT,
       EPILOGUE,
       "x (out.shape, any strides), key (2,) (two uint32 words) -> out, numel < 2^32: "
       "out[i] = x[i] * m (flat, row-major i; a product in x's dtype), m = scale where "
       "threefry2x32_20(key, (i >> 1, 0))[i & 1] >> 8 >= threshold (in [0, 2^24]; one "
       "evaluation gives the words of elements 2j and 2j + 1), else 0.0 (so a dropped NaN / "
       "inf gives NaN)", record=(("threshold", "i0"), ("scale", "value"))),
    # Adam / AdamW's whole update of one parameter in one pass (optim/adam.py); the step's
    # numbers travel in the s tensor (a host write each step, so a compiled step replays them)
    Op("adam_update", "other", 4, "F, F, F, F -> F", (), ROWS_BUT_LAST,
       CUT_ROWS_BUT_LAST, APART,
       "g, m, v (out.shape), s (10,) -> out: out / g / m / v contiguous and disjoint; out is the "
       "parameter p, read and updated in place; m, v (exp_avg, exp_avg_sq) are updated in "
       "place too. s = [beta1, 1 - beta1, beta2, 1 - beta2, eps, 1 / sqrt(1 - beta2^t), "
       "-lr / (1 - beta1^t), decay, l2, maximize]; in p's dtype (all four share it), each product rounded (no fused "
       "multiply-add), in this order: g = -g if maximize != 0; g = g + p * l2 if l2 != 0; "
       "p = p * decay if decay != 1; m = beta1 * m + g * (1 - beta1); v = beta2 * v + "
       "(g * g) * (1 - beta2); p = p + m / (sqrt(v) * s[5] + eps) * s[6]", writes=(1, 2)),
    # -- elementwise math (api/math_ops.py): atan, asin, acos are composites of atan2
    _binary("atan2"),
    *(Op(name, "other", 2, "I, I -> I", (), ROWS, CUT_ELEMENTWISE, NEVER,
         "a, b (same integer dtype, broadcast) -> out: " + what) for name, what in (
        ("bitwise_and", "a & b"), ("bitwise_or", "a | b"), ("bitwise_xor", "a ^ b"),
        ("shift_left", "a << b, 0 where b < 0 or b >= the width (wrapping)"),
        ("shift_right", "a >> b (arithmetic), a >> (width - 1) where b < 0 or b >= "
                                "the width"))),
    # -- convolution / pooling (issue 42, nn/functional_pool.py): max pooling's windows
    # searched in place, never copied out (the composite: copy, argmax, index arithmetic)
    Op("max_pool_index", "other", 1, "F -> K", (), ROWS, CUT_ROWS, NEVER,
       "a (N, C, Ho, Wo, kh, kw), any non-negative strides (the windows of an image, a view), "
       "kh * kw > 0 -> out (N, C, Ho, Wo): i * a.strides[2] + j * a.strides[3] + ki * "
       "a.strides[4] + kj * a.strides[5] for (ki, kj) the first maximum of window (n, c, i, "
       "j) in row-major order, or its last NaN where it holds one (PyTorch's max_pool rule): "
       "that element's offset in its (n, c) plane, out's index dtype"),
    # a convolution's input gradient: its columns summed back into the image in one pass
    Op("col2im", "other", 1, "F -> F", ("row_step", "col_step"), ROWS, CUT_ROWS, NEVER,
       "a (R1, R2, kh, kw, La) any strides, row_step, col_step >= 0 -> out (R1, R2, L): "
       "out[r1, r2, j] = the sum over (ki, kj) with 0 <= j' = j - ki * row_step - kj * "
       "col_step < La of a[r1, r2, ki, kj, j'], in row-major (ki, kj) order (what would land "
       "past a row's end is dropped)", record=(("row_step", "i0"), ("col_step", "i1"))),
    # lstm cell (issue 42): one LSTM step's elementwise work in one pass each way
    # (nn/lstm_recurrence.py: a step is the recurrent product, then this)
    Op("lstm_cell", "other", 4, "F, F, F, F -> F", (), ROWS, CUT_ROWS, NEVER,
       "x (N, 4H), r (N, 4H), a (N, 4H), s (N, 2, H), any strides -> out h (N, H): with "
       "z = x + r (the step's input projection and h_prev @ W_hh^T, PyTorch's gate order i, "
       "f, g, o) and c_prev = s[:, 0]: a = [sigmoid(z_i), sigmoid(z_f), tanh(z_g), "
       "sigmoid(z_o)] and c = a_f * c_prev + a_i * a_g written into a and s[:, 1] (inputs "
       "written in place); out = a_o * tanh(c). Each product and sum rounded to the dtype "
       "(no fused multiply-add), in this order", writes=(2, 3)),
    Op("lstm_cell_grad", "other", 4, "F, F, F, F -> F", (), ROWS, CUT_ROWS, NEVER,
       "a (N, 4H), s (N, 2, 2, H), dh (N, H), r (N, H), any strides -> out (N, 4H): a as "
       "lstm_cell wrote it, c_prev = s[:, 0, 0], c = s[:, 1, 0], the next step's dc = "
       "s[:, 1, 1]; with d = dh + r (the gradient of h from outside and through the next "
       "step's product), t = tanh(c) and dc' = (d * a_o) * (1 - t * t) + dc: out = [dc' * "
       "(a_g * (a_i (1 - a_i))), dc' * (c_prev * (a_f (1 - a_f))), dc' * (a_i * (1 - a_g * "
       "a_g)), d * (t * (a_o (1 - a_o)))] (the gate pre-activations' gradients, i, f, g, o) "
       "and s[:, 0, 1] = dc' * a_f written in place (the gradient of c_prev); each product "
       "rounded, in this order", writes=(1,)),
)

def signatures(spec):
    """A row's dtypes spec -> the set of its concrete signatures ((in codes...), out code)."""
    result = set()
    for alternative in spec.split(";"):
        ins, _, out = alternative.partition("->")
        tokens = [t.strip() for t in ins.split(",") if t.strip()] + [out.strip()]
        variables = sorted({t for t in tokens if t not in CODES})
        if any(v.rstrip("0123456789") not in CLASSES for v in variables):
            raise TypeError(f"bad dtypes spec {spec!r}")
        choices = [CLASSES[v.rstrip("0123456789")] for v in variables]
        for values in _product(choices):
            bound = dict(zip(variables, values))
            codes = [bound.get(t, t) for t in tokens]
            result.add((tuple(codes[:-1]), codes[-1]))
    return result


def _product(choices):
    if not choices:
        return [()]
    return [(c,) + rest for c in choices[0] for rest in _product(choices[1:])]


BY_NAME = {op.name: op for op in OPS}
FAMILIES = ("unary", "binary", "compare", "reduce", "rowwise", "other")
SPLITS = (ROWS, INDEX_ROWS, ROWS_WEIGHTS, ROWS_BUT_LAST, WHOLE)
# op name -> the indices of the inputs its kernel writes in place (torchic.compile's plan)
WRITES = {op.name: op.writes for op in OPS if op.writes}


def family(name):
    """The names of one family's ops, in row order."""
    return tuple(op.name for op in OPS if op.family == name)


UNARY = family("unary")
BINARY = family("binary")
COMPARE = family("compare")
REDUCE = family("reduce")
ROWWISE = family("rowwise")
OTHER = tuple(op.name for op in OPS if op.family not in ("unary", "binary", "compare", "reduce"))
ALL_OPS = tuple(op.name for op in OPS)
# op name -> {(input codes...): out code, or None where several outs are allowed (fill,
# copy, argmax: the caller's out says)}: what raw checks each op against (out_dtype)
SIGNATURES = {op.name: signatures(op.dtypes) for op in OPS}
OUT = {}
for _name, _sigs in SIGNATURES.items():
    OUT[_name] = {}
    for _ins, _out in _sigs:
        OUT[_name][_ins] = _out if OUT[_name].get(_ins, _out) == _out else None
INT_BINARY = tuple(op.name for op in OPS if op.family == "binary"
                   and (("i64", "i64"), "i64") in SIGNATURES[op.name])


def out_dtype(op, in_codes, out=None):
    """The out code of `op` on inputs of `in_codes` (a tuple), or TypeError naming the op
    and the dtypes when its row does not allow them (`out`: the caller's out code, checked
    too; needed where the row allows several: fill, copy, argmax)."""
    code = OUT[op].get(in_codes, False)
    if code is None or (code is not False and out is not None):
        code = out if (in_codes, out) in SIGNATURES[op] else False
    if code is False:
        raise TypeError(f"op {op!r} does not take dtypes ({', '.join(in_codes)})"
                        f"{'' if out is None else f' -> {out}'}: its row allows "
                        f"{BY_NAME[op].dtypes!r} (ops.py)")
    return code


def check_row(op):
    """Raise TypeError unless the row is well formed: known family, split, cut and fuse
    kinds; a split its cut agrees with; a combine op exactly for the reductions; one
    record slot per param, each slot used once."""
    slots = [slot for _, slot in op.record]
    if (op.family not in FAMILIES or op.split not in SPLITS or op.cut not in CUTS
            or op.split not in CUT_SPLITS[op.cut] or op.fuse not in FUSES
            or (op.cut == CUT_REDUCE) != (op.combine in INT_BINARY)
            or sorted(p for p, _ in op.record) != sorted(op.params)
            or not set(slots) <= set(RECORD_SLOTS) or len(set(slots)) != len(slots)):
        raise TypeError(f"bad op row {op}")


for _op in OPS:
    if BY_NAME[_op.name] is not _op:
        raise TypeError(f"op {_op.name!r} has two rows")
    check_row(_op)

# op name -> its property, for the passes that ask
CUT = {op.name: op.cut for op in OPS}
FUSE = {op.name: op.fuse for op in OPS}
STAGES = tuple(op.name for op in OPS if op.fuse == STAGE)

if __doc__:   # (None under python -OO)
    __doc__ += "\nThe ops (printed from OPS):\n\n" + "\n".join(
        f"{op.name:<19}{op.family:<8} {op.dtypes:<20} {', '.join(op.params) or '-'}\n"
        f"{'':19}cut: {op.cut}; fuse: {op.fuse or 'never'}\n"
        f"{'':19}{op.contract}" for op in OPS) + "\n"


def check_backend_table(backend_name, table):
    """Raise if a backend's kernel table misses an op or names an unknown one."""
    missing = [op for op in ALL_OPS if op not in table]
    unknown = [op for op in table if op not in BY_NAME]
    if missing or unknown:
        raise TypeError(
            f"backend {backend_name!r} kernel table is incomplete: "
            f"missing {missing}, unknown {unknown}")
