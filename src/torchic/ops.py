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
* dtypes are as listed (``f32`` float32, ``i32`` int32).

Each op is declared once, as a row of ``OPS`` below (name, family, inputs,
dtypes, params, how the ``workers`` pool splits it, contract); the family
tuples, ``ALL_OPS``, the workers split rule and ``check_backend_table`` are
derived from the rows, and the table at the end of this docstring is printed
from them. Backends look ops up by name.

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


class Op(NamedTuple):
    """One primitive op: everything about it that is not a kernel."""
    name: str
    family: str        # "unary", "binary", "compare", "reduce", "rowwise" or "other"
    arity: int         # number of inputs (out not counted)
    dtypes: str        # input dtypes -> out dtype
    params: tuple      # the params the kernel reads
    split: str         # ROWS, INDEX_ROWS, ROWS_WEIGHTS, ROWS_BUT_LAST or WHOLE
    contract: str      # shapes, strides and meaning
    writes: tuple = ()  # indices of the inputs the kernel also writes, in place


def _unary(name):
    return Op(name, "unary", 1, "f32 -> f32", (), ROWS, "a -> out (a.shape)")


def _binary(name, ints=False):
    if ints:    # int32 arithmetic wraps around (two's complement), as NumPy's and Rust's
        return Op(name, "binary", 2, "f32, f32 -> f32 | i32, i32 -> i32", (), ROWS,
                  "a, b (same dtype) -> out (out.shape, their dtype); int32 wraps around")
    return Op(name, "binary", 2, "f32, f32 -> f32", (), ROWS, "a, b -> out (out.shape)")


def _compare(name):
    return Op(name, "compare", 2, "f32, f32 | i32, i32 -> f32", (), ROWS,
              "a, b (same dtype) -> out 0/1")


def _reduce(name):
    return Op(name, "reduce", 1, "f32 -> f32 | i32 -> i32", ("naxes",), ROWS,
              "the trailing `naxes` dims of a are reduced; out.shape == a.shape[:-naxes], "
              "a's dtype (an empty reduction: sum 0, max -inf / INT32_MIN, min +inf / "
              "INT32_MAX; an int32 sum wraps around)")


