"""torchic.compile: run a step once while recording it, then replay the recording.

A step (forward, backward, optimizer update) issues the same ops on the same shapes call
after call; only the data changes. `compile(fn)` records, at the runtime boundary (the
Runtime's alloc / free / run / write / read), what one call of fn issues, and replays
that op list on later calls with the same signature, with no Python of fn in the loop
(recording.py: what a Program holds, how backends replay it).

Calls with one signature (tensor arguments' shapes and dtypes, other arguments' values,
grad mode, the runtime): the 1st runs fn eagerly (a warm-up: optimizers create their
state and parameters their .grad on the first step, as tinygrad's TinyJit does), the 2nd
runs it eagerly and records it into a Program, later ones replay the Program. Every call
returns fresh tensors for fn's returned ones (a tensor, a tuple / list of them, or None).

Guards (compile_autograd.Guard): before each replay, a check that what the recording
depends on is unchanged: the tensors and modules fn names (closure cells, globals, lists
there), the modules' parameters, buffers, submodules and train / eval mode, which of
those tensors require grad, and that each tensor of
outside state the program updates still has a holder besides the program (a replaced or
dropped parameter or .grad). A failed check drops the program: that call runs eagerly
(a warm-up again), the next records anew; a signature whose recording fails its check
twice before replaying once (fn drops the state every call: `p.grad = None` outside it)
runs eagerly from then on.

Autograd: when outputs of the recorded call still have a graph (a compiled module, or
any function returning what backward() has not consumed: nanoGPT's `model =
torch.compile(model)` and its (logits, loss)), their backward is recorded too: one
program per non-empty subset of those outputs (the outputs a backward() pass may reach;
at most MAX_LIVE outputs, else the signature runs eagerly), from a gradient placeholder
per output to the gradients the leaves get, one per edge into a leaf in the engine's
order (_record_backward). Every call then returns those outputs as roots of CompiledOutput
nodes feeding one CompiledBackward hub, which the engine runs once, after them: it
replays the program of the outputs that got a gradient on the forward program's
activations (kept between calls) and hands each leaf its gradients; the engine
accumulates them into .grad as it would eager mode's, bit for bit. A tensor argument
that requires grad (part of the signature) is a leaf of the recorded graph: the hub's
edge for its gradient leads to the caller's tensor (its node, or the leaf). A call made
while an earlier call's outputs still await their backward runs eagerly (a replay would
overwrite their activations), and so does one made while a leaf that gets gradients
through slices of it has a .grad (eager mode writes them into a copy of it; the program
hands over their sum). A tensor's in-place change between forward and backward
raises as in eager mode, for the outside tensors the graph saved and for the outputs.

A call whose tensor arguments share memory (f(x, x)) runs fn eagerly: a program keeps
each argument apart. A compiled function called inside another's recording runs fn: its
ops become part of that recording. A module's other attributes (`.train()`,
`.parameters()`) are reached through the compiled object.
"""

import functools
import itertools
import weakref
from collections.abc import Callable
from typing import Any

from . import autograd, dispatcher, raw
from .autograd import Primitive, is_grad_enabled
from .compile_autograd import CompiledBackward, Guard
from .functions.common import constant
from .functions.views import IndexView
from .recording import (CompileError, Program, _fresh_copy, _Recorder, host_values,  # noqa: F401
                        memory_of_programs, recording_active)
from .tensor import Tensor

MAX_PROGRAMS = 8        # signatures kept per compiled function (oldest dropped first)


def _flatten(result):
    """(tensors, rebuild): fn's return value as its tensors and how to put it back."""
    if isinstance(result, Tensor):
        return [result], lambda ts: ts[0]
    if isinstance(result, (tuple, list)) and all(isinstance(r, Tensor) for r in result):
        return list(result), lambda ts, kind=type(result): kind(ts)
    if result is None:
        return [], lambda ts: None
    raise CompileError(f"torchic.compile: the function must return a tensor, a tuple / list "
                       f"of tensors or None, got {type(result).__name__}")


_EAGER = "eager"      # a signature whose calls always run fn eagerly (cannot be captured)


