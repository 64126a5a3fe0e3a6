"""The math kernels within their accuracy bound of float64 (the `accuracy` field of
torchic.testing's cases: exp / log within 3 ULP, tanh / sigmoid within 1e-6), special
values included."""

import numpy as np
import pytest

from ulp import ulp_error
from torchic.testing import kernel_cases

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38,
                    3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 88.7229, 89.0, -87.33655,
                    -87.34, -103.97, -103.98, -104.0, -150.0, 1.0, -1.0, 0.5, 2.0],
                   np.float32)


def _run(h, op, x):
    a = h.put(x)
    return h.run(op, h.empty(x.shape), a)


ACCURATE = {name: c for name, c in kernel_cases("unary").items() if c.accuracy}


def grid(lo, hi):
    """Dense over [lo, hi], every binade through random bit patterns, and the specials."""
    dense = np.linspace(lo, hi, 2_000_001, dtype=np.float64).astype(np.float32)
    bits = np.random.default_rng(0).integers(0, 1 << 32, 4_000_000, dtype=np.uint64)
    return np.concatenate([dense, bits.astype(np.uint32).view(np.float32), SPECIAL,
                           -np.abs(SPECIAL)])


@pytest.mark.parametrize("op", sorted(ACCURATE))
def test_accuracy(h, op):
    """Each op with an `accuracy` row in torchic.testing within its bound of float64: in ULP
    or absolute; NaN exactly where float64 has NaN; the sign of a zero result kept."""
    case = ACCURATE[op]
    kind, bound, lo, hi = case.accuracy
    x = grid(lo, hi)
    got = _run(h, op, x)
    with np.errstate(all="ignore"):
        want = case.ref(x.astype(np.float64))
    assert (np.isnan(got) == np.isnan(want)).all(), f"{op}: NaN where float64 has none (or not)"
    if kind == "ulp":
        err = ulp_error(got, want)
    else:
        ok = ~np.isnan(want)
        err = np.where(ok, np.abs(got.astype(np.float64) - np.where(ok, want, 0)), 0)
        err = np.where(np.isinf(want) & (got != want), np.inf, err)
    worst = np.nanargmax(err)
    assert err[worst] <= bound, \
        f"{op}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: error {err[worst]} {kind}"
    zero = want == 0
    assert (np.signbit(got[zero]) == np.signbit(want[zero])).all(), f"{op}: sign of zero"


def test_math_on_strided_and_broadcast_inputs(h):
    x = np.linspace(-5, 5, 7 * 9, dtype=np.float32).reshape(7, 9)
    for layout in ("transposed", "strided"):
        a = h.put(x, layout)
        got = h.run("exp", h.empty(x.shape), a)
        np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=3e-7)
    col = h.put(np.float32([[1.5]]))
    b = h.view(col, 0, (7, 9), (0, 0))
    np.testing.assert_allclose(h.run("log", h.empty((7, 9)), b), np.full((7, 9), np.log(1.5)), rtol=2e-7)
