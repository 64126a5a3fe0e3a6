"""Reverse-mode autograd over a dynamic graph.

Each differentiable op is a ``Function`` subclass (torchic/functions/) with
``forward`` and ``backward`` side by side. ``Function.apply`` runs forward
and, when gradients are wanted, records a node: the Function instance
itself, holding ``edges`` to where the gradient of each input goes (the
input's own node, or the leaf tensor that accumulates ``.grad``) and the
tensors it saved. ``backward`` orders the nodes topologically with an explicit
stack (no recursion, so 10,000-op chains are fine), runs each node's
backward once with the summed gradient of its output, and frees the graph
unless ``retain_graph=True``.

Where one tensor gets several gradients, they are summed into one buffer the engine owns
(`_GradSum`); a backward may return a `LazyGrad` (IndexView's: a slice's gradient) that
is written straight into that buffer, never materialized at the input's full shape.

Backward formulas are written with ordinary tensor ops under ``no_grad``:
they read like the maths and run on whatever backend is current.
"""

import os
import sys
import threading
import weakref
from typing import Any, Callable

from . import raw
from .creation import ones, tensor as _tensor_from_data
from .grad_mode import _grad_enabled, _GradMode
# torchic.autograd's grad-mode names, as PyTorch's torch.autograd has them (grad_mode.py)
from .grad_mode import enable_grad as enable_grad, inference_mode as inference_mode
from .grad_mode import is_grad_enabled as is_grad_enabled, no_grad as no_grad
from .grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from .shape import numel
from .tensor import Tensor


class Function:
    """Base class of differentiable ops. Subclasses define forward and backward.

    forward(self, *args, **params) -> Tensor computes with raw (unrecorded) ops.
    backward(self, grad) -> a tuple with one gradient (or None) per forward arg.
    Call ``self.save(*tensors)`` in forward to keep tensors for backward; they
    come back from ``self.saved`` (checked against in-place modification).
    """

    __slots__ = ("edges", "needs_grad", "_saved", "_versions", "freed", "retained",
                 "__dict__")

    @classmethod
    def apply(cls, *args, **params):
        node = cls()
        needs = None
        if _grad_enabled.get():
            for i, a in enumerate(args):
                if getattr(a, "requires_grad", False):
                    needs = tuple(getattr(x, "requires_grad", False) for x in args)
                    break
        if needs is None:
            # nothing to record: inputs don't require grad, so nothing inside will either
            node.needs_grad = ()
            return node.forward(*args, **params)
        node.needs_grad = needs
        node._saved = ()
        token = _grad_enabled.set(False)
        try:
            out = node.forward(*args, **params)
        finally:
            _grad_enabled.reset(token)
        node.edges = tuple(
            (a.grad_fn if a.grad_fn is not None else a) if need else None
            for a, need in zip(args, needs))
        node.freed = False
        node.retained = None
        saved = node._saved
        if saved and any(t is out for t in saved):
            # save the output as a detached alias (same storage and version counter):
            # out -> node -> out would be a reference cycle, freed only by the cyclic GC
            node._saved = tuple(t.detach() if t is out else t for t in saved)
        out.requires_grad = True
        out.grad_fn = node
        return out

    def save(self, *tensors):
        if self.needs_grad:
            self._saved = tensors
            self._versions = tuple(t._storage.version for t in tensors)

    @property
    def saved(self):
        if self.freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access "
                "saved tensors after they have already been freed). Saved tensors are freed "
                "after backward; call .backward(retain_graph=True) the first time if you "
                "need to backward through the graph again.")
        for t, v in zip(self._saved, self._versions):
            if t._storage.version != v:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation in "
                    f"{type(self).__name__} has been modified by an inplace operation: "
                    f"a tensor of shape {list(t.shape)} is at version {t._storage.version}; "
                    f"expected version {v}")
        return self._saved

    def forward(self, *args, **params):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    @property
    def name(self):
        return type(self).__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name}>"


