"""Every dtype of docs/DTYPES.md: the DType objects, the parser, the default dtype, every
creation function and conversion in every dtype against NumPy (and torch where installed),
on every backend; a dtype a backend declares it does not hold (Backend.dtypes, refusals)
is a TypeError naming the backend."""

import copy
import pickle

import numpy as np
import pytest

import torchic
from torchic import dispatcher
from torchic.dtypes import dtype_code, from_float32, to_float32

try:
    import torch
except ImportError:     # the torch comparisons skip; the NumPy ones still run
    torch = None

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64"]
DTYPES = [getattr(torchic, n) for n in NAMES]
FLOATS = [d for d in DTYPES if d.is_floating_point]
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def np_values(dtype, values):
    """The NumPy array `values` become in `dtype` (bf16: float32 values rounded to bf16)."""
    if dtype is torchic.bfloat16:
        return to_float32(from_float32(np.asarray(values, np.float32)))
    return np.asarray(values).astype(dtype.numpy)


def held(dtype):
    """Whether the current backend holds `dtype` (else creating one must be refused)."""
    return dtype.code in dispatcher.runtime().backend.dtypes


def full_int64():
    """Whether the backend holds int64 in 64 bits (webgpu: 32-bit words, docs/DTYPES.md)."""
    backend = dispatcher.runtime().backend
    return held(torchic.int64) and \
        dispatcher.ITEMSIZE[dispatcher.storage_code(backend, "i64")] == 8


def values_of(t):
    """The values of t as NumPy (bf16 as float32: .numpy() refuses it, as PyTorch)."""
    return t.float().numpy() if t.dtype is torchic.bfloat16 else t.numpy()


def check(t, dtype, expected):
    assert t.dtype is dtype
    got = values_of(t)
    want = np_values(dtype, expected)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def refused(make, dtype, backend):
    with pytest.raises(TypeError, match=repr(backend)):
        make()


# -- DType objects and the parser ------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_are_torchs(name):
    d, td = getattr(torchic, name), getattr(torch, name)
    assert repr(d) == f"torchic.{name}"
    assert (d.itemsize, d.is_floating_point, d.is_signed, d.is_complex) == \
        (td.itemsize, td.is_floating_point, td.is_signed, td.is_complex)
    assert d.to_real() is d
    assert pickle.loads(pickle.dumps(d)) is d
    assert dtype_code(td) == d.code and dtype_code(name) == d.code


def test_aliases_and_spellings():
    assert torchic.long is torchic.int64 and torchic.int is torchic.int32
    assert torchic.double is torchic.float64 and torchic.float is torchic.float32
    assert torchic.half is torchic.float16 and torchic.short is torchic.int16
    for spelling, code in [("long", "i64"), ("double", "f64"), (np.float64, "f64"),
                           (np.dtype("int8"), "i8"), (float, "f64"), (int, "i64"),
                           (bool, "b8"), ("half", "f16"), (np.uint8, "u8"), ("bf16", "bf16")]:
        assert dtype_code(spelling) == code, spelling
    for bad in ["complex64", np.uint16, np.complex128, "float128", object]:
        with pytest.raises(TypeError, match="unsupported dtype"):
            dtype_code(bad)


@needs_torch
@pytest.mark.parametrize("name", [n for n in NAMES])
def test_finfo_iinfo_are_torchs(name):
    d, td = getattr(torchic, name), getattr(torch, name)
    if d.is_floating_point:
        f, tf = torchic.finfo(d), torch.finfo(td)
        assert (f.bits, f.eps, f.max, f.min, f.tiny, f.resolution) == \
            (tf.bits, tf.eps, tf.max, tf.min, tf.tiny, tf.resolution)
        with pytest.raises(TypeError):
            torchic.iinfo(d)
    elif d is not torchic.bool:
        i, ti = torchic.iinfo(d), torch.iinfo(td)
        assert (i.bits, i.min, i.max) == (ti.bits, ti.min, ti.max)
        with pytest.raises(TypeError):
            torchic.finfo(d)