class _Graph:
    """A recorded call whose outputs have a graph: the forward program, one backward
    program per subset of those outputs that may get gradients (from a gradient
    placeholder per output to the gradients the leaves get), and what a replay's nodes
    need (see the module docstring and compile_autograd.CompiledBackward)."""

    def __init__(self, forward, live, segments, leaves, lazy, saved_outside, outputs_read):
        self.forward = forward
        self.live = live                  # the indices of the outputs that have a graph
        self.segments = segments          # subset of live positions -> (first edge, Program)
        # per edge of a replay's hub node: the leaf it leads to (weak: the guard sees it
        # go) or, for a tensor argument that requires grad, the argument's index
        inputs = {id(t): i for i, t in enumerate(forward.inputs)}
        self.leaves = [inputs[id(t)] if id(t) in inputs else weakref.ref(t) for t in leaves]
        self.lazy = lazy                  # edges with the sum of a leaf's slice gradients
        self.saved_outside = saved_outside   # Storages outside the programs nodes saved
        self.outputs_read = outputs_read  # the outputs a backward reads (version-checked)
        self.stamp = 0                    # bumped by each replay of the forward
        self.last = None                  # weakref to the latest call's hub node
        self.guard = None
        self.replays = 0

    @property
    def programs(self):
        return [self.forward] + [p for _, p in self.segments.values()]

    @property
    def released(self):
        return self.forward.released

    def holds(self):
        return all(type(r) is int or r() is not None for r in self.leaves) and \
            self.guard.holds()

    def busy(self):
        """Must this call run eagerly? Yes while an earlier call's outputs may still be
        backpropagated: a replay would overwrite their activations."""
        hub = self.last() if self.last is not None else None
        if hub is not None and not hub.freed:
            return True
        # (eager mode writes a leaf's slice gradients into a copy of its .grad: a sum of
        # them added to it would round differently)
        return any(type(r) is not int and r()._grad is not None
                   for r in (self.leaves[p] for p in self.lazy))

    def output(self, outs, stamp, tensors):
        """outs (fresh tensors of one call with the tensor arguments `tensors`) with those
        that have a graph made the roots of its nodes."""
        edges = [r() if type(r) is not int else
                 tensors[r].grad_fn if tensors[r].grad_fn is not None else tensors[r]
                 for r in self.leaves]
        CompiledBackward.attach(self, outs, stamp, edges)
        return self.forward.structure(outs)

    def run(self, tensors):
        outs = self.forward.replay(tensors)
        self.stamp += 1
        return self.output(outs, self.stamp, tensors)

    def release(self):
        for p in self.programs:
            p.release()


MAX_LIVE = 3     # outputs with a graph one recording captures (2^n - 1 backward programs)


def _record_backward(rt, forward, rec, roots, live):
    """Record the backward of the graph of the outputs `roots` as programs, one per
    non-empty subset of them (the outputs a backward() pass may reach): its inputs are a
    gradient per output of the subset, its outputs the gradients the engine hands the
    leaves, one per edge into a leaf, in the engine's order (eager mode adds a leaf's
    gradients into .grad one by one, so the node hands them over one by one: the same
    sums, bit for bit; a leaf that a slice of it gets gradients through (IndexView's lazy
    ones, summed where eager mode sums them) gets one, their sum). For each recording the
    edges into leaves are pointed at stand-in leaves (detached aliases), so the leaves'
    .grad and hooks see nothing; the graph is
    kept for the next subset and consumed by the last, as by backward(). The programs
    run one at a time, so each recording reuses the blocks the one before freed (one
    pool: their temporaries overlap; the last program owns them)."""
    saved = {id(t._storage): t._storage for node in _nodes(roots)
             for t in node._saved
             if t is not None and id(raw.view_of(t).block) not in rec.owned}
    sliced = {id(t) for t in _sliced_leaves(roots)}
    subsets = [s for n in range(1, len(roots) + 1)
               for s in itertools.combinations(range(len(roots)), n)]
    real, stand_ins, leaves, segments, reads, brec, recorders = {}, [], [], {}, set(), None, []
    lazy = []
    for n, subset in enumerate(subsets):
        grads = [raw.copy_into(raw.new_tensor(roots[k].shape), constant(0.0)) for k in subset]
        root, gradient = _Join.root([roots[k] for k in subset], grads)
        mine, shared = [], {}
        for node in autograd._topological_order(root.grad_fn):
            edges = list(node.edges)
            for j, edge in enumerate(edges):
                if edge is not None and not isinstance(edge, Primitive):
                    leaf = real.get(id(edge), edge)
                    if id(leaf) in shared:
                        edges[j] = shared[id(leaf)]
                        continue
                    edges[j] = edge.detach()
                    if id(leaf) in sliced:
                        shared[id(leaf)] = edges[j]
                    real[id(edges[j])] = leaf
                    stand_ins.append(edges[j])      # (kept: their ids stay unique)
                    mine.append(edges[j])
            node.edges = tuple(edges)
        before, brec = brec, _Recorder(rt)
        if before is not None:       # (a temporary of the last program is never read
            brec.pool = before.pool  # before it is written: a program's output may reuse one)
            segments[subsets[n - 1]][1].temporaries = []
        try:
            brec.install()
            autograd.run_backward(root, gradient, retain_graph=n < len(subsets) - 1)
        finally:
            rt.restore(brec.saved)     # (nothing before it: _Recorder.install says why)
        got = [t for t in mine if t._grad is not None]
        program = Program(brec, grads, [t._grad.detach() for t in got], list)
        segments[subset] = (len(leaves), program)
        recorders.append((program, brec))
        lazy += [len(leaves) + k for k, t in enumerate(got) if id(real[id(t)]) in sliced]
        leaves += [real[id(t)] for t in got]
        reads |= {id(v.block) for r in program.records for v in (r[1],) + r[2]}
    for t in stand_ins:          # (their gradients are the programs' alone now)
        t._grad = None
    for program, brec in recorders:
        program.prepare(brec)
    outputs_read = [live[k] for k in range(len(roots))
                    if id(raw.view_of(forward.outputs[live[k]]).block) in reads]
    return _Graph(forward, live, segments, leaves, lazy, list(saved.values()),
                  outputs_read), \
        reads


def _nodes(roots):
    """The nodes of the graph of the tensors `roots`, in the engine's order."""
    return autograd._topological_order(_Join.root(roots)[0].grad_fn)


def _sliced_leaves(roots):
    """The leaves that get gradients through a slice of them (IndexView's lazy ones)."""
    return list({id(e): e for node in _nodes(roots) if isinstance(node, IndexView)
                 for e in node.edges if e is not None and not isinstance(e, Primitive)}.values())


class _Join(Primitive):
    """The root of a recorded backward over several outputs: hands each its gradient."""

    @classmethod
    def root(cls, outputs, grads=None):
        """(a 0-d tensor whose node feeds `outputs`, the gradient for it). The outputs
        with the larger graphs come last: the engine's depth-first order explores the
        last edge first, so when one output's graph holds another's (loss and logits)
        the order is the one a backward() from the larger alone takes."""
        node = cls()
        order = sorted(range(len(outputs)),
                       key=lambda k: len(autograd._topological_order(outputs[k].grad_fn)))
        node.grads = [grads[k] for k in order] if grads is not None else None
        node.needs_grad = (True,) * len(outputs)
        node.edges = tuple(outputs[k].grad_fn for k in order)
        node._saved, node.freed, node.retained = (), False, None
        out = raw.new_tensor(())
        out.requires_grad = True
        out.grad_fn = node
        return out, constant(0.0)

    def backward(self, grad):
        return tuple(self.grads)