# One row per primitive op. The order is only the order of ALL_OPS (no backend
# depends on it: the simd library's op codes are looked up by name at load).
OPS = (
    _unary("neg"), _unary("exp"), _unary("log"), _unary("relu"), _unary("tanh"),
    _unary("sigmoid"), _unary("sqrt"), _unary("abs"), _unary("sin"), _unary("cos"),
    _binary("add", ints=True), _binary("sub", ints=True), _binary("mul", ints=True),
    _binary("div"), _binary("pow"), _binary("maximum", ints=True), _binary("minimum", ints=True),
    _compare("eq"), _compare("ne"), _compare("lt"), _compare("le"), _compare("gt"),
    _compare("ge"),
    _reduce("sum"), _reduce("max"), _reduce("min"),
    Op("fill", "other", 0, "-> f32 | i32", ("value",), ROWS, "strided out, any shape: value"),
    Op("copy", "other", 1, "f32 | i32 -> f32 | i32", (), ROWS,
       "a -> strided out (a.shape); casts f32<->i32: f32->i32 truncates toward zero, saturates "
       "to [-2^31, 2^31 - 1], NaN -> 0, as Rust's `as`; i32->f32 rounds to nearest even"),
    Op("where", "other", 3, "f32, f32, f32 -> f32", (), ROWS, "cond, a, b -> out: cond != 0 picks a"),
    Op("argmax", "other", 1, "f32 -> i32", (), ROWS,
       "a (.., n), n > 0 -> out a.shape[:-1]: the first index of the maximum"),
    Op("softmax", "rowwise", 1, "f32 -> f32", (), ROWS,
       "a (R, C) -> out (R, C): over the last axis, max-subtracted"),
    Op("log_softmax", "rowwise", 1, "f32 -> f32", (), ROWS, "a (R, C) -> out (R, C)"),
    # ignore_index: an int, or None (absent) when no target is ignored
    Op("cross_entropy", "rowwise", 2, "f32, i32 -> f32", ("ignore_index",), ROWS,
       "logits (R, C), target (R,) -> out (R,) or (R, 2): out[r] (or out[r, 0]) = "
       "logsumexp(logits[r]) - logits[r, t[r]], 0 where t[r] == ignore_index; an (R, 2) "
       "out also gets out[r, 1] = 1 (0 where ignored), so one sum gives the mean's count "
       "(any other t[r] outside [0, C) is an error)"),
    Op("cross_entropy_grad", "rowwise", 3, "f32, i32, f32 -> f32", ("ignore_index",), ROWS,
       "logits (R, C), target (R,), g (R,) -> out (R, C): "
       "out[r] = (softmax(logits[r]) - onehot(t[r])) * g[r]; 0 where t[r] == ignore_index "
       "(whatever g[r] is)"),
    # whole: NumPy's BLAS already spreads it over the cores, and cutting it into row
    # ranges would start BLAS threads inside each worker (oversubscription)
    Op("matmul", "other", 2, "f32, f32 -> f32", (), WHOLE,
       "a (B, M, K), b (B, K, N) -> out (B, M, N), or with two batch dims (B1, B2, ...) "
       "for batches whose strides do not flatten into one; a, b any strides, incl. "
       "transposed"),
    # PyTorch's addmm: a Linear layer's bias added where the product is stored, instead of
    # an add that reads the product back (functions/matmul.py, Linear)
    Op("matmul_bias", "other", 3, "f32, f32, f32 -> f32", (), WHOLE,
       "a, b as matmul's, bias (N,) any stride -> out as matmul's: out[.., m, n] = "
       "(a @ b)[.., m, n] + bias[n], the product rounded to float32 before the add (the "
       "bits of matmul then add)"),
    Op("gather_rows", "other", 2, "f32 | i32, i32 -> the table's dtype", (), INDEX_ROWS,
       "table (V, D), idx (R,) -> out (R, D): out[r] = table[idx[r]] (idx outside [0, V) "
       "is an error; a pure copy of 32-bit words: X[ix] on int data too)"),
    # whole: rows of out collide (several idx may name one row)
    Op("scatter_add_rows", "other", 2, "f32, i32 -> f32", (), WHOLE,
       "src (R, D), idx (R,) -> out (V, D): out[idx[r]] += src[r]; out is read and "
       "written (the frontend zero-fills it first)"),
    # -- fused transformer ops (functions/fused.py): one pass where the composite took several
    _unary("gelu"), _unary("gelu_tanh"),
    Op("gelu_grad", "other", 2, "f32, f32 -> f32", (), ROWS,
       "x, g (out.shape, broadcast) -> out: g * (Phi(x) + x phi(x)), Phi / phi the normal "
       "cdf / pdf"),
    Op("gelu_tanh_grad", "other", 2, "f32, f32 -> f32", (), ROWS,
       "x, g (out.shape, broadcast) -> out: g * d/dx of 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 "
       "x^3)))"),
    Op("layer_norm", "other", 3, "f32, f32, f32 -> f32", ("eps",), ROWS_WEIGHTS,
       "x (R, C), w (C,), b (C,), any strides -> out (R, C): (x - mean) * rstd * w + b over each "
       "row, rstd = 1 / sqrt(biased variance + eps)"),
    Op("layer_norm_grad", "other", 3, "f32, f32, f32 -> f32", ("eps",), ROWS_WEIGHTS,
       "x (R, C), w (C,), g (R, C), any strides -> out (R, C) or (2, R, C): dx = d/dx of "
       "sum(layer_norm(x) * g) = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w, "
       "the row's mean / rstd recomputed from x; out (R, C) is dx; out (2, R, C) is dx, then "
       "g * xhat (the weight gradient's rows, summed over R by the caller; the float32 product, "
       "xhat as layer_norm computes it with w = 1, b = 0), both from one pass over x and g"),
    Op("causal_softmax", "rowwise", 1, "f32 -> f32", ("diagonal",), ROWS,
       "a (B, Tq, Tk), any strides -> out (B, Tq, Tk): softmax of a[b, i, :] over the columns "
       "j <= i + diagonal, 0 at the others (a row keeping none is NaN, as softmax of -inf)"),
    # softmax's (and causal_softmax's) backward from the saved output: reads y and g once
    Op("softmax_grad", "other", 2, "f32, f32 -> f32", (), ROWS,
       "y (R, C), g (R, C), any strides -> out (R, C): y * (g - sum_j g[r, j] y[r, j]) over "
       "each row r: the gradient of softmax from its output y (causal_softmax's too: y is 0 at "
       "its masked columns)"),
    # dropout in one pass, its mask never stored: recomputed from the key by a counter-based
    # generator, the same bits on every backend, in the forward and again (same key) in the
    # backward (raw.py draws the key on the host; threshold = ceil(p 2^24), scale =
    # float32(1 / (1 - p)))
    Op("dropout", "other", 2, "f32, i32 -> f32", ("threshold", "scale"), WHOLE,
       "x (out.shape, any strides), key (2,) (two uint32 words) -> out, numel < 2^32: "
       "out[i] = x[i] * m (flat, row-major i; a float32 product), m = scale where "
       "threefry2x32_20(key, (i >> 1, 0))[i & 1] >> 8 >= threshold (in [0, 2^24]; one "
       "evaluation gives the words of elements 2j and 2j + 1), else 0.0 (so a dropped NaN / "
       "inf gives NaN)"),
    # Adam / AdamW's whole update of one parameter in one pass (optim/adam.py); the step's
    # numbers travel in the s tensor (a host write each step, so a compiled step replays them)
    Op("adam_update", "other", 4, "f32, f32, f32, f32 -> f32", (), ROWS_BUT_LAST,
       "g, m, v (out.shape), s (10,) -> out: out / g / m / v contiguous and disjoint; out is the "
       "parameter p, read and updated in place; m, v (exp_avg, exp_avg_sq) are updated in "
       "place too. s = [beta1, 1 - beta1, beta2, 1 - beta2, eps, 1 / sqrt(1 - beta2^t), "
       "-lr / (1 - beta1^t), decay, l2, maximize]; in float32, each product rounded (no fused "
       "multiply-add), in this order: g = -g if maximize != 0; g = g + p * l2 if l2 != 0; "
       "p = p * decay if decay != 1; m = beta1 * m + g * (1 - beta1); v = beta2 * v + "
       "(g * g) * (1 - beta2); p = p + m / (sqrt(v) * s[5] + eps) * s[6]", writes=(1, 2)),
)

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
INT_BINARY = tuple(op.name for op in OPS if op.family == "binary" and "i32" in op.dtypes)

for _op in OPS:
    if BY_NAME[_op.name] is not _op or _op.family not in FAMILIES or _op.split not in SPLITS:
        raise TypeError(f"bad op row {_op}")

if __doc__:   # (None under python -OO)
    __doc__ += "\nThe ops (printed from OPS):\n\n" + "\n".join(
        f"{op.name:<19}{op.family:<8} {op.dtypes:<27} {', '.join(op.params) or '-'}\n"
        f"{'':19}{op.contract}" for op in OPS) + "\n"


def check_backend_table(backend_name, table):
    """Raise if a backend's kernel table misses an op or names an unknown one."""
    missing = [op for op in ALL_OPS if op not in table]
    unknown = [op for op in table if op not in BY_NAME]
    if missing or unknown:
        raise TypeError(
            f"backend {backend_name!r} kernel table is incomplete: "
            f"missing {missing}, unknown {unknown}")
