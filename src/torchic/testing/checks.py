"""Parity checks: one torchic op against NumPy float64 (used by the test suite and the page).

``check(tc_fn, np_fn, shapes)`` draws inputs in float64, rounds them to float32
(what torchic holds), lays them out as asked (contiguous, transposed or
strided views), runs the op on the current backend and compares with the
float64 reference; with ``grad=True`` it also compares the gradients of
sum(f(x) * w) (w random) with central finite differences of the reference.
It returns the worst errors (the page's columns) or raises ``ParityFailure``
(an AssertionError that still carries them).
"""

import numpy as np

LAYOUTS = ("contiguous", "transposed", "strided")


class ParityFailure(AssertionError):
    """A parity check's failure: the message, and its figures in `fields` (for the page)."""

    def __init__(self, message, **fields):
        super().__init__(message)
        self.fields = fields


def make_input(array64, layout, requires_grad, dtype=None):
    """(tensor used as the op input, tensor whose .grad is compared) holding array64 (in
    float32, int32 for an int32 array, or in `dtype`)."""
    import torchic
    a32 = array64 if array64.dtype == np.int32 or dtype is not None else \
        array64.astype(np.float32)

    def tensor(a):
        return torchic.tensor(a, dtype=dtype, requires_grad=requires_grad)
    if layout == "contiguous" or (a32.ndim < 2 and layout == "transposed"):
        t = tensor(a32)
        return t, t
    if layout == "transposed":
        base = tensor(np.ascontiguousarray(a32.T))
        view = base.permute(tuple(reversed(range(a32.ndim))))
    elif layout == "strided":
        # every other element along the last axis of a bigger buffer
        if a32.ndim:
            big = np.zeros(a32.shape[:-1] + (a32.shape[-1] * 2 + 1,), a32.dtype)
            big[..., 1::2] = a32
            view = tensor(big)[..., 1::2]
        else:
            big = np.zeros((3,), a32.dtype)
            big[1] = a32
            view = tensor(big)[1]
    else:
        raise ValueError(f"unknown layout {layout!r}; layouts: {', '.join(LAYOUTS)}")
    if requires_grad:
        view.retain_grad()
    return view, view


def numeric_grad(fn, arrays, index, w, eps=1e-6):
    """The central-difference gradient of `sum(fn(*arrays) * w)` with respect to
    `arrays[index]` (float64, step `eps`): the reference the gradient checks compare with."""
    x = arrays[index]
    grad = np.zeros_like(x)
    if x.size == 0:
        return grad
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        orig = x[i]
        x[i] = orig + eps
        plus = np.sum(fn(*arrays) * w)
        x[i] = orig - eps
        minus = np.sum(fn(*arrays) * w)
        x[i] = orig
        grad[i] = (plus - minus) / (2 * eps)
    return grad