def _topological_order(root_node):
    """Nodes reachable from root, each before the nodes it feeds (iterative DFS)."""
    order, visited = [], set()
    stack = [(root_node, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for edge in node.edges:
            if isinstance(edge, Function) and id(edge) not in visited:
                stack.append((edge, False))
    order.reverse()
    return order


# leaf.grad += g is a read-modify-write: backward calls on several threads into one shared
# leaf would lose contributions without this lock (it is held only while the add is issued)
_accumulate_lock = threading.Lock()


def _reset_accumulate_lock():     # a forked child: a thread of the parent may have held it
    global _accumulate_lock
    _accumulate_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_accumulate_lock)


def _accumulate(leaf, grad, private=False):
    """leaf.grad += grad (shapes already match).

    The first gradient is stored as it is when `private` says nobody else can see it
    and its storage belongs to it alone (no view, no other leaf shares it); otherwise
    it is copied, because backward may hand one tensor to several inputs (add) or
    hand out views, and users update .grad in place.
    """
    with _accumulate_lock:
        if grad.shape != leaf.shape:
            grad = grad.reshape(leaf.shape)
        if leaf._grad is None:
            if private and grad.is_contiguous() and sys.getrefcount(grad._storage) == 2:
                leaf._grad = grad.detach()     # 2: the grad tensor's own reference + the call's
            else:
                leaf._grad = raw.copy_into(raw.new_tensor(leaf.shape, leaf._dtype), grad)
        else:
            leaf._grad = raw.binary("add", leaf._grad, grad)


class LazyGrad:
    """A gradient a backward returns unmaterialized (views.py's SliceGrad: g in a region of
    zeros of the input's shape). Only the engine sees one: `_GradSum` writes those of one
    tensor into one buffer; .grad, hooks and backward get ordinary tensors. A subclass has
    `shape` (the input's), `numel` (the elements it holds) and `write_all(buf, parts,
    fresh)`: add `parts` (of its class) into `buf`, a contiguous tensor (the gradients' dtype) of `shape`
    only the engine holds; `fresh`: buf is uninitialized, to become exactly their sum.
    """

    __slots__ = ()


class _GradSum:
    """The gradients one node (or, lazy ones, one leaf) gets in one backward pass.

    A tensor is added as it comes: the first is kept as it is (not ours: a backward may
    hand one tensor to several inputs), the sum of two is a new tensor the engine owns,
    later ones are added into that in place. Lazy gradients are kept until the sum is
    needed (or until they hold more elements than it), then written into one buffer: the
    owned sum, a copy of a sum not ours, or a fresh one.

    Writes in place go only into an owned buffer: allocated here, held by nobody else
    until `total` hands it on, so no saved tensor (version counter), view or user
    reference sees them. They are stream ops like any other (ordered after the ops that
    made their operands; torchic.compile records them as such).
    """

    __slots__ = ("base", "owned", "lazy", "held")

    def __init__(self, first=None):
        self.base, self.owned, self.lazy, self.held = first, False, [], 0

    def add(self, g):
        if isinstance(g, LazyGrad):
            self.lazy.append(g)
            self.held += g.numel
            if self.held > numel(g.shape):    # bound what is held to one sum's size
                self.total()
            return
        base = self.base
        if base is None:
            self.base = g
        elif (self.owned and g.shape == base.shape and g._dtype == base._dtype
              and g._storage is not base._storage):
            v = raw.view_of(base)      # exact aliasing of out and a: ops.py allows it
            base._storage.runtime.run("add", v, (v, raw.view_of(g)), None)
        else:
            self.base, self.owned = base + g, True

    def total(self):
        """The sum, lazy gradients written out: (tensor, owned by the engine)."""
        if self.lazy:
            base, shape = self.base, self.lazy[0].shape
            dtype = self.lazy[0].g._dtype if base is None else base._dtype
            if base is None:
                buf = raw.new_tensor(shape, dtype)
            elif (self.owned and base.shape == shape and base._offset == 0
                  and base.is_contiguous()):
                buf = base
            else:
                buf = raw.copy_into(raw.new_tensor(shape, dtype), base)
            fresh, kinds = base is None, {}
            for g in self.lazy:
                kinds.setdefault(type(g), []).append(g)
            for kind, parts in kinds.items():
                kind.write_all(buf, parts, fresh)
                fresh = False
            self.base, self.owned, self.lazy, self.held = buf, True, [], 0
        return self.base, self.owned


def _accumulate_sum(leaf, s):
    """leaf.grad += the _GradSum s (its lazy gradients). A leaf that has a .grad gets a
    new one, a copy of it with the gradients added in: the old tensor is left as it was."""
    with _accumulate_lock:
        old = leaf._grad
        if old is not None and s.base is None and old.shape == s.lazy[0].shape:
            s.base = old
            leaf._grad = s.total()[0]
            return
    _accumulate(leaf, s.total()[0], private=True)


def _remaining_leaf_edges(order, start):
    """{id(leaf): how many edges into it the nodes order[start:] have}."""
    counts = {}
    for node in order[start:]:
        for edge in node.edges:
            if edge is not None and not isinstance(edge, Function):
                counts[id(edge)] = counts.get(id(edge), 0) + 1
    return counts


def _leaf_edges_done(node, counts, pending):
    """Count `node`'s edges into leaves as done; a leaf whose last edge this was gets the
    lazy gradients it holds in `pending`."""
    for edge in node.edges:
        key = id(edge)
        if key in counts:
            counts[key] -= 1
            if not counts[key]:
                del counts[key]
                if key in pending:
                    _accumulate_sum(edge, pending.pop(key))


# Post-accumulate-grad hooks (PyTorch's Tensor.register_post_accumulate_grad_hook; DDP's
# "this gradient is ready"): {id(leaf): [hook, ...]}. A leaf may get several gradients in one
# backward (it feeds several nodes), so backward counts the edges into each hooked leaf and
# calls its hooks once, when the last of them has been accumulated.
_post_hooks = {}


class RemovableHandle:
    """What `register_post_accumulate_grad_hook` returns: `remove()` unregisters the hook."""

    def __init__(self, key, hook):
        self._key, self._hook = key, hook

    def remove(self) -> None:
        """Unregister the hook (no-op when it is already gone)."""
        hooks = _post_hooks.get(self._key)
        if hooks is not None and self._hook in hooks:
            hooks.remove(self._hook)
            if not hooks:
                del _post_hooks[self._key]


def register_post_accumulate_grad_hook(leaf: Tensor, hook: Callable[[Tensor], None]
                                       ) -> RemovableHandle:
    """Call `hook(leaf)` in every `backward()` once `leaf.grad` holds all of that pass's
    gradient (PyTorch's `Tensor.register_post_accumulate_grad_hook`). Leaves only."""
    if leaf.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    key = id(leaf)
    if key not in _post_hooks:
        _post_hooks[key] = []
        weakref.finalize(leaf, _post_hooks.pop, key, None)
    _post_hooks[key].append(hook)
    return RemovableHandle(key, hook)


def _hooked_edge_counts(order):
    counts = {}
    for node in order:
        for edge in node.edges:
            if id(edge) in _post_hooks:
                counts[id(edge)] = counts.get(id(edge), 0) + 1
    return counts


def _edges_done(node, counts, fed):
    """Count `node`'s edges into hooked leaves as done; run the hooks of completed leaves."""
    for edge in node.edges:
        key = id(edge)
        if key in counts:
            counts[key] -= 1
            if counts[key] == 0 and key in fed:
                for hook in list(_post_hooks.get(key, ())):
                    hook(edge)


def zero_grads(tensors, set_to_none=True):
    """Module.zero_grad and Optimizer.zero_grad: drop every tensor's .grad, or zero it in
    place (set_to_none=False, PyTorch's older default)."""
    for t in tensors:
        if t.grad is None:
            continue
        if set_to_none:
            t.grad = None
        else:
            with _GradMode(False):
                t.grad.zero_()


def run_backward(tensor, gradient=None, retain_graph=False):
    if not tensor.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn: call .requires_grad_() on a leaf before building the graph")
    if gradient is None:
        if tensor.numel() != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; "
                               f"backward() on a tensor of shape {list(tensor.shape)} needs "
                               f"gradient= of the same shape")
        gradient = ones(tensor.shape, dtype=tensor.dtype)
    else:
        if not isinstance(gradient, Tensor):
            gradient = _tensor_from_data(gradient)
        if gradient.shape != tensor.shape:
            raise RuntimeError(f"gradient has shape {list(gradient.shape)} but the tensor has "
                               f"shape {list(tensor.shape)}")
    if tensor.grad_fn is None:
        _accumulate(tensor, gradient)
        for hook in list(_post_hooks.get(id(tensor), ())):
            hook(tensor)
        return
    with _GradMode(False):
        root = tensor.grad_fn
        order = _topological_order(root)
        grads = {id(root): gradient}
        hooked = _hooked_edge_counts(order) if _post_hooks else None
        fed = set()     # the hooked leaves that got a gradient in this pass
        pending = counts = None     # leaves' lazy gradients, held until their last edge
        for i, node in enumerate(order):
            grad = grads.pop(id(node), None)
            if grad is None:
                if counts is not None:
                    _leaf_edges_done(node, counts, pending)
                if hooked:
                    _edges_done(node, hooked, fed)
                continue
            if node.freed:
                raise RuntimeError(
                    "Trying to backward through the graph a second time; call "
                    ".backward(retain_graph=True) the first time to keep the graph")
            if type(grad) is _GradSum:
                grad = grad.total()[0]
            if node.retained is not None:
                t = node.retained()
                if t is not None:
                    _accumulate(t, grad)
            input_grads = node.backward(grad)
            if not isinstance(input_grads, tuple):
                input_grads = (input_grads,)
            for edge, g in zip(node.edges, input_grads):
                if edge is None or g is None:
                    continue
                if isinstance(edge, Function):
                    prev = grads.get(id(edge))
                    if prev is None and not isinstance(g, LazyGrad):
                        grads[id(edge)] = g
                        continue
                    if type(prev) is not _GradSum:
                        prev = grads[id(edge)] = _GradSum(prev)
                    prev.add(g)
                elif isinstance(g, LazyGrad):
                    if counts is None:
                        pending, counts = {}, _remaining_leaf_edges(order, i)
                    pending.setdefault(id(edge), _GradSum()).add(g)
                    fed.add(id(edge))
                else:
                    # a gradient made for this input alone may become .grad without a copy
                    private = g is not grad and sum(x is g for x in input_grads) == 1
                    _accumulate(edge, g, private)
                    fed.add(id(edge))
            if counts is not None:   # before the hooks: they see each leaf's whole gradient
                _leaf_edges_done(node, counts, pending)
            if hooked:
                _edges_done(node, hooked, fed)
            if not retain_graph:
                node.freed = True
                node._saved = ()


class _VariableType(type):
    """isinstance(t, Variable) is true of every tensor, as PyTorch's."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """PyTorch's legacy `torch.autograd.Variable(data, requires_grad=False)`: the tensor
    itself (a detached alias of `data`, made a leaf that records gradients when
    requires_grad is true). Variables and Tensors are one thing since PyTorch 0.4."""

    def __new__(cls, data: Any = None, requires_grad: bool = False,
                volatile: bool = False) -> Any:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(True) if requires_grad else out
