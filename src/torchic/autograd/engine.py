"""Reverse-mode autograd over a dynamic graph: the engine.

Each differentiable op is a ``Primitive`` subclass (torchic/functions/) with ``forward``
and ``backward`` side by side. ``Primitive.apply`` runs forward and, when gradients are
wanted, records a node: the Primitive instance itself, holding ``edges`` to where the
gradient of each input goes (the input's own node, or the leaf tensor that accumulates
``.grad``) and the tensors it saved. ``run`` orders the nodes topologically with an explicit
stack (no recursion, so 10,000-op chains are fine), runs each node's backward once with the
summed gradient of its output, and frees the graph unless ``retain_graph=True``.
(User-defined ops, PyTorch's ``torch.autograd.Function``, are recorded as Primitive nodes
too: autograd/function.py.)

Where one tensor gets several gradients, they are summed into one buffer the engine owns
(`_GradSum`); a backward may return a `LazyGrad` (IndexView's: a slice's gradient) that
is written straight into that buffer, never materialized at the input's full shape.

Backward formulas are written with ordinary tensor ops. Without ``create_graph`` the engine
runs them under no_grad, and formulas may take unrecorded shortcuts (raw kernels, lazy
gradients, sums in place). With ``create_graph=True`` grad mode stays on: the formulas are
recorded like any forward code (second derivatives, gradient penalties), every shortcut
gives way to its recorded equivalent, and ``create_graph_on()`` is the one place a
formula asks which of the two it is in.
"""

import os
import sys
import threading
import traceback
from typing import Any

from .. import raw
from ..creation import ones, tensor as _tensor_from_data
from ..grad_mode import _grad_enabled, _GradMode
from ..tensor import Tensor
from .grad_sum import LazyGrad, _GradSum, _Slot
from .hooks import (RemovableHandle, _anomaly, _check_nan, _grad_hooks, _node_hooked,
                    _post_hooks, is_anomaly_check_nan_enabled, run_grad_hooks)


def create_graph_on() -> bool:
    """Inside a backward formula: whether the backward pass is being recorded
    (create_graph=True), so the formula must use recorded ops only. The engine runs
    backward with grad mode on exactly then; formulas ask this, never grad mode itself."""
    return _grad_enabled.get()


