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
depends on is unchanged: the tensors and modules fn names (closure cells, globals), the
modules' parameters, buffers, submodules and train / eval mode, and that each tensor of
outside state the program updates still has a holder besides the program (a replaced or
dropped parameter or .grad). A failed check drops the program: that call runs eagerly
(a warm-up again), the next records anew.

Autograd: when the recorded call's output still has a graph (a compiled module, or any
function returning what backward() has not consumed: nanoGPT's `model =
torch.compile(model)`), its backward is recorded too, as a second program: from a
gradient placeholder (its input) to the gradient each leaf gets, one per edge into a leaf
in the engine's order (_record_backward). Every call then returns that output as the
root of one CompiledBackward node, whose backward replays the backward program on the
forward program's activations (kept between calls) and hands each leaf its gradients;
the engine accumulates them into .grad as it would eager mode's, bit for bit. What
cannot be captured runs eagerly, never wrongly: a call made while an earlier call's
output still awaits its backward (a replay would overwrite its activations), and every
call of a function with several outputs that have a graph. A tensor argument that
requires grad (part of the signature) is a leaf of the recorded graph: the node's edge
for its gradient leads to the caller's tensor (its node, or the leaf). A tensor's in-place change between forward and backward raises
as in eager mode, for the parameters the graph saved and for the output itself.

A call whose tensor arguments share memory (f(x, x)) runs fn eagerly: a program keeps
each argument apart. A module's other attributes (`.train()`, `.parameters()`) are
reached through the compiled object.
"""

import functools
import weakref
from collections.abc import Callable
from typing import Any

from . import autograd, dispatcher, raw
from .autograd import Function, is_grad_enabled
from .compile_autograd import CompiledBackward, Guard
from .functions.common import constant
from .recording import (CompileError, Program, _fresh_copy, _Recorder, host_values,  # noqa: F401
                        memory_of_programs, recording)
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
    """A recorded call whose output has a graph: the forward program, the backward
    program (from a gradient placeholder to each leaf's gradient), and what a replay's
    CompiledBackward node needs (see the module docstring)."""

    def __init__(self, forward, backward, leaves, live, saved_outside, out_saved):
        self.forward, self.backward = forward, backward
        # per gradient the node hands over: where it goes, the leaf (weak: the guard sees
        # it go) or, for a tensor argument that requires grad, the argument's index
        inputs = {id(t): i for i, t in enumerate(forward.inputs)}
        self.leaves = [inputs[id(t)] if id(t) in inputs else weakref.ref(t) for t in leaves]
        self.live = live                  # the index of the output that has a graph
        self.saved_outside = saved_outside   # Storages outside the programs nodes saved
        self.out_saved = out_saved        # does the backward read the output itself?
        self.stamp = 0                    # bumped by each replay of the forward
        self.last = None                  # weakref to the latest call's node
        self.guard = None

    @property
    def released(self):
        return self.forward.released

    def holds(self):
        return all(type(r) is int or r() is not None for r in self.leaves) and \
            self.guard.holds()

    def busy(self):
        """Must this call run eagerly? Yes while an earlier call's output may still be
        backpropagated: a replay would overwrite its activations."""
        node = self.last() if self.last is not None else None
        return node is not None and not node.freed

    def output(self, outs, stamp, tensors):
        """outs (fresh tensors of one call with the tensor arguments `tensors`) with the
        live one made the root of its CompiledBackward node."""
        edges = [r() if type(r) is not int else
                 tensors[r].grad_fn if tensors[r].grad_fn is not None else tensors[r]
                 for r in self.leaves]
        CompiledBackward.attach(self, outs[self.live], stamp, edges)
        return self.forward.structure(outs)

    def run(self, tensors):
        outs = self.forward.replay(tensors)
        self.stamp += 1
        return self.output(outs, self.stamp, tensors)

    def release(self):
        self.forward.release()
        self.backward.release()


def _record_backward(rt, forward, rec, out, live):
    """Record the backward of out's graph as a program: its input is a gradient for out,
    its outputs the gradients the engine hands the leaves, one per edge into a leaf, in
    the engine's order (eager mode adds a leaf's gradients into .grad one by one, so the
    node hands them over one by one: the same sums, bit for bit). Each such edge is
    pointed at a stand-in leaf (a detached alias) for the recording, so the leaves' .grad
    and hooks see nothing; the graph is consumed, as by backward()."""
    order = autograd._topological_order(out.grad_fn)
    saved = {id(t._storage): t._storage for node in order for t in node._saved
             if id(raw.view_of(t).block) not in rec.owned}
    leaves, stand_ins = [], []
    for node in order:
        edges = list(node.edges)
        for k, edge in enumerate(edges):
            if edge is not None and not isinstance(edge, Function):
                leaves.append(edge)
                stand_ins.append(edge.detach())
                edges[k] = stand_ins[-1]
        node.edges = tuple(edges)
    grad = raw.copy_into(raw.new_tensor(out.shape), constant(0.0))
    brec = _Recorder(rt)
    with recording(brec):
        autograd.run_backward(out, grad)
    got = [i for i, t in enumerate(stand_ins) if t._grad is not None]
    backward = Program(brec, [grad], [stand_ins[i]._grad.detach() for i in got], list)
    reads = {id(v.block) for r in backward.records for v in (r[1],) + r[2]}
    out_saved = id(raw.view_of(forward.outputs[live]).block) in reads
    return _Graph(forward, backward, [leaves[i] for i in got], live, list(saved.values()),
                  out_saved), brec, reads


class Compiled:
    """What torchic.compile returns: call it like fn (a module's other attributes, such
    as .train() or .parameters(), are the module's)."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn, updated=() if hasattr(fn, "_modules") else
                                 functools.WRAPPER_UPDATES)
        self.fn = fn
        # signature -> a Program or _Graph, _EAGER, or a count of eager calls so far
        self.programs = {}

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
                entry = self.programs[sig] = 0     # again (an old output's node keeps it)
            elif entry.busy():
                return self.fn(*args, **kwargs)
            else:
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
        with recording(rec):
            result = self.fn(*args, **kwargs)
        graph = brec = None
        reads = frozenset()
        try:
            outputs, structure = _flatten(result)
            live = [i for i, t in enumerate(outputs)
                    if t.grad_fn is not None and not t.grad_fn.freed]
            if len(live) > 1:
                # several outputs with a graph (a node per output would run their backward
                # apart, not in eager mode's one pass): this signature runs eagerly
                for block in [b for blocks in rec.pool.values() for b in blocks]:
                    rt.free(block)
                self.programs[sig] = _EAGER
                return result
            program = Program(rec, inputs, [t.detach() for t in outputs], structure)
            if live:        # record its backward too: replays return a graph
                graph, brec, reads = _record_backward(rt, program, rec, outputs[live[0]],
                                                      live[0])
        finally:
            for block, _ in rec.freed_outside.values():
                rt.free(block)
        del result, outputs
        program.prepare(rec, reads)
        program.write_back(given_tensors)
        if graph is not None:
            graph.backward.prepare(brec)
        entry = graph if graph is not None else program
        programs = [program] + ([graph.backward] if graph is not None else [])
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


def compile(fn: Callable[..., Any] | None = None) -> Any:
    """Record fn's ops once per signature and replay them (see the module docstring).
    Use as `step = torchic.compile(step)` or `@torchic.compile`.

    Example:
        >>> step = torchic.compile(lambda x: x * 2.0 + 1.0)
        >>> [step(torchic.ones(2)).numpy().tolist() for _ in range(3)][-1]
        [3.0, 3.0]
    """
    if fn is None:
        return compile
    return Compiled(fn)
