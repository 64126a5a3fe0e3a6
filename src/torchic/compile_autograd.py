"""torchic.compile's guards and its autograd node (see compile.py's module docstring).

Guard: what a recording depends on that Python may change between calls, checked before
each replay (a failed check drops the program; the call runs eagerly and the next one
records again):
- the closure cells and the globals fn names that hold a tensor or a module (directly or
  in a list or tuple) still hold the same object (`W = new_tensor`, `model = Net()`), and
  those tensors and the modules' parameters and buffers still do or do not require grad
  (a frozen layer);
- each module reachable from fn (fn itself, a bound method's object, those cells and
  globals, and their submodules) has the same parameters, buffers and submodules (by
  identity) and the same train / eval mode (`m.weight = nn.Parameter(...)`, `m.eval()`);
- each Storage the program holds that something else held when it was recorded still has
  a holder other than the programs (a reference count, no scan): a tensor the program reads
  or writes that the user dropped or replaced elsewhere (`p.grad = None` outside the
  function, `obj.w = new` on any object) is no longer the program's to update.
A tensor replaced where the guard does not look while another object (an optimizer) still
holds the old one goes unseen: replace parameters through a module.

CompiledBackward / CompiledOutput: the nodes of a replayed call whose outputs have a graph
(compile records their backward as programs; the hub node replays one).
"""

import gc
import sys
import weakref

from .autograd import Primitive
from .functions.common import constant
from .tensor import Tensor


def _is_module(obj):
    """nn.Module without importing nn (compile sits below it): its three registries."""
    d = getattr(obj, "__dict__", None)
    return isinstance(d, dict) and all(isinstance(d.get(k), dict)
                                       for k in ("_parameters", "_buffers", "_modules"))


MAX_ITEMS = 256      # a longer list in a cell or global (a data set) is not looked into


def _named_objects(fn):
    """(where, object) for the tensors and modules in the cells and globals fn's code
    names, and in the lists and tuples there (makemore's `params`): ('cell', cell),
    ('global', dict, name) and ('item', sequence, index) entries."""
    code = getattr(fn, "__code__", None)
    places = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            places.append((("cell", cell), cell.cell_contents))
        except ValueError:       # an empty cell
            continue
    scope = getattr(fn, "__globals__", None)
    if code is not None and scope is not None:
        places += [(("global", scope, name), scope[name]) for name in code.co_names
                   if name in scope]
    found = []
    for where, obj in places:
        if isinstance(obj, (list, tuple)) and len(obj) <= MAX_ITEMS:
            found += [(("item", obj, i), x) for i, x in enumerate(obj)
                      if isinstance(x, Tensor) or _is_module(x)]
        elif isinstance(obj, Tensor) or _is_module(obj):
            found.append((where, obj))
    return found


def _now(where):
    """What is at `where` (a _named_objects place) now, or None."""
    if where[0] == "cell":
        try:
            return where[1].cell_contents
        except ValueError:
            return None
    if where[0] == "global":
        return where[1].get(where[2])
    return where[1][where[2]] if where[2] < len(where[1]) else None