def test_default_dtype(backend):
    assert torchic.get_default_dtype() is torchic.float32
    try:
        torchic.set_default_dtype(torchic.float64)
        assert torchic.get_default_dtype() is torchic.float64
        if held(torchic.float64):
            assert torchic.tensor([1.5]).dtype is torchic.float64
            assert torchic.zeros(2).dtype is torchic.float64
            assert torchic.arange(0.0, 1.0, 0.5).dtype is torchic.float64
        if held(torchic.int64):
            assert torchic.tensor([1]).dtype is torchic.int64      # integers stay int64
        with pytest.raises(TypeError, match="floating-point"):
            torchic.set_default_dtype(torchic.int64)
        assert torchic.get_default_dtype() is torchic.float64     # unchanged by the refusal
    finally:
        torchic.set_default_dtype(torchic.float32)
    assert torchic.tensor([1.5]).dtype is torchic.float32


# -- dtypes of data, as PyTorch picks them --------------------------------------------------------
DATA = [[1, 2], [1.5, 2], [True, False], 3, 2.5, True, [[1, 2], [3, 4]],
        np.array([1, 2], np.int32), np.array([1.0], np.float64), np.array([1, 2], np.uint8),
        np.array([True]), np.array([1.0], np.float16), np.int16(3), np.float64(2.0)]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_inferred_dtype_is_torchs(backend, data):
    if torch is None:
        pytest.skip("torch is not installed")
    want = getattr(torchic, str(torch.tensor(data).dtype).removeprefix("torch."))
    if not held(want):
        return refused(lambda: torchic.tensor(data), want, backend)
    t = torchic.tensor(data)
    assert t.dtype is want
    np.testing.assert_array_equal(values_of(t), torch.tensor(data).numpy())
    if isinstance(data, np.ndarray):
        assert torchic.from_numpy(data).dtype is want
    assert torchic.as_tensor(data).dtype is want


def test_from_numpy_refuses_what_torch_has_not(backend):
    with pytest.raises(TypeError, match="uint16"):
        torchic.from_numpy(np.zeros(2, np.uint16))


# -- every creation function in every dtype -------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES)
def test_creation_functions(backend, dtype):
    if not held(dtype):
        for make in (lambda: torchic.zeros(2, dtype=dtype), lambda: torchic.empty(3, dtype=dtype),
                     lambda: torchic.tensor([1, 0], dtype=dtype)):
            refused(make, dtype, backend)
        return
    check(torchic.zeros(2, 3, dtype=dtype), dtype, np.zeros((2, 3)))
    check(torchic.ones((3,), dtype=dtype), dtype, np.ones(3))
    check(torchic.full((2,), 1, dtype=dtype), dtype, [1, 1])
    assert torchic.empty(4, dtype=dtype).dtype is dtype
    data = [[0, 1, 2], [3, 1, 0]]
    t = torchic.tensor(data, dtype=dtype)
    check(t, dtype, data)
    check(torchic.as_tensor(data, dtype=dtype), dtype, data)
    for like in (torchic.zeros_like, torchic.ones_like, torchic.empty_like):
        assert like(t).dtype is dtype and like(t).shape == (2, 3)
        assert like(torchic.zeros(2), dtype=dtype).dtype is dtype
    check(torchic.full_like(t, 1), dtype, np.ones((2, 3)))
    check(torchic.eye(3, dtype=dtype), dtype, np.eye(3))
    check(torchic.eye(2, 4, dtype=dtype), dtype, np.eye(2, 4))
    if dtype is not torchic.bool:
        check(torchic.arange(5, dtype=dtype), dtype, np.arange(5))
        check(torchic.arange(1, 7, 2, dtype=dtype), dtype, [1, 3, 5])
        check(torchic.linspace(0, 4, 5, dtype=dtype), dtype, [0, 1, 2, 3, 4])
        torchic.manual_seed(1)
        drawn = torchic.randint(0, 5, (20,), dtype=dtype)
        torchic.manual_seed(1)
        check(drawn, dtype, values_of(torchic.randint(0, 5, (20,), dtype=dtype)))
        assert sorted(values_of(torchic.randperm(6, dtype=dtype)).tolist()) == list(range(6))
    if dtype.is_floating_point:
        for draw in (torchic.rand, torchic.randn):
            torchic.manual_seed(3)
            r = draw(4, 5, dtype=dtype)
            torchic.manual_seed(3)
            if dtype is not torchic.float64:          # (its own kernels: the torch test)
                check(r, dtype, draw(4, 5).numpy())    # PyTorch's float32 numbers, rounded
            assert torchic.rand_like(r).dtype is dtype
            assert torchic.randn_like(r).dtype is dtype
    else:
        with pytest.raises(NotImplementedError):
            torchic.rand(3, dtype=dtype)
        with pytest.raises(NotImplementedError):
            torchic.randn(3, dtype=dtype)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES)
