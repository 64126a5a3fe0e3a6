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
    """F.max_pool1d as a module (stride defaults to kernel_size).

    Args:
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit -inf on both sides (at most half the kernel). Default: 0.
        dilation: the spacing of the window's taps. Default: 1.
        return_indices: also return each maximum's flat index in its plane (for max_unpool).
        ceil_mode: round the output size up. Default: False.

    Shape:
        - Output: `(N, C, Lo)`, `Lo = (L + 2*padding - dilation*(k-1) - 1) // stride + 1`.

    Example:
        >>> x = torch.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]]])
        >>> nn.MaxPool1d(2)(x)
        tensor([[[5., 4., 6.]]])
    """


class MaxPool2d(_MaxPool, dims=2):
    """F.max_pool2d as a module (stride defaults to kernel_size).

    Args:
        kernel_size: the window, an int or (kh, kw).
        stride: the window's step. Default: kernel_size.
        padding: implicit -inf on both sides (at most half the kernel).
        dilation: the spacing of the window's taps. Default: 1.
        return_indices: also return each maximum's flat index in its (H, W) plane (for
            max_unpool2d).
        ceil_mode: round the output size up (windows may overhang the right edge, never start
            past it).

    Shape:
        - Output: `(N, C, Ho, Wo)`, `Ho = (H + 2*padding - dilation*(kh-1) - 1) // stride +
          1` (Wo alike).

    Example:
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> nn.MaxPool2d(2)(x)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
        >>> nn.MaxPool2d(3, stride=2)(torch.randn(20, 16, 50, 32)).shape
        torchic.Size([20, 16, 24, 15])
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
    """F.avg_pool1d as a module (stride defaults to kernel_size).

    Args:
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit padding on both sides (at most half the kernel). Default: 0.
        ceil_mode: round the output size up. Default: False.
        count_include_pad: count the padding zeros in the mean's divisor. Default: True.

    Shape:
        - Output: `(N, C, Lo)`, `Lo = (L + 2*padding - kernel_size) // stride + 1`.

    Example:
        >>> x = torch.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]]])
        >>> nn.AvgPool1d(2)(x)
        tensor([[[3.0000, 3.5000, 4.0000]]])
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        # PyTorch's AvgPool1d holds 1-tuples (its repr shows them)
        super().__init__(FC._tuple(kernel_size, 1, "kernel_size"),
                         FC._tuple(stride if stride is not None else kernel_size, 1, "stride"),
                         FC._tuple(padding, 1, "padding"), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPool, dims=2):
    """F.avg_pool2d as a module (stride defaults to kernel_size).

    Args:
        kernel_size: the window, an int or (kh, kw).
        stride: the window's step. Default: kernel_size.
        padding: implicit zeros on both sides (at most half the kernel).
        ceil_mode: round the output size up.
        count_include_pad: count the padding zeros in the mean's divisor. Default: True.
        divisor_override: divide every window's sum by this instead.

    Shape:
        - Output: `(N, C, Ho, Wo)`, `Ho = (H + 2*padding - kh) // stride + 1` (Wo alike).

    Example:
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> nn.AvgPool2d(2)(x)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
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
    """F.adaptive_avg_pool1d as a module.

    Args:
        output_size: the output's length: an int, or a 1-tuple.

    Shape:
        - Output: `(N, C, output_size)`.

    Example:
        >>> x = torch.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]]])
        >>> nn.AdaptiveAvgPool1d(3)(x)
        tensor([[[3.0000, 3.5000, 4.0000]]])
    """


class AdaptiveAvgPool2d(_AdaptiveAvg, dims=2):
    """F.adaptive_avg_pool2d as a module (output_size: int, pair, None keeps a dim).

    Args:
        output_size: the output's size (h, w): an int, or one per dim (None keeps the input
            size).

    Shape:
        - Output: `(N, C, h, w)`.

    Example:
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> nn.AdaptiveAvgPool2d(2)(x)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """


class _AdaptiveMax(_AdaptiveAvg):
    _kind = "adaptive_max_pool"

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax, dims=1):
    """F.adaptive_max_pool1d as a module.

    Args:
        output_size: the output's length: an int, or a 1-tuple.
        return_indices: also return each maximum's flat index in its plane (for max_unpool).

    Shape:
        - Output: `(N, C, output_size)`.

    Example:
        >>> x = torch.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]]])
        >>> nn.AdaptiveMaxPool1d(3)(x)
        tensor([[[5., 4., 6.]]])
    """


class AdaptiveMaxPool2d(_AdaptiveMax, dims=2):
    """F.adaptive_max_pool2d as a module.

    Args:
        output_size: the output's size (h, w): an int, or one per dim (None keeps the input
            size).
        return_indices: also return each maximum's flat index in its plane (for max_unpool).

    Shape:
        - Output: `(N, C, h, w)`.

    Example:
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> nn.AdaptiveMaxPool2d(2)(x)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """


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
    """F.max_unpool1d as a module: forward(input, indices, output_size=None).

    Called as `m(input, indices, output_size=None)`.

    Args:
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit padding on both sides (at most half the kernel). Default: 0.

    Shape:
        - Input, indices: `(N, C, Lo)`. Output: `(N, C, (Lo - 1) * stride - 2 * padding +
          kernel_size)`, or output_size.

    Example:
        >>> y, i = nn.MaxPool1d(2, return_indices=True)(torch.tensor([[[1.0, 5.0, 3.0, 4.0]]]))
        >>> nn.MaxUnpool1d(2)(y, i)
        tensor([[[0., 5., 0., 4.]]])
    """


class MaxUnpool2d(_MaxUnpool, dims=2):
    """F.max_unpool2d as a module: forward(input, indices, output_size=None).

    Called as `m(input, indices, output_size=None)`.

    Args:
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit padding on both sides (at most half the kernel). Default: 0.

    Shape:
        - Input, indices: `(N, C, Ho, Wo)`. Output: `(N, C, H, W)`, `H = (Ho - 1) * stride -
          2 * padding + kh`, or output_size.

    Example:
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> y, i = nn.MaxPool2d(2, return_indices=True)(x)
        >>> nn.MaxUnpool2d(2)(y, i)
        tensor([[[[ 0.,  0.,  0.,  0.],
                  [ 0.,  5.,  0.,  7.],
                  [ 0.,  0.,  0.,  0.],
                  [ 0., 13.,  0., 15.]]]])
    """


class Upsample(Module):
    """F.interpolate as a module (size or scale_factor, mode, align_corners).

    Args:
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.
        mode: "nearest" (PyTorch's floor(dst*scale) rule), "nearest-exact" (pixel centres),
            "linear" (3-d input), "bilinear" / "bicubic" (4-d; bicubic's a = -0.75) or "area"
            (adaptive average pooling).
        align_corners: for the linear modes, map the corner pixels' centres onto each other
            (default False).
        recompute_scale_factor: compute the scale from the output size instead of using
            scale_factor as given.

    Shape:
        - Input: `(N, C, L)` or `(N, C, H, W)`. Output: `(N, C, size)` / the spatial size
          times scale_factor.

    Example:
        >>> nn.Upsample(scale_factor=2)(torch.tensor([[[1.0, 2.0]]]))
        tensor([[[1., 1., 2., 2.]]])
        >>> nn.Upsample(scale_factor=2, mode="bilinear")(torch.randn(1, 1, 3, 3)).shape
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
    """Upsample(mode="nearest").

    Args:
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.

    Shape:
        - Input: `(N, C, H, W)`. Output: `(N, C, size)` or scaled by scale_factor.

    Example:
        >>> nn.UpsamplingNearest2d(scale_factor=2)(torch.tensor([[[[1.0, 2.0]]]]))
        tensor([[[[1., 1., 2., 2.],
                  [1., 1., 2., 2.]]]])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample(mode="bilinear", align_corners=True).

    Args:
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.

    Shape:
        - Input: `(N, C, H, W)`. Output: `(N, C, size)` or scaled by scale_factor.

    Example:
        >>> nn.UpsamplingBilinear2d(size=(1, 4))(torch.tensor([[[[0.0, 3.0]]]]))
        tensor([[[[0., 1., 2., 3.]]]])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """F.pixel_shuffle as a module: (*, C*r*r, H, W) -> (*, C, H*r, W*r).

    Args:
        upscale_factor: r.

    Shape:
        - Output: `(*, C, H*r, W*r)`.

    Example:
        >>> nn.PixelShuffle(2)(torch.arange(4.0).reshape(1, 4, 1, 1))
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return FR.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """F.pixel_unshuffle as a module: (*, C, H*r, W*r) -> (*, C*r*r, H, W).

    Args:
        downscale_factor: r.

    Shape:
        - Output: `(*, C*r*r, H, W)`.

    Example:
        >>> nn.PixelUnshuffle(2)(torch.arange(4.0).reshape(1, 1, 2, 2)).flatten()
        tensor([0., 1., 2., 3.])
    """

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
    """Pads the last dim with `value`: padding int or (left, right).

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, W)` or `(C, W)`. Output: W + left + right wide.

    Example:
        >>> nn.ConstantPad1d((1, 2), 3.5)(torch.tensor([[1.0, 2.0]]))
        tensor([[3.5000, 1.0000, 2.0000, 3.5000, 3.5000]])
    """

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(_Pad):
    """Pads the last two dims with `value`: padding int or (left, right, top, bottom).

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: `H + top + bottom` by `W + left +
          right`.

    Example:
        >>> nn.ConstantPad2d(1, 0.5)(torch.tensor([[[1.0]]]))
        tensor([[[0.5000, 0.5000, 0.5000],
                 [0.5000, 1.0000, 0.5000],
                 [0.5000, 0.5000, 0.5000]]])
    """
    _dims = 2

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ZeroPad1d(_Pad):
    """Pads the last dim with zeros: padding int or (left, right).

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.

    Shape:
        - Input: `(N, C, W)` or `(C, W)`. Output: W + left + right wide.

    Example:
        >>> nn.ZeroPad1d((1, 2))(torch.tensor([[1.0, 2.0]]))
        tensor([[0., 1., 2., 0., 0.]])
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(_Pad):
    """Pads the last two dims with zeros: padding int or (left, right, top, bottom).

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: `H + top + bottom` by `W + left +
          right`.

    Example:
        >>> nn.ZeroPad2d((1, 0, 0, 1))(torch.tensor([[[1.0, 2.0]]]))
        tensor([[[0., 1., 2.],
                 [0., 0., 0.]]])
    """
    _dims = 2

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad1d(_Pad):
    """Pads the last dim with its reflection (the edge not repeated).

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, W)` or `(C, W)`. Output: W + left + right wide.

    Example:
        >>> nn.ReflectionPad1d(2)(torch.tensor([[[1.0, 2.0, 3.0]]]))
        tensor([[[3., 2., 1., 2., 3., 2., 1.]]])
    """
    _mode = "reflect"


class ReflectionPad2d(_Pad):
    """Pads the last two dims with their reflection (the edge not repeated).

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: `H + top + bottom` by `W + left +
          right`.

    Example:
        >>> nn.ReflectionPad2d((1, 1, 0, 0))(torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
        tensor([[[2., 1., 2., 1.],
                 [4., 3., 4., 3.]]])
    """
    _dims, _mode = 2, "reflect"


class ReplicationPad1d(_Pad):
    """Pads the last dim by repeating its edge values.

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, W)` or `(C, W)`. Output: W + left + right wide.

    Example:
        >>> nn.ReplicationPad1d((2, 1))(torch.tensor([[[1.0, 2.0, 3.0]]]))
        tensor([[[1., 1., 1., 2., 3., 3.]]])
    """
    _mode = "replicate"


class ReplicationPad2d(_Pad):
    """Pads the last two dims by repeating their edge values.

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: `H + top + bottom` by `W + left +
          right`.

    Example:
        >>> nn.ReplicationPad2d((1, 0, 1, 0))(torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
        tensor([[[1., 1., 2.],
                 [1., 1., 2.],
                 [3., 3., 4.]]])
    """
    _dims, _mode = 2, "replicate"


class CircularPad1d(_Pad):
    """Pads the last dim by wrapping around.

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, W)` or `(C, W)`. Output: W + left + right wide.

    Example:
        >>> nn.CircularPad1d(2)(torch.tensor([[[1.0, 2.0, 3.0]]]))
        tensor([[[2., 3., 1., 2., 3., 1., 2.]]])
    """
    _mode = "circular"


class CircularPad2d(_Pad):
    """Pads the last two dims by wrapping around.

    Args:
        padding: an int (every side) or (left, right) for the last dim, (left, right, top,
            bottom) for the last two.
        value: the fill (used by the constant pads only). Default: 0.

    Shape:
        - Input: `(N, C, H, W)` or `(C, H, W)`. Output: `H + top + bottom` by `W + left +
          right`.

    Example:
        >>> nn.CircularPad2d((1, 0, 0, 1))(torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
        tensor([[[2., 1., 2.],
                 [4., 3., 4.],
                 [2., 1., 2.]]])
    """
    _dims, _mode = 2, "circular"
