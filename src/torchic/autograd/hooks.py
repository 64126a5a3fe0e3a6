"""What user code attaches to the autograd engine: tensor hooks and anomaly detection.

Hooks are kept here, by the id of the tensor they belong to (a finalizer drops them with
the tensor), so that Tensor needs no extra fields and the engine asks one dict:
- `register_hook(t, fn)` (PyTorch's Tensor.register_hook): fn(grad) runs on the gradient
  of t before it goes on (a leaf: before it is added into .grad; a non-leaf: before its
  grad_fn's backward); a non-None return value replaces the gradient.
- `register_post_accumulate_grad_hook(leaf, fn)`: fn(leaf) once leaf.grad holds all of
  one backward pass's gradient (DDP's "this gradient is ready").
Anomaly detection (`detect_anomaly`, `set_detect_anomaly`) records the forward stack of
every node and makes the engine check each backward's results for NaN.
"""

import contextvars
import functools
import weakref
from typing import Callable

from ..grad_mode import _GradMode
from ..tensor import Tensor
from .grad_sum import LazyGrad, _GradSum, _Slot

_post_hooks = {}     # {id(leaf): [fn(leaf), ...]}
_grad_hooks = {}     # {id(tensor): [fn(grad) -> grad or None, ...]} (leaves and non-leaves)


class RemovableHandle:
    """What a `register_*hook` returns: `remove()` unregisters the hook."""

    def __init__(self, table, key, hook):
        self._table, self._key, self._hook = table, key, hook

    def remove(self) -> None:
        """Unregister the hook (no-op when it is already gone)."""
        hooks = self._table.get(self._key)
        if hooks is not None and self._hook in hooks:
            hooks.remove(self._hook)
            if not hooks:
                del self._table[self._key]   # (a node's list: its class default, None, again)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _register(table, tensor, hook):
    key = id(tensor)
    if key not in table:
        table[key] = []
        weakref.finalize(tensor, table.pop, key, None)
    table[key].append(hook)
    return RemovableHandle(table, key, hook)


def register_post_accumulate_grad_hook(leaf: Tensor, hook: Callable) -> RemovableHandle:
    """Call `hook(leaf)` in every `backward()` once `leaf.grad` holds all of that pass's
    gradient (PyTorch's `Tensor.register_post_accumulate_grad_hook`). Leaves only.

    Example:
        >>> w = torchic.ones(2, requires_grad=True)
        >>> h = w.register_post_accumulate_grad_hook(lambda t: print(t.grad))
    """
    if leaf.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return _register(_post_hooks, leaf, hook)


def register_hook(tensor: Tensor, hook: Callable) -> RemovableHandle:
    """Register `hook(grad) -> Tensor or None`, called with this tensor's gradient each time
    it is computed; a returned tensor replaces the gradient (PyTorch's
    `Tensor.register_hook`). Returns a handle whose `remove()` unregisters it.

    Example:
        >>> x = torchic.tensor([1.0, 2.0], requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 2)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([4., 8.])
    """
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not callable(hook):
        raise TypeError(f"register_hook expects a callable, got {type(hook).__name__}")
    node = tensor.grad_fn
    if node is None:
        return _register(_grad_hooks, tensor, hook)
    if node._tensor_hooks is None:       # a non-leaf: on its node (the gradient it gets)
        node._tensor_hooks = []
    node._tensor_hooks.append(hook)
    return RemovableHandle(node.__dict__, "_tensor_hooks", hook)


def run_grad_hooks(key, grad):
    """grad passed through the hooks registered under `key`, in order."""
    for hook in list(_grad_hooks.get(key, ())):
        out = hook(grad)
        if out is not None:
            grad = out
    return grad


# -- anomaly detection ---------------------------------------------------------------------

# 0: off; 1: forward stacks recorded; 2: and backward results checked for NaN
_anomaly = contextvars.ContextVar("torchic_detect_anomaly", default=0)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (`detect_anomaly` / `set_detect_anomaly`)."""
    return _anomaly.get() > 0


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN."""
    return _anomaly.get() > 1


class set_detect_anomaly:
    """Turn anomaly detection on or off: a call (`set_detect_anomaly(True)`), or a context
    manager (`with set_detect_anomaly(False):`) that restores the previous state.

    While on, every recorded op keeps the stack of the forward line that created it, and
    (check_nan, the default) a backward that returns NaN raises RuntimeError naming the op
    and showing that line.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._token = _anomaly.set((2 if check_nan else 1) if mode else 0)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        _anomaly.reset(self._token)
        return False


class detect_anomaly:
    """Context manager and decorator that turns anomaly detection on (see
    `set_detect_anomaly`): a NaN produced by a backward raises RuntimeError naming the op
    and the forward line (traceback) that made it.

    Example:
        >>> with torchic.autograd.detect_anomaly():
        ...     y = (x / x).sum()      # x has a 0: 0/0 in backward
        ...     y.backward()           # RuntimeError: Function 'DivBackward0' returned nan
    """

    def __init__(self, check_nan: bool = True) -> None:
        self._tokens, self._mode = [], 2 if check_nan else 1

    def __enter__(self) -> None:
        self._tokens.append(_anomaly.set(self._mode))

    def __exit__(self, *exc) -> bool:
        _anomaly.reset(self._tokens.pop())
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapped(*a, **k):
            with detect_anomaly(check_nan=mode > 1):
                return fn(*a, **k)
        return wrapped


# -- what the engine calls after a node's backward --------------------------------------

def _node_hooked(node, input_grads, grad):
    """input_grads through the node's register_hook hooks (lazy gradients written out)."""
    grads = []
    for g in input_grads:
        if isinstance(g, LazyGrad) and type(g) is not _Slot:
            s = _GradSum()
            s.add(g)
            g = s.total()[0]
        grads.append(g)
    grads = tuple(grads)
    outs = tuple(grad) if type(grad) is list else (grad,)
    for hook in list(node._node_hooks):
        r = hook(grads, outs)
        if r is not None:
            grads = tuple(r)
    return grads


def _check_nan(node, input_grads):
    with _GradMode(False):
        for k, g in enumerate(input_grads):
            t = g.g if isinstance(g, LazyGrad) else g
            if isinstance(t, Tensor) and t._dtype in ("f32", "f64", "f16", "bf16") \
                    and bool((t != t).any().item()):
                trace = "".join(node._trace or ["(not recorded: the op ran before anomaly "
                                                "detection was turned on)\n"])
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                   f"{k}th output.\n\nTraceback of forward call that caused "
                                   f"the error:\n{trace}")
