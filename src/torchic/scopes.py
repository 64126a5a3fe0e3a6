"""track_tensors / keep: scoped disposal of everything a block of code allocated.

A scope records (weak references to) the storages allocated while it is the
innermost scope of the current context; on exit it disposes all of them
except those of the tensors the scope returns and those passed to ``keep``.
Scopes nest and follow ``contextvars``, so concurrent asyncio tasks and
threads each see their own.
"""

import contextvars
import functools
import weakref
from typing import Any, Callable, Literal

from .tensor import Tensor

_scope = contextvars.ContextVar("torchic_scope", default=None)
active = 0   # scopes open anywhere (a fast "is anything tracking?" check)


class _Scope:
    __slots__ = ("parent", "storages", "kept")

    def __init__(self, parent):
        self.parent = parent
        self.storages = []
        self.kept = set()


def register(storage):
    scope = _scope.get()
    if scope is not None:
        scope.storages.append(weakref.ref(storage))


class untracked:
    """`with untracked():` allocations in the block belong to no scope (caches: the scalar
    constants, pooling's index tables, eye). Context-local, as the scopes are: another
    thread's or task's scope goes on tracking its own allocations meanwhile (swapping the
    global `active` count instead once made a concurrent thread's temporaries escape their
    scope)."""

    __slots__ = ("_token",)

    def __enter__(self) -> "untracked":
        self._token = _scope.set(None)
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        _scope.reset(self._token)
        return False


def keep(*tensors: Any) -> Any:
    """Exempt tensors from disposal by every enclosing track_tensors scope."""
    exempt(t._storage for t in _iter_tensors(tensors))
    return tensors[0] if len(tensors) == 1 else tensors


def exempt(storages):
    """Exempt storages from disposal by every enclosing scope (keep's core; a compiled
    program's own state: torchic.compile)."""
    ids = {id(s) for s in storages}
    scope = _scope.get()
    while scope is not None:
        scope.kept |= ids
        scope = scope.parent


def _iter_tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
        if obj.grad is not None:
            yield obj.grad
    elif isinstance(obj, (list, tuple, set)):
        for x in obj:
            yield from _iter_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _iter_tensors(x)


class track_tensors:
    """Dispose every tensor created inside, except what is returned or kept.

    ``with track_tensors():``, ``@track_tensors`` (or ``@track_tensors()``), and the
    call form ``track_tensors(fn)()`` which runs fn in a scope and returns its result.
    """

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        if fn is not None and not callable(fn):
            raise TypeError("track_tensors(fn) needs a callable")
        self._fn = fn
        self._tokens = []
        if fn is not None:
            functools.update_wrapper(self, fn)

    def __enter__(self) -> "track_tensors":
        global active
        scope = _Scope(_scope.get())
        self._tokens.append((_scope.set(scope), scope))
        active += 1
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        token, scope = self._tokens.pop()
        self._close(token, scope, None)
        return False

    def _close(self, token, scope, result):
        global active
        _scope.reset(token)
        active -= 1
        kept = scope.kept | {id(t._storage) for t in _iter_tensors(result)}
        parent = scope.parent
        for ref in scope.storages:
            st = ref()
            if st is None or st.disposed:
                continue
            if id(st) in kept:
                if parent is not None:
                    parent.storages.append(ref)
                continue
            st.dispose()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:  # used as @track_tensors() decorator
            (fn,) = args
            return track_tensors(fn)
        self.__enter__()
        token, scope = self._tokens.pop()
        result = None
        try:
            result = self._fn(*args, **kwargs)
            return result
        finally:
            self._close(token, scope, result)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

