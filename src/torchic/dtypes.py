"""torchic's dtypes (PyTorch's), THE dtype parser, the default dtype, finfo / iinfo.

Every dtype of docs/DTYPES.md is a `DType` object here (`torchic.int64`, `torchic.bool`,
...), named by a code ("i64", "b8", ...) of dispatcher.DTYPES, the one table of codes.
`dtype_code` is the one parser of spellings: a DType, a name ("float64", "long", "half"),
a Python type (bool, int, float: PyTorch's bool, int64, float64), a NumPy dtype or type,
or a torch dtype -> the code; anything else is a TypeError naming it.

bfloat16 values live on the host as their bits (uint16: the high half of a float32,
rounded to nearest even on store); `from_float32` / `to_float32` convert.
"""

from typing import Any

import numpy as np

from .dispatcher import DTYPES, FLOAT_CODES, INT_CODES, ITEMSIZE


class DType:
    """A tensor's element type, as PyTorch's `torch.dtype`: `torchic.float32`,
    `torchic.int64`, `torchic.bool`, ... (aliases: long, int, short, half, float, double).

    Attributes:
        code (str): its code in dispatcher.DTYPES ("f32", "i64", "b8", ...).
        itemsize (int): bytes per element.
        is_floating_point (bool), is_signed (bool), is_complex (False).
    """

    __slots__ = ("name", "code", "numpy", "itemsize", "is_floating_point", "is_signed")
    is_complex = False

    def __init__(self, name, code):
        self.name = name
        self.code = code
        self.numpy = DTYPES[code]          # the host array dtype (bf16: its uint16 bits)
        self.itemsize = ITEMSIZE[code]
        self.is_floating_point = code in FLOAT_CODES
        self.is_signed = code not in ("b8", "u8")

    def to_real(self) -> "DType":
        """Itself (torchic has no complex dtypes)."""
        return self

    def __repr__(self):
        return f"torchic.{self.name}"

    def __reduce__(self):       # pickle / deepcopy keep the one object
        return (_dtype_by_name, (self.name,))


bool_ = DType("bool", "b8")
uint8 = DType("uint8", "u8")
int8 = DType("int8", "i8")
int16 = DType("int16", "i16")
int32 = DType("int32", "i32")
int64 = DType("int64", "i64")
float16 = DType("float16", "f16")
bfloat16 = DType("bfloat16", "bf16")
float32 = DType("float32", "f32")
float64 = DType("float64", "f64")
_DTYPE_OF_CODE = {d.code: d for d in (bool_, uint8, int8, int16, int32, int64, float16,
                                      bfloat16, float32, float64)}
# PyTorch's aliases (torchic.long is torchic.int64, ...)
ALIASES = {"long": int64, "int": int32, "short": int16, "half": float16, "float": float32,
           "double": float64}
_NAMES = {d.name: d.code for d in _DTYPE_OF_CODE.values()}
_NAMES.update({name: d.code for name, d in ALIASES.items()})
_NAMES.update({code: code for code in DTYPES})
# PyTorch's ScalarType names (its "not implemented for 'Long'" messages)
SCALAR_TYPE_NAMES = {"b8": "Bool", "u8": "Byte", "i8": "Char", "i16": "Short", "i32": "Int",
                     "i64": "Long", "f16": "Half", "bf16": "BFloat16", "f32": "Float",
                     "f64": "Double"}
_NUMPY_CODES = {dt: code for code, dt in DTYPES.items() if code != "bf16"}   # uint16 is no dtype
_PYTHON_TYPES = {bool: "b8", int: "i64", float: "f64"}      # PyTorch's: dtype=float is double


def _dtype_by_name(name):
    return _DTYPE_OF_CODE[_NAMES[name]]


_default_float = "f32"


def default_float():
    """The code of the default floating dtype ("f32" unless set_default_dtype changed it)."""
    return _default_float


def get_default_dtype() -> DType:
    """The dtype of float tensors made without `dtype=`: `torchic.float32` unless
    `set_default_dtype` changed it."""
    return _DTYPE_OF_CODE[_default_float]


def set_default_dtype(d: Any) -> None:
    """PyTorch's set_default_dtype: a floating dtype (float32, float64, float16, bfloat16)
    becomes the dtype of float data and float creation functions; anything else is a
    TypeError, before anything changes."""
    global _default_float
    code = dtype_code(d)
    if code not in FLOAT_CODES:
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{dtype_of(code)}")
    _default_float = code


