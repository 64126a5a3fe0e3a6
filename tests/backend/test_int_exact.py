"""Every int op computes in integers (issue 39): the int32-accepting composites against
NumPy's int32 (wrapping around past 2^31 - 1, as PyTorch's int32 does), with values near
2^24 (where a float32 trip rounds) and 2^31 (where it saturates or wraps), on every backend.
"""

import numpy as np
import pytest

import torchic

try:
    import torch
except ImportError:       # the PyTorch comparisons are skipped cleanly
    torch = None

B = 2 ** 24 + 1                       # float32 rounds it to 2^24
MAX, MIN = 2 ** 31 - 1, -2 ** 31
A = np.array([[B, 1, 2, MIN, MAX, 3],
              [5, -B, 2 ** 24, MAX, -7, B]], dtype=np.int32)
# a second operand / bounds / exponents, same shape
OTHER = np.array([[B - 1, 1, MAX, MIN, 2, -B],
                  [B + 2, -B, 2 ** 24 + 3, 0, MIN, 4]], dtype=np.int32)
EXPONENTS = np.array([[1, 0, 31, 3, 2, 100],
                      [13, 2, 1, 2, 7, 2 ** 31 - 1]], dtype=np.int32)
MASK = np.array([[1, 0, 1, 0, 0, 1], [0, 1, 1, 0, 1, 0]], dtype=np.float32)


def _wrap(x):
    """int64 results taken modulo 2^32 into int32 (two's complement)."""
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def _ipow(base, exp):
    """NumPy's int32 power (square-and-multiply in int32, wrapping)."""
    return np.power(base.astype(np.int32), exp.astype(np.int32))


def _first_index(a, dim, pick):
    return np.argmax(a, axis=dim) if pick == "max" else np.argmin(a, axis=dim)


def _sort_desc(a):
    order = np.argsort(-a.astype(np.int64), axis=-1, kind="stable")
    return np.take_along_axis(a, order, -1), order


