"""One recorded call of a compiled function (torchic.compile: compile.py), replayed.

A _Recorder is installed on the runtime for the call (`recording`): it replaces the
Runtime's alloc / free / run / write / read and keeps the op list. A Program holds it:
- records: (op, out view, input views, params), over blocks of three kinds:
  * temporaries: blocks allocated and freed inside the recorded call. Frees during the
    recording go to the program's own pool, which later allocations reuse: a block of
    the same size, else the smallest freed one that holds it, up to twice its size (a
    fixed block plan: temporaries that never live at once share blocks; stream order
    makes reuse as safe as in eager mode). The program keeps them until release().
  * state: blocks of tensors that outlive the call (parameters, optimizer state, grads,
    cached constants, the recorded outputs). Their Storages are held by the program (so
    no block is recycled under it) and replays update them in place, as eager mode does.
  * inputs: each tensor argument is copied into a program-owned tensor before fn sees it.
    On simd and webgpu (backends whose `program_slots` is true) those tensors' blocks are the
    program's slots: a replay hands the backend the caller's argument blocks instead, so
    the program reads (and, where fn updates an argument in place, writes) the arguments
    where they are. Elsewhere, and for an argument whose strides differ from the recorded
    ones (or that the backend's `slot_fits` refuses: webgpu moves a slot only within its
    arena, by whole 256-byte steps), a replay copies the new argument in first (one copy
    op per argument), and back after the call when fn changed it in place (as eager mode
    would have). An input a second program (a recorded backward) reads is always copied.
- host writes become copy ops from one staging block per dtype: a replay fills the staging
  array on the host (re-calling each write's `source`: random draws from the global
  generator, optimizer scalars such as lr read from param_groups; other writes are baked
  in), writes it once, then pushes the records.
- outputs: every call returns fresh tensors for fn's returned ones. With slots, an output
  made inside fn that nothing else holds (and no second program reads) is a slot too:
  each replay allocates the caller's new tensor and the program writes it there
  (_fresh_outputs); other outputs, and every output elsewhere, are copied into fresh
  tensors after the program.
A program's Storages (state, input copies, outputs, staging) are exempt from every
track_tensors scope open at the recording: a program's state is never a scope's temporary.

Replay: simd packs the records once and pushes them with one call (SimdBackend.pack /
push_packed); workers packs them into one stream record of prepared kernel calls, webgpu
into one recorded command sequence (whose slot offsets a push patches: replay.py). A
backend whose pack gives None (webgpu with windowed arenas) replays record by record,
without slots.

Recording refuses what a replay could not reproduce, naming the user's line: a read
(.item(), .numpy(), print) inside fn, and a tensor from outside fn replaced inside it
(`self.h = f(self.h)`: use an in-place update, `self.h.copy_(f(self.h))`).
"""

import gc
import linecache
import os
import sys
import weakref

import numpy as np

from . import dispatcher, ops, raw, scopes
from .dispatcher import DTYPES, View
from .functions.common import constant
from .tensor import Storage, Tensor

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_live = weakref.WeakSet()   # every Program not yet released (torchic.memory() counts them)


class CompileError(RuntimeError):
    """fn does something a recorded program cannot replay (raised at record time)."""