def dtype_code(dtype, default=None):
    """THE dtype parser: a DType, a name, a Python type, a NumPy dtype or type, or a torch
    dtype -> its code ("f32", "i64", ...). None gives `default` (the default float dtype's
    code when that is None too); anything else is a TypeError naming it."""
    if dtype is None:
        return _default_float if default is None else default
    if isinstance(dtype, DType):
        return dtype.code
    if isinstance(dtype, str):
        code = _NAMES.get(dtype[6:] if dtype.startswith("torch.") else dtype)
        if code is not None:
            return code
    elif isinstance(dtype, type) and dtype in _PYTHON_TYPES:
        return _PYTHON_TYPES[dtype]
    elif type(dtype).__module__ == "torch":       # torch.float64 -> "f64"
        code = _NAMES.get(str(dtype).removeprefix("torch."))
        if code is not None:
            return code
    try:
        code = _NUMPY_CODES.get(np.dtype(dtype))
    except (TypeError, ValueError):
        code = None
    if code is not None:
        return code
    raise TypeError(f"unsupported dtype {dtype!r}: torchic's dtypes are bool, uint8, int8, "
                    f"int16, int32, int64, float16, bfloat16, float32 and float64")


def is_bool(dtype):
    """Whether `dtype` names bool (torchic.bool, bool, "bool", a NumPy bool dtype)."""
    return dtype is not None and is_dtype(dtype) and dtype_code(dtype) == "b8"


def is_dtype(x):
    """Whether x is a dtype the parser takes (None is not)."""
    if x is None:
        return False
    try:
        dtype_code(x)
    except TypeError:
        return False
    return True


def dtype_of(code):
    """The DType object of a code ("f32" -> torchic.float32)."""
    return _DTYPE_OF_CODE[code]


def code_of_array(arr):
    """The code of a NumPy array's dtype (from_numpy keeps it); TypeError for one torchic
    does not hold (uint16 / 32 / 64, complex, strings, objects)."""
    code = _NUMPY_CODES.get(arr.dtype)
    if code is None:
        raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype}. The only "
                        f"supported types are: float64, float32, float16, int64, int32, int16, "
                        f"int8, uint8, and bool.")
    return code


def infer_code(data, arr):
    """PyTorch's dtype for `tensor(data)` without dtype= (arr: np.asarray(data)): a NumPy
    array or scalar keeps its dtype; Python bools -> bool, ints -> int64, floats -> the
    default float dtype (the widest kind among nested lists' elements)."""
    if isinstance(data, (np.ndarray, np.generic)):
        return code_of_array(arr)
    kind = arr.dtype.kind
    return {"b": "b8", "i": "i64", "u": "i64", "f": _default_float}.get(kind, "?")


# -- host values <-> a code's host array ---------------------------------------------------
def from_float32(values, code="bf16"):
    """float values as bfloat16 bits (uint16): round to nearest even, NaN kept (quiet)."""
    f = np.asarray(values, dtype=np.float32, order="C")
    bits = f.view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16
    rounded = np.where(np.isnan(f), (bits >> 16) | 0x40, rounded)
    return rounded.astype(np.uint16)


def to_float32(bits, code="bf16"):
    """bfloat16 bits (uint16) as the float32 values they are."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def to_host(values, code):
    """A NumPy array of values (any numeric dtype) as `code`'s C-ordered host array, cast as
    NumPy casts (the creation functions refuse what they must refuse before this)."""
    if code == "bf16":
        return from_float32(values)
    return np.asarray(values, dtype=DTYPES[code], order="C")     # (0-d stays 0-d)


def host_values(arr, code):
    """A host array of `code` as the values it holds (bf16 bits -> float32)."""
    return to_float32(arr) if code == "bf16" else arr


# -- finfo / iinfo -------------------------------------------------------------------------
class finfo:
    """PyTorch's torch.finfo: bits, eps, max, min, tiny (smallest_normal), resolution of a
    floating dtype (the default dtype when none is given)."""

    def __init__(self, type=None):
        code = dtype_code(type)
        if code not in FLOAT_CODES:
            raise TypeError(f"torchic.finfo() requires a floating point input type, got "
                            f"{dtype_of(code)}")
        self.dtype = dtype_of(code).name
        if code == "bf16":
            self.bits, self.eps, self.max = 16, 0.0078125, 3.3895313892515355e+38
            self.tiny, self.resolution = 1.1754943508222875e-38, 0.01
        else:
            info = np.finfo(DTYPES[code])
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            self.tiny, self.resolution = float(info.tiny), 10.0 ** -info.precision
        self.min = -self.max
        self.smallest_normal = self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, tiny={self.tiny}, "
                f"dtype={self.dtype})")


class iinfo:
    """PyTorch's torch.iinfo: bits, min, max of an integer dtype (or bool)."""

    def __init__(self, type):
        code = dtype_code(type)
        if code not in INT_CODES and code != "b8":
            raise TypeError(f"torchic.iinfo() requires an integer input type, got "
                            f"{dtype_of(code)}")
        self.dtype = dtype_of(code).name
        if code == "b8":
            self.bits, self.min, self.max = 8, 0, 1
        else:
            info = np.iinfo(DTYPES[code])
            self.bits, self.min, self.max = info.bits, int(info.min), int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
