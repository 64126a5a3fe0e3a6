"""PyTorch's legacy tensor types: torchic.LongTensor([1, 2]), torchic.FloatTensor(2, 3), ...

Calling one makes a tensor of its dtype (sizes: uninitialized; one sequence: its data);
`isinstance(t, torchic.LongTensor)` asks t's dtype, as PyTorch's does.
"""

from typing import Any

import numpy as np

from .creation import empty, tensor
from .devices import check_device
from .dtypes import dtype_of
from .tensor import Tensor


class _LegacyTensorType(type):
    """torch.LongTensor and kin: calling one makes a tensor of its dtype (sizes: uninitialized,
    one sequence: its data); isinstance(t, torchic.LongTensor) asks t's dtype."""

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        check_device(device, f"{cls.__name__}(): ")
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return empty(*args, dtype=cls.code) if args else empty(0, dtype=cls.code)
        if len(args) == 1:
            return tensor(args[0], dtype=cls.code)
        raise TypeError(f"{cls.__name__}() takes sizes (ints) or one sequence of data")

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj._dtype == cls.code


def _legacy_type(name, code):
    return _LegacyTensorType(name, (), {"code": code, "__module__": "torchic",
                                        "__doc__": f"Tensors of {dtype_of(code)} "
                                                   f"(PyTorch's legacy {name})."})


FloatTensor = _legacy_type("FloatTensor", "f32")
DoubleTensor = _legacy_type("DoubleTensor", "f64")
HalfTensor = _legacy_type("HalfTensor", "f16")
BFloat16Tensor = _legacy_type("BFloat16Tensor", "bf16")
BoolTensor = _legacy_type("BoolTensor", "b8")
ByteTensor = _legacy_type("ByteTensor", "u8")
CharTensor = _legacy_type("CharTensor", "i8")
ShortTensor = _legacy_type("ShortTensor", "i16")
IntTensor = _legacy_type("IntTensor", "i32")
LongTensor = _legacy_type("LongTensor", "i64")

