"""torchic.device and THE device check (creation functions, .to(), .cuda(), Module.to).

torchic picks where ops run with the *backend* (torchic.init(backend="webgpu") runs them on
the GPU), not with a device string: every tensor reports device "cpu", as a CPU-only PyTorch
build does. So a PyTorch program's "cpu" / "cpu:0" / torch.device("cpu") is accepted and
moves nothing, an accelerator ("cuda", "mps", ...) is refused with a message saying how to
reach the GPU, and an unknown device type is refused with PyTorch's message.

Deliberate difference: a torchic device compares equal to its string form
(device("cpu") == "cpu"), which torch.device does not; hashing follows the string.
"""

import os
from typing import Any

from . import dispatcher
from . import dtypes
from .dtypes import DType

# the device types PyTorch's parser knows, in its order (its error message lists them)
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                "privateuseone")

_NOT_A_DEVICE = ("torchic picks where ops run with the backend (torchic.init(backend="
                 "\"webgpu\") runs them on the GPU), not with a device string; "
                 "torch.cuda.is_available() is False under torchic, so "
                 "`\"cuda\" if torch.cuda.is_available() else \"cpu\"` picks \"cpu\"")


def _parse(text):
    """A device string -> (type, index or None), with PyTorch's errors."""
    if not text:
        raise RuntimeError("Device string must not be empty")
    kind, colon, index = text.partition(":")
    if kind not in DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start "
                           f"of device string: {text}")
    if not colon:
        return kind, None
    if not index.isdigit() or not index.isascii() or (len(index) > 1 and index[0] == "0"):
        raise RuntimeError(f"Invalid device string: {text!r}")
    return kind, int(index)


class device:
    """PyTorch's torch.device: device("cpu"), device("cpu", 0), device("cpu:0"),
    device(other_device); .type, .index, str() "cpu:0", repr device(type='cpu', index=0).

    Any device type PyTorch knows can be *named* (device("cuda") works, as in PyTorch);
    using one other than "cpu" (check_device) is what is refused.
    """

    __slots__ = ("_type", "_index")

    def __init__(self, type: "str | device", index: int | None = None) -> None:      # noqa: A002  (PyTorch's argument names)
        if isinstance(type, device):
            if index is not None:
                raise RuntimeError(f"device(): an index cannot be passed with a device "
                                   f"({type})")
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError(f"device({type}): a bare index names an accelerator (CUDA) "
                               f"device; {_NOT_A_DEVICE}")
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, not "
                            f"{_type_name(type)}")
        kind, parsed = _parse(type)
        if index is not None:
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                                f"{_type_name(index)}")
            if parsed is not None:
                raise RuntimeError(f"type (string) must not include an index because index "
                                   f"was passed explicitly: {type}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
            parsed = index
        self._type, self._index = kind, parsed

    @property
    def type(self) -> str:
        """The device type, e.g. "cpu"."""
        return self._type

    @property
    def index(self) -> int | None:
        """The device index (an int), or None when none was given."""
        return self._index

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type={self._type!r})"
        return f"device(type={self._type!r}, index={self._index})"

    def __eq__(self, other):
        if isinstance(other, device):
            return self._type == other._type and self._index == other._index
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    def __hash__(self):
        return hash(str(self))

    def __reduce__(self):
        return device, (self._type, self._index)


def _type_name(x):
    return type(x).__name__


CPU = device("cpu")


def check_device(dev: Any, context: str = "") -> device:
    """The device a PyTorch call names -> torchic.device("cpu"), or an error before any work.

    None, "cpu", "cpu:N" and device("cpu") are accepted. An accelerator ("cuda", "mps",
    "cuda:0", device("cuda"), a bare index) raises RuntimeError saying that torchic picks
    where ops run with the backend; an unknown device string raises PyTorch's
    "Expected one of cpu, cuda, ... device type at start of device string". `context`
    prefixes the messages (e.g. "to('cuda'): ").
    """
    if dev is None or dev is CPU:
        return CPU
    if isinstance(dev, str):
        try:
            kind, _ = _parse(dev)
        except RuntimeError as e:
            raise RuntimeError(f"{context}{e}") from None
        name = dev
    elif isinstance(dev, device):
        kind, name = dev.type, str(dev)
    elif isinstance(dev, int) and not isinstance(dev, bool):
        raise RuntimeError(f"{context}a device index names a CUDA device: {_NOT_A_DEVICE}")
    else:
        raise TypeError(f"{context}expected a device (a string such as 'cpu' or a "
                        f"torchic.device), got {_type_name(dev)}")
    if kind != "cpu":
        raise RuntimeError(f"{context}device {name!r} is not available: {_NOT_A_DEVICE}")
    return CPU


# -- the process-wide settings a PyTorch script makes at its top -------------------------------


def set_num_threads(n: int) -> None:
    """PyTorch's torch.set_num_threads: the worker threads of the runtime that starts next
    (the default one at a script's first op, or an init() without `threads`), and what
    get_num_threads reports.

    A runtime's worker threads are fixed when it starts, so this does not resize a running
    pool (tensors would not survive a restart); torchic.init(threads=n) restarts with n.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads(): argument 'int' must be int, not {_type_name(n)}")
    if n <= 0:
        raise RuntimeError("Number of threads must be positive")
    dispatcher.requested_threads = n


def get_num_threads() -> int:
    """What set_num_threads asked for, else the current runtime's worker threads (the
    number of cores when no runtime has started)."""
    if dispatcher.requested_threads is not None:
        return dispatcher.requested_threads
    rt = dispatcher._runtime
    if rt is not None and not rt.closed:
        return rt.backend.threads
    return os.cpu_count() or 1


def get_default_dtype() -> DType:
    """dtypes.get_default_dtype (kept here for old imports)."""
    return dtypes.get_default_dtype()


def set_default_dtype(d: Any) -> None:
    """dtypes.set_default_dtype (kept here for old imports)."""
    dtypes.set_default_dtype(d)


# torch.set_default_device / get_default_device (issue 41): torchic's one device is "cpu"
def set_default_device(device: Any) -> None:
    """PyTorch's default device for new tensors: "cpu" (or None) is accepted and changes
    nothing; an accelerator is refused (pick a backend with torchic.init instead)."""
    if device is not None:
        check_device(device, "set_default_device(): ")


def get_default_device() -> device:
    """The device new tensors are made on: always `device("cpu")` in torchic."""
    return globals()["device"]("cpu")