def test_random_integers_are_torchs(backend, dtype):
    if not held(dtype) or dtype is torchic.bool:
        return
    td = getattr(torch, dtype.name)
    torch.manual_seed(5)
    torchic.manual_seed(5)
    np.testing.assert_array_equal(values_of(torchic.randint(0, 100, (50,), dtype=dtype)),
                                  torch.randint(0, 100, (50,), dtype=td).float().numpy())
    np.testing.assert_array_equal(values_of(torchic.randperm(30, dtype=dtype)),
                                  torch.randperm(30, dtype=td).float().numpy())


@pytest.mark.parametrize("dtype", [torchic.int64, torchic.int32, torchic.bool, torchic.float32,
                                   torchic.float64], ids=str)
def test_default_dtypes_of_creation(backend, dtype):
    if not held(dtype):
        return
    made = {torchic.int64: lambda: [torchic.arange(3), torchic.randint(0, 3, (2,)),
                                    torchic.randperm(3), torchic.full((2,), 7),
                                    torchic.tensor([1, 2]),
                                    torchic.multinomial(torchic.tensor([0.5, 0.5]), 2)],
            torchic.bool: lambda: [torchic.full((2,), True), torchic.tensor([True])],
            torchic.float32: lambda: [torchic.arange(0.5, 2), torchic.linspace(0, 1, 3),
                                      torchic.zeros(2), torchic.full((2,), 1.5)]}
    for t in made.get(dtype, list)():
        assert t.dtype is dtype, t


def test_integer_limits_are_refused(backend):
    if full_int64():
        big = torchic.tensor([2 ** 62, -2 ** 63])
        assert big.tolist() == [2 ** 62, -2 ** 63]                     # exact, not via float
        assert torchic.full((1,), 2 ** 62 + 1).item() == 2 ** 62 + 1
    elif held(torchic.int64):        # webgpu's rule: never a silently wrong value
        with pytest.raises(OverflowError):
            torchic.tensor([2 ** 62, -2 ** 63])
        assert torchic.tensor([2 ** 31 - 1, -2 ** 31]).tolist() == [2 ** 31 - 1, -2 ** 31]
    if held(torchic.uint8):
        with pytest.raises(RuntimeError, match="without overflow"):
            torchic.full((2,), 300, dtype=torchic.uint8)
        for error in (OverflowError, RuntimeError):      # (PyTorch's is RuntimeError)
            with pytest.raises(error, match="without overflow"):
                torchic.tensor([300], dtype=torchic.uint8)
        assert torchic.tensor([-1, -255], dtype=torchic.uint8).tolist() == [255, 1]  # torch's
    with pytest.raises(RuntimeError, match="without overflow"):
        torchic.full((2,), float("nan"), dtype=torchic.int32)
    with pytest.raises(OverflowError):
        torchic.tensor([2 ** 31], dtype=torchic.int32)


# -- conversions -----------------------------------------------------------------------------------
SOURCE = [0, 1, 2, 3.75, 100, 127, 0.5]        # in range of every dtype (no undefined casts)
SIGNED = [-1, -2.5, -100, -128]


@needs_torch
@pytest.mark.parametrize("dst", DTYPES, ids=NAMES)
@pytest.mark.parametrize("src", DTYPES, ids=NAMES)
def test_conversion_is_torchs(backend, src, dst):
    data = SOURCE + (SIGNED if src.is_signed and dst.is_signed else [])
    want = torch.tensor(data, dtype=torch.float64).to(getattr(torch, src.name)) \
        .to(getattr(torch, dst.name))
    if not (held(src) and held(dst)):
        return refused(lambda: torchic.tensor(data, dtype=torchic.float64 if held(
            torchic.float64) else torchic.float32).to(src).to(dst), src, backend)
    a = torchic.tensor(np.array(data, np.float64)).to(src) if held(torchic.float64) else \
        torchic.tensor(np.array(data, np.float32)).to(src)
    t = a.to(dst)
    assert t.dtype is dst
    np.testing.assert_array_equal(values_of(t), want.float().numpy() if dst is torchic.bfloat16
                                  else want.numpy())


