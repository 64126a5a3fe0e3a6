"""torchic's type promotion (promotion.py) against torch's, for every pair of dtypes and for
tensors with dims, 0-d tensors and Python / NumPy scalars mixed. Pure: the tensors here are
metadata only (no backend), and torch answers through torch.promote_types / result_type /
can_cast on the corresponding torch dtypes and tensors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torchic import promotion                    # noqa: E402
from torchic.tensor import Tensor                # noqa: E402

TORCH = {"b8": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
         "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
         "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
CODE_OF = {v: k for k, v in TORCH.items()}
PAIRS = [(a, b) for a in promotion.CODES for b in promotion.CODES]
SCALARS = [True, 0, 7, -3, 2.5, np.float32(2.5), np.float64(1.0), np.int16(3), np.int64(-2),
           np.bool_(False)]


def meta(code, shape):
    """A torchic tensor of `code` and `shape` with no storage (promotion reads dtype and
    dims only)."""
    strides = (1,) * len(shape)
    return Tensor._make(None, 0, shape, strides, code)


def torch_tensor(code, shape):
    return torch.zeros(shape, dtype=TORCH[code])


def test_codes_are_torchs_dtypes():
    assert set(promotion.CODES) == set(TORCH)
    for code in promotion.CODES:
        t = TORCH[code]
        assert promotion.is_floating(code) == t.is_floating_point
        assert promotion.is_integral(code) == (not t.is_floating_point and t != torch.bool)
        assert promotion.is_integral(code, include_bool=True) == (not t.is_floating_point)


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_every_pair(a, b):
    assert promotion.promote_codes(a, b) == CODE_OF[torch.promote_types(TORCH[a], TORCH[b])]


@pytest.mark.parametrize("a,b", PAIRS)
def test_can_cast_every_pair(a, b):
    assert promotion.can_cast_code(a, b) == torch.can_cast(TORCH[a], TORCH[b])


@pytest.mark.parametrize("a,b", PAIRS)
@pytest.mark.parametrize("ranks", [((2,), (3,)), ((2,), ()), ((), (2,)), ((), ())])
def test_result_type_of_tensors(a, b, ranks):
    """Dims outrank 0-d: every pair of dtypes in every order of ranks."""
    sa, sb = ranks
    ours = promotion.result_code(meta(a, sa), meta(b, sb))
    assert ours == CODE_OF[torch.result_type(torch_tensor(a, sa), torch_tensor(b, sb))]


@pytest.mark.parametrize("code", promotion.CODES)
@pytest.mark.parametrize("shape", [(3,), ()])
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_result_type_with_a_scalar(code, shape, scalar):
    """A Python / NumPy scalar is weak: its dtype counts only for a higher category."""
    expected = CODE_OF[torch.result_type(torch_tensor(code, shape), scalar)]
    assert promotion.result_code(meta(code, shape), scalar) == expected
    assert promotion.result_code(scalar, meta(code, shape)) == expected


@pytest.mark.parametrize("s1", SCALARS, ids=repr)
@pytest.mark.parametrize("s2", SCALARS, ids=repr)
def test_result_type_of_two_scalars(s1, s2):
    assert promotion.result_code(s1, s2) == CODE_OF[torch.result_type(s1, s2)]


def test_three_operands_rank_as_torchs_ops():
    """Three operands (torch.where's): dims, then 0-d, then scalars, each rank promoted
    within itself first."""
    cases = [(meta("i32", (2,)), meta("f64", ()), 2, "f64"),
             (meta("u8", (2,)), meta("i8", ()), 1000, "u8"),
             (meta("b8", (2,)), meta("b8", ()), 1, "i64"),
             (meta("f16", (2,)), meta("f64", ()), 2.5, "f16"),
             (meta("i16", (2,)), meta("i8", (2,)), 2.5, "f32")]
    for x, y, z, expected in cases:
        assert promotion.result_code(x, y, z) == expected


@pytest.mark.parametrize("code", promotion.CODES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_scalars_follow_the_default_dtype(monkeypatch, code, scalar):
    """With float64 the default dtype, a float scalar counts as float64 (int * 2.5 is
    float64), as torch.set_default_dtype(torch.float64) makes it."""
    monkeypatch.setattr(promotion, "default_float", lambda: "f64")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        expected = CODE_OF[torch.result_type(torch_tensor(code, (2,)), scalar)]
    finally:
        torch.set_default_dtype(previous)
    assert promotion.result_code(meta(code, (2,)), scalar) == expected


def test_result_type_refuses_what_is_not_an_operand():
    with pytest.raises(TypeError):
        promotion.result_code(meta("f32", (2,)), "2")
    with pytest.raises(TypeError):
        promotion.result_code(meta("f32", (2,)), None)
