"""Every signature of every op row (ops.SIGNATURES: docs/DTYPES.md's compute rules) that the
backend holds the dtypes of runs on it, through raw, against the workers backend's NumPy
kernel on the same host arrays (numpy_kernels: the contract's executable form). On workers
it checks that each signature runs; on simd and webgpu, that their kernels agree. A
signature with a dtype the backend does not hold is refused at allocation (TypeError naming
the backend), and a combination no row allows is refused by raw (TypeError naming the op).
"""

import numpy as np
import pytest

import torchic
from torchic import dispatcher, ops, raw
from torchic.backends.cpu import numpy_kernels
from torchic.creation import from_numpy_array
from torchic.dtypes import host_values, to_host

SHAPE = (3, 4)
# the ops whose operands are all elementwise-shaped (3, 4) (or reduce one), plus a few others
ELEMENTWISE = ops.UNARY + ops.BINARY + ops.COMPARE + ("copy", "where", "gelu_grad",
                                                    "gelu_tanh_grad", "softmax_grad")
ROWWISE = ("softmax", "log_softmax")
PARAMS = {op: {"naxes": 1} for op in ops.REDUCE}
POSITIVE = ("log", "sqrt", "pow")        # drawn positive (no NaN to compare)


def _draw(rng, code, shape, positive=False):
    """Values for a `code` operand: small ints (wrapping products stay exact), bools, or
    floats in [-3, 3] ([0.25, 3] where `positive`)."""
    if code == "b8":
        return rng.random(shape) < 0.5
    if code in dispatcher.INT_CODES:
        lo = 0 if code == "u8" or positive else -50
        return rng.integers(lo, 50, shape)
    return rng.uniform(0.25 if positive else -3, 3, shape)


def _signatures(names):
    return [(op, ins, out) for op in names for ins, out in sorted(ops.SIGNATURES[op])]


CASES = _signatures(ELEMENTWISE + ops.REDUCE + ROWWISE + ("fill", "argmax", "gather_rows",
                                                          "matmul"))


def _operands(op, ins, rng):
    """(host value arrays, out shape, params) of one call."""
    if op == "gather_rows":
        return [_draw(rng, ins[0], (5, 4)), rng.integers(0, 5, (6,))], (6, 4), None
    if op == "matmul":
        return [_draw(rng, ins[0], (1, 3, 5)), _draw(rng, ins[1], (1, 5, 2))], (1, 3, 2), None
    if op == "fill":
        return [], SHAPE, {"value": 1}
    values = [_draw(rng, c, SHAPE, op in POSITIVE) for c in ins]
    if op in ops.REDUCE or op == "argmax":
        return values, SHAPE[:1], PARAMS.get(op)
    return values, SHAPE, None


@pytest.mark.parametrize("op,ins,out", CASES, ids=[f"{o}-{','.join(i)}->{t}" for o, i, t in CASES])
def test_signature_runs_as_the_numpy_kernel(backend, op, ins, out):
    rng = np.random.default_rng(len(ins) * 7 + len(op))
    values, out_shape, params = _operands(op, ins, rng)
    held = dispatcher.runtime().backend.dtypes
    if not set(ins) | {out} <= set(held):
        with pytest.raises(TypeError, match=repr(backend)):
            [from_numpy_array(np.asarray(v), c) for v, c in zip(values, ins)]
            raw.new_tensor(out_shape, out)
        return
    tensors = [from_numpy_array(np.asarray(v), c) for v, c in zip(values, ins)]
    result = raw.new_tensor(out_shape, out)
    raw.run(op, result, tuple(raw.view_of(t) for t in tensors), params)
    got = raw.values(result)
    # the reference: the NumPy kernel on the host arrays of the same values
    host = [to_host(np.asarray(v), c) for v, c in zip(values, ins)]
    want = np.zeros(out_shape, dispatcher.DTYPES[out])
    numpy_kernels.KERNELS[op](want, tuple(host), params)
    want = host_values(want, out)
    if out in ("f32", "f64") and op not in ("copy", "fill", "where", "gather_rows"):
        tol = 1e-5 if out == "f32" else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def test_raw_refuses_what_no_row_allows(backend):
    a = torchic.ones(3)
    i = torchic.zeros(3, dtype=torchic.int32)
    with pytest.raises(TypeError, match="op 'add' does not take dtypes"):
        raw.binary("add", a, i)
    with pytest.raises(TypeError, match="op 'exp' does not take dtypes"):
        raw.unary("exp", i)
    with pytest.raises(TypeError, match="op 'argmax' does not take dtypes"):
        raw.run("argmax", raw.new_tensor((), "f32"), (raw.view_of(a),))


@pytest.mark.parametrize("code,wide", sorted(ops.COMPUTE_AS.items()))
def test_raw_computes_half_and_narrow_dtypes_in_their_compute_dtype(backend, code, wide):
    """f16 / bf16 in f32, u8 / i8 / i16 in i64 (ops.COMPUTE_AS), rounded back to the dtype."""
    held = dispatcher.runtime().backend.dtypes
    if code not in held or wide not in held:
        return
    op = "exp" if wide == "f32" else "mul"
    values = np.array([[1, 2, 3], [4, 5, 250 if op == "mul" else 11]])    # (mul: wraps)
    a = from_numpy_array(values, code)
    got = raw.unary(op, a) if op == "exp" else raw.binary(op, a, a)
    assert got._dtype == code
    want = np.exp(values.astype(np.float32)) if op == "exp" else values * values
    np.testing.assert_array_equal(raw.values(got), host_values(to_host(want, code), code))
    assert raw.reduce("max", a, (0, 1))._dtype == code