@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("double", "float64"),
                                          ("half", "float16"), ("bfloat16", "bfloat16"),
                                          ("bool", "bool"), ("byte", "uint8"), ("char", "int8"),
                                          ("short", "int16"), ("int", "int32"),
                                          ("long", "int64")])
def test_conversion_methods(backend, method, dtype):
    d = getattr(torchic, dtype)
    x = torchic.tensor([0.0, 1.0, 2.9])
    if not held(d):
        return refused(lambda: getattr(x, method)(), d, backend)
    t = getattr(x, method)()
    assert t.dtype is d
    check(t, d, [0, 1, 1] if d is torchic.bool else [0, 1, 2] if not d.is_floating_point
          else np.array([0.0, 1.0, 2.9], np.float32))
    assert t.type(torchic.float32).dtype is torchic.float32
    assert t.type().startswith("torch.") and t.type().endswith("Tensor")
    assert x.type(t.type()).dtype is d
    assert getattr(t, method)() is t          # already that dtype: itself


def test_float_to_int_edges(backend):
    """float -> int as docs/DTYPES.md says: truncation, saturation, NaN -> 0; -> bool != 0."""
    x = torchic.tensor([-2.7, 2.7, float("nan"), 1e20, -1e20, 0.0])
    assert x.int().tolist() == [-2, 2, 0, 2 ** 31 - 1, -2 ** 31, 0]
    if held(torchic.bool):
        assert x.bool().tolist() == [True, True, True, True, True, False]
    if full_int64():
        assert x.long().tolist() == [-2, 2, 0, 2 ** 63 - 1, -2 ** 63, 0]
    elif held(torchic.int64):
        with pytest.raises(OverflowError):
            x.long().tolist()
    if held(torchic.uint8) and held(torchic.int64):
        assert torchic.tensor([-1, 256, 257]).to(torchic.uint8).tolist() == [255, 0, 1]  # wraps


def test_bfloat16_rounds_to_nearest_even(backend):
    if not held(torchic.bfloat16):
        return
    values = np.array([1.0, 1.00390625, 1.01171875, 3.14159, -2.5e-3, 1e38, np.inf, np.nan],
                      np.float32)
    got = torchic.tensor(values).bfloat16().float().numpy()
    bits = values.view(np.uint32).astype(np.uint64)
    want = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(got[:-1], want[:-1])
    assert np.isnan(got[-1])
    if torch is not None:
        np.testing.assert_array_equal(
            got, torch.tensor(values).bfloat16().float().numpy())


# -- reads -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES)
def test_reads(backend, dtype):
    if not held(dtype):
        return
    t = torchic.tensor([[1, 0], [2, 3]], dtype=dtype)
    if dtype is torchic.bfloat16:
        with pytest.raises(TypeError, match="BFloat16"):
            t.numpy()
    else:
        assert t.numpy().dtype == dtype.numpy
    assert (t.element_size(), t.itemsize, t.nbytes) == (dtype.itemsize,) * 2 + (4 * dtype.itemsize,)
    assert t.is_floating_point() == dtype.is_floating_point and t.is_signed() == dtype.is_signed
    py = bool if dtype is torchic.bool else float if dtype.is_floating_point else int
    assert type(t[0, 0].item()) is py
    assert all(type(v) is py for row in t.tolist() for v in row)
    text = repr(t)
    assert ("dtype=" in text) == (dtype not in (torchic.int64, torchic.float32, torchic.bool))
    if dtype is torchic.bool:
        assert "True" in text and "False" in text


def test_micrograd_style_float64(backend):
    """micrograd's own test: float64 against torch at 1e-6 (issue 40)."""
    if not held(torchic.float64):
        return refused(lambda: torchic.tensor([1.0]).double(), torchic.float64, backend)
    x = torchic.Tensor([1.0]).double()
    assert x.dtype is torchic.float64
    assert (x / 3).item() == 1.0 / 3.0