class Guard:
    """What one recording of fn depends on (see the module docstring)."""

    def __init__(self, fn, storages, own):
        """storages: a list of the Storages the programs hold; own: ids of the objects
        that are the programs' own (their lists and tensors), not holders that count."""
        self.names = _named_objects(fn)
        roots = [obj for _, obj in self.names if _is_module(obj)]
        roots += [m for m in (fn, getattr(fn, "__self__", None)) if _is_module(m)]
        self.registries, self.modes, seen = [], [], set()
        tensors = [obj for _, obj in self.names if isinstance(obj, Tensor)]
        while roots:
            m = roots.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            d = m.__dict__
            for key in ("_parameters", "_buffers", "_modules"):
                # (the values kept, so their ids stay theirs; compared as ids: one C loop)
                values = tuple(d[key].values())
                self.registries.append((d[key], values, tuple(map(id, values))))
            self.modes.append((m, getattr(m, "training", None)))
            roots.extend(c for c in d["_modules"].values() if c is not None)
            tensors += [t for key in ("_parameters", "_buffers") for t in d[key].values()
                        if isinstance(t, Tensor)]
        # which of them record a graph (p.requires_grad_(False): a frozen layer)
        self.flags = [(t, t.requires_grad) for t in {id(t): t for t in tensors}.values()]
        # Storages something else held at the recording, each with the reference count
        # that means nothing else holds it now: its references from `own` (one scan of
        # the heap's objects for all of them) + this list's tuple, holds()'s variable and
        # its call's argument
        ids = {id(s): 0 for s in storages}
        others = dict(ids)     # (tensors: what holds a Storage outside torchic's lists)
        for r in gc.get_referrers(*storages) if storages else ():
            if id(r) in own:
                for x in gc.get_referents(r):
                    if id(x) in ids:
                        ids[id(x)] += 1
            elif isinstance(r, Tensor) and id(r._storage) in others:
                others[id(r._storage)] += 1
        self.storages = [(s, ids[id(s)] + 3) for s in storages if others[id(s)]]

    def holds(self):
        """Whether the recording still describes what fn would do now."""
        for where, obj in self.names:
            if _now(where) is not obj:
                return False
        for t, flag in self.flags:
            if t.requires_grad != flag:
                return False
        for registry, _, ids in self.registries:
            if tuple(map(id, registry.values())) != ids:
                return False
        for m, mode in self.modes:
            if getattr(m, "training", None) is not mode:
                return False
        for s, alone in self.storages:
            if sys.getrefcount(s) <= alone:
                return False
        return True


def _node(cls, edges):
    node = cls()
    node.needs_grad = (True,) * len(edges)
    node.edges = tuple(edges)
    node._saved, node.freed, node.retained = (), False, None
    return node


class CompiledBackward(Primitive):
    """The backward of one replayed call of a compiled function (the call's hub node).
    Each output that has a graph gets a CompiledOutput node whose edge leads here; the
    engine runs this node once, after them, and its backward replays the recorded
    backward program of the outputs that got a gradient, on this call's activations
    (the forward program's blocks), handing each leaf its gradients, one per edge; the
    engine accumulates them into .grad as any node's (hooks included)."""

    @classmethod
    def attach(cls, graph, outs, stamp, edges):
        """Make the outputs of graph.live among outs (one call's fresh outputs) the roots
        of a graph whose hub's edges lead to the leaves (each once per gradient it gets)
        and the arguments' nodes."""
        hub = _node(cls, edges)
        hub.graph, hub.stamp, hub.grads = graph, stamp, {}
        hub.versions = [s.version for s in graph.saved_outside]   # (no Storage held)
        hub.out_versions = [(outs[i]._storage, outs[i]._storage.version)
                            for i in graph.outputs_read]
        for k, i in enumerate(graph.live):
            node = _node(CompiledOutput, (hub,))
            node.hub, node.k = hub, k
            outs[i].requires_grad = True
            outs[i].grad_fn = node
        graph.last = weakref.ref(hub)

    def backward(self, grad):
        graph, grads, self.grads = self.graph, self.grads, {}
        if graph.stamp != self.stamp or graph.released:
            raise RuntimeError("torchic.compile: this output's activations were overwritten "
                               "by a later call of the compiled function (or it was "
                               "released); call backward before calling it again")
        for s, v in list(zip(graph.saved_outside, self.versions)) + self.out_versions:
            if s.version != v:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation in "
                    f"{self.name} has been modified by an inplace operation: it is at "
                    f"version {s.version}; expected version {v}")
        for p in graph.lazy:
            edge = self.edges[p]
            if isinstance(edge, Tensor) and edge._grad is not None:
                raise RuntimeError(
                    "torchic.compile: a tensor whose slices get gradients inside the compiled "
                    "function got a .grad between the call and its backward: eager mode "
                    "writes them into it one by one, the recorded backward has their sum; "
                    "zero the grads before the call")
        subset = tuple(sorted(grads))
        first, program = graph.segments[subset]
        out = [None] * len(self.edges)
        out[first:first + len(program.outputs)] = program.replay([grads[k] for k in subset])
        return tuple(out)


class CompiledOutput(Primitive):
    """The grad_fn of one output (that has a graph) of a replayed call: gives its
    gradient to the call's hub node (CompiledBackward), which runs after every output's."""

    def backward(self, grad):
        self.hub.grads[self.k] = grad
        return constant(0.0)      # (the hub's own gradient means nothing)