# name: (torchic(x, other, exponents, mask), numpy(a, other, exponents, mask))
CASES = {
    "cumsum dim 1": (lambda x, o, e, m: x.cumsum(1),
                     lambda a, o, e, m: np.cumsum(a, axis=1, dtype=np.int32)),
    "cumsum dim 0": (lambda x, o, e, m: torchic.cumsum(x, 0),
                     lambda a, o, e, m: np.cumsum(a, axis=0, dtype=np.int32)),
    "cumsum flat": (lambda x, o, e, m: x.reshape(-1).cumsum(0),
                    lambda a, o, e, m: np.cumsum(a.reshape(-1), dtype=np.int32)),
    "clamp numbers": (lambda x, o, e, m: x.clamp(-B, 2 ** 24 + 3),
                      lambda a, o, e, m: np.clip(a, -B, 2 ** 24 + 3)),
    "clamp max": (lambda x, o, e, m: x.clamp(max=B - 1),
                  lambda a, o, e, m: np.minimum(a, B - 1)),
    "clamp tensors": (lambda x, o, e, m: torchic.clamp(x, min=o),
                      lambda a, o, e, m: np.maximum(a, o)),
    "where tensors": (lambda x, o, e, m: torchic.where(m, x, o),
                      lambda a, o, e, m: np.where(m != 0, a, o)),
    "where int scalar": (lambda x, o, e, m: torchic.where(x > 2, x, MIN),
                         lambda a, o, e, m: np.where(a > 2, a, MIN)),
    "where int mask": (lambda x, o, e, m: torchic.where(o, x, 7),
                       lambda a, o, e, m: np.where(o != 0, a, 7)),
    "where two ints": (lambda x, o, e, m: torchic.where(m, B, MIN),
                       lambda a, o, e, m: np.where(m != 0, B, MIN).astype(np.int32)),
    "tril": (lambda x, o, e, m: x.tril(), lambda a, o, e, m: np.tril(a)),
    "triu 1": (lambda x, o, e, m: torchic.triu(x, 1), lambda a, o, e, m: np.triu(a, 1)),
    "masked_fill": (lambda x, o, e, m: x.masked_fill(m, 2 ** 24 + 3),
                    lambda a, o, e, m: np.where(m != 0, 2 ** 24 + 3, a)),
    "masked_fill 0-d tensor": (lambda x, o, e, m: x.masked_fill(m, torchic.tensor(MIN)),
                               lambda a, o, e, m: np.where(m != 0, MIN, a)),
    "max dim values": (lambda x, o, e, m: x.max(1).values, lambda a, o, e, m: a.max(1)),
    "max dim indices": (lambda x, o, e, m: x.max(dim=1).indices,
                        lambda a, o, e, m: _first_index(a, 1, "max")),
    "min dim 0": (lambda x, o, e, m: torchic.stack(list(torchic.min(x, 0, keepdim=True))),
                  lambda a, o, e, m: np.stack([a.min(0, keepdims=True),
                                               np.argmin(a, 0)[None]])),
    "argmax": (lambda x, o, e, m: x.argmax(), lambda a, o, e, m: np.argmax(a)),
    "argmax dim": (lambda x, o, e, m: x.argmax(1), lambda a, o, e, m: np.argmax(a, 1)),
    "argmin": (lambda x, o, e, m: x.argmin(), lambda a, o, e, m: np.argmin(a)),
    "argmin dim": (lambda x, o, e, m: torchic.argmin(o, dim=1, keepdim=True),
                   lambda a, o, e, m: np.argmin(o, 1)[:, None]),
    "amax": (lambda x, o, e, m: x.amax(), lambda a, o, e, m: a.max()),
    "sum": (lambda x, o, e, m: x.sum(1), lambda a, o, e, m: a.sum(1, dtype=np.int32)),
    "sort": (lambda x, o, e, m: torchic.stack(list(x.sort())),
             lambda a, o, e, m: np.stack([np.sort(a, kind="stable"),
                                          np.argsort(a, kind="stable")])),
    "sort descending": (lambda x, o, e, m: torchic.stack(list(x.sort(descending=True))),
                        lambda a, o, e, m: np.stack(_sort_desc(a))),
    "topk": (lambda x, o, e, m: torchic.stack(list(x.topk(3))),
             lambda a, o, e, m: np.stack([v[..., :3] for v in _sort_desc(a)])),
    "pow int": (lambda x, o, e, m: x ** 3, lambda a, o, e, m: _ipow(a, np.int32(3))),
    "pow int 100": (lambda x, o, e, m: x ** 100, lambda a, o, e, m: _ipow(a, np.int32(100))),
    "pow tensor": (lambda x, o, e, m: x ** e, lambda a, o, e, m: _ipow(a, e)),
    "rpow": (lambda x, o, e, m: 3 ** torchic.tensor(e),
             lambda a, o, e, m: _ipow(np.full_like(e, 3), e)),
    "neg": (lambda x, o, e, m: -x, lambda a, o, e, m: _wrap(-a.astype(np.int64))),
    "abs": (lambda x, o, e, m: x.abs(), lambda a, o, e, m: _wrap(np.abs(a.astype(np.int64)))),
    "isclose exact": (lambda x, o, e, m: torchic.isclose(x, o, rtol=0, atol=0),
                      lambda a, o, e, m: (a == o).astype(np.float32)),
    "roll": (lambda x, o, e, m: x.roll(1, 1), lambda a, o, e, m: np.roll(a, 1, 1)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_int_composites_compute_in_integers(backend, name):
    ours, numpy_fn = CASES[name]
    x, other = torchic.tensor(A), torchic.tensor(OTHER)
    exponents, mask = torchic.tensor(EXPONENTS), torchic.tensor(MASK)
    out = ours(x, other, exponents, mask)
    want = numpy_fn(A, OTHER, EXPONENTS, MASK)
    got = out.numpy()
    if want.dtype.kind in "iu":
        assert out.dtype == torchic.int32, name
        want = want.astype(np.int64)
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_int_cumsum_of_the_issue(backend):
    assert torchic.tensor([B, 1, 2]).cumsum(0).tolist() == [B, B + 1, B + 3]
    assert torchic.tensor([MAX, 1]).cumsum(0).tolist() == [MAX, MIN]       # wraps
    # dtype= casts first (PyTorch's rule): the float32 sums round
    assert torchic.tensor([B, 1]).cumsum(0, dtype=torchic.float32).tolist() == [2 ** 24] * 2


def test_int_promotions_follow_pytorch(backend):
    x = torchic.tensor([1, 5])
    assert x.clamp(1.5).tolist() == [1.5, 5.0]                  # a float bound: float result
    assert x.clamp(max=torchic.tensor([2.5, 2.5])).dtype == torchic.float32
    assert torchic.where(x > 1, x, 0.5).tolist() == [0.5, 5.0]
    assert (x ** 2.0).dtype == torchic.float32 and (x / x).dtype == torchic.float32
    assert x.masked_fill(torchic.tensor([0.0, 1.0]), 7.9).tolist() == [1, 7]   # truncated
    with pytest.raises(RuntimeError, match="cannot be converted to type int32"):
        x.masked_fill(torchic.tensor([0.0, 1.0]), float("nan"))
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        x.clone().clamp_(1.5)
    assert x.clone().clamp_(max=2 ** 24 + 3).tolist() == [1, 5]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        x ** -1
    # a negative exponent in a tensor: C's truncated power, as PyTorch's
    got = torchic.tensor([0, 1, -1, 2, -2, -1]) ** torchic.tensor([-1, -3, -3, -2, -1, MIN])
    assert got.tolist() == [0, 1, -1, 0, 0, 1]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name", ["pow tensor", "max dim indices", "where tensors",
                                  "clamp tensors", "tril", "isclose exact"])