def _user_line():
    """'file:line: source' of the innermost frame outside torchic."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "?"
    lineno = frame.f_lineno or 0    # (None between lines: a free from a GC pass there)
    line = linecache.getline(frame.f_code.co_filename, lineno).strip()
    return f"{frame.f_code.co_filename}:{lineno}: {line}"


def host_values(compute, dtype="f32"):
    """A tensor of dtype code `dtype` (the tensor it updates: float64 parameters get float64
    numbers) holding compute()'s value(s): a Python number gives a 0-d tensor, a sequence a
    1-D one. Library code uses it for numbers that change from step to step (a learning
    rate, Adam's bias corrections): a compiled program calls compute again at every replay,
    in record order (so compute may also advance state, like a step count), instead of
    baking the first value in. Half dtypes get float32 numbers (their ops compute in
    float32, and promotion keeps a half tensor half against a 0-d float32 one)."""
    dtype = dtype if dtype == "f64" else "f32"
    host = DTYPES[dtype]
    arr = np.asarray(compute(), dtype=host)
    if not recording_active() and arr.ndim == 0:
        return constant(arr.item(), dtype)          # eager: the cached 0-d constant
    return raw.write(raw.new_tensor(arr.shape, dtype), arr,
                     lambda: np.asarray(compute(), dtype=host))


class _Recorder:
    """Installed on the runtime for one recorded call (its entry points replaced)."""

    def __init__(self, rt):
        self.rt = rt
        self.records = []          # (op, out, inputs, params), or (None, view, array, source)
        self.owned = {}            # id -> block allocated during the recording
        self.requested = {}        # id -> the bytes its latest allocation asked for
        self.pool = {}             # size -> [owned blocks freed during the recording]
        self.freed_outside = {}    # id -> (block, line) of outside blocks freed inside
        self.freed_after = {}      # record index -> ids of owned blocks freed right after it
        self.real = {n: getattr(rt, n) for n in ("alloc", "run", "write")}
        # what `rt.restore(rec.saved)` puts back after the recorded call (see install)
        self.saved = rt.saved("alloc", "free", "run", "write", "read", "sync", "recorder")
        self.align_mask = rt.allocator.align - 1

    def install(self):
        """Route the runtime's entry points here for one recorded call. Call it inside
        the `try` whose `finally` is `rt.restore(rec.saved)`, with nothing before that
        call: whatever a Ctrl-C interrupts, the runtime is then given back (a press can
        land at the start of any Python function, install or a context manager's
        __exit__, but not inside restore's one C call: Runtime.rebind). A recorder left
        installed once refused every later read and compile."""
        if self.rt.recorder is not None:
            raise CompileError("torchic.compile: a compiled function called while another "
                               "is being recorded")
        self.rt.rebind(alloc=self.alloc, free=self.free, run=self.run, write=self.write,
                       read=self.read, sync=self.read, recorder=self)

    def alloc(self, nbytes):
        size = (nbytes + self.align_mask) & ~self.align_mask if nbytes > 0 else \
            self.align_mask + 1
        free = self.pool.get(size)
        if not free:    # the smallest freed block that holds it, up to twice its size
            fits = [k for k, blocks in self.pool.items() if blocks and size < k <= 2 * size]
            free = self.pool[min(fits)] if fits else None
        block = free.pop() if free else self.real["alloc"](nbytes)
        self.owned[id(block)] = block
        self.requested[id(block)] = nbytes
        return block

    def free(self, block):
        if id(block) in self.owned:
            self.pool.setdefault(block.size, []).append(block)
            if self.records:
                self.freed_after.setdefault(len(self.records) - 1, set()).add(id(block))
        else:   # given back after the recording (so no later allocation here aliases it)
            self.freed_outside[id(block)] = (block, _user_line())

    def run(self, op, out, inputs, params):
        self.records.append((op, out, tuple(inputs), dict(params) if params else None))
        self.real["run"](op, out, inputs, params)

    def write(self, view, array, source=None):
        self.records.append((None, view, np.array(array, dtype=dispatcher.DTYPES[view.dtype]),
                             source))
        self.real["write"](view, array)

    def read(self, *args):
        raise CompileError(
            f"torchic.compile: a read of tensor values (.item(), .numpy(), print, a sync) "
            f"inside the compiled function, at {_user_line()}: a replay runs no Python of "
            f"the function, so values cannot steer it; return the tensor instead and read "
            f"it outside")


class Program:
    """One recorded call of a compiled function: see the module docstring."""

    def __init__(self, rec, inputs, outputs, structure):
        self.rt = rec.rt
        self.inputs = inputs              # the program's own copies of the tensor arguments
        self.outputs = outputs            # the recorded output tensors (state)
        self.structure = structure        # rebuilds fn's return value from fresh outputs
        self.temporaries = [b for blocks in rec.pool.values() for b in blocks]
        temp_ids = {id(b) for b in self.temporaries}
        staging = {code: [] for code in dispatcher.DTYPES}   # dtype -> [(offset, n, array,
        #                                                       source, target)]
        self.sources = []                 # (stage index, offset, n, source), in record order
        for op, out, arr, source in rec.records:
            if op is None and arr.size:    # a host write
                parts = staging[out.dtype]
                offset = sum(p[1] for p in parts)
                parts.append((offset, arr.size, arr.ravel(), source, out))
                if source is not None:     # (called in this order: random draws stay in order)
                    self.sources.append((out.dtype, offset, arr.size, source))
        self.stages = []                  # (staging tensor, host array, refilled per call?)
        index = {}
        for dtype, parts in staging.items():
            if parts:
                index[dtype] = len(self.stages)
                stage = raw.new_tensor((sum(p[1] for p in parts),), dtype)
                host = np.concatenate([p[2] for p in parts])
                self.stages.append((stage, host, any(p[3] is not None for p in parts)))
        self.sources = [(index[d], o, n, src) for d, o, n, src in self.sources]
        self.records, self.frees = self._in_order(rec.records, staging, rec.freed_after)
        # arguments fn updates in place: written back to the caller's tensor after each call
        written = {id(r[1].block) for r in self.records}
        written.update(id(r[2][k].block) for r in self.records for k in ops.WRITES.get(r[0], ()))
        self.written_inputs = [i for i, t in enumerate(inputs) if id(t._view.block) in written]
        touched = {id(v.block): v.block for r in self.records for v in (r[1],) + r[2]}
        self.touched = list(touched.values())     # (known.py: forgotten at each replay)
        # blocks that outlive the call: hold their Storages so none is recycled under us
        outside = {i: b for i, b in touched.items() if i not in temp_ids}
        for i, (block, line) in rec.freed_outside.items():
            if i in outside:
                raise CompileError(
                    f"torchic.compile: a tensor made outside the compiled function was "
                    f"replaced inside it (its memory was freed at {line}), but the function "
                    f"uses it: a replay would use the old memory. Update it in place "
                    f"instead (x.copy_(new_value), x.add_(...))")
        blocks = set(outside)
        self.held = [r for r in gc.get_referrers(*outside.values())
                     if isinstance(r, Storage) and id(r.block) in blocks] if outside else []
        self._packed = None
        self._slotted = self.rt.backend.program_slots
        self.fresh_outputs = [False] * len(outputs)
        self.copied_inputs = set()        # inputs always copied in (a backward reads them)
        self.guard = None                 # set by Compiled once the recording is complete
        self.replays = 0                  # (counted by Compiled)
        self.released = self._staged = False
        # the program's state is never a scope's temporary (track_tensors disposes those)
        scopes.exempt(self.own_storages())
        _live.add(self)

    def own_storages(self):
        """The Storages whose blocks the program reads or writes."""
        return self.held + [t._storage for t in self.own_tensors()]

    def own_tensors(self):
        """The program's own tensors: input copies, recorded outputs, staging blocks."""
        return self.inputs + self.outputs + [s[0] for s in self.stages]

    def prepare(self, rec, read_later=frozenset()):
        """Pack the records for the backend, once fn's return value is gone (so that
        _fresh_outputs sees who else holds an output). read_later: ids of blocks another
        program (the recorded backward) reads: inputs and outputs there stay in the
        program's own blocks (inputs copied in, outputs copied out)."""
        backend = self.rt.backend
        self.copied_inputs = {i for i, t in enumerate(self.inputs)
                              if id(t._view.block) in read_later}
        # a backend with program slots runs the program on the caller's argument tensors
        # where they are (no copy in, none back), and writes fresh outputs where the
        # caller gets them (no copy out): the inputs' and those outputs' blocks are its slots
        slots = ()
        if self._slotted:
            self.fresh_outputs = [f and id(raw.view_of(t).block) not in read_later for t, f in
                                  zip(self.outputs, _fresh_outputs(rec, self.outputs))]
            slots = [t._view.block for t in self.inputs] + [
                raw.view_of(t).block for t, fresh in zip(self.outputs, self.fresh_outputs)
                if fresh]
        self._packed = backend.pack(self.records, slots, self.frees)
        if self._packed is None:     # records replayed one by one: no slots
            self._slotted = False
            self.fresh_outputs = [False] * len(self.outputs)

    def holds(self):
        return self.guard.holds()

    def busy(self):
        return False

    def run(self, tensors):
        return self.structure(self.replay(tensors))

    @property
    def plan_bytes(self):
        """Heap bytes of the program's fixed block plan (its temporaries)."""
        return sum(b.size for b in self.temporaries)

    def _in_order(self, records, staging, freed_after):
        """The op list with each host write replaced by its copy from the staging block, and
        beside it, per op, the ids of the temporaries freed right after it (their contents
        dead from there: what a backend's pack may use to skip stores nothing reads)."""
        stage_of = {s[0]._dtype: s[0] for s in self.stages}
        offsets = {dtype: iter(parts) for dtype, parts in staging.items()}
        out, frees = [], []
        for i, (op, view, ins, params) in enumerate(records):
            if op is not None:
                out.append((op, view, ins, params))
            elif ins.size:
                offset, n, _, _, target = next(offsets[view.dtype])
                src = View(stage_of[view.dtype]._view.block, offset, target.shape,
                           _contiguous(target.shape), view.dtype)
                out.append(("copy", target, (src,), None))
            if len(frees) < len(out):
                frees.append(set())
            if frees:       # (an empty write dropped: its frees go with the op before)
                frees[-1] |= freed_after.get(i, set())
        return out, frees

    def _arguments_in(self, tensors):
        """Give the program the call's tensor arguments: (block, byte offset) per input for
        a backend with program slots (the argument itself where its layout is the
        recorded one, else a copy into the program's own tensor), else None (copies)."""
        slots = [] if self._slotted else None
        for i, (mine, given) in enumerate(zip(self.inputs, tensors)):
            m, g = mine._view, raw.view_of(given)
            if g is m:
                if slots is not None:
                    slots.append((m.block, 0))
            elif (slots is not None and g.strides == m.strides and g.offset >= m.offset
                  and i not in self.copied_inputs
                  and self._fits_slot(len(slots), g.block, raw.nbytes(
                      self.rt, (g.offset - m.offset,), m.dtype))):
                slots.append((g.block, raw.nbytes(self.rt, (g.offset - m.offset,), m.dtype)))
            else:
                raw.copy_into(mine, given)
                if slots is not None:
                    slots.append((m.block, 0))
        return slots

    def _fits_slot(self, k, block, skip):
        return self.rt.backend.slot_fits(self._packed, k, block, skip)

    def replay(self, tensors):
        if self.released:
            raise RuntimeError("this compiled program was released")
        if self.rt.recorder is not None:   # (a packed push would go past the recorder)
            raise CompileError(
                f"torchic.compile: the backward of a compiled call's output, run inside "
                f"another compiled function's recording, at {_user_line()}: call the "
                f"compiled function inside that one too")
        slots = self._arguments_in(tensors)
        for block in self.touched:      # known.py: the replay writes them (no run() sees it)
            block.known = None
        if self.stages:
            self._stage_host_writes()
        # the outputs the program writes where the caller gets them: new tensors, whose
        # blocks are the last slots
        fresh = [raw.new_tensor(t.shape, t._dtype) if f else None
                 for t, f in zip(self.outputs, self.fresh_outputs)]
        copied = []          # fresh outputs whose slot did not fit: written, then copied
        if self._packed is None:
            run = self.rt.run
            for r in self.records:
                run(*r)
        else:
            if slots is not None:
                for t, mine in zip(fresh, self.outputs):
                    if t is None:
                        continue
                    if self._fits_slot(len(slots), t._view.block, 0):
                        slots.append((t._view.block, 0))
                    else:
                        slots.append((raw.view_of(mine).block, 0))
                        copied.append((t, mine))
            for block, _ in slots or ():    # (the caller's argument and output blocks)
                block.known = None
            self.rt.backend.push_packed(self._packed, slots)
        for t, mine in copied:
            raw.copy_into(t, mine)
        if self.written_inputs:
            self.write_back(tensors, slots)
        return [t if t is not None else _fresh_copy(mine)
                for t, mine in zip(fresh, self.outputs)]

    def _stage_host_writes(self):
        """Write this call's host values (random draws, lr ...) into the staging blocks."""
        # (a write may run later: a refilled host array is a fresh copy, given away)
        hosts = [host.copy() if refilled else host for _, host, refilled in self.stages]
        for i, offset, n, source in self.sources:
            hosts[i][offset:offset + n] = np.asarray(source(), hosts[i].dtype).ravel()
        for (stage, _, refilled), host in zip(self.stages, hosts):
            if refilled or not self._staged:
                self.rt.write(stage._view, host)
        self._staged = True

    def write_back(self, tensors, slots=None):
        """Copy the arguments fn changed in place into the caller's tensors (as eager mode;
        an argument the program used in place was changed already)."""
        for i in self.written_inputs:
            given, mine = tensors[i], self.inputs[i]
            if given._view is not mine._view:
                if slots is None or slots[i][0] is mine._view.block:
                    raw.copy_into(given, mine)
                given._storage.version += 1

    def release(self):
        """Give the program's blocks back (garbage collection does it too)."""
        if not self.released and not self.rt.closed:
            self.released = True
            for block in self.temporaries:
                self.rt.free(block)
            if self._packed is not None:
                self.rt.backend.release_packed(self._packed)
            self.temporaries, self.held, self.records, self._packed = [], [], [], None
            self.touched = []

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def memory_of_programs(rt):
    """(programs, bytes of their block plans) of the live compiled programs on runtime rt."""
    mine = [p for p in list(_live) if p.rt is rt and not p.released]
    return len(mine), sum(p.plan_bytes for p in mine)


def _fresh_outputs(rec, outputs):
    """Per output: can a replay give it a new block that the program writes in place of
    the recorded one (no copy out)? Yes for the whole, contiguous view of a block made in
    the recorded call for just this tensor (not `y[:n]` of a longer y, whose other
    elements the program also writes), that no other tensor holds (a holder, say a cache
    in fn's closure, would see every replay's values in eager mode) and no other output
    shares."""
    views = [raw.view_of(t) for t in outputs]
    blocks = [id(v.block) for v in views]
    nbytes = [raw.nbytes(rec.rt, v.shape, v.dtype) for v in views]
    # (and a block of the size a new allocation gets: not a larger freed one reused, which
    # the records of the temporary it held before reach past the new tensor's end)
    fresh = [rec.requested.get(id_) == n and v.block.size == (n + rec.align_mask) &
             ~rec.align_mask and blocks.count(id_) == 1
             and v.offset == 0 and v.strides == _contiguous(v.shape)
             for v, id_, n in zip(views, blocks, nbytes)]
    if any(fresh):     # (one scan of the heap's objects for all of them)
        storages = [t._storage for t, f in zip(outputs, fresh) if f]
        holders = {}
        for r in gc.get_referrers(*storages):
            if isinstance(r, Tensor):
                holders[id(r._storage)] = holders.get(id(r._storage), 0) + 1
        fresh = [f and holders.get(id(t._storage)) == 1 for t, f in zip(outputs, fresh)]
    return fresh


def _fresh_copy(t):
    """A new tensor holding t's values (a program's inputs and every call's outputs)."""
    return raw.copy_into(raw.new_tensor(t.shape, t._dtype), t)


def _contiguous(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def recording_active():
    """Is a call being recorded now (on any thread: the runtime's entry points are)?"""
    rt = dispatcher._runtime
    return rt is not None and rt.recorder is not None

