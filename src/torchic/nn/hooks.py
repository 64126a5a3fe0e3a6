"""Module hooks, PyTorch's: forward pre-hooks and forward hooks (with_kwargs, prepend,
always_call), full backward hooks and backward pre-hooks.

`HookMixin` gives Module the `register_*` methods; `Module.__call__` runs `call_with_hooks`
only once a hook was registered on that module (the hot path stays one attribute lookup).

Backward hooks work as PyTorch's BackwardHook does: the forward's tensor inputs and outputs
are passed through identity autograd nodes; the output nodes collect `grad_output` (the
backward pre-hooks run on it, and may replace it), the input nodes collect `grad_input`,
and once the last arrives the full backward hooks run with `(module, grad_input,
grad_output)` (and may replace grad_input). A module whose inputs need no gradient gets its
hooks called with `grad_input` all None once grad_output is complete. torchic's autograd
nodes have one output each, so a hook may *replace* gradients only of a module with one
tensor output (pre-hooks) or one tensor input needing grad (full hooks); reading them works
for any number.
"""

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..autograd import Function
from ..tensor import Tensor

_next_id = [0]


class RemovableHandle:
    """What the `register_*_hook` methods return: `remove()` unregisters the hook (also a
    context manager that removes it on exit), as torch.utils.hooks.RemovableHandle."""

    def __init__(self, *dicts: dict) -> None:
        self.id = _next_id[0]
        _next_id[0] += 1
        self._dicts = dicts

    def remove(self) -> None:
        """Unregister the hook (a no-op when it is already gone)."""
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class _Hooks:
    """One module's hook tables (ids -> hooks, in call order) and their options."""

    def __init__(self) -> None:
        self.forward_pre: OrderedDict[int, Callable] = OrderedDict()
        self.forward_pre_kwargs: dict[int, bool] = {}
        self.forward: OrderedDict[int, Callable] = OrderedDict()
        self.forward_kwargs: dict[int, bool] = {}
        self.forward_always: dict[int, bool] = {}
        self.backward: OrderedDict[int, Callable] = OrderedDict()
        self.backward_pre: OrderedDict[int, Callable] = OrderedDict()


def _add(table, handle, hook, prepend):
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)


