"""Every int op computes in integers (issue 39, issue 40): the integer-accepting ops and
composites in every integer dtype (int64, int32, int16, int8, uint8) against NumPy in the
same dtype (wrapping around as PyTorch's integers do; sums, cumsums and indices int64 as
PyTorch's), with values near 2^24 / 2^53 (where a float32 / float64 trip rounds) and at
each dtype's limits (where it saturates or wraps), on every backend. webgpu stores int64 as
32-bit words and refuses values outside int32 (docs/DTYPES.md): its int64 rows are the
refusal, asserted.
"""

import numpy as np
import pytest

import torchic

try:
    import torch
except ImportError:       # the PyTorch comparisons are skipped cleanly
    torch = None

CODES = ("i64", "i32", "i16", "i8", "u8")
NUMPY = {"i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8}
TORCHIC = {"i64": torchic.int64, "i32": torchic.int32, "i16": torchic.int16,
           "i8": torchic.int8, "u8": torchic.uint8, "b8": torchic.bool}
B = 2 ** 24 + 1                       # float32 rounds it to 2^24
MAX, MIN = 2 ** 31 - 1, -2 ** 31


def data(code):
    """(a, other, exponents, mask, k) for one integer dtype: values at its limits and near
    the integers a float trip rounds; k the constants the cases use (b, lo, hi)."""
    dt = NUMPY[code]
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    b = {"i64": 2 ** 53 + 1, "i32": B}.get(code, hi // 2 + 1)
    nb = -b if lo < 0 else 0
    a = np.array([[b, 1, 2, lo, hi, 3], [5, nb, b - 2, hi, 7, b]], dtype=dt)
    other = np.array([[b - 1, 1, hi, lo, 2, nb], [b + 2, nb, b + 3, 0, lo, 4]], dtype=dt)
    exponents = np.array([[1, 0, info.bits - 1, 3, 2, min(100, hi)],
                          [13, 2, 1, 2, 7, hi]], dtype=dt)
    mask = np.array([[1, 0, 1, 0, 0, 1], [0, 1, 1, 0, 1, 0]], dtype=bool)
    return a, other, exponents, mask, {"b": b, "lo": lo, "hi": hi, "dt": dt}


def _first_index(a, dim, pick):
    return np.argmax(a, axis=dim) if pick == "max" else np.argmin(a, axis=dim)


def _sort_desc(a):
    order = np.argsort(~a, axis=-1, kind="stable")     # ~x = -x - 1: never wraps
    return np.take_along_axis(a, order, -1), order


def _stack(*arrays):
    return np.stack([np.asarray(x).astype(np.int64) for x in arrays])


# name: (torchic(x, o, e, m, k), numpy(a, o, e, m, k)); k: data()'s constants
CASES = {
    "add": (lambda x, o, e, m, k: x + o, lambda a, o, e, m, k: a + o),
    "sub": (lambda x, o, e, m, k: x - o, lambda a, o, e, m, k: a - o),
    "mul": (lambda x, o, e, m, k: x * o, lambda a, o, e, m, k: a * o),
    "add scalar": (lambda x, o, e, m, k: x + 3, lambda a, o, e, m, k: a + k["dt"](3)),
    "maximum": (lambda x, o, e, m, k: torchic.maximum(x, o),
                lambda a, o, e, m, k: np.maximum(a, o)),
    "cumsum dim 1": (lambda x, o, e, m, k: x.cumsum(1),
                     lambda a, o, e, m, k: np.cumsum(a, axis=1, dtype=np.int64)),
    "cumsum dim 0": (lambda x, o, e, m, k: torchic.cumsum(x, 0),
                     lambda a, o, e, m, k: np.cumsum(a, axis=0, dtype=np.int64)),
    "cumsum flat": (lambda x, o, e, m, k: x.reshape(-1).cumsum(0),
                    lambda a, o, e, m, k: np.cumsum(a.reshape(-1), dtype=np.int64)),
    "clamp numbers": (lambda x, o, e, m, k: x.clamp(3, k["b"]),
                      lambda a, o, e, m, k: np.clip(a, 3, k["b"]).astype(k["dt"])),
    "clamp max": (lambda x, o, e, m, k: x.clamp(max=k["b"] - 1),
                  lambda a, o, e, m, k: np.minimum(a, k["dt"](k["b"] - 1))),
    "clamp tensors": (lambda x, o, e, m, k: torchic.clamp(x, min=o),
                      lambda a, o, e, m, k: np.maximum(a, o)),
    "where tensors": (lambda x, o, e, m, k: torchic.where(m, x, o),
                      lambda a, o, e, m, k: np.where(m, a, o)),
    "where int scalar": (lambda x, o, e, m, k: torchic.where(x > 2, x, k["lo"]),
                         lambda a, o, e, m, k: np.where(a > 2, a, k["dt"](k["lo"]))),
    "where int mask": (lambda x, o, e, m, k: torchic.where(o != 0, x, 7),
                       lambda a, o, e, m, k: np.where(o != 0, a, k["dt"](7))),
    "where two ints": (lambda x, o, e, m, k: torchic.where(m, k["b"], k["lo"]),
                       lambda a, o, e, m, k: np.where(m, k["b"], k["lo"]).astype(np.int64)),
    "tril": (lambda x, o, e, m, k: x.tril(), lambda a, o, e, m, k: np.tril(a)),
    "triu 1": (lambda x, o, e, m, k: torchic.triu(x, 1), lambda a, o, e, m, k: np.triu(a, 1)),
    "masked_fill": (lambda x, o, e, m, k: x.masked_fill(m, k["b"] + 2),
                    lambda a, o, e, m, k: np.where(m, k["dt"](k["b"] + 2), a)),
    "masked_fill 0-d tensor": (
        lambda x, o, e, m, k: x.masked_fill(m, torchic.tensor(k["lo"], dtype=x.dtype)),
        lambda a, o, e, m, k: np.where(m, k["dt"](k["lo"]), a)),
    "max dim values": (lambda x, o, e, m, k: x.max(1).values, lambda a, o, e, m, k: a.max(1)),
    "max dim indices": (lambda x, o, e, m, k: x.max(dim=1).indices,
                        lambda a, o, e, m, k: _first_index(a, 1, "max")),
    "min dim 0": (lambda x, o, e, m, k: torchic.stack(list(torchic.min(x, 0, keepdim=True))),
                  lambda a, o, e, m, k: _stack(a.min(0, keepdims=True),
                                               np.argmin(a, 0)[None])),
    "argmax": (lambda x, o, e, m, k: x.argmax(), lambda a, o, e, m, k: np.argmax(a)),
    "argmax dim": (lambda x, o, e, m, k: x.argmax(1), lambda a, o, e, m, k: np.argmax(a, 1)),
    "argmin": (lambda x, o, e, m, k: x.argmin(), lambda a, o, e, m, k: np.argmin(a)),
    "argmin dim": (lambda x, o, e, m, k: torchic.argmin(o, dim=1, keepdim=True),
                   lambda a, o, e, m, k: np.argmin(o, 1)[:, None]),
    "amax": (lambda x, o, e, m, k: x.amax(), lambda a, o, e, m, k: a.max()),
    "sum": (lambda x, o, e, m, k: x.sum(1), lambda a, o, e, m, k: a.sum(1, dtype=np.int64)),
    "prod": (lambda x, o, e, m, k: x.prod(1), lambda a, o, e, m, k: a.prod(1, dtype=np.int64)),
    "sum dtype": (lambda x, o, e, m, k: x.sum(1, dtype=x.dtype),
                  lambda a, o, e, m, k: a.sum(1, dtype=k["dt"])),
    "sort": (lambda x, o, e, m, k: torchic.stack(list(x.sort(stable=True))),
             lambda a, o, e, m, k: _stack(np.sort(a, kind="stable"),
                                          np.argsort(a, kind="stable"))),
    "sort descending": (lambda x, o, e, m, k: torchic.stack(list(x.sort(descending=True,
                                                                        stable=True))),
                        lambda a, o, e, m, k: _stack(*_sort_desc(a))),
    "topk": (lambda x, o, e, m, k: torchic.stack(list(x.topk(3))),
             lambda a, o, e, m, k: _stack(*[v[..., :3] for v in _sort_desc(a)])),
    "pow int": (lambda x, o, e, m, k: x ** 3, lambda a, o, e, m, k: np.power(a, k["dt"](3))),
    "pow int 100": (lambda x, o, e, m, k: x ** 100,
                    lambda a, o, e, m, k: np.power(a, k["dt"](100))),
    "pow tensor": (lambda x, o, e, m, k: x ** e, lambda a, o, e, m, k: np.power(a, e)),
    "rpow": (lambda x, o, e, m, k: 3 ** e,
             lambda a, o, e, m, k: np.power(np.full_like(e, 3), e)),
    "neg": (lambda x, o, e, m, k: -x, lambda a, o, e, m, k: np.negative(a)),
    "abs": (lambda x, o, e, m, k: x.abs(), lambda a, o, e, m, k: np.abs(a)),
    "isclose exact": (lambda x, o, e, m, k: torchic.isclose(x, o, rtol=0, atol=0),
                      lambda a, o, e, m, k: a == o),
    "eq": (lambda x, o, e, m, k: x == o, lambda a, o, e, m, k: a == o),
    "lt scalar": (lambda x, o, e, m, k: x < k["b"], lambda a, o, e, m, k: a < k["b"]),
    "isin": (lambda x, o, e, m, k: torchic.isin(x, o), lambda a, o, e, m, k: np.isin(a, o)),
    "roll": (lambda x, o, e, m, k: x.roll(1, 1), lambda a, o, e, m, k: np.roll(a, 1, 1)),
}


def _inputs(backend, code):
    if backend == "webgpu" and code == "i64":
        pytest.skip("webgpu's int64 rule: values outside int32 are refused "
                    "(test_webgpu_refuses_int64_values_outside_int32)")
    a, o, e, m, k = data(code)
    return (a, o, e, m, k), tuple(torchic.tensor(v) for v in (a, o, e, m)) + (k,)


def _refused_on_webgpu(backend, want, ours, tensors):
    """True (the refusal asserted) where webgpu must refuse an int64 result past int32 (its
    int64 rule: sums and products of int32 / int16 data)."""
    want = np.asarray(want)
    if backend == "webgpu" and want.dtype == np.int64 and want.size and (
            want.min() < -2 ** 31 or want.max() > 2 ** 31 - 1):
        with pytest.raises(OverflowError, match="int64"):
            ours(*tensors).numpy()
        return True
    return False


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("name", list(CASES))
def test_int_ops_compute_in_integers(backend, code, name):
    ours, numpy_fn = CASES[name]
    arrays, tensors = _inputs(backend, code)
    assert tensors[0].dtype == TORCHIC[code]
    with np.errstate(over="ignore"):
        want = np.asarray(numpy_fn(*[x.copy() if isinstance(x, np.ndarray) else x
                                     for x in arrays]))
    if _refused_on_webgpu(backend, want, ours, tensors):
        return
    out = ours(*tensors)
    got = out.numpy()
    assert out.dtype == TORCHIC["b8" if want.dtype == bool else
                                {np.dtype(v): c for c, v in NUMPY.items()}[want.dtype]], name
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_webgpu_refuses_int64_values_outside_int32(backend):
    if backend != "webgpu":
        pytest.skip("webgpu's rule")
    with pytest.raises(OverflowError):
        torchic.tensor([2 ** 31])
        torchic.sync()


def test_int_cumsum_of_the_issue(backend):
    assert torchic.tensor([B, 1, 2]).cumsum(0).tolist() == [B, B + 1, B + 3]
    # int32 cumsums are int64, as PyTorch's: no wrap at 2^31 (webgpu: refused, its rule)
    if backend == "webgpu":
        with pytest.raises(OverflowError):
            torchic.tensor([MAX, 1], dtype=torchic.int32).cumsum(0).tolist()
    else:
        assert torchic.tensor([MAX, 1], dtype=torchic.int32).cumsum(0).tolist() == \
            [MAX, MAX + 1]
    assert torchic.tensor([MAX, 1], dtype=torchic.int32).cumsum(0, dtype=torchic.int32
                                                                ).tolist() == [MAX, MIN]
    # dtype= casts first (PyTorch's rule): the float32 sums round
    assert torchic.tensor([B, 1]).cumsum(0, dtype=torchic.float32).tolist() == [2 ** 24] * 2


@pytest.mark.parametrize("code", CODES)
def test_int_promotions_follow_pytorch(backend, code):
    x = torchic.tensor([1, 5], dtype=TORCHIC[code])
    assert x.clamp(1.5).tolist() == [1.5, 5.0] and x.clamp(1.5).dtype == torchic.float32
    assert x.clamp(max=torchic.tensor([2.5, 2.5])).dtype == torchic.float32
    assert torchic.where(x > 1, x, 0.5).tolist() == [0.5, 5.0]
    assert (x ** 2.0).dtype == torchic.float32 and (x / x).dtype == torchic.float32
    assert (x + True).dtype == x.dtype and (x + torchic.tensor(1)).dtype == x.dtype
    assert (x * 2.5).dtype == torchic.float32 and (x.exp()).dtype == torchic.float32
    mask = torchic.tensor([False, True])
    assert x.masked_fill(mask, 7.9).tolist() == [1, 7]                        # truncated
    with pytest.raises(RuntimeError, match="cannot be converted to type"):
        x.masked_fill(mask, float("nan"))
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        x.clone().clamp_(1.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        y = x.clone()
        y += 1.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        y = x.clone()
        y /= 2
    with pytest.raises(RuntimeError, match="mean"):
        x.mean()
    assert x.clone().clamp_(max=3).tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        x ** -1
    # a negative exponent in a tensor: C's truncated power, as PyTorch's
    if code != "u8":
        dt = TORCHIC[code]
        got = torchic.tensor([0, 1, -1, 2, -2, -1], dtype=dt) ** torchic.tensor(
            [-1, -3, -3, -2, -1, -128], dtype=dt)
        assert got.tolist() == [0, 1, -1, 0, 0, 1]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("name", ["pow tensor", "max dim indices", "where tensors",
                                  "clamp tensors", "tril", "isclose exact", "sum", "cumsum dim 1",
                                  "neg", "abs", "mul", "argmax dim", "rpow", "prod"])
def test_int_ops_match_pytorch(backend, code, name):
    ours, _ = CASES[name]
    arrays, tensors = _inputs(backend, code)
    a, o, e, m, k = arrays
    t = {"x": torch.tensor(a), "o": torch.tensor(o), "e": torch.tensor(e), "m": torch.tensor(m)}
    want = {"pow tensor": lambda: t["x"] ** t["e"],
            "max dim indices": lambda: t["x"].max(dim=1).indices,
            "where tensors": lambda: torch.where(t["m"], t["x"], t["o"]),
            "clamp tensors": lambda: torch.clamp(t["x"], min=t["o"]),
            "tril": lambda: t["x"].tril(),
            "isclose exact": lambda: torch.isclose(t["x"], t["o"], rtol=0, atol=0),
            "sum": lambda: t["x"].sum(1), "cumsum dim 1": lambda: t["x"].cumsum(1),
            "prod": lambda: t["x"].prod(1),
            "neg": lambda: -t["x"], "abs": lambda: t["x"].abs(), "mul": lambda: t["x"] * t["o"],
            "argmax dim": lambda: t["x"].argmax(1), "rpow": lambda: 3 ** t["e"]}[name]()
    if _refused_on_webgpu(backend, want.numpy(), ours, tensors):
        return
    out = ours(*tensors)
    assert str(out.dtype).split(".")[1] == str(want.dtype).split(".")[1], name
    np.testing.assert_array_equal(out.numpy(), want.numpy())


# -- creating int32 tensors: refused where int32 cannot hold the values, never wrapped -------
@pytest.mark.parametrize("make", [
    lambda: torchic.arange(2 ** 31 - 2, 2 ** 31 + 1, dtype=torchic.int32),
    lambda: torchic.arange(-2 ** 31 + 1, -2 ** 31 - 2, -1, dtype=torchic.int32),
    lambda: torchic.arange(0, 2 ** 31 + 0.5, 2 ** 30, dtype=torchic.int32),
    lambda: torchic.linspace(0, 3e9, 2, dtype=torchic.int32),
    lambda: torchic.tensor([2 ** 31], dtype=torchic.int32),
    lambda: torchic.tensor([-2.0 ** 31 - 1], dtype=torchic.int32),
], ids=["arange", "arange down", "arange float args", "linspace", "tensor", "tensor floats"])
def test_int32_creation_past_its_range_is_refused(backend, make):
    with pytest.raises(OverflowError, match="integer data does not fit in int32"):
        make()


def test_int64_is_the_default_integer_and_holds_past_int32(backend):
    if backend == "webgpu":
        pytest.skip("webgpu's int64 rule: values outside int32 are refused")
    assert torchic.arange(2 ** 31 - 1, 2 ** 31 + 1).tolist() == [MAX, MAX + 1]
    assert torchic.tensor([2 ** 62]).tolist() == [2 ** 62]
    with pytest.raises(OverflowError, match="does not fit in int64"):
        torchic.tensor([2 ** 63])


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
    lambda: torchic.zeros(2, dtype=torchic.int32).masked_fill(torchic.ones(2, dtype=bool), NAN),
], ids=["list", "array", "tensor", "as_tensor", "linspace", "full", "fill_", "setitem",
        "full 2^31", "masked_fill"])
def test_nan_or_inf_into_int32_from_a_number_is_refused(backend, make):
    """PyTorch raises here (RuntimeError "value cannot be converted to type int without
    overflow"); torchic too, instead of storing 0."""
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        make()


def test_float_tensor_cast_to_int32_is_the_documented_saturating_cast(backend):
    """A float32 *tensor* cast to int32 (.int(), .long(), .to(), copy_ into an int tensor):
    PyTorch's value for NaN and out-of-range floats is undefined (x86 gives -2^31); torchic's
    is the copy op's contract (ops.py), the same on every backend: truncation toward zero,
    saturation to [-2^31, 2^31 - 1], NaN -> 0 (a device-side cast cannot refuse: the values
    are not read)."""
    x = torchic.tensor([NAN, INF, -INF, 3e9, -3e9, -2.7, 2.7, 16777217.0])
    want = [0, MAX, MIN, MAX, MIN, -2, 2, 2 ** 24]
    assert x.int().tolist() == want
    assert x.to(torchic.int32).tolist() == want
    assert torchic.zeros(8, dtype=torchic.int32).copy_(x).tolist() == want
