"""Pooling, padding, resampling and pixel-shuffle modules: thin Modules over
functional_pool / functional_conv with PyTorch's constructor arguments."""

from collections.abc import Sequence
from typing import Any

from ..tensor import Tensor
from . import functional_conv as FC
from . import functional_pool as FP
from . import functional_resample as FR
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxUnpool1d",
           "MaxUnpool2d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "PixelShuffle", "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d",
           "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
           "ReplicationPad2d", "CircularPad1d", "CircularPad2d"]


class _Pool(Module):
    """A module of one kind (`_kind`, e.g. "max_pool") for any number of dims: a subclass
    `class MaxPool2d(_MaxPool, dims=2)` holds dims and gets F.max_pool2d as its `_fn`."""
    _kind = ""
    _dims = 0
    _fn: Any = None

    def __init_subclass__(cls, dims: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if dims is not None:
            cls._dims = dims
            cls._fn = staticmethod(getattr(FP, f"{cls._kind}{dims}d"))


class _MaxPool(_Pool):
    _kind = "max_pool"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                        ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPool, dims=1):
    """F.max_pool1d as a module (stride defaults to kernel_size)."""


class MaxPool2d(_MaxPool, dims=2):
    """F.max_pool2d as a module (stride defaults to kernel_size).

    Example:
        >>> nn.MaxPool2d(2)(torchic.randn(1, 3, 8, 8)).shape
        torchic.Size([1, 3, 4, 4])
    """


class _AvgPool(_Pool):
    _kind = "avg_pool"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        override = () if self.divisor_override is None else (self.divisor_override,)
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, *override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool, dims=1):
    """F.avg_pool1d as a module (stride defaults to kernel_size)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        # PyTorch's AvgPool1d holds 1-tuples (its repr shows them)
        super().__init__(FC._tuple(kernel_size, 1, "kernel_size"),
                         FC._tuple(stride if stride is not None else kernel_size, 1, "stride"),
                         FC._tuple(padding, 1, "padding"), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPool, dims=2):
    """F.avg_pool2d as a module (stride defaults to kernel_size).

    Example:
        >>> nn.AvgPool2d(2)(torchic.randn(1, 3, 8, 8)).shape
        torchic.Size([1, 3, 4, 4])
    """


class _AdaptiveAvg(_Pool):
    _kind = "adaptive_avg_pool"

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvg, dims=1):
    """F.adaptive_avg_pool1d as a module."""


class AdaptiveAvgPool2d(_AdaptiveAvg, dims=2):
    """F.adaptive_avg_pool2d as a module (output_size: int, pair, None keeps a dim).

    Example:
        >>> nn.AdaptiveAvgPool2d(1)(torchic.randn(2, 8, 7, 7)).shape
        torchic.Size([2, 8, 1, 1])
    """


class _AdaptiveMax(_AdaptiveAvg):
    _kind = "adaptive_max_pool"

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax, dims=1):
    """F.adaptive_max_pool1d as a module."""


class AdaptiveMaxPool2d(_AdaptiveMax, dims=2):
    """F.adaptive_max_pool2d as a module."""


class _MaxUnpool(_Pool):
    _kind = "max_unpool"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()     # (held as dims-tuples, as PyTorch's)
        d = self._dims
        self.kernel_size = FC._tuple(kernel_size, d, "kernel_size")
        self.stride = FC._tuple(stride if stride is not None else kernel_size, d, "stride")
        self.padding = FC._tuple(padding, d, "padding")

    def forward(self, input: Tensor, indices: Tensor,
                output_size: Sequence[int] | None = None) -> Tensor:
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding,
                        output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool, dims=1):
    """F.max_unpool1d as a module: forward(input, indices, output_size=None)."""


class MaxUnpool2d(_MaxUnpool, dims=2):
    """F.max_unpool2d as a module: forward(input, indices, output_size=None)."""


class Upsample(Module):
    """F.interpolate as a module (size or scale_factor, mode, align_corners).

    Example:
        >>> nn.Upsample(scale_factor=2, mode="nearest")(torchic.randn(1, 1, 3, 3)).shape
        torchic.Size([1, 1, 6, 6])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return FR.interpolate(input, self.size, self.scale_factor, self.mode,
                              self.align_corners, self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample(mode="nearest")."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample(mode="bilinear", align_corners=True)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """F.pixel_shuffle as a module: (*, C*r*r, H, W) -> (*, C, H*r, W*r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return FR.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """F.pixel_unshuffle as a module: (*, C, H*r, W*r) -> (*, C*r*r, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return FR.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class _Pad(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = FC._tuple(padding, 2 * self._dims, "padding")
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "constant":
            return FC.pad(input, self.padding, "constant", self.value)
        return FC.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


class ConstantPad1d(_Pad):
    """Pads the last dim with `value`: padding int or (left, right)."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(_Pad):
    """Pads the last two dims with `value`: padding int or (left, right, top, bottom)."""
    _dims = 2

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ZeroPad1d(_Pad):
    """Pads the last dim with zeros: padding int or (left, right)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(_Pad):
    """Pads the last two dims with zeros: padding int or (left, right, top, bottom).

    Example:
        >>> nn.ZeroPad2d(1)(torchic.ones(1, 1, 2, 2)).shape
        torchic.Size([1, 1, 4, 4])
    """
    _dims = 2

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad1d(_Pad):
    """Pads the last dim with its reflection (the edge not repeated)."""
    _mode = "reflect"


class ReflectionPad2d(_Pad):
    """Pads the last two dims with their reflection (the edge not repeated)."""
    _dims, _mode = 2, "reflect"


class ReplicationPad1d(_Pad):
    """Pads the last dim by repeating its edge values."""
    _mode = "replicate"


class ReplicationPad2d(_Pad):
    """Pads the last two dims by repeating their edge values."""
    _dims, _mode = 2, "replicate"


class CircularPad1d(_Pad):
    """Pads the last dim by wrapping around."""
    _mode = "circular"


class CircularPad2d(_Pad):
    """Pads the last two dims by wrapping around."""
    _dims, _mode = 2, "circular"