def test_int_composites_match_pytorch(backend, name):
    ours, _ = CASES[name]
    out = ours(torchic.tensor(A), torchic.tensor(OTHER), torchic.tensor(EXPONENTS),
               torchic.tensor(MASK))
    t = {"x": torch.tensor(A), "o": torch.tensor(OTHER), "e": torch.tensor(EXPONENTS),
         "m": torch.tensor(MASK) != 0}
    want = {"pow tensor": lambda: t["x"] ** t["e"],
            "max dim indices": lambda: t["x"].max(dim=1).indices,
            "where tensors": lambda: torch.where(t["m"], t["x"], t["o"]),
            "clamp tensors": lambda: torch.clamp(t["x"], min=t["o"]),
            "tril": lambda: t["x"].tril(),
            "isclose exact": lambda: torch.isclose(t["x"], t["o"], rtol=0, atol=0)}[name]()
    np.testing.assert_array_equal(out.numpy(), want.numpy().astype(out.numpy().dtype))


# -- creating int32 tensors: refused where int32 cannot hold the values, never wrapped -------
@pytest.mark.parametrize("make", [
    lambda: torchic.arange(2 ** 31 - 2, 2 ** 31 + 1),
    lambda: torchic.arange(-2 ** 31 + 1, -2 ** 31 - 2, -1),
    lambda: torchic.arange(0, 2 ** 31 + 0.5, 2 ** 30, dtype=torchic.int32),
    lambda: torchic.linspace(0, 3e9, 2, dtype=torchic.int32),
    lambda: torchic.tensor([2 ** 31]),
    lambda: torchic.tensor([-2.0 ** 31 - 1], dtype=torchic.int32),
], ids=["arange", "arange down", "arange float args", "linspace", "tensor", "tensor floats"])
def test_int32_creation_past_its_range_is_refused(backend, make):
    with pytest.raises(OverflowError, match="integer data does not fit in int32"):
        make()


def test_int32_creation_at_its_range_is_exact(backend):
    assert torchic.arange(2 ** 31 - 3, 2 ** 31).tolist() == [2 ** 31 - 3, 2 ** 31 - 2, MAX]
    assert torchic.arange(MIN, MIN + 2).tolist() == [MIN, MIN + 1]
    assert torchic.arange(-3.5, 0, dtype=torchic.int32).tolist() == [-3, -2, -1, 0]  # PyTorch's
    assert torchic.linspace(0, 10, 4, dtype=torchic.int32).tolist() == [0, 3, 6, 10]
    assert torchic.full((1,), MAX).tolist() == [MAX]


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("make", [
    lambda: torchic.tensor([1.0, NAN], dtype=torchic.int32),
    lambda: torchic.tensor(np.array([INF], np.float32), dtype=torchic.long),
    lambda: torchic.tensor(torchic.tensor([NAN]), dtype=torchic.int32),
    lambda: torchic.as_tensor([NAN], dtype=torchic.int32),
    lambda: torchic.linspace(0, NAN, 2, dtype=torchic.int32),
    lambda: torchic.full((2,), NAN, dtype=torchic.int32),
    lambda: torchic.zeros(2, dtype=torchic.int32).fill_(-INF),
    lambda: torchic.zeros(2, dtype=torchic.int32).__setitem__(0, NAN),
    lambda: torchic.full((1,), 2.0 ** 31, dtype=torchic.int32),
    lambda: torchic.zeros(2, dtype=torchic.int32).masked_fill(torchic.ones(2), NAN),
], ids=["list", "array", "tensor", "as_tensor", "linspace", "full", "fill_", "setitem",
        "full 2^31", "masked_fill"])
def test_nan_or_inf_into_int32_from_a_number_is_refused(backend, make):
    """PyTorch raises here (RuntimeError "value cannot be converted to type int32 without
    overflow"); torchic too, instead of storing 0."""
    with pytest.raises(RuntimeError, match="cannot be converted to type int32 without overflow"):
        make()


def test_float_tensor_cast_to_int32_is_the_documented_saturating_cast(backend):
    """A float32 *tensor* cast to int32 (.int(), .long(), .to(), copy_ into an int tensor):
    PyTorch's value for NaN and out-of-range floats is undefined (x86 gives -2^31); torchic's
    is the copy op's contract (ops.py), the same on every backend: truncation toward zero,
    saturation to [-2^31, 2^31 - 1], NaN -> 0 (a device-side cast cannot refuse: the values
    are not read)."""
    x = torchic.tensor([NAN, INF, -INF, 3e9, -3e9, -2.7, 2.7, 16777217.0])
    want = [0, MAX, MIN, MAX, MIN, -2, 2, 2 ** 24]
    assert x.int().tolist() == want and x.long().tolist() == want
    assert x.to(torchic.int32).tolist() == want
    assert torchic.zeros(8, dtype=torchic.int32).copy_(x).tolist() == want
