"""Power-average pooling (issue 42): F.lp_pool1d / F.lp_pool2d and nn.LPPool1d / nn.LPPool2d,
composites of avg_pool (differentiable through it) as PyTorch defines them."""

import math
from collections.abc import Sequence
from typing import Any

from ..tensor import Tensor
from . import functional_conv as FC
from . import functional_pool as FP
from .module import Module

__all__ = ["lp_pool1d", "lp_pool2d", "LPPool1d", "LPPool2d"]


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, dims):
    k = FC._tuple(kernel_size, dims, "kernel_size")
    pool = FP.avg_pool1d if dims == 1 else FP.avg_pool2d
    out = pool(input.pow(norm_type), k, stride if stride is not None else k, 0, ceil_mode)
    # sign(out) * relu(|out|): PyTorch's guard, zero where the average of x**p is negative
    out = out.sign() * out.abs().relu()
    return (out * math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int | Sequence[int],
              stride: int | Sequence[int] | None = None, ceil_mode: bool = False) -> Tensor:
    """1-d power-average pooling: the p-norm `(sum of x**p) ** (1/p)` of each window.

    Args:
        input: `(N, C, L)` or `(C, L)`.
        norm_type: p (inf gives max pooling's values, 1 sum pooling).
        kernel_size: the window's length.
        stride: the window's step. Default: kernel_size.
        ceil_mode: round the output size up. Default: False.

    Shape:
        - Output: `(N, C, Lo)`, `Lo = (L - kernel_size) // stride + 1`.

    Example:
        >>> F.lp_pool1d(torch.ones(1, 1, 6), 2, 3)
        tensor([[[1.7321, 1.7321]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: int | Sequence[int],
              stride: int | Sequence[int] | None = None, ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling: the p-norm `(sum of x**p) ** (1/p)` of each (kh, kw) window.

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        norm_type: p (inf gives max pooling's values, 1 sum pooling).
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        ceil_mode: round the output size up. Default: False.

    Shape:
        - Output: `(N, C, Ho, Wo)`, `Ho = (H - kh) // stride + 1` (Wo alike).

    Example:
        >>> F.lp_pool2d(torch.ones(1, 1, 4, 4), 2, 2)
        tensor([[[[2., 2.],
                  [2., 2.]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


class _LPPool(Module):
    _fn: Any = None

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """F.lp_pool1d as a module: (sum over each window of x**p)**(1/p).

    Args:
        norm_type: p (inf gives max pooling's values, 1 sum pooling).
        kernel_size: the window's length.
        stride: the window's step. Default: kernel_size.
        ceil_mode: round the output size up. Default: False.

    Shape:
        - Output: `(N, C, Lo)`, `Lo = (L - kernel_size) // stride + 1`.

    Example:
        >>> nn.LPPool1d(2, 3)(torch.ones(1, 1, 6))
        tensor([[[1.7321, 1.7321]]])
    """
    _fn = staticmethod(lp_pool1d)


class LPPool2d(_LPPool):
    """F.lp_pool2d as a module: (sum over each (kh, kw) window of x**p)**(1/p).

    Args:
        norm_type: p (inf gives max pooling's values, 1 sum pooling).
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        ceil_mode: round the output size up. Default: False.

    Shape:
        - Output: `(N, C, Ho, Wo)`, `Ho = (H - kh) // stride + 1` (Wo alike).

    Example:
        >>> nn.LPPool2d(2, 2)(torch.ones(1, 1, 4, 4))
        tensor([[[[2., 2.],
                  [2., 2.]]]])
    """
    _fn = staticmethod(lp_pool2d)
