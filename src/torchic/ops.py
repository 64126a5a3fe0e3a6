"""The closed list of primitive ops: the contract every backend implements.

Everything the frontend can do is built from these ops. A backend is a table
``{op name: kernel}`` covering every name below (``check_backend_table``
enforces that at registration, so a backend cannot silently miss one).

Every operand is a ``View``: a block of the backend's heap plus an element
offset, a shape and element strides (strides may be 0 for broadcast dims or
any sign-free value for transposed / sliced views). The frontend guarantees,
before a kernel is called:

* every view lies inside its block (``shape.view_fits`` is checked);
* ``out`` is contiguous (row-major, offset anywhere in its block) unless the op
  says "strided out";
* ``out`` never overlaps an input, except that an elementwise op (UNARY, BINARY)
  may get ``out`` equal to an input view exactly (same offset, shape and strides:
  the in-place fast path ``a += b``); reading element i before writing element i
  keeps that correct;
* inputs of elementwise ops are already broadcast to ``out.shape`` (broadcast
  dims have stride 0);
* dtypes are as listed (``f32`` float32, ``i32`` int32).

Kernels that read integer *values* (gather / scatter / cross-entropy targets)
must check them against their bound and fail with an error naming the op;
the failure surfaces at the next read.

Op                 inputs               out            params
-----------------  -------------------  -------------  ------------------------
fill               -                    strided, any   value (float)
copy               a (any dtype)        strided, any   -    (casts f32<->i32: f32->i32 truncates toward
                                                       zero, saturates to [-2^31, 2^31 - 1], NaN -> 0,
                                                       as Rust's `as`; i32->f32 rounds to nearest even)
UNARY (neg exp log relu tanh sigmoid sqrt abs)
                   a f32                f32, a.shape   -
BINARY (add sub mul div pow maximum minimum)
                   a f32, b f32         f32            -
COMPARE (eq ne lt le gt ge)
                   a, b (same dtype)    f32 0/1        -
where              cond f32, a f32, b f32  f32         -    (cond != 0 picks a)
REDUCE (sum max min)
                   a f32                f32            naxes: the trailing `naxes` dims of a are
                                                       reduced; out.shape == a.shape[:-naxes]
                                                       (an empty reduction: sum 0, max -inf, min +inf)
argmax             a f32 (.., n), n>0   i32 a.shape[:-1]  - (first index of the maximum)
softmax            a f32 (R, C)         f32 (R, C)     - (over the last axis, max-subtracted)
log_softmax        a f32 (R, C)         f32 (R, C)     -
cross_entropy      logits f32 (R, C),   f32 (R,)       - out[r] = logsumexp(logits[r]) - logits[r, t[r]]
                   target i32 (R,)                         (t[r] outside [0, C) is an error)
cross_entropy_grad logits f32 (R, C),   f32 (R, C)     - out[r] = (softmax(logits[r]) - onehot(t[r])) * g[r]
                   target i32 (R,), g f32 (R,)
matmul             a f32 (B, M, K),     f32 (B, M, N)  - (a, b any strides, incl. transposed)
                   b f32 (B, K, N)
gather_rows        table (V, D) f32     (R, D), the    - out[r] = table[idx[r]] (idx outside [0, V) is an error)
                   or i32, idx i32 (R,) table's dtype      (a pure copy of 32-bit words: X[ix] on int data too)
scatter_add_rows   src f32 (R, D),      f32 (V, D)     - out[idx[r]] += src[r]; out is read and
                   idx i32 (R,)                          written (the frontend zero-fills it first)

Host transfers are not ops but go through the same stream (Backend.write /
Backend.read) so that they are ordered with the ops around them.
"""

UNARY = ("neg", "exp", "log", "relu", "tanh", "sigmoid", "sqrt", "abs")
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE = ("sum", "max", "min")
OTHER = (
    "fill", "copy", "where", "argmax", "softmax", "log_softmax",
    "cross_entropy", "cross_entropy_grad", "matmul", "gather_rows", "scatter_add_rows",
)

ALL_OPS = UNARY + BINARY + COMPARE + REDUCE + OTHER


def check_backend_table(backend_name, table):
    """Raise if a backend's kernel table misses an op or names an unknown one."""
    missing = [op for op in ALL_OPS if op not in table]
    unknown = [op for op in table if op not in ALL_OPS]
    if missing or unknown:
        raise TypeError(
            f"backend {backend_name!r} kernel table is incomplete: "
            f"missing {missing}, unknown {unknown}")
