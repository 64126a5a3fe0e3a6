"""PyTorch's .to() overloads: which device and dtype a call names, checked before anything runs.

A torchic runtime has one device, chosen by torchic.init: "cpu" and the tensor's own device
are accepted and move nothing; any other device, and any unknown dtype, is refused.
"""

import numpy as np

from .. import dispatcher
from .. import raw
from ..dtypes import dtype_code, is_dtype
from ..functions import Cast
from ..tensor import Tensor


# devices PyTorch scripts name that a torchic runtime does not have (refused by .to)
_OTHER_DEVICES = ("cuda", "mps", "xpu", "xla", "hip", "meta", "vulkan", "ipu", "hpu", "mtia",
                  "privateuseone", "opengl", "opencl", "mkldnn", "ideep", "ve", "fpga", "maia",
                  "lazy")


def check_device(t, device):
    """.to(device): "cpu" and the tensor's own device (t.device) move nothing; anything else
    is refused, because a runtime has exactly one device (chosen by torchic.init)."""
    if device is None:
        return
    if not isinstance(device, str):
        if isinstance(device, int) and not isinstance(device, bool):
            raise RuntimeError(f"to({device}): a device index names a CUDA device; torchic "
                               f"runs on one device, chosen by torchic.init (this tensor is "
                               f"on {t.device!r})")
        raise TypeError(f"to() expects a device string, a dtype or a tensor, got "
                        f"{type(device).__name__}")
    base, _, index = device.partition(":")
    if device == t.device or (base == "cpu" and (not index or index.isdigit())):
        return
    if base in _OTHER_DEVICES or base in dispatcher.backend_names():
        raise RuntimeError(
            f"to({device!r}): device {device!r} is not available: a torchic runtime has one "
            f"device, chosen by torchic.init(backend) (this tensor is on {t.device!r}); use "
            f".to('cpu') or drop the .to() call")
    try:
        np.dtype(device)
    except TypeError:
        pass
    else:
        dtype_code(device)      # a NumPy dtype torchic does not hold: "unsupported dtype ..."
    raise RuntimeError(f"to({device!r}): expected a device ('cpu' or {t.device!r}) or a dtype "
                       f"(torchic.float32, torchic.int32, 'float32', 'long', ...), "
                       f"got {device!r}")


def parse_to(t, args, kwargs):
    """PyTorch's .to() overloads -> (dtype code or None, copy); raises before anything runs.

    to(dtype, non_blocking=False, copy=False), to(device=None, dtype=None, non_blocking=False,
    copy=False), to(other, non_blocking=False, copy=False).
    """
    unknown = sorted(set(kwargs) - {"device", "dtype", "non_blocking", "copy"})
    if unknown:
        raise TypeError(f"to() got an unexpected keyword argument {unknown[0]!r}")
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


def to(self, *args, **kwargs):
    """Tensor.to: .to(dtype) / .to(device) / .to(device, dtype) / .to(other) / copy=True."""
    code, copy = parse_to(self, args, kwargs)
    out = self if code is None else to_dtype(self, code)
    return out.clone() if copy and out is self else out


def to_dtype(a, dtype):
    code = dtype_code(dtype)      # (raises TypeError naming an unknown dtype, before any op)
    if a._dtype == code:
        return a
    if code == "f32":
        return Cast.apply(a, dtype="f32")
    return raw.cast(a, code)


def type_as(self, other):
    return to_dtype(self, other._dtype)
