"""torchic.Size: PyTorch's torch.Size, the tuple subclass `.shape` and `.size()` return.

It is a tuple (compares equal to one, unpacks, indexes, hashes as one), printed as
`torchic.Size([2, 3])`, with `numel()`; slicing one gives a Size.
"""

from typing import Any, SupportsIndex


class Size(tuple):
    """The shape of a tensor: a tuple of ints with `numel()` (the product of the sizes).

    Example::

        >>> torchic.zeros(2, 3).shape
        torchic.Size([2, 3])
        >>> torchic.zeros(2, 3).shape.numel()
        6
    """

    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> "Size":
        sizes = tuple(sizes)
        for s in sizes:
            if isinstance(s, bool) or not hasattr(s, "__index__"):
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item 0 is "
                                f"'{type(s).__name__}')")
        return tuple.__new__(cls, (s.__index__() for s in sizes))

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key: SupportsIndex | slice) -> Any:   # type: ignore[override]
        item = tuple.__getitem__(self, key)
        return tuple.__new__(Size, item) if isinstance(key, slice) else item

    def __repr__(self) -> str:
        return f"torchic.Size({list(self)})"

    def __reduce__(self) -> Any:
        return (Size, (tuple(self),))
