"""Parameter: a leaf Tensor that requires grad and that Modules register by attribute.

A Parameter *is* a Tensor (a subclass made through ``Tensor._make``), sharing
the storage of the tensor it wraps, so everything a Tensor does works on it:
ops, ``.grad``, ``p.data += -lr * p.grad``, ``p.copy_(...)`` under no_grad.
Results of ops on a Parameter are plain Tensors.
"""

from ..creation import empty
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter when assigned to its attribute.

    Args:
        data (Tensor): the initial values; the Parameter shares their storage (an empty
            tensor when omitted).
        requires_grad (bool): whether it records gradients (floating dtypes only when
            True).

    Example:
        >>> class Scale(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.s = nn.Parameter(torchic.ones(1))
        >>> [name for name, _ in Scale().named_parameters()]
        ['s']
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(data) takes a torchic Tensor, got {type(data).__name__} "
                            f"(wrap it first: nn.Parameter(torchic.tensor(...)))")
        if requires_grad and not data.is_floating_point():
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return cls._make(data._storage, data._offset, data.shape, data._strides, data._dtype,
                         bool(requires_grad))

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True
                 ) -> None:   # __new__ did it all
        pass

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)
