"""Grad mode: whether ops record autograd history (no_grad, enable_grad, inference_mode).

A context variable, so each thread and each asyncio task has its own mode, as in PyTorch;
each switch is usable as a context manager, a decorator, or (no_grad(fn)) a call form.
"""

import contextvars
import functools
from typing import Any, Callable, Literal, overload

_grad_enabled = contextvars.ContextVar("torchic_grad_enabled", default=True)


def is_grad_enabled() -> bool:
    """Whether ops record the graph now (False inside `no_grad()` / `inference_mode()`)."""
    return _grad_enabled.get()


class _GradMode:
    """Context manager, decorator and call form (``no_grad(fn)``) for a grad mode."""

    def __init__(self, enabled: bool, fn: Callable[..., Any] | None = None) -> None:
        self._enabled = enabled
        self._tokens = []
        self._fn = fn

    def __enter__(self) -> "_GradMode":
        self._tokens.append(_grad_enabled.set(self._enabled))
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _grad_enabled.reset(self._tokens.pop())
        return False

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError("no_grad()/enable_grad() wrap a callable")
        mode = self._enabled

        @functools.wraps(fn)
        def wrapped(*a, **k):
            with _GradMode(mode):
                return fn(*a, **k)
        return wrapped


@overload
def no_grad(fn: None = None) -> _GradMode: ...
@overload
def no_grad(fn: Callable[..., Any]) -> "_DecoratorOrCall": ...
def no_grad(fn: Callable[..., Any] | None = None) -> "_GradMode | _DecoratorOrCall":
    """Disable graph recording: ``with no_grad():``, ``@no_grad`` / ``@no_grad()``, or
    the call form ``no_grad(fn)()`` (the original's ``noGrad(fn)``), which runs fn
    without recording and returns its result."""
    if fn is None:
        return _GradMode(False)
    if not callable(fn):
        raise TypeError("no_grad(fn) needs a callable")
    return _DecoratorOrCall(False, fn)


@overload
def enable_grad(fn: None = None) -> _GradMode: ...
@overload
def enable_grad(fn: Callable[..., Any]) -> "_DecoratorOrCall": ...
def enable_grad(fn: Callable[..., Any] | None = None) -> "_GradMode | _DecoratorOrCall":
    """Turn graph recording back on inside a `no_grad()` region: `with enable_grad():`,
    `@enable_grad` / `@enable_grad()`, or the call form `enable_grad(fn)()`."""
    if fn is None:
        return _GradMode(True)
    return _DecoratorOrCall(True, fn)


class set_grad_enabled(_GradMode):
    """Set grad mode on or off (PyTorch's torch.set_grad_enabled): as a call it takes
    effect at once (``torchic.set_grad_enabled(False)``); as a context manager or
    decorator it applies to the block / function and then restores the previous mode.

    Example:
        >>> with torchic.set_grad_enabled(False):
        ...     y = x * 2          # not recorded
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(mode): mode must be a bool, got "
                            f"{type(mode).__name__}")
        super().__init__(mode)
        self._prev = _grad_enabled.get()
        _grad_enabled.set(mode)

    def __enter__(self) -> "set_grad_enabled":
        return self

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        _grad_enabled.set(self._prev)       # as a decorator: only inside the function
        return super().__call__(fn)

    def __exit__(self, *exc: object) -> Literal[False]:
        _grad_enabled.set(self._prev)
        return False


_inference_mode = contextvars.ContextVar("torchic_inference_mode", default=False)


def is_inference_mode_enabled() -> bool:
    """Whether an `inference_mode()` region is active."""
    return _inference_mode.get()


class inference_mode:
    """PyTorch's inference_mode(mode=True): ``with inference_mode():``, ``@inference_mode()``
    or ``@inference_mode``. Inside, grad mode is off (as under no_grad) and
    is_inference_mode_enabled() is True; inference_mode(False) turns both back (grad on).
    torchic has no separate "inference tensors": tensors made inside are ordinary tensors.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):     # the bare @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(mode): mode must be a bool, got "
                            f"{type(mode).__name__}")
        self._mode = mode
        self._tokens = []

    def __enter__(self) -> None:
        self._tokens.append((_inference_mode.set(self._mode),
                             _grad_enabled.set(not self._mode)))

    def __exit__(self, *exc: object) -> Literal[False]:
        inference, grad = self._tokens.pop()
        _grad_enabled.reset(grad)
        _inference_mode.reset(inference)
        return False

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError("inference_mode() wraps a callable")
        mode = self._mode

        @functools.wraps(fn)
        def wrapped(*a, **k):
            with inference_mode(mode):
                return fn(*a, **k)
        return wrapped


class _DecoratorOrCall:
    """``no_grad(fn)``: used as a decorator it wraps; called with no args it runs fn."""

    def __init__(self, enabled: bool, fn: Callable[..., Any]) -> None:
        self._enabled = enabled
        self._fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with _GradMode(self._enabled):
            return self._fn(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)