def _worst(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.size == 0:
        return 0.0
    both_inf = np.isinf(got) & np.isinf(ref) & (np.sign(got) == np.sign(ref))
    with np.errstate(invalid="ignore"):      # (inf - inf: masked by both_inf)
        err = np.where(both_inf, 0.0, np.abs(got - ref))
    return float(np.nanmax(np.where(np.isnan(got) != np.isnan(ref), np.inf, err)))


def compare(got, ref, atol, rtol, what, **fields):
    """Raise ParityFailure unless got ~= ref (np.allclose semantics); returns the max error."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        raise ParityFailure(f"{what}: shape {got.shape} != reference {ref.shape}", **fields)
    worst = _worst(got, ref)
    if not np.allclose(got, ref, atol=atol, rtol=rtol, equal_nan=True):
        bad = ~np.isclose(got, ref, atol=atol, rtol=rtol, equal_nan=True)
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ParityFailure(
            f"{what}: {int(bad.sum())} of {bad.size} values off (max err {worst:.3g}, "
            f"atol {atol:g}, rtol {rtol:g}); first at {where}: got {got[where]!r}, "
            f"expected {ref[where]!r}", **fields, **{f"{what}_err": worst})
    return worst


def check(tc_fn, np_fn, shapes=None, arrays=None, grad=True, low=-2.0, high=2.0,
          layout="contiguous", atol=1e-5, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3, seed=0,
          return_output=False):
    """Compare tc_fn (on torchic tensors) with np_fn (on float64 arrays); see module doc.

    grad: True (every input is differentiable), False, or the differentiable inputs' indices.

    Returns the error figures, or the op's output tensor with return_output=True.
    """
    import torchic
    rng = np.random.default_rng(seed)
    if arrays is None:
        arrays = [rng.uniform(low, high, s) for s in shapes]
    arrays = [np.asarray(a, np.float64).astype(np.float32).astype(np.float64) for a in arrays]
    # grad: True (every input), False, or the indices of the differentiable inputs
    diff = tuple(range(len(arrays))) if grad is True else tuple(grad or ())
    inputs = [make_input(a, layout, k in diff) for k, a in enumerate(arrays)]
    out = tc_fn(*[i[0] for i in inputs])
    ref = np.asarray(np_fn(*[a.copy() for a in arrays]), np.float64)
    fields = {"max_err": compare(out.detach().numpy(), ref, atol, rtol, "max")}
    if diff:
        w = rng.standard_normal(ref.shape)
        (out * torchic.tensor(w.astype(np.float32))).sum().backward()
        worst = 0.0
        for k in diff:
            holder = inputs[k][1]
            expected = numeric_grad(np_fn, [a.copy() for a in arrays], k, w)
            if holder.grad is None:
                raise ParityFailure(f"input {k} got no gradient", **fields)
            worst = max(worst, compare(holder.grad.numpy(), expected, grad_atol, grad_rtol,
                                       "grad", **fields))
        fields["grad_err"] = worst
    return out if return_output else fields


# check_dtype's tolerances (atol, rtol) per float code: the dtype's rounding of the result
# (float16 / bfloat16: computed in float32, rounded once) and float64's own
DTYPE_TOL = {"f64": (1e-9, 1e-9), "f32": (1e-5, 1e-4), "f16": (2e-3, 2e-3),
             "bf16": (1.6e-2, 1.6e-2)}


def in_dtype(array64, code):
    """array64 as the values a `code` tensor holds: rounded to a float dtype, cast to an
    integer one (wrapping, as NumPy and torchic do), != 0 for bool."""
    from torchic.dispatcher import DTYPES
    from torchic.dtypes import from_float32, to_float32
    a = np.asarray(array64)
    if code == "bf16":
        return to_float32(from_float32(a.astype(np.float32))).astype(np.float64)
    if code == "b8":
        return a != 0
    if DTYPES[code].kind == "f":
        return a.astype(DTYPES[code]).astype(np.float64)
    return a.astype(np.int64).astype(DTYPES[code])


def check_dtype(tc_fn, np_fn, arrays, code, layout="contiguous", out_code=None, grad=False):
    """tc_fn on inputs of dtype `code` (arrays, any values, brought into it by in_dtype)
    against np_fn on the same values in NumPy: a float dtype's reference in float64 rounded
    to it (DTYPE_TOL), an integer or bool one's in that dtype, exact. The output's dtype must
    be `out_code` (default: `code`). grad (float64 only): gradients of sum(f(x) * w) against
    float64 central differences too. Returns the output tensor; raises ParityFailure."""
    import torchic
    from torchic.dtypes import dtype_of
    d = dtype_of(code)
    values = [in_dtype(a, code) for a in arrays]
    diff = grad and code == "f64"
    inputs = [make_input(v, layout, bool(diff), d) for v in values]
    out = tc_fn(*[i[0] for i in inputs])
    want = dtype_of(out_code or code)
    if out.dtype is not want:
        raise ParityFailure(f"dtype: {out.dtype} out of {d} inputs, expected {want}")
    got = (out.float() if out.dtype is torchic.bfloat16 else out).detach().numpy()
    if d.is_floating_point:
        ref = np.asarray(np_fn(*[v.copy() for v in values]), np.float64)
        if want.is_floating_point:
            ref = in_dtype(ref, want.code)
        atol, rtol = DTYPE_TOL[code]
        compare(got, ref, atol, rtol, "max")
    else:
        ref = np.asarray(np_fn(*[v.copy() for v in values]))
        if got.shape != ref.shape or not np.array_equal(got, ref.astype(got.dtype)):
            raise ParityFailure(f"{d} values differ from NumPy's: got {got!r}, expected {ref!r}")
    if diff:
        rng = np.random.default_rng(0)
        w = rng.standard_normal(got.shape)
        (out * torchic.tensor(w)).sum().backward()
        for k, (_, holder) in enumerate(inputs):
            expected = numeric_grad(np_fn, [v.copy() for v in values], k, w)
            compare(holder.grad.numpy(), expected, 1e-6, 1e-6, "grad")
    return out


def issued_ops(fn):
    """The primitive ops fn() issues on the current runtime, in order (recorded where the
    runtime takes them: tests of which kernels an op or a backward makes)."""
    from torchic import dispatcher
    rt = dispatcher._runtime
    seen, inner = [], rt.run

    def run(op, out, inputs, params):
        seen.append(op)
        return inner(op, out, inputs, params)
    saved = rt.rebind(run=run)
    try:
        fn()
    finally:
        rt.restore(saved)
    return seen


def check_ints(tc_fn, np_fn, arrays, layout="contiguous"):
    """tc_fn on int32 tensors holding `arrays` (int32) against np_fn on the same int32 arrays
    (NumPy's int32 arithmetic wraps around, as torchic's does): an int result must have the
    reference's dtype (int32, or int64 where PyTorch's gives it: sums) and be equal; a float
    one (int / int, int * 0.5) float32 and within float32 rounding."""
    inputs = [make_input(a, layout, False)[0] for a in arrays]
    out = tc_fn(*inputs)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ref = np.asarray(np_fn(*[a.copy() for a in arrays]))
    got = out.numpy()
    if ref.dtype.kind in "iu":
        if out.dtype.name != ref.dtype.name:
            raise ParityFailure(f"int op gave {out.dtype}, expected torchic.{ref.dtype.name}")
        if got.shape != ref.shape or not np.array_equal(got, ref):
            raise ParityFailure(f"int result {got.tolist()} != reference {ref.tolist()}")
        return {"max_err": 0.0}
    if out.dtype.name != "float32":
        raise ParityFailure(f"int op promoted to float gave {out.dtype}, expected float32")
    return {"max_err": compare(got, ref.astype(np.float64), 0, 1e-6, "max")}
