"""Prepared replay of a recorded program (torchic.compile) on the GPU.

An eager op costs Python work before it reaches the GPU: the kernel's launch plan,
its parameter words packed into the batch's uniform slots, a bind group looked up.
A recorded program issues the same dispatches every call, so `capture` runs its
kernels once with the GPU collecting the dispatches instead of encoding them, and
freezes them: the parameter words of every dispatch go into a uniform buffer of the
program's own (written once), each dispatch gets a bind group naming that buffer,
and a dynamic offset into it. `replay` then encodes the whole program into the open
compute pass as three wgpu-native calls per dispatch (set pipeline, set bind group,
dispatch), with no uniform upload, and submits it in chunks of doubling size so the GPU
starts on the first dispatches while the rest are encoded.

Index-checked kernels (gather, scatter, cross-entropy targets) and the int64 rule's
overflow checks get fixed status tags (gpu.FIXED_TAGS) while captured: a replay's failure
is reported like an eager one. (The overflow checks share one tag per op name within a
program, as they share one between eager reads.)

Slots (torchic.compile's zero-copy arguments and outputs): a replay may run the program
on other blocks in place of some recorded ones (the caller's argument tensors, the
output tensors it returns), so no copy goes in or out. Every tensor lives in a heap
arena bound whole, and a kernel finds its operand through an element offset among its
parameter words, so moving a slot within its arena changes only those words. Which
words they are is measured, not declared by each kernel: `capture` issues the program
once more per slot with that block's offsets moved by SHIFT 32-bit words (2 SHIFT halves
of a native float16 view) and diffs the words. A replay that moves slots patches the
words in the program's parameter buffer (one stream-ordered write, only when the moves
differ from the last replay's). A move keeps its arena (the bind groups name arenas) and
is a whole number of 256-byte steps, so the alignment every kernel chose its vector width
by still holds (`fits`).
"""

import numpy as np

from .gpu import PARAM_WORDS, _env_count

ENV_REPLAY_CHUNK = "TORCHIC_WEBGPU_REPLAY_CHUNK"

SHIFT = 1 << 20    # 32-bit words a slot's views move by in its diff capture (a multiple of 64)
MOVE_STEP = 256    # bytes: a slot moves by whole steps (kernels pick vec4 paths by alignment)


class Slot:
    """Where a slot's block was recorded, and its offset words: positions in the program's
    parameter words and each one's step (the word moves by step / SHIFT per 32-bit word)."""

    __slots__ = ("arena", "offset", "positions", "steps")

    def __init__(self, block, positions, steps):
        self.arena, self.offset = block.arena, block.offset
        self.positions = np.array(positions, np.int64)
        self.steps = np.array(steps, np.int64)


class Recording:
    """A program's frozen dispatches: [(pipeline, bind group, offset array, groups)]."""

    __slots__ = ("calls", "programs", "params_buf", "tags", "keep", "words", "slots", "moved")

    def __init__(self, calls, programs, params_buf, tags, keep, words, slots):
        self.calls = calls
        self.programs = programs  # each call's Program (its key names it in a profile)
        self.params_buf = params_buf
        self.tags = tags
        self.keep = keep          # the wgpu objects the raw handles in calls belong to
        self.words = words        # the parameter words as captured (uint32)
        self.slots = slots        # per slot: a Slot, or None (its offsets cannot be moved)
        self.moved = (0,) * len(slots)   # per slot: elements its words are moved by now


def _collect(gpu, issue):
    """The dispatches issue() makes ([(program, buffers, words, groups)]), None if it raised."""
    gpu.capturing = dispatches = []
    gpu.capture_tags = {}     # (each collection draws its tags anew, in the same order)
    try:
        issue()
    except Exception:
        dispatches = None
    finally:
        gpu.capturing = None
    return dispatches


