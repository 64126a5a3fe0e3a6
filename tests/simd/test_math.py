"""exp / log within 3 ULP of float64, tanh / sigmoid within 1e-6, special values."""

import numpy as np
import pytest

from conftest import ulp_error

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38,
                    3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 88.7229, 89.0, -87.33655,
                    -87.34, -103.97, -103.98, -104.0, -150.0, 1.0, -1.0, 0.5, 2.0],
                   np.float32)


def _run(h, op, x):
    a = h.put(x)
    return h.run(op, h.empty(x.shape), a)


def exp_grid():
    # dense over the whole interesting range, plus random bit patterns
    dense = np.linspace(-104.5, 89.0, 2_000_001, dtype=np.float64).astype(np.float32)
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 0xFFFFFFFF, 500_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([dense, bits.view(np.float32), SPECIAL])


def test_exp_within_3_ulp(h):
    x = exp_grid()
    got = _run(h, "exp", x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64))
    err = ulp_error(got, want)
    worst = np.nanargmax(err)
    assert err[worst] <= 3, f"exp({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]} ulp"
    assert np.isnan(got[np.isnan(x)]).all()


def test_log_within_3_ulp(h):
    rng = np.random.default_rng(1)
    # every binade of positive floats (subnormals too), densely near 1
    bits = rng.integers(1, 0x7F800000, 2_000_000, dtype=np.uint64).astype(np.uint32)
    near1 = np.linspace(0.5, 2.0, 1_000_001, dtype=np.float32)
    x = np.concatenate([bits.view(np.float32), near1, SPECIAL, -np.abs(SPECIAL[:8])])
    got = _run(h, "log", x)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(x.astype(np.float64))
    err = ulp_error(got, want)
    worst = np.nanargmax(err)
    assert err[worst] <= 3, f"log({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]} ulp"
    assert got[x == 0].tolist() == [-np.inf] * int((x == 0).sum())
    assert np.isnan(got[(x < 0) | np.isnan(x)]).all()
    assert got[x == np.inf][0] == np.inf


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_tanh_sigmoid_within_1e6(h, op):
    x = np.concatenate([np.linspace(-30, 30, 2_000_001, dtype=np.float32), SPECIAL,
                        np.random.default_rng(2).standard_normal(200_000).astype(np.float32)])
    got = _run(h, op, x)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        want = np.tanh(x64) if op == "tanh" else 1.0 / (1.0 + np.exp(-x64))
    finite = ~np.isnan(want)
    err = np.abs(got[finite].astype(np.float64) - want[finite])
    assert err.max() <= 1e-6, f"{op}({x[finite][err.argmax()]}) off by {err.max()}"
    assert np.isnan(got[~finite]).all()
    if op == "tanh":
        assert got[x == np.inf][0] == 1.0 and got[x == -np.inf][0] == -1.0
        assert np.signbit(got[(x == 0) & np.signbit(x)]).all()  # tanh(-0) = -0
    else:
        assert got[x == np.inf][0] == 1.0 and got[x == -np.inf][0] == 0.0


def test_math_on_strided_and_broadcast_inputs(h):
    x = np.linspace(-5, 5, 7 * 9, dtype=np.float32).reshape(7, 9)
    for layout in ("transposed", "strided"):
        a = h.put(x, layout)
        got = h.run("exp", h.empty(x.shape), a)
        np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=3e-7)
    col = h.put(np.float32([[1.5]]))
    b = h.view(col, 0, (7, 9), (0, 0))
    np.testing.assert_allclose(h.run("log", h.empty((7, 9)), b), np.full((7, 9), np.log(1.5)), rtol=2e-7)
