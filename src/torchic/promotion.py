"""PyTorch's type promotion, in one place: which dtype an op on mixed operands computes in.

Pure functions over dtype codes (docs/DTYPES.md: "b8", "u8", "i8", "i16", "i32", "i64",
"f16", "bf16", "f32", "f64"); the public ones (`promote_types`, `result_type`, `can_cast`)
take and give DTypes as torch's do. Every op that mixes dtypes asks `result_code`; no op
decides promotion itself.

The rules (PyTorch's c10 promoteTypes and ResultTypeState):

* categories bool < integer < floating: two dtypes of different categories promote to the
  higher category's dtype; within one category to the wider one, except `uint8` with a
  signed int (the smallest signed int holding both: `uint8` + `int8` is `int16`) and
  `float16` with `bfloat16` (`float32`);
* `result_type` ranks its operands: tensors with dims, then 0-d tensors, then Python (and
  NumPy) scalars, which are "weak": a float scalar counts as the default float dtype, an int
  as int64, a bool as bool. A lower rank's dtype matters only when its category is higher
  (`int32_tensor * 2.5` is the default float; `float16_tensor * 2.5` stays float16;
  `uint8_tensor + 1000` stays uint8; `bool_tensor + 1` is int64);
* `can_cast(from, to)`: an in-place op may write its result into `to` unless that is a float
  into an integer or a non-bool into bool.
"""

from typing import Any

import numpy as np

from .dtypes import DType, default_float, dtype_code, dtype_of
from .tensor import Tensor

BOOL = "b8"
INTEGER_CODES = ("u8", "i8", "i16", "i32", "i64")
FLOAT_CODES = ("f16", "bf16", "f32", "f64")
CODES = (BOOL,) + INTEGER_CODES + FLOAT_CODES

# bool < integer < floating
_CATEGORY = {BOOL: 0, **{c: 1 for c in INTEGER_CODES}, **{c: 2 for c in FLOAT_CODES}}
_BITS = {"b8": 8, "u8": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16,
         "f32": 32, "f64": 64}

# PyTorch's names in its messages ("result type Float can't be cast to ... Long")
SCALAR_TYPE_NAMES = {"b8": "Bool", "u8": "Byte", "i8": "Char", "i16": "Short", "i32": "Int",
                     "i64": "Long", "f16": "Half", "bf16": "BFloat16", "f32": "Float",
                     "f64": "Double"}


def is_floating(code):
    """Whether the code is a floating dtype (f16, bf16, f32, f64)."""
    return _CATEGORY[code] == 2


def is_integral(code, include_bool=False):
    """Whether the code is an integer dtype (bool counts only with include_bool)."""
    return _CATEGORY[code] == 1 or (include_bool and code == BOOL)


def _promote(a, b):
    """promoteTypes over two codes (module doc)."""
    if a == b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    if ca == 1 and "u8" in (a, b):        # uint8 with a signed int: a signed int holding both
        signed = b if a == "u8" else a
        return "i16" if signed == "i8" else signed
    if ca == 2 and {a, b} == {"f16", "bf16"}:
        return "f32"
    return a if _BITS[a] > _BITS[b] else b


# every pair, computed once: the per-op lookup is one dict access
_PROMOTED = {(a, b): _promote(a, b) for a in CODES for b in CODES}


def promote_codes(a, b):
    """The code two codes promote to (`promote_types` over codes)."""
    return _PROMOTED[a, b]


def can_cast_code(src, dst):
    """Whether a result of code `src` may be written into a tensor of code `dst` (in-place
    ops, out=): not a float into an integer or bool, not a non-bool into bool."""
    if is_floating(src) and not is_floating(dst):
        return False
    return not (src != BOOL and dst == BOOL)


def scalar_code(value):
    """The weak code of a Python or NumPy scalar: bool -> b8, int -> i64, float -> the
    default float dtype's code; None for anything else. A NumPy bool counts as a float, as
    in PyTorch (which reads it as a float scalar: `bool_tensor + np.bool_(True)` is float)."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return "i64"
    if isinstance(value, (float, np.floating, np.bool_)):
        return default_float()
    return None


def _combine(higher, lower):
    """PyTorch's combine_categories: a lower rank's dtype counts only where its category is
    higher than the higher rank's (or the higher is bool)."""
    if higher is None:
        return lower
    if lower is None or is_floating(higher):
        return higher
    if higher == BOOL or is_floating(lower):
        return _PROMOTED[higher, lower]
    return higher


def result_code(*operands):
    """The code an op over `operands` (tensors and Python / NumPy scalars) computes in, by
    PyTorch's ranks (module doc). Raises TypeError for an operand that is neither."""
    dims = zero_dim = weak = None
    for x in operands:
        if isinstance(x, Tensor):
            code = x._dtype
            if x.ndim:
                dims = code if dims is None else _PROMOTED[dims, code]
            else:
                zero_dim = code if zero_dim is None else _PROMOTED[zero_dim, code]
            continue
        code = scalar_code(x)
        if code is None:
            raise TypeError(f"result_type() takes tensors and numbers, got "
                            f"{type(x).__name__}")
        weak = code if weak is None else _PROMOTED[weak, code]
    return _combine(dims, _combine(zero_dim, weak))


def promote_types(type1: Any, type2: Any) -> DType:
    """The smallest dtype both `type1` and `type2` can be converted to without losing their
    category (PyTorch's `torch.promote_types`).

    Example:
        >>> torchic.promote_types(torchic.int32, torchic.float32)
        torchic.float32
        >>> torchic.promote_types(torchic.uint8, torchic.int8)
        torchic.int16
    """
    return dtype_of(_PROMOTED[dtype_code(type1), dtype_code(type2)])


def result_type(*operands: Tensor | bool | int | float) -> DType:
    """The dtype an arithmetic op over `operands` (tensors, Python numbers) gives, by
    PyTorch's promotion (module doc): tensors with dims outrank 0-d tensors, which outrank
    Python scalars, whose dtype counts only where its category is higher.

    Example:
        >>> torchic.result_type(torchic.tensor([1, 2]), 2.5)
        torchic.float32
        >>> torchic.result_type(torchic.tensor([1, 2], dtype=torchic.uint8), 1000)
        torchic.uint8
    """
    if not operands:
        raise TypeError("result_type() takes at least one tensor or number")
    return dtype_of(result_code(*operands))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether a value of dtype `from_` may be cast to `to` by PyTorch's casting rules (what
    an in-place op checks): not a float into an integer, not a non-bool into bool.

    Example:
        >>> torchic.can_cast(torchic.float64, torchic.int32)
        False
    """
    return can_cast_code(dtype_code(from_), dtype_code(to))