def _slot(block, dispatches, shifted, stride):
    """The Slot of block from the dispatches and those with its offsets moved by SHIFT, or
    None when anything but offset words differs (another kernel or grid was chosen)."""
    if shifted is None or len(shifted) != len(dispatches):
        return None
    positions, steps = [], []
    for i, ((prog, bufs, w, groups), (prog2, bufs2, w2, groups2)) in enumerate(
            zip(dispatches, shifted)):
        if prog is not prog2 or bufs != bufs2 or groups != groups2 or len(w) != len(w2):
            return None
        for j, (a, b) in enumerate(zip(w, w2)):
            if a != b:
                # the word's change for SHIFT words moved: SHIFT (element offsets), SHIFT / 4
                # (vec4 offsets), 2 SHIFT (native float16's halves); a move of MOVE_STEP
                # bytes must change it by a whole number
                step = b - a
                if step <= 0 or (step * (MOVE_STEP // 4)) % SHIFT:
                    return None
                positions.append(i * stride // 4 + j)
                steps.append(step)
    return Slot(block, positions, steps)


def capture(gpu, issue, slots=()):
    """Run issue(None) (which issues kernels) collecting its dispatches -> a Recording, or
    None when there is nothing to capture or it raised. `slots`: blocks a replay may move;
    issue(block) must issue the same kernels with block's views SHIFT 32-bit words further."""
    if gpu.capturing is not None:
        return None
    tags_before = set(list(gpu.fixed_tags))
    free_tags = list(gpu.free_fixed_tags)
    dispatches = _collect(gpu, lambda: issue(None))
    tags = [t for t in list(gpu.fixed_tags) if t not in tags_before]
    if not dispatches:
        release_tags(gpu, tags)
        return None
    stride = gpu.param_stride
    words = np.zeros(len(dispatches) * stride // 4, np.uint32)
    for i, (_, _, w, _) in enumerate(dispatches):
        words[i * stride // 4:i * stride // 4 + len(w)] = [x & 0xFFFFFFFF for x in w]
    moves, free_after = [], gpu.free_fixed_tags
    for block in slots:     # (each diff capture draws the same fixed tags again)
        gpu.free_fixed_tags = list(free_tags)
        moves.append(_slot(block, dispatches, _collect(gpu, lambda: issue(block)), stride))
    gpu.free_fixed_tags = free_after
    with gpu.guard:
        U = gpu.wgpu.BufferUsage
        params_buf = gpu.device.create_buffer(size=words.nbytes, usage=U.UNIFORM | U.COPY_DST,
                                              label="torchic-program-params")
        gpu.queue.write_buffer(params_buf, 0, words)
    bind_groups, calls, keep = {}, [], [params_buf]
    for i, (prog, bufs, _, groups) in enumerate(dispatches):
        key = (prog.nbind,) + tuple(id(b) for b in bufs)
        bg = bind_groups.get(key)
        if bg is None:
            bg = bind_groups[key] = gpu.new_bind_group(prog.nbind, bufs, params_buf)
            keep.append((bg, bufs))
        with gpu.guard:     # (cffi's type parser takes its lock outside a try: see gpu.guard)
            offset = gpu._ffi.new("uint32_t[1]", [i * stride])
        keep.append((prog.pipeline, offset))
        calls.append((prog.pipeline._internal, bg._internal, offset, groups))
    assert PARAM_WORDS * 4 <= stride
    return Recording(calls, [d[0] for d in dispatches], params_buf, tags, keep, words, moves)


def fits(rec, k, block, skip):
    """Can slot k move to byte `skip` of block? (Its arena, whole MOVE_STEPs.)"""
    slot = rec.slots[k]
    return (slot is not None and block.arena == slot.arena
            and (block.offset + skip - slot.offset) % MOVE_STEP == 0)


def move(gpu, rec, blocks):
    """Point the slots' offset words at blocks [(block, byte skip)] (each one `fits`)."""
    moved = tuple((b.offset + skip - s.offset) // 4 if s is not None else 0
                  for s, (b, skip) in zip(rec.slots, blocks))
    if moved == rec.moved:
        return
    words = rec.words.astype(np.int64)
    lo, hi = len(words), 0
    for slot, n in zip(rec.slots, moved):
        if slot is not None and len(slot.positions):
            words[slot.positions] += slot.steps * n // SHIFT
            lo, hi = min(lo, int(slot.positions[0])), max(hi, int(slot.positions[-1]) + 1)
    if lo < hi:     # (in stream order: behind replays already encoded into the batch)
        gpu.write(rec.params_buf, lo * 4, (words[lo:hi] & 0xFFFFFFFF).astype(np.uint32))
    rec.moved = moved


def replay(gpu, rec):
    """Encode the recording's dispatches behind everything pending (stream order).

    They go to the GPU in chunks that double in size from the eager stream's submit_ops
    (then 2x, 4x, ... that; 0: one submit at the end), so the GPU starts on the first
    dispatches while the rest are encoded and submitted: a queue submit costs the host
    microseconds per dispatch it carries, and with one submit per replay the GPU waited
    for all of it (docs/perf/webgpu.md, "Where the compiled step's last milliseconds
    went"). A rest shorter than the chunk joins it, so a short program (a makemore step's
    44 dispatches) stays one submit. Ctrl-C is held for the whole replay, as for one op:
    a press never leaves a program half submitted."""
    calls, programs = rec.calls, rec.programs
    chunk = _replay_chunk(gpu) or len(calls)
    start = 0
    with gpu.guard:
        while start < len(calls):
            end = start + chunk
            if len(calls) - end < chunk:
                end = len(calls)
            _encode(gpu, calls, programs, start, end)
            if end < len(calls):
                gpu.flush()
                chunk *= 2
            start = end


def _replay_chunk(gpu):
    """The first chunk's dispatches (benchmarks: TORCHIC_WEBGPU_REPLAY_CHUNK)."""
    return _env_count(ENV_REPLAY_CHUNK, gpu.submit_ops)


def _encode(gpu, calls, programs, start, end):
    """Encode calls[start:end] into the open compute pass (replay holds gpu.guard)."""
    if gpu.replayed + end - start > gpu.batch_ops:
        gpu.flush()     # (a batch of bounded size)
    cpass = gpu.cpass
    if cpass is None:
        cpass = gpu._begin_pass()
    lib, raw = gpu._lib, cpass._internal
    set_pipeline = lib.wgpuComputePassEncoderSetPipeline
    set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
    dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
    last, profiling = None, gpu.profiling is not None
    for i in range(start, end):
        pipeline, bind_group, offset, (x, y, z) = calls[i]
        if profiling:                   # (benchmarks: each dispatch in a timed pass)
            raw, last = gpu._profiled_pass(programs[i])._internal, None
        if pipeline is not last:
            set_pipeline(raw, pipeline)
            last = pipeline
        set_bind_group(raw, 0, bind_group, 1, offset)
        dispatch(raw, x, y, z)
    gpu.replayed += end - start
    gpu.stats["dispatches"] += end - start


def release(gpu, rec):
    """Give the recording's tags and parameter buffer back."""
    release_tags(gpu, rec.tags)
    # (dropped, not destroyed: commands encoded or submitted hold their own references)
    rec.tags, rec.calls, rec.programs, rec.keep, rec.params_buf, rec.slots = \
        [], [], [], [], None, []


def release_tags(gpu, tags):
    for t in tags:
        gpu.fixed_tags.pop(t, None)
        gpu.free_fixed_tags.append(t)
