"""PyTorch's type promotion on every binary op, for every pair of dtypes and for tensors
with dims, 0-d tensors and Python scalars mixed, on every backend, against torch: the
result dtype and values (or the same exception class where torch refuses). In-place ops
refuse the results their dtype cannot hold with torch's RuntimeError. webgpu holds no
float64: there a float64 operand is the TypeError naming the backend."""

import operator

import numpy as np
import pytest

import torchic
from torchic import promotion

torch = pytest.importorskip("torch")

NAMES = {"b8": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
         "i64": "int64", "f16": "float16", "bf16": "bfloat16", "f32": "float32",
         "f64": "float64"}
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
       "truediv": operator.truediv, "pow": operator.pow, "eq": operator.eq,
       "lt": operator.lt, "ge": operator.ge,
       "maximum": lambda a, b: a.maximum(b) if hasattr(a, "maximum") else None}
A = [[1, 2, 0], [3, 1, 2]]
B = [[2, 1, 3], [1, 2, 2]]


def _tensors(lib, code, values, zero_dim=False):
    t = lib.tensor(values, dtype=getattr(lib, NAMES[code]))
    return t[0, 0] if zero_dim else t


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:            # torch's refusal: compared by class
        return type(exc)


def _compare(got, want, what):
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want), (what, got, want)
        return
    assert not isinstance(got, type), (what, got)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], what
    np.testing.assert_allclose(got.float().numpy().astype(np.float64) if got.dtype !=
                               torchic.bool else got.numpy(),
                               want.float().numpy().astype(np.float64) if want.dtype !=
                               torch.bool else want.numpy(),
                               rtol=2e-2 if "16" in str(want.dtype) else 1e-6, err_msg=what)


def _skip_f64(backend, *codes):
    if backend == "webgpu" and "f64" in codes:
        with pytest.raises(TypeError, match="webgpu"):
            torchic.tensor([1.0], dtype=torchic.float64)
        pytest.skip("webgpu holds no float64 (refusal asserted)")


@pytest.mark.parametrize("b", promotion.CODES)
@pytest.mark.parametrize("a", promotion.CODES)
def test_every_binary_op_on_every_dtype_pair(backend, a, b):
    _skip_f64(backend, a, b)
    for zero_dim in (False, True):
        ours = _tensors(torchic, a, A), _tensors(torchic, b, B, zero_dim)
        theirs = _tensors(torch, a, A), _tensors(torch, b, B, zero_dim)
        for name, op in OPS.items():
            if name == "maximum":
                want = _outcome(lambda: torch.maximum(*theirs))
                got = _outcome(lambda: torchic.maximum(*ours))
            else:
                want, got = _outcome(lambda: op(*theirs)), _outcome(lambda: op(*ours))
            _compare(got, want, f"{a} {name} {b}{' (0-d)' if zero_dim else ''}")


@pytest.mark.parametrize("a", promotion.CODES)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_python_scalars_are_weak(backend, a, scalar):
    _skip_f64(backend, a)
    ours, theirs = _tensors(torchic, a, A), _tensors(torch, a, A)
    for name in ("add", "mul", "truediv", "lt"):
        op = OPS[name]
        for x, y in ((ours, scalar), (scalar, ours)):
            tx, ty = (theirs, scalar) if x is ours else (scalar, theirs)
            _compare(_outcome(lambda: op(x, y)), _outcome(lambda: op(tx, ty)),
                     f"{a} {name} {scalar!r}")
    assert torchic.result_type(ours, scalar) == getattr(
        torchic, NAMES[promotion.result_code(ours, scalar)])


@pytest.mark.parametrize("b", promotion.CODES)
@pytest.mark.parametrize("a", promotion.CODES)
def test_inplace_ops_refuse_what_their_dtype_cannot_hold(backend, a, b):
    _skip_f64(backend, a, b)
    for name in ("add", "mul", "truediv"):
        ours, theirs = _tensors(torchic, a, A), _tensors(torch, a, A)
        method = f"__i{name}__"
        want = _outcome(lambda: getattr(theirs, method)(_tensors(torch, b, B)))
        got = _outcome(lambda: getattr(ours, method)(_tensors(torchic, b, B)))
        _compare(got, want, f"{a} {name}= {b}")
    if not promotion.can_cast_code(promotion.promote_codes(a, b), a):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            t = _tensors(torchic, a, A)
            t += _tensors(torchic, b, B)