@pytest.mark.parametrize("name,dtype", [("FloatTensor", "float32"), ("DoubleTensor", "float64"),
                                        ("HalfTensor", "float16"), ("BoolTensor", "bool"),
                                        ("ByteTensor", "uint8"), ("CharTensor", "int8"),
                                        ("ShortTensor", "int16"), ("IntTensor", "int32"),
                                        ("LongTensor", "int64"),
                                        ("BFloat16Tensor", "bfloat16")])
def test_legacy_tensor_types(backend, name, dtype):
    cls, d = getattr(torchic, name), getattr(torchic, dtype)
    if not held(d):
        return refused(lambda: cls([1, 0]), d, backend)
    t = cls([1, 0])
    check(t, d, [1, 0])
    assert isinstance(t, cls) and isinstance(t, torchic.Tensor)
    assert not isinstance(torchic.zeros(1, dtype=torchic.int32 if d is torchic.float32
                                        else torchic.float32), cls)
    assert cls(2, 3).shape == (2, 3) and cls(2, 3).dtype is d
    assert t.type() == f"torch.{name}"


FILLS = [("float16", 1e6), ("float32", 1e39), ("bfloat16", 1e39), ("float16", float("inf")),
         ("uint8", -1), ("uint8", -255), ("uint8", -256), ("bool", 5), ("int32", 2.7),
         ("uint8", 255.9), ("int8", -128), ("int8", 128), ("int16", -2.5), ("int32", 2 ** 31),
         ("float32", -3), ("float64", 1e300), ("int32", float("nan")), ("bool", 0.0)]


@needs_torch
@pytest.mark.parametrize("name,value", FILLS, ids=repr)
def test_fill_values_are_torchs(backend, name, value):
    """fill_ / full of a number: what each dtype holds, refused (RuntimeError) where PyTorch's
    checked conversion refuses it."""
    d = getattr(torchic, name)
    if not held(d):
        return
    try:
        want = torch.zeros(2, dtype=getattr(torch, name)).fill_(value)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="without overflow"):
            torchic.zeros(2, dtype=d).fill_(value)
        return
    got = torchic.zeros(2, dtype=d).fill_(value)
    np.testing.assert_array_equal(values_of(got), want.float().numpy() if d is torchic.bfloat16
                                  else want.numpy())


@needs_torch
@pytest.mark.parametrize("n", [5, 16, 37])
def test_float64_random_numbers_are_torchs(backend, n):
    """randn / rand / normal_ / uniform_ of float64 tensors: PyTorch's double kernels."""
    if not held(torchic.float64):
        return
    draws = [lambda m: m.randn(n, dtype=m.float64), lambda m: m.rand(n, dtype=m.float64),
             lambda m: m.empty(n, dtype=m.float64).normal_(0.5, 2.0),
             lambda m: m.empty(n, dtype=m.float64).uniform_(-2.0, 3.0),
             lambda m: m.randn_like(m.zeros(n, dtype=m.float64))]
    for draw in draws:
        torch.manual_seed(11)
        torchic.manual_seed(11)
        np.testing.assert_array_equal(draw(torchic).numpy(), draw(torch).numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES)
def test_pickle_deepcopy_and_dlpack_keep_the_dtype(backend, dtype):
    if not held(dtype):
        return
    x = torchic.tensor([[1, 0], [2, 3]], dtype=dtype)
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert y.dtype is dtype and y.tolist() == x.tolist()
    if dtype is torchic.bfloat16:        # NumPy has no bfloat16: export refused, import works
        with pytest.raises(BufferError, match="bfloat16"):
            np.from_dlpack(x)
    else:
        a = np.from_dlpack(x)
        assert a.dtype == dtype.numpy and a.tolist() == x.tolist()
        back = torchic.from_dlpack(a)
        assert back.dtype is dtype and back.tolist() == x.tolist()
    if torch is not None:
        t = torch.tensor([[1, 0], [2, 3]], dtype=getattr(torch, dtype.name))
        back = torchic.from_dlpack(t)
        assert back.dtype is dtype and back.tolist() == t.tolist()
