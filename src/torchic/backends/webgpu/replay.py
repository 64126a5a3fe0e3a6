"""Prepared replay of a recorded program (torchic.compile) on the GPU.

An eager op costs Python work before it reaches the GPU: the kernel's launch plan,
its parameter words packed into the batch's uniform slots, a bind group looked up.
A recorded program issues the same dispatches every call, so `capture` runs its
kernels once with the GPU collecting the dispatches instead of encoding them, and
freezes them: the parameter words of every dispatch go into a uniform buffer of the
program's own (written once), each dispatch gets a bind group naming that buffer,
and a dynamic offset into it. `replay` then encodes the whole program into the open
compute pass as three wgpu-native calls per dispatch (set pipeline, set bind group,
dispatch), with no uniform upload.

Index-checked kernels (gather, scatter, cross-entropy targets) get fixed status tags
(gpu.FIXED_TAGS) while captured: a replay's failure is reported like an eager one.
"""

import struct

from .gpu import PARAM_WORDS


class Recording:
    """A program's frozen dispatches: [(pipeline, bind group, offset array, groups)]."""

    __slots__ = ("calls", "params_buf", "tags", "keep")

    def __init__(self, calls, params_buf, tags, keep):
        self.calls = calls
        self.params_buf = params_buf
        self.tags = tags
        self.keep = keep          # the wgpu objects the raw handles in calls belong to


def capture(gpu, issue):
    """Run issue() (which issues kernels) collecting its dispatches -> a Recording, or None
    when there is nothing to capture or issue() raised."""
    if gpu.capturing is not None:
        return None
    tags_before = set(list(gpu.fixed_tags))
    gpu.capturing = dispatches = []
    try:
        issue()
    except Exception:
        dispatches = None
    finally:
        gpu.capturing = None
    tags = [t for t in list(gpu.fixed_tags) if t not in tags_before]
    if not dispatches:
        release_tags(gpu, tags)
        return None
    stride = gpu.param_stride
    words = bytearray(len(dispatches) * stride)
    for i, (_, _, w, _) in enumerate(dispatches):
        struct.pack_into(f"<{len(w)}I", words, i * stride, *[x & 0xFFFFFFFF for x in w])
    with gpu.guard:
        U = gpu.wgpu.BufferUsage
        params_buf = gpu.device.create_buffer(size=len(words), usage=U.UNIFORM | U.COPY_DST,
                                              label="torchic-program-params")
        gpu.queue.write_buffer(params_buf, 0, words)
    bind_groups, calls, keep = {}, [], [params_buf]
    for i, (prog, bufs, _, groups) in enumerate(dispatches):
        key = (prog.nbind,) + tuple(id(b) for b in bufs)
        bg = bind_groups.get(key)
        if bg is None:
            bg = bind_groups[key] = gpu.new_bind_group(prog.nbind, bufs, params_buf)
            keep.append((bg, bufs))
        offset = gpu._ffi.new("uint32_t[1]", [i * stride])
        keep.append((prog.pipeline, offset))
        calls.append((prog.pipeline._internal, bg._internal, offset, groups))
    assert PARAM_WORDS * 4 <= stride
    return Recording(calls, params_buf, tags, keep)


def replay(gpu, rec):
    """Encode the recording's dispatches behind everything pending (stream order)."""
    with gpu.guard:
        if gpu.replayed + len(rec.calls) > gpu.batch_ops:
            gpu.flush()     # (a batch of bounded size: the GPU starts while we encode on)
        cpass = gpu.cpass
        if cpass is None:
            cpass = gpu._begin_pass()
        lib, raw = gpu._lib, cpass._internal
        set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        last = None
        for pipeline, bind_group, offset, (x, y, z) in rec.calls:
            if pipeline is not last:
                set_pipeline(raw, pipeline)
                last = pipeline
            set_bind_group(raw, 0, bind_group, 1, offset)
            dispatch(raw, x, y, z)
        gpu.replayed += len(rec.calls)
        gpu.stats["dispatches"] += len(rec.calls)


def release(gpu, rec):
    """Give the recording's tags and parameter buffer back."""
    release_tags(gpu, rec.tags)
    # (dropped, not destroyed: commands encoded or submitted hold their own references)
    rec.tags, rec.calls, rec.keep, rec.params_buf = [], [], [], None


def release_tags(gpu, tags):
    for t in tags:
        gpu.fixed_tags.pop(t, None)
        gpu.free_fixed_tags.append(t)
