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
    def __init__(self, message, **fields):
        super().__init__(message)
        self.fields = fields


def make_input(array64, layout, requires_grad):
    """(tensor used as the op input, tensor whose .grad is compared) holding array64."""
    import torchic
    a32 = array64.astype(np.float32)
    if layout == "contiguous" or (a32.ndim < 2 and layout == "transposed"):
        t = torchic.tensor(a32, requires_grad=requires_grad)
        return t, t
    if layout == "transposed":
        base = torchic.tensor(np.ascontiguousarray(a32.T), requires_grad=requires_grad)
        view = base.permute(tuple(reversed(range(a32.ndim))))
    elif layout == "strided":
        # every other element along the last axis of a bigger buffer
        if a32.ndim:
            big = np.zeros(a32.shape[:-1] + (a32.shape[-1] * 2 + 1,), np.float32)
            big[..., 1::2] = a32
            view = torchic.tensor(big, requires_grad=requires_grad)[..., 1::2]
        else:
            big = np.zeros((3,), np.float32)
            big[1] = a32
            view = torchic.tensor(big, requires_grad=requires_grad)[1]
    else:
        raise ValueError(f"unknown layout {layout!r}; layouts: {', '.join(LAYOUTS)}")
    if requires_grad:
        view.retain_grad()
    return view, view