class HookMixin:
    """The hook-registration methods of Module."""

    def _hook_tables(self) -> _Hooks:
        h = self.__dict__.get("_hooks")
        if h is None:
            h = _Hooks()
            self.__dict__["_hooks"] = h
        return h

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call `hook(module, args)` before every forward (`hook(module, args, kwargs)` with
        with_kwargs=True). It may return new args (a tuple, or one value that is wrapped in
        one), or `(args, kwargs)` with with_kwargs; None keeps them."""
        h = self._hook_tables()
        handle = RemovableHandle(h.forward_pre, h.forward_pre_kwargs)
        _add(h.forward_pre, handle, hook, prepend)
        if with_kwargs:
            h.forward_pre_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> RemovableHandle:
        """Call `hook(module, args, output)` after every forward (`hook(module, args, kwargs,
        output)` with with_kwargs=True); a non-None return replaces the output. always_call:
        run it even when the forward raised."""
        h = self._hook_tables()
        handle = RemovableHandle(h.forward, h.forward_kwargs, h.forward_always)
        _add(h.forward, handle, hook, prepend)
        if with_kwargs:
            h.forward_kwargs[handle.id] = True
        if always_call:
            h.forward_always[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False
                                        ) -> RemovableHandle:
        """Call `hook(module, grad_output)` when the gradients of the module's outputs are
        computed; a non-None return (a tuple) replaces grad_output."""
        h = self._hook_tables()
        handle = RemovableHandle(h.backward_pre)
        _add(h.backward_pre, handle, hook, prepend)
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False
                                    ) -> RemovableHandle:
        """Call `hook(module, grad_input, grad_output)` when the gradients of the module's
        inputs are computed (grad_input: one entry per positional argument, None for
        non-tensors and inputs that need no gradient); a non-None return replaces
        grad_input."""
        h = self._hook_tables()
        handle = RemovableHandle(h.backward)
        _add(h.backward, handle, hook, prepend)
        return handle

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """The deprecated backward hook: torchic runs it as a full backward hook."""
        return self.register_full_backward_hook(hook)


# ---------------------------------------------------------------- backward hooks

class _Slot(Function):
    """An identity node whose backward hands its gradient to a _BackwardState."""

    def forward(self, x, state=None, side="out", slot=0):
        self.state, self.side, self.slot = state, side, slot
        return x.view(tuple(x.shape))

    def backward(self, grad):
        return (self.state.arrive(self.side, self.slot, grad),)


class _BackwardState:
    """One forward call's backward-hook bookkeeping."""

    def __init__(self, module, hooks, n_in):
        self.module, self.hooks = module, hooks
        self.grad_input = [None] * n_in
        self.in_pending: set[int] = set()
        self.grad_output: list[Any] = []
        self.out_pending: set[int] = set()

    def arrive(self, side, slot, grad):
        if side == "out":
            self.grad_output[slot] = grad
            self.out_pending.discard(slot)
            if self.out_pending:
                return grad
            n_out = sum(1 for g in self.grad_output if g is not None)
            for hook in list(self.hooks.backward_pre.values()):
                new = hook(self.module, tuple(self.grad_output))
                if new is not None:
                    if n_out > 1:
                        raise RuntimeError("a backward pre-hook may replace grad_output only "
                                           "of a module with one tensor output in torchic")
                    self.grad_output = list(new if isinstance(new, (tuple, list)) else (new,))
            if not self.in_pending:       # no input needs a gradient: the hooks run now
                self._run_full(replace=False)
            return self.grad_output[slot]
        self.grad_input[slot] = grad
        self.in_pending.discard(slot)
        if not self.in_pending:
            self._run_full(replace=True)
        return self.grad_input[slot]

    def _run_full(self, replace):
        needing = sum(1 for g in self.grad_input if g is not None)
        for hook in list(self.hooks.backward.values()):
            new = hook(self.module, tuple(self.grad_input), tuple(self.grad_output))
            if new is not None:
                if not replace or needing > 1:
                    raise RuntimeError("a full backward hook may replace grad_input only of a "
                                       "module with one input that needs a gradient in "
                                       "torchic")
                self.grad_input = list(new if isinstance(new, (tuple, list)) else (new,))


def _wants_grad(x):
    return isinstance(x, Tensor) and x.requires_grad


def call_with_hooks(module, args, kwargs):
    """Module.__call__ once hooks are registered: pre-hooks, the forward (inputs and outputs
    through backward-hook nodes where backward hooks exist), forward hooks."""
    h = module.__dict__["_hooks"]
    for hid, hook in list(h.forward_pre.items()):
        if h.forward_pre_kwargs.get(hid):
            new = hook(module, args, kwargs)
            if new is not None:
                if not (isinstance(new, tuple) and len(new) == 2):
                    raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {new}.")
                args, kwargs = new
        else:
            new = hook(module, args)
            if new is not None:
                args = new if isinstance(new, tuple) else (new,)
    state = None
    if h.backward or h.backward_pre:
        state = _BackwardState(module, h, len(args))
        wrapped = []
        for k, a in enumerate(args):
            if _wants_grad(a):
                state.in_pending.add(k)
                a = _Slot.apply(a, state=state, side="in", slot=k)
            wrapped.append(a)
        args = tuple(wrapped)
    try:
        out = module.forward(*args, **kwargs)
    except Exception:
        for hid, hook in list(h.forward.items()):
            if h.forward_always.get(hid):
                try:
                    if h.forward_kwargs.get(hid):
                        hook(module, args, kwargs, None)
                    else:
                        hook(module, args, None)
                except Exception:
                    pass
        raise
    for hid, hook in list(h.forward.items()):
        new = hook(module, args, kwargs, out) if h.forward_kwargs.get(hid) \
            else hook(module, args, out)
        if new is not None:
            out = new
    if state is not None:
        single = isinstance(out, Tensor)
        outs = [out] if single else list(out) if isinstance(out, (tuple, list)) else []
        state.grad_output = [None] * len(outs)
        for k, o in enumerate(outs):
            if _wants_grad(o):
                state.out_pending.add(k)
                outs[k] = _Slot.apply(o, state=state, side="out", slot=k)
        out = outs[0] if single else type(out)(outs) if outs else out
    return out
