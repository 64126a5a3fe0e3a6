"""PyTorch's memory formats and layouts, as objects programs pass (`memory_format=`,
`layout=`).

torchic tensors are strided and made contiguous (row-major) by every op that makes one, so
a memory format changes no value: `torchic.preserve_format` and `torchic.contiguous_format`
are accepted where PyTorch takes them, and so are `channels_last` / `channels_last_3d`
(PyTorch's NHWC strides: the same values; torchic keeps its row-major layout). Only the
strided layout exists (sparse layouts are refused).
"""

from typing import Any


class memory_format:
    """A memory format (`torchic.preserve_format`, `contiguous_format`, `channels_last`,
    `channels_last_3d`): where PyTorch takes `memory_format=`, torchic accepts one."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class layout:
    """A tensor layout: torchic has `torchic.strided` only."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
strided = layout("strided")
_FORMATS = {"preserve_format", "contiguous_format", "channels_last", "channels_last_3d"}


def check_memory_format(fmt: Any, what: str) -> None:
    """Accept None or a memory format (torchic's, or torch's by its name); anything else is
    PyTorch's TypeError."""
    if fmt is None or isinstance(fmt, memory_format):
        return
    if type(fmt).__name__ == "memory_format" and str(fmt).replace("torch.", "") in _FORMATS:
        return
    raise TypeError(f"{what}: argument 'memory_format' must be torch.memory_format, not "
                    f"{type(fmt).__name__}")


def check_layout(lay: Any, what: str) -> None:
    """Accept None or the strided layout; refuse a sparse one, naming it."""
    if lay is None or lay is strided or str(lay) == "torch.strided":
        return
    raise RuntimeError(f"{what}: layout {lay} is not supported: torchic tensors are strided")


def check_like_kwargs(kwargs: dict, what: str) -> None:
    """The keywords of PyTorch's *_like / new_* functions that change no value here:
    layout=, memory_format=, pin_memory= (False); any other is a TypeError."""
    for key, value in kwargs.items():
        if key == "memory_format":
            check_memory_format(value, f"{what}()")
        elif key == "layout":
            check_layout(value, f"{what}()")
        elif key == "pin_memory":
            if value:
                raise RuntimeError(f"{what}(): pin_memory=True needs an accelerator; "
                                   f"torchic has none")
        else:
            raise TypeError(f"{what}() got an unexpected keyword argument {key!r}")
