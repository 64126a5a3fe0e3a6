"""Convolution and fold / unfold modules: thin Modules over functional_conv, PyTorch's
parameter names, shapes and initialization (state_dicts load both ways)."""

import math
from collections.abc import Sequence
from typing import Any

from .. import creation
from ..tensor import Tensor
from . import functional_conv as FC
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold"]


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", output_padding: Any = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in FC._PAD_MODES:
            raise ValueError(f"padding_mode must be one of {list(FC._PAD_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in FC._tuple(stride, n, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = FC._tuple(kernel_size, n, "kernel_size")
        self.stride = FC._tuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else FC._tuple(padding, n, "padding")
        self.dilation = FC._tuple(dilation, n, "dilation")
        self.transposed = self._transposed
        self.output_padding = FC._tuple(output_padding, n, "output_padding")
        self.groups, self.padding_mode = groups, padding_mode
        shape = ((in_channels, out_channels // groups) if self._transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        kw = {} if dtype is None else {"dtype": dtype}
        self.weight = Parameter(creation.empty(*shape, **kw))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: kaiming_uniform_(a=sqrt(5)) for the weight, U(-1/sqrt(fan_in),
        1/sqrt(fan_in)) for the bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else \
                f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return FC._conv(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups, self._dims, f"conv{self._dims}d", self.padding_mode)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) inputs (F.conv2d with this module's weight (C_out,
    C_in/groups, kh, kw) and bias (C_out,)).

    Args:
        in_channels: C_in, the input's channels.
        out_channels: C_out, the output's channels.
        kernel_size: an int or (kh, kw).
        stride: an int or (h, w). Default: 1.
        padding: an int, (h, w), "valid" or "same". Default: 0.
        dilation: the spacing of the filters' taps. Default: 1.
        groups: C_in and C_out split into groups convolved apart (groups = C_in: depthwise).
            Default: 1.
        bias: `(Co,)` or None.
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Output: `(N, Co, Ho, Wo)`, `Ho = (H + 2*pad - dilation*(kh-1) - 1) // stride + 1`
          (Wo alike).

    Attributes:
        weight: `(C_out, C_in / groups, kh, kw)`, ~ U(-1/sqrt(fan_in), +) as PyTorch's.
        bias: `(C_out,)` or None.

    Example:
        >>> m = nn.Conv2d(16, 33, 3, stride=2)
        >>> m(torch.randn(20, 16, 50, 100)).shape
        torchic.Size([20, 33, 24, 49])
    """
    _dims = 2


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) inputs; arguments as Conv2d's.

    Args:
        in_channels: C_in, the input's channels.
        out_channels: C_out, the output's channels.
        kernel_size: k, the filters' length.
        stride: an int or 1-tuple. Default: 1.
        padding: an int, "valid" or "same". Default: 0.
        dilation: the spacing of the filters' taps. Default: 1.
        groups: C_in and C_out split into groups convolved apart. Default: 1.
        bias: `(Co,)` or None.
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Output: `(N, Co, Lo)`, `Lo = (L + 2*padding - dilation*(k-1) - 1) // stride + 1`.

    Attributes:
        weight: `(C_out, C_in / groups, k)`, ~ U(-1/sqrt(C_in/groups * k), +) as PyTorch's.
        bias: `(C_out,)` or None.

    Example:
        >>> m = nn.Conv1d(16, 33, 3, stride=2)
        >>> m(torch.randn(20, 16, 50)).shape
        torchic.Size([20, 33, 24])
    """
    _dims = 1


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"Only \"zeros\" padding mode is supported for "
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._dims
        size = list(output_size)[-n:]
        if len(size) != n:
            raise ValueError(f"output_size must have {n} or {n + 2} elements "
                             f"(got {len(output_size)})")
        out = []
        for i in range(n):
            lo = (input.shape[-n + i] - 1) * self.stride[i] - 2 * self.padding[i] + \
                self.dilation[i] * (self.kernel_size[i] - 1) + 1
            if not lo <= size[i] < lo + max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {size}, but valid sizes range "
                                 f"from {lo} to {lo + self.stride[i] - 1} (for an input of "
                                 f"{list(input.shape[-n:])})")
            out.append(size[i] - lo)
        return tuple(out)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return FC._conv_t(input, self.weight, self.bias, self.stride, self.padding, op,
                          self.groups, self.dilation, self._dims,
                          f"conv_transpose{self._dims}d")


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution (F.conv_transpose2d with weight (C_in, C_out/groups, kh, kw));
    forward(input, output_size=None) picks output_padding to reach output_size.

    Args:
        in_channels: C_in, the input's channels.
        out_channels: C_out, the output's channels.
        kernel_size: an int or (kh, kw).
        stride: an int or (h, w). Default: 1.
        padding: removed from both sides of the output. Default: 0.
        output_padding: added to one side of the output (< stride or dilation). Default: 0.
        groups: Default: 1.
        bias: `(Cout,)` or None.
        dilation: Default: 1.
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Output: `(N, Cout, Ho, Wo)`, `Ho = (H-1)*stride - 2*padding + dilation*(kh-1) +
          output_padding + 1` (Wo alike).

    Attributes:
        weight: `(C_in, C_out / groups, kh, kw)`.
        bias: `(C_out,)` or None.

    Example:
        >>> m = nn.ConvTranspose2d(16, 33, 3, stride=2)
        >>> m(torch.randn(20, 16, 50, 100)).shape
        torchic.Size([20, 33, 101, 201])
    """
    _dims = 2


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution over (N, C_in, L); arguments as ConvTranspose2d's.

    Args:
        in_channels: C_in, the input's channels.
        out_channels: C_out, the output's channels.
        kernel_size: k, the filters' length.
        stride: Default: 1.
        padding: removed from both ends of the output. Default: 0.
        output_padding: added to one end of the output (< stride or dilation). Default: 0.
        groups: Default: 1.
        bias: `(Cout,)` or None.
        dilation: Default: 1.
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Output: `(N, Cout, Lo)`, `Lo = (L-1)*stride - 2*padding + dilation*(k-1) +
          output_padding + 1`.

    Attributes:
        weight: `(C_in, C_out / groups, k)`.
        bias: `(C_out,)` or None.

    Example:
        >>> m = nn.ConvTranspose1d(16, 33, 3, stride=2)
        >>> m(torch.randn(20, 16, 50)).shape
        torchic.Size([20, 33, 101])
    """
    _dims = 1


class Unfold(Module):
    """F.unfold as a module: sliding windows of (N, C, H, W) as columns (N, C*kh*kw, L).

    Args:
        kernel_size: the window: an int or one per spatial dim.
        dilation: the spacing of the window's taps. Default: 1.
        padding: implicit zeros on both sides. Default: 0.
        stride: the windows' step. Default: 1.

    Shape:
        - Output: `(N, C*kh*kw, L)`, L the number of windows.

    Example:
        >>> nn.Unfold(2)(torch.arange(9.0).reshape(1, 1, 3, 3))
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]])
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return FC.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """F.fold as a module: columns (N, C*kh*kw, L) summed into (N, C, *output_size).

    Args:
        output_size: the image's (H, W).
        kernel_size: the window: an int or one per spatial dim.
        dilation: as unfold's. Default: 1.
        padding: as unfold's. Default: 0.
        stride: as unfold's. Default: 1.

    Shape:
        - Output: `(N, C, H, W)`.

    Example:
        >>> nn.Fold((3, 3), 2)(torch.ones(1, 4, 4))
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return FC.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                       self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
