"""`Applies`: the Module that applies one nn.functional function with the settings its
constructor took (ReLU6, LeakyReLU, Softmax, ChannelShuffle, ...): the class names the
function and which settings it passes, the forward and the repr come from that."""

from typing import Any

from ..tensor import Tensor
from .module import Module


class Applies(Module):
    """A Module whose forward is `_fn(input, *settings)`.

    `_fn` is the function (a staticmethod, given as the class keyword `fn`); `_args` names the settings passed after the
    input, in order: attributes the constructor set, or "training" for the module's mode.
    `_repr` names those extra_repr shows (default: `_args`): `name=value` each (a string
    quoted), "inplace" only where set (`inplace=True`), "training" never.
    """

    _fn: Any = None
    _args: tuple[str, ...] = ()
    _repr: tuple[str, ...] | None = None

    def __init_subclass__(cls, fn: Any = None, **kwargs: Any) -> None:
        """`class Tanh(Applies, fn=F.tanh)`: the function the subclass applies."""
        super().__init_subclass__(**kwargs)
        if fn is not None:
            cls._fn = staticmethod(fn)

    def forward(self, input: Tensor) -> Tensor:
        if not self._args:
            return self._fn(input)
        return self._fn(input, *(self.training if name == "training" else getattr(self, name)
                                 for name in self._args))

    def extra_repr(self) -> str:
        shown = []
        for name in self._args if self._repr is None else self._repr:
            value = getattr(self, name) if name != "training" else None
            if name == "inplace":
                shown += ["inplace=True"] if value else []
            elif name != "training":
                shown.append(f"{name}={value!r}" if isinstance(value, str) else
                             f"{name}={value}")
        return ", ".join(shown)


class OverDim(Applies):
    """`_fn(input, dim)` (softmax-like: dim None picks PyTorch's legacy default)."""
    _args = ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim
