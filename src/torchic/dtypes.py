"""torchic's dtypes and THE dtype parser.

A tensor holds float32 values or int32 indices, nothing else; every spelling a PyTorch or
NumPy program uses (torch.float, "long", np.int64, float, ...) maps to one of the two codes
"f32" / "i32" here, and only here: float64 / double requested is float32, int64 / long is
int32, and bool is float32 holding 0 and 1 (the masks comparisons return).

A mask is a float32 tensor whose `_mask` flag is set: the result of a comparison (`==`, `<`,
..., `.bool()`, `.to(torchic.bool)`), of `~`, `&` or `|` of masks, a tensor made from bool
data or with dtype bool (`tensor([True, False])`, `zeros(3, dtype=torchic.bool)`), and a view,
copy, gather or cat of masks. Indexing takes a mask as a boolean mask (`x[x > 0]`) and refuses
any other float tensor with PyTorch's IndexError; arithmetic on a mask (`mask * 1.0`,
`mask.sum()`) gives a plain float tensor, as PyTorch's bool promotes to float.
"""

import numpy as np

from .dispatcher import DTYPES


class DType:
    """A tensor's element type: `torchic.float32` or `torchic.int32` (the PyTorch names
    `float`, `long`, `int`, `int64`, `float64`, `double` are aliases of these).

    Attributes:
        name (str): "float32" or "int32".
        numpy: the NumPy dtype of the values `Tensor.numpy()` returns.
        is_floating_point (bool): whether it is float32.
    """

    __slots__ = ("name", "code", "numpy", "is_floating_point")

    def __init__(self, name, code):
        self.name = name
        self.code = code
        self.numpy = DTYPES[code]
        self.is_floating_point = code == "f32"

    def __repr__(self):
        return f"torchic.{self.name}"


float32 = DType("float32", "f32")
int32 = DType("int32", "i32")
_DTYPE_OF_CODE = {"f32": float32, "i32": int32}
bool_ = DType("bool", "f32")       # no bool storage: a mask is a float32 tensor of 0s and 1s
_DTYPE_NAMES = {"f32": "f32", "float32": "f32", "float": "f32", "float64": "f32",
                "double": "f32", "bool": "f32",
                "i32": "i32", "int32": "i32", "int64": "i32", "long": "i32", "int": "i32"}


def dtype_code(dtype, default="f32"):
    """THE dtype parser (creation functions, .to(), casts, nn.functional): a torchic dtype,
    a name ("float32", "float", "long", ...), a Python type or a NumPy dtype -> "f32" / "i32".

    Floating types map to float32 and integer types to int32 (the two dtypes torchic
    holds); anything else is a TypeError naming it.
    """
    if dtype is None:
        return default
    if isinstance(dtype, DType):
        return dtype.code
    if isinstance(dtype, str):
        code = _DTYPE_NAMES.get(dtype)
        if code is not None:
            return code
    elif dtype is float:
        return "f32"
    elif dtype is int:
        return "i32"
    try:
        kind = np.dtype(dtype).kind
    except (TypeError, ValueError):
        kind = None
    if kind == "f" or kind == "b":      # float64 and bool requested: float32 storage
        return "f32"
    if kind is not None and kind in "iu":
        return "i32"
    raise TypeError(f"unsupported dtype {dtype!r}: torchic tensors are float32 (values) or "
                    f"int32 (indices)")


def is_bool(dtype):
    """Whether `dtype` names bool (torchic.bool, bool, "bool", a NumPy bool dtype)."""
    return dtype is bool_ or dtype is bool or (isinstance(dtype, str) and dtype == "bool") or \
        (isinstance(dtype, np.dtype) and dtype.kind == "b")


def holds_bools(data, dtype):
    """Whether tensor(data, dtype) makes a mask (module doc): dtype bool, or no dtype and
    bool data (a NumPy bool array, (nested) lists of Python bools, a mask)."""
    if dtype is not None:
        return is_bool(dtype)
    if isinstance(data, np.ndarray):
        return data.dtype.kind == "b"
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return isinstance(data, (bool, np.bool_)) or getattr(data, "_mask", False) is True


def is_dtype(x):
    try:
        dtype_code(x)
    except TypeError:
        return False
    return x is not None


def dtype_of(code):
    """The DType object of a code ("f32" -> torchic.float32)."""
    return _DTYPE_OF_CODE[code]