class Compiled:
    """What torchic.compile returns: call it like fn (a module's other attributes, such
    as .train() or .parameters(), are the module's)."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn, updated=() if hasattr(fn, "_modules") else
                                 functools.WRAPPER_UPDATES)
        self.fn = fn
        # signature -> a Program or _Graph, _EAGER, or a count of eager calls so far
        self.programs = {}
        self.misses = {}       # signature -> recordings whose guard failed before a replay

    def __getattr__(self, name):      # (only for names Compiled itself does not have)
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    @staticmethod
    def _signature(values, keys):
        """(signature, tensor arguments) of a call: its argument values, keyword names."""
        parts = [dispatcher.runtime().generation, is_grad_enabled(), keys]
        tensors = []
        for a in values:
            if isinstance(a, Tensor):
                tensors.append(a)
                parts.append((a.shape, a._dtype, a.requires_grad))
            else:
                parts.append(("value", type(a), a))
        sig = tuple(parts)
        try:
            hash(sig)
        except TypeError:
            bad = next(type(a).__name__ for a in values if not isinstance(a, Tensor)
                       and getattr(type(a), "__hash__", None) is None)
            raise TypeError(f"torchic.compile: an argument of type {bad} is not hashable, so it "
                            f"cannot be part of a call's signature: pass tensors, numbers, "
                            f"strings or tuples") from None
        return sig, tensors

    def __call__(self, *args, **kwargs):
        if recording_active():     # inside another compiled function's recording: its ops
            return self.fn(*args, **kwargs)   # are that one's (a replay would bypass it)
        keys = tuple(sorted(kwargs))
        sig, tensors = self._signature(args + tuple(kwargs[k] for k in keys) if keys else args,
                                       keys)
        if len({id(t._storage) for t in tensors}) < len(tensors):
            # arguments sharing memory (f(x, x), f(x, x[1:])): a program keeps an argument
            # apart from the others (its own copy), so such a call runs eagerly
            return self.fn(*args, **kwargs)
        entry = self.programs.get(sig, 0)
        if isinstance(entry, (Program, _Graph)):
            if not entry.holds():       # fn's state changed under the recording: record
                if not entry.replays:    # again (an old output's node keeps it); dropped
                    self.misses[sig] = self.misses.get(sig, 0) + 1   # twice before a replay:
                entry = self.programs[sig] = \
                    _EAGER if self.misses.get(sig, 0) >= 2 else 0   # fn changes it each call
            elif entry.busy():
                return self.fn(*args, **kwargs)
            else:
                entry.replays += 1
                return entry.run(tensors)
        if entry == 0:                      # warm-up: lazily made state appears now
            self.programs[sig] = 1
            return self.fn(*args, **kwargs)
        if entry is _EAGER:
            return self.fn(*args, **kwargs)
        return self._record(sig, args, kwargs)

    def _record(self, sig, args, kwargs):
        rt = dispatcher.runtime()
        rt.sync()
        rec = _Recorder(rt)
        keys = sorted(kwargs)
        # the program's own input tensors: arguments are copied in at each replay
        inputs = []

        def own(a):     # (one that requires grad is a leaf of the recorded graph)
            if not isinstance(a, Tensor):
                return a
            inputs.append(_fresh_copy(a).requires_grad_(a.requires_grad and grad_mode))
            return inputs[-1]
        grad_mode = is_grad_enabled()
        given_tensors = [a for a in list(args) + [kwargs[k] for k in keys]
                         if isinstance(a, Tensor)]
        args = [own(a) for a in args]
        kwargs = {k: own(kwargs[k]) for k in keys}
        try:
            rec.install()
            result = self.fn(*args, **kwargs)
        finally:
            rt.restore(rec.saved)      # (nothing before it: _Recorder.install says why)
        graph = None
        reads = frozenset()
        try:
            outputs, structure = _flatten(result)
            live = [i for i, t in enumerate(outputs)
                    if t.grad_fn is not None and not t.grad_fn.freed]
            if len(live) > MAX_LIVE:       # (too many backward programs): run eagerly
                for block in [b for blocks in rec.pool.values() for b in blocks]:
                    rt.free(block)
                self.programs[sig] = _EAGER
                return result
            program = Program(rec, inputs, [t.detach() for t in outputs], structure)
            if live and any(t._grad is not None
                            for t in _sliced_leaves([outputs[i] for i in live])):
                program.release()      # (_Graph.busy: record when those have no .grad)
                return result
            if live:        # record its backward too: replays return a graph
                graph, reads = _record_backward(rt, program, rec,
                                                [outputs[i] for i in live], live)
        finally:
            for block, _ in rec.freed_outside.values():
                rt.free(block)
        del result, outputs
        program.prepare(rec, reads)
        program.write_back(given_tensors)
        entry = graph if graph is not None else program
        programs = graph.programs if graph is not None else [program]
        own_objects = [p.held for p in programs] + [t for p in programs
                                                    for t in p.own_tensors()]
        if graph is not None:
            own_objects.append(graph.saved_outside)
        entry.guard = Guard(self.fn, list({id(s): s for p in programs for s in p.held}.values()),
                            {id(o) for o in own_objects})
        while len(self.programs) >= MAX_PROGRAMS:
            del self.programs[next(iter(self.programs))]
        self.programs[sig] = entry
        outs = [_fresh_copy(t) for t in program.outputs]
        return graph.output(outs, 0, given_tensors) if graph is not None else structure(outs)

    def release(self):
        """Release every recorded program."""
        for p in self.programs.values():
            if isinstance(p, (Program, _Graph)):
                p.release()
        self.programs.clear()


def compile(fn: Callable[..., Any] | None = None, *, fullgraph: bool = False,
            dynamic: bool | None = None, backend: Any = "inductor", mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """Record fn's ops once per signature and replay them (see the module docstring).
    Use as `step = torchic.compile(step)`, `@torchic.compile` or `@torchic.compile(...)`.

    PyTorch's keyword arguments are accepted: `fullgraph`, `dynamic`, `backend`, `mode` and
    `options` choose among torch.compile's compilers and change nothing here (torchic has one
    recorder); `disable=True` returns fn itself (eager), as PyTorch's.

    Example:
        >>> step = torchic.compile(lambda x: x * 2.0 + 1.0)
        >>> [step(torchic.ones(2)).numpy().tolist() for _ in range(3)][-1]
        [3.0, 3.0]
    """
    if mode is not None and mode not in ("default", "reduce-overhead", "max-autotune",
                                         "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, "
                           f"reduce-overhead, max-autotune, max-autotune-no-cudagraphs")
    if fn is None:
        return lambda f: f if disable else Compiled(f)
    return fn if disable else Compiled(fn)
