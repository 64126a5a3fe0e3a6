"""``torch.jit`` under torchic: scripting and tracing are eager pass-throughs.

``torch.jit.script(fn_or_module)`` and ``torch.jit.trace(fn, example_inputs)`` return their
argument unchanged, so decorated code runs eagerly with the same results (for speed, use
``torchic.compile``). ``torch.jit.save`` / ``load`` (TorchScript archives) are not supported:
they raise NotImplementedError.
"""

from typing import Any, Callable, TypeVar

_F = TypeVar("_F")


def script(obj: _F, *args: Any, **kwargs: Any) -> _F:
    """Returns `obj` unchanged (eager pass-through: the module docstring)."""
    return obj


def trace(func: _F, example_inputs: Any = None, *args: Any, **kwargs: Any) -> _F:
    """Returns `func` unchanged (eager pass-through: the module docstring)."""
    return func


def trace_module(mod: _F, inputs: Any = None, *args: Any, **kwargs: Any) -> _F:
    """Returns `mod` unchanged."""
    return mod


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` / ``@torch.jit.ignore(drop=True)``: the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@torch.jit.unused``: the function unchanged."""
    return fn


def export(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@torch.jit.export``: the function unchanged."""
    return fn


def is_scripting() -> bool:
    """False: nothing is ever scripted."""
    return False


def is_tracing() -> bool:
    """False: nothing is ever traced."""
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """``torch.jit.annotate(T, value)``: the value."""
    return the_value


def save(m: Any, f: Any, *args: Any, **kwargs: Any) -> None:
    """TorchScript archives are not supported: raises NotImplementedError."""
    raise NotImplementedError("torchic.jit.save: torchic has no TorchScript; save the weights "
                              "with torchic.save(model.state_dict(), path)")


def load(f: Any, *args: Any, **kwargs: Any) -> Any:
    """TorchScript archives are not supported: raises NotImplementedError."""
    raise NotImplementedError("torchic.jit.load: torchic cannot read TorchScript archives; "
                              "load a state_dict saved with torch.save instead")


class Final:
    """``torch.jit.Final[T]`` annotations: accepted."""

    def __class_getitem__(cls, item: Any) -> Any:
        return item
