"""PyTorch's other spellings of common functions (issue 41 keyword spellings): torch.multiply /
subtract / divide are mul / sub / div, torch.clone and torch.t the methods as functions."""

from typing import Any

from ..tensor import Tensor
from .elementwise import mul, sub
from .rounding import div
from .shaping import transpose

__all__ = ["multiply", "subtract", "divide", "clone", "t"]

multiply, subtract, divide = mul, sub, div


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of `input` in new storage; gradients flow back to `input` (x.clone()).

    Example:
        >>> torchic.clone(torchic.ones(2)).add_(1)
        tensor([2., 2.])
    """
    return input.clone(memory_format=memory_format)


def t(input: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dims (x.t()).

    Example:
        >>> torchic.t(torchic.zeros(2, 3)).shape
        (3, 2)
    """
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return transpose(input)