class Primitive:
    """Base class of torchic's differentiable ops. Subclasses define forward and backward.

    forward(self, *args, **params) -> Tensor computes with raw (unrecorded) ops.
    backward(self, grad) -> a tuple with one gradient (or None) per forward arg.
    Call ``self.save(*tensors)`` in forward to keep tensors for backward; they
    come back from ``self.saved`` (checked against in-place modification; under
    create_graph, a saved output comes back connected to this node).
    """

    __slots__ = ("edges", "needs_grad", "_saved", "_versions", "freed", "retained",
                 "__dict__")
    _saved_out = ()       # indices in _saved of the output (saved detached: no cycle)
    _trace = None         # the forward stack, under anomaly detection
    _tensor_hooks = None  # register_hook's hooks of the output (a list)
    _node_hooks = None    # Node.register_hook's: fn(grad_inputs, grad_outputs), after backward
    n_outputs = 1

    @classmethod
    def apply(cls, *args, **params):
        node = cls()
        if _grad_enabled.get():
            for a in args:
                if getattr(a, "requires_grad", False):
                    break
            else:
                a = None
        else:
            a = None
        if a is None:
            # nothing to record: inputs don't require grad, so nothing inside will either
            node.needs_grad = ()
            return node.forward(*args, **params)
        needs = node.needs_grad = tuple([getattr(x, "requires_grad", False) for x in args])
        node._saved = ()
        token = _grad_enabled.set(False)
        try:
            out = node.forward(*args, **params)
        finally:
            _grad_enabled.reset(token)
        node.edges = tuple([(a.grad_fn if a.grad_fn is not None else a) if need else None
                            for a, need in zip(args, needs)])
        node.freed = False
        node.retained = None
        saved = node._saved
        if saved and id(out) in map(id, saved):     # (`in` on tensors would call ==)
            # save the output as a detached alias (same storage and version counter):
            # out -> node -> out would be a reference cycle, freed only by the cyclic GC
            node._saved_out = tuple(i for i, t in enumerate(saved) if t is out)
            node._saved = tuple(t.detach() if t is out else t for t in saved)
        if _anomaly.get():
            node._trace = traceback.format_stack()[:-1]
        out.requires_grad = True
        out.grad_fn = node
        return out

    def save(self, *tensors):
        if self.needs_grad:
            self._saved = tensors
            self._versions = tuple([None if t is None else t._storage.version for t in tensors])

    @property
    def saved(self):
        if self.freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access "
                "saved tensors after they have already been freed). Saved tensors are freed "
                "after backward; call .backward(retain_graph=True) the first time if you "
                "need to backward through the graph again.")
        for t, v in zip(self._saved, self._versions):
            if t is not None and t._storage.version != v:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation in "
                    f"{type(self).__name__} has been modified by an inplace operation: "
                    f"a tensor of shape {list(t.shape)} is at version {t._storage.version}; "
                    f"expected version {v}")
        if self._saved_out and _grad_enabled.get():
            return tuple(self._connected(t) if i in self._saved_out else t
                         for i, t in enumerate(self._saved))
        return self._saved

    def _connected(self, t):
        """The saved (detached) output as this node's output again, for create_graph."""
        t = t.detach()
        t.requires_grad, t.grad_fn = True, self
        return t

    def forward(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError

    def backward(self, *grad: Any, **kwargs: Any) -> Any:     # (a subclass: backward(self, g))
        raise NotImplementedError

    def name(self) -> str:
        """The node's name, as PyTorch spells them (``MulBackward0``)."""
        return type(self).__name__ + "Backward0"

    @property
    def next_functions(self):
        """((node, 0), ...) per input: the input's grad_fn, an AccumulateGrad for a leaf
        that requires grad, None for an input that gets no gradient (PyTorch's)."""
        return tuple((e if isinstance(e, Primitive) else
                      AccumulateGrad(e) if e is not None else None, 0)
                     for e in getattr(self, "edges", ()))

    def register_prehook(self, hook: Any) -> RemovableHandle:
        """Call `hook(grad_outputs)` (a tuple) before this node's backward; a returned tuple
        replaces the gradients (PyTorch's Node.register_prehook)."""
        def on_grad(grad):
            out = hook((grad,))
            return None if out is None else out[0]
        on_grad.hook = hook
        return self._add_hook("_tensor_hooks", on_grad)

    def register_hook(self, hook: Any) -> RemovableHandle:
        """Call `hook(grad_inputs, grad_outputs)` (tuples) after this node's backward; a
        returned tuple replaces grad_inputs (PyTorch's Node.register_hook)."""
        return self._add_hook("_node_hooks", hook)

    def _add_hook(self, name, hook):
        if getattr(self, name) is None:
            setattr(self, name, [])
        getattr(self, name).append(hook)
        return RemovableHandle(self.__dict__, name, hook)

    @property
    def metadata(self) -> dict:
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def __repr__(self):
        return f"<{self.name()}>"


# The internal base's old name, for code written in this module before the rename (the
# package's public `Function` is PyTorch's, function.py; a subclass of it with an instance
# forward is a Primitive all the same)
Function = Primitive


class AccumulateGrad:
    """The node a leaf's gradient goes to (`next_functions` shows it): `.variable`."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __eq__(self, other):
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self):
        return id(self.variable)

    def __repr__(self):
        return "<AccumulateGrad>"


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
            if isinstance(edge, Primitive) and id(edge) not in visited:
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
        if _grad_enabled.get():       # create_graph: .grad keeps the gradient's graph
            leaf._grad = grad.clone() if leaf._grad is None else leaf._grad + grad
            return
        if leaf._grad is None:
            if private and grad.is_contiguous() and sys.getrefcount(grad._storage) == 2:
                leaf._grad = grad.detach()     # 2: the grad tensor's own reference + the call's
            else:
                leaf._grad = raw.copy_into(raw.new_tensor(leaf.shape, leaf._dtype), grad)
        else:
            leaf._grad = raw.binary("add", leaf._grad, grad)


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


def _leaf_gets(leaf, s, found):
    """A leaf's whole gradient of this pass (the _GradSum s): through its hooks, then into
    .grad, or into `found` (autograd.grad)."""
    if found is None and id(leaf) not in _grad_hooks:
        _accumulate_sum(leaf, s)
        return
    g, owned = s.total()
    g = run_grad_hooks(id(leaf), g)
    if found is not None:
        found[id(leaf)] = g
    else:
        _accumulate(leaf, g, private=owned)


def _remaining_leaf_edges(order, start):
    """{id(leaf): how many edges into it the nodes order[start:] have}."""
    counts = {}
    for node in order[start:]:
        for edge in node.edges:
            if edge is not None and not isinstance(edge, Primitive):
                counts[id(edge)] = counts.get(id(edge), 0) + 1
    return counts


def _leaf_edges_done(node, counts, pending, found):
    """Count `node`'s edges into leaves as done; a leaf whose last edge this was gets the
    gradients it holds in `pending`."""
    for edge in node.edges:
        key = id(edge)
        if key in counts:
            counts[key] -= 1
            if not counts[key]:
                del counts[key]
                if key in pending:
                    _leaf_gets(edge, pending.pop(key), found)


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


class _Roots(Primitive):
    """The root of a pass over several tensors: hands each its gradient."""

    def backward(self, grad):
        return self.grads


def _root_gradient(k, tensor, gradient):
    if not tensor.requires_grad:
        raise RuntimeError(f"element {k} of tensors does not require grad and does not have "
                           f"a grad_fn: call .requires_grad_() on a leaf before building the "
                           f"graph")
    if gradient is None:
        if tensor.numel() != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; "
                               f"backward() on a tensor of shape {list(tensor.shape)} needs "
                               f"gradient= of the same shape")
        return ones(tensor.shape, dtype=tensor.dtype)
    if not isinstance(gradient, Tensor):
        gradient = _tensor_from_data(gradient)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of "
                           f"{list(gradient.shape)} and output[{k}] has a shape of "
                           f"{list(tensor.shape)}; gradient must have the tensor's shape")
    return gradient


def _reaching(order, targets):
    """The ids of the nodes whose backward leads to a target (autograd.grad / inputs=)."""
    reach = set()
    for node in reversed(order):
        for e in node.edges:
            if e is not None and (id(e) in targets or id(e) in reach):
                reach.add(id(node))
                break
    return reach


def run_backward(tensor, gradient=None, retain_graph=False, create_graph=False, inputs=None):
    """Tensor.backward: accumulate d tensor / d leaf into each leaf's .grad."""
    run([tensor], [gradient], retain_graph, create_graph, inputs)


def run(tensors, gradients, retain_graph=None, create_graph=False, inputs=None,
        capture=False):
    """The backward pass from `tensors` (seeded with `gradients`, None: ones for a
    one-element tensor). Accumulates into the leaves' .grad (only those in `inputs` when it
    is given), or, with `capture` (autograd.grad), leaves .grad alone and returns the
    gradient of each of `inputs` (None where none reached it). `create_graph` records the
    pass (retain_graph then defaults to True)."""
    if retain_graph is None:
        retain_graph = create_graph
    seeds = [_root_gradient(k, t, g) for k, (t, g) in enumerate(zip(tensors, gradients))]
    targets = found = None
    if inputs is not None:
        targets = {}
        for x in inputs:
            if not x.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets[id(x.grad_fn if x.grad_fn is not None else x)] = x
        found = {} if capture else None
    if len(tensors) == 1 and tensors[0].grad_fn is not None:
        root, gradient = tensors[0].grad_fn, seeds[0]
    else:
        root = _Roots()
        root.needs_grad, root.freed, root.retained, root._saved = (True,) * len(seeds), False, \
            None, ()
        root.edges = tuple(t.grad_fn if t.grad_fn is not None else t for t in tensors)
        root.grads, gradient = tuple(seeds), seeds[0]
    with _GradMode(create_graph):
        order = _topological_order(root)
        grads = {id(root): gradient}
        reach = _reaching(order, targets) if targets is not None else None
        hooked = _hooked_edge_counts(order) if _post_hooks and not capture else None
        fed = set()     # the hooked leaves that got a gradient in this pass
        pending = counts = None     # leaves' summed gradients, held until their last edge
        anomaly = is_anomaly_check_nan_enabled()
        for i, node in enumerate(order):
            grad = grads.pop(id(node), None)
            if grad is not None and node.freed:
                raise RuntimeError(
                    "Trying to backward through the graph a second time; call "
                    ".backward(retain_graph=True) the first time to keep the graph")
            if grad is not None:
                if type(grad) is _GradSum:
                    grad = grad.total()[0]
                elif type(grad) is list:
                    grad = [x.total()[0] if type(x) is _GradSum else x for x in grad]
                if node._tensor_hooks:
                    for hook in list(node._tensor_hooks):
                        out = hook(grad)
                        grad = grad if out is None else out
                if node.retained is not None:
                    t = node.retained()
                    if t is not None:
                        _accumulate(t, grad)
                if targets is not None and id(node) in targets:
                    if found is not None:
                        found[id(node)] = grad
                    elif node.retained is None:
                        _accumulate(targets[id(node)], grad)
                if reach is not None and id(node) not in reach:
                    grad = None
            if grad is None:
                if counts is not None:
                    _leaf_edges_done(node, counts, pending, found)
                if hooked:
                    _edges_done(node, hooked, fed)
                continue
            input_grads = node.backward(grad)
            if not isinstance(input_grads, tuple):
                input_grads = (input_grads,)
            if node._node_hooks:
                input_grads = _node_hooked(node, input_grads, grad)
            if anomaly:
                _check_nan(node, input_grads)
            for edge, g in zip(node.edges, input_grads):
                if edge is None or g is None:
                    continue
                if isinstance(edge, Primitive):
                    prev = grads.get(id(edge))
                    if type(g) is _Slot:
                        if prev is None:
                            prev = grads[id(edge)] = [None] * edge.n_outputs
                        prev[g.i] = g.g if prev[g.i] is None else prev[g.i] + g.g
                        continue
                    if prev is None and not isinstance(g, LazyGrad):
                        grads[id(edge)] = g
                        continue
                    if type(prev) is not _GradSum:
                        prev = grads[id(edge)] = _GradSum(prev)
                    prev.add(g)
                    continue
                if targets is not None and id(edge) not in targets:
                    continue
                if isinstance(g, LazyGrad) or found is not None or id(edge) in _grad_hooks:
                    if counts is None:
                        pending, counts = {}, _remaining_leaf_edges(order, i)
                    pending.setdefault(id(edge), _GradSum()).add(g)
                else:
                    # a gradient made for this input alone may become .grad without a copy
                    private = g is not grad and list(map(id, input_grads)).count(id(g)) == 1
                    _accumulate(edge, g, private)
                fed.add(id(edge))
            if counts is not None:   # before the hooks: they see each leaf's whole gradient
                _leaf_edges_done(node, counts, pending, found)
            if hooked:
                _edges_done(node, hooked, fed)
            if not retain_graph:
                node.freed = True
                node._saved = ()
    if found is not None:
        return [found.get(id(x.grad_fn if x.grad_fn is not None else x)) for x in inputs]
    return None


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


