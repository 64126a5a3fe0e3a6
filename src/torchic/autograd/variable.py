"""PyTorch's legacy ``torch.autograd.Variable``: Variables and Tensors are one thing since
PyTorch 0.4; the name stays for old programs."""

from typing import Any

from ..tensor import Tensor


class _VariableType(type):
    """isinstance(t, Variable) is true of every tensor, as PyTorch's."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """PyTorch's legacy `torch.autograd.Variable(data, requires_grad=False)`: the tensor
    itself (a detached alias of `data`, made a leaf that records gradients when
    requires_grad is true)."""

    def __new__(cls, data: Any = None, requires_grad: bool = False,
                volatile: bool = False) -> Any:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(True) if requires_grad else out