def numeric_grad(fn, arrays, index, w, eps=1e-6):
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

    Returns the error figures, or the op's output tensor with return_output=True.
    """
    import torchic
    rng = np.random.default_rng(seed)
    if arrays is None:
        arrays = [rng.uniform(low, high, s) for s in shapes]
    arrays = [np.asarray(a, np.float64).astype(np.float32).astype(np.float64) for a in arrays]
    inputs = [make_input(a, layout, grad) for a in arrays]
    out = tc_fn(*[i[0] for i in inputs])
    ref = np.asarray(np_fn(*[a.copy() for a in arrays]), np.float64)
    fields = {"max_err": compare(out.numpy(), ref, atol, rtol, "max")}
    if grad:
        w = rng.standard_normal(ref.shape)
        (out * torchic.tensor(w.astype(np.float32))).sum().backward()
        worst = 0.0
        for k, (_, holder) in enumerate(inputs):
            expected = numeric_grad(np_fn, [a.copy() for a in arrays], k, w)
            if holder.grad is None:
                raise ParityFailure(f"input {k} got no gradient", **fields)
            worst = max(worst, compare(holder.grad.numpy(), expected, grad_atol, grad_rtol,
                                       "grad", **fields))
        fields["grad_err"] = worst
    return out if return_output else fields


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def np_cross_entropy(logits, target):
    return -np_log_softmax(logits)[np.arange(len(target)), target].mean()


# ---------------------------------------------------------------------------------
# The op table: (name, torchic function, NumPy float64 reference[, options]) per case.
# tests/backend/test_ops.py runs it under pytest on every backend; the serve page's
# parity suites run the same rows.
# ---------------------------------------------------------------------------------
import torchic  # noqa: E402

POS = dict(low=0.5, high=2.0)

UNARY = [
    ("neg", lambda a: -a, lambda a: -a, {}),
    ("exp", torchic.exp, np.exp, {}),
    ("log", torchic.log, np.log, POS),
    ("relu", torchic.relu, lambda a: np.maximum(a, 0), {}),
    ("tanh", torchic.tanh, np.tanh, {}),
    ("sigmoid", torchic.sigmoid, lambda a: 1 / (1 + np.exp(-a)), {}),
    ("sqrt", torchic.sqrt, np.sqrt, POS),
    ("abs", torchic.abs, np.abs, {}),
    ("log10", torchic.log10, np.log10, POS),
    ("log2", lambda a: a.log2(), np.log2, POS),
]

BINARY = [
    ("add", lambda a, b: a + b, np.add, {}),
    ("sub", lambda a, b: a - b, np.subtract, {}),
    ("mul", lambda a, b: a * b, np.multiply, {}),
    ("div", lambda a, b: a / b, np.divide, POS),
    ("pow", lambda a, b: a ** b, np.power, POS),
    ("maximum", torchic.maximum, np.maximum, {}),
    ("minimum", torchic.minimum, np.minimum, {}),
]

BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 1, 4), (5, 4)), ((4,), (2, 3, 4)), ((2, 1), (1, 3)),
                    ((), (3,)), ((0, 4), (1, 4))]

COMPARE = [
    ("eq", lambda a, b: a == b, np.equal), ("ne", lambda a, b: a != b, np.not_equal),
    ("lt", lambda a, b: a < b, np.less), ("le", lambda a, b: a <= b, np.less_equal),
    ("gt", lambda a, b: a > b, np.greater), ("ge", lambda a, b: a >= b, np.greater_equal),
]

REDUCTIONS = [
    ("sum_all", lambda a: a.sum(), lambda a: a.sum()),
    ("sum_dim0", lambda a: a.sum(0), lambda a: a.sum(0)),
    ("sum_dim-1_keepdim", lambda a: a.sum(dim=-1, keepdim=True), lambda a: a.sum(-1, keepdims=True)),
    ("sum_axis_tuple", lambda a: a.sum(axis=(0, 2)), lambda a: a.sum((0, 2))),
    ("mean_all", lambda a: a.mean(), lambda a: a.mean()),
    ("mean_dim1", lambda a: a.mean(1), lambda a: a.mean(1)),
    ("max_all", lambda a: a.max(), lambda a: a.max()),
    ("min_all", lambda a: a.min(), lambda a: a.min()),
    ("max_dim_values", lambda a: a.max(dim=1).values, lambda a: a.max(1)),
    ("min_dim_keepdim", lambda a: a.min(2, keepdim=True)[0], lambda a: a.min(2, keepdims=True)),
    ("amax_tuple", lambda a: a.amax((0, 1)), lambda a: a.max((0, 1))),
    ("softmax_last", lambda a: a.softmax(-1), np_softmax),
    ("softmax_dim0", lambda a: torchic.softmax(a, dim=0), lambda a: np_softmax(a, 0)),
    ("softmax_mid", lambda a: a.softmax(axis=1), lambda a: np_softmax(a, 1)),
    ("log_softmax_last", lambda a: a.log_softmax(-1), np_log_softmax),
    ("log_softmax_dim0", lambda a: torchic.log_softmax(a, 0), lambda a: np_log_softmax(a, 0)),
    ("var_dim1", lambda a: a.var(1), lambda a: a.var(1, ddof=1)),
    ("std_dim0_keepdims", lambda a: a.std(0, keepdims=True), lambda a: a.std(0, ddof=1, keepdims=True)),
    ("sum_keepdims_alias", lambda a: a.sum(1, keepdims=True), lambda a: a.sum(1, keepdims=True)),
]

MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((1, 7), (7, 1)), ((2, 0), (0, 3)),
    ((0, 3), (3, 2)), ((33, 17), (17, 65)),
]

VIEWS = [
    ("reshape", lambda a: a.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("reshape_-1", lambda a: a.reshape([-1, 3]), lambda a: a.reshape(-1, 3)),
    ("view", lambda a: a.contiguous().view(-1, 12), lambda a: a.reshape(-1, 12)),
    ("transpose", lambda a: a.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("permute", lambda a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("T_2d", lambda a: a[0].T, lambda a: a[0].T),
    ("expand", lambda a: a[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    ("expand_new_dim", lambda a: a.expand(5, 2, 3, 4), lambda a: np.broadcast_to(a, (5, 2, 3, 4))),
    ("squeeze", lambda a: a[:, :1].squeeze(), lambda a: a[:, :1].squeeze()),
    ("squeeze_dim", lambda a: a[:, 1:2].squeeze(1), lambda a: a[:, 1]),
    ("unsqueeze", lambda a: a.unsqueeze(-1), lambda a: a[..., None]),
    ("flatten", lambda a: a.flatten(), lambda a: a.reshape(-1)),
    ("flatten_1", lambda a: a.flatten(1), lambda a: a.reshape(2, -1)),
    ("index_int", lambda a: a[1], lambda a: a[1]),
    ("index_neg", lambda a: a[-1, -2], lambda a: a[-1, -2]),
    ("slice_step", lambda a: a[:, ::2, 1:], lambda a: a[:, ::2, 1:]),
    ("none_ellipsis", lambda a: a[None, ..., 2], lambda a: a[None, ..., 2]),
    ("slice_method", lambda a: a.slice([(0, 1), None, (1, 4, 2)]), lambda a: a[0:1, :, 1:4:2]),
    ("contiguous", lambda a: a.transpose(1, 2).contiguous(), lambda a: a.swapaxes(1, 2)),
    ("clone", lambda a: a.clone(), lambda a: a.copy()),
    ("unbind", lambda a: a.unbind(1)[2], lambda a: a[:, 2]),
    ("reshape_of_transposed", lambda a: a.transpose(0, 1).reshape(3, 8),
     lambda a: a.swapaxes(0, 1).reshape(3, 8)),
]
