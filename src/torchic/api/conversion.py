"""PyTorch's .to() overloads: which device and dtype a call names, checked before anything runs.

torchic picks where ops run with the backend (torchic.init), so "cpu" is accepted and moves
nothing; any other device (devices.check_device), and any unknown dtype, is refused.
"""

from typing import Any

import numpy as np

from .. import dispatcher
from .. import raw
from ..devices import DEVICE_TYPES, check_device as check
from ..dispatcher import FLOAT_CODES
from ..dtypes import dtype_code, dtype_of, is_dtype
from ..formats import check_memory_format
from ..functions import Cast
from ..tensor import Tensor


def check_device(t, device):
    """.to(device): devices.check_device (THE device check: "cpu" is accepted and moves
    nothing, an accelerator is refused), plus what only .to() meets: a string that is no
    device type may be a dtype the dtype parser refuses ("complex64") or a torchic backend
    name (the current one is accepted as an alias of "cpu")."""
    if isinstance(device, str) and device.partition(":")[0] not in DEVICE_TYPES:
        backend = dispatcher.current_backend_name()
        if device == backend:
            return
        if device in dispatcher.backend_names():
            raise RuntimeError(
                f"to({device!r}): device {device!r} is not available: {device!r} is a torchic "
                f"backend, not a device: choose it with torchic.init(backend={device!r}) "
                f"(this tensor is on {backend!r})")
        try:
            np.dtype(device)
        except TypeError:
            pass
        else:
            dtype_code(device)      # a NumPy dtype torchic does not hold: "unsupported dtype ..."
        raise RuntimeError(f"to({device!r}): expected a device ('cpu' or {backend!r}) or a "
                           f"dtype (torchic.float32, torchic.int64, 'float32', 'long', ...), "
                           f"got {device!r}")
    check(device, f"to({device!r}): ")


_STAYS = frozenset({"cpu", "cpu:0"})     # device strings .to() accepts and moves nothing


def parse_to(t, args, kwargs):
    """PyTorch's .to() overloads -> (dtype code or None, copy); raises before anything runs.

    to(dtype, non_blocking=False, copy=False), to(device=None, dtype=None, non_blocking=False,
    copy=False), to(other, non_blocking=False, copy=False).
    """
    unknown = sorted(set(kwargs) - {"device", "dtype", "non_blocking", "copy",
                                    "memory_format"})
    if unknown:
        raise TypeError(f"to() got an unexpected keyword argument {unknown[0]!r}")
    check_memory_format(kwargs.get("memory_format"), "to()")
    args = list(args)
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    if args:
        first = args[0]
        if isinstance(first, Tensor):
            dtype = first._dtype
            args.pop(0)
        elif is_dtype(first) and not (isinstance(first, str) and first == t.device):
            dtype = args.pop(0)
        elif not isinstance(first, bool):
            device = args.pop(0)
            if args and is_dtype(args[0]) and not isinstance(args[0], bool):
                dtype = args.pop(0)
    if len(args) > 2 or not all(isinstance(a, bool) for a in args):
        raise TypeError(f"to() received an invalid combination of arguments: "
                        f"{', '.join(type(a).__name__ for a in args)} after the device / dtype "
                        f"(expected non_blocking and copy flags)")
    flags = dict(zip(("non_blocking", "copy"), args))
    for name in ("non_blocking", "copy"):
        if name in kwargs:
            flags[name] = kwargs[name]
    check_device(t, device)
    code = None if dtype is None else dtype_code(dtype)
    return code, bool(flags.get("copy", False))


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Tensor.to: .to(dtype) / .to(device) / .to(device, dtype) / .to(other) / copy=True."""
    if not kwargs and len(args) == 1 and args[0].__class__ is str and args[0] in _STAYS:
        return self      # (a CPU script's x.to(device) every step: nothing to parse or move)
    code, copy = parse_to(self, args, kwargs)
    out = self if code is None else to_dtype(self, code)
    return out.clone() if copy and out is self else out


def to_dtype(a, dtype):
    """`a` in `dtype` (itself when it has it already): .float(), .long(), .to(dtype), ...

    The copy op's cast (ops.py), the same on every backend: float -> int truncates toward
    zero (saturating, NaN -> 0: PyTorch leaves those undefined), -> bool is != 0, narrowing
    ints wrap. A float -> float cast carries the gradient (Cast); others do not."""
    code = dtype_code(dtype)      # (raises TypeError naming an unknown dtype, before any op)
    if a._dtype == code:
        return a
    if code in FLOAT_CODES and a._dtype in FLOAT_CODES:
        return Cast.apply(a, dtype=code)
    return raw.cast(a, code)


# Tensor.float(), .double(), ...: PyTorch's conversion methods and the code each gives
CONVERSIONS = {"float": "f32", "double": "f64", "half": "f16", "bfloat16": "bf16",
               "bool": "b8", "byte": "u8", "char": "i8", "short": "i16", "int": "i32",
               "long": "i64"}


def _conversion(name, code):
    def method(self: Tensor, memory_format: Any = None) -> Tensor:
        check_memory_format(memory_format, f"{name}()")
        return to_dtype(self, code)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"This tensor as {dtype_of(code)} (itself when it is one already)."
    return method


CONVERSION_METHODS = {name: _conversion(name, code) for name, code in CONVERSIONS.items()}

# torch.Tensor.type()'s names of the legacy tensor types
_TYPE_NAMES = {"f32": "FloatTensor", "f64": "DoubleTensor", "f16": "HalfTensor",
               "bf16": "BFloat16Tensor", "b8": "BoolTensor", "u8": "ByteTensor",
               "i8": "CharTensor", "i16": "ShortTensor", "i32": "IntTensor",
               "i64": "LongTensor"}
_TYPE_CODES = {name: code for code, name in _TYPE_NAMES.items()}


def type_(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """Tensor.type(): the type's name ("torch.FloatTensor") without an argument; with a
    dtype or a type name ("torch.LongTensor"), this tensor in that dtype."""
    if dtype is None:
        return f"torch.{_TYPE_NAMES[self._dtype]}"
    if isinstance(dtype, str) and dtype.rpartition(".")[2] in _TYPE_CODES:
        return to_dtype(self, _TYPE_CODES[dtype.rpartition(".")[2]])
    return to_dtype(self, dtype)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor in `other`'s dtype (itself when the dtypes match)."""
    return to_dtype(self, other._dtype)
