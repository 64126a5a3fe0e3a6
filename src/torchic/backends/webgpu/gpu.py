"""The GPU side of the `webgpu` backend: device, heap buffers, programs, batched dispatch.

Why this shape
--------------
A Python call into wgpu costs microseconds and a queue submit ~70 us, while a
small model's training step issues a few dozen tiny ops. So nothing here talks
to the GPU per op except to *encode*:

* **One pending command encoder** (and one open compute pass) collects every
  dispatch. It is submitted when someone needs a result (``read`` / ``sync``),
  when a host write cannot be ordered inside the batch, and every ``submit_ops``
  eager dispatches (32; ``TORCHIC_WEBGPU_SUBMIT_OPS``, 0: never): a big model's
  step encodes hundreds of ops over tens of milliseconds of Python, and the GPU
  works through the submitted part meanwhile instead of waiting for the read at
  the end (H200, GPT step of 690 dispatches: 90.1 ms with one submit, 57.2 at 32,
  59.4 at 64, 67.0 at 128; docs/perf/webgpu.md).
* **Op parameters** (element offsets, shapes, strides) go into a host
  ``bytearray`` at a 256-byte slot per op; at submit the used part is written
  with one ``queue.write_buffer`` into a uniform buffer, which every program
  binds at a *dynamic offset*. Bind groups therefore depend only on which
  buffers an op touches, and are cached: in steady state an op costs
  set_pipeline + set_bind_group + dispatch.
* **Whole arenas are bound**, never sub-ranges; kernels index with element
  offsets from the parameters. int32 tensors live in the same buffers, bound
  a second time as ``array<i32>`` when an op needs them (native float16 ones
  as ``array<f16>``, their offsets in halves: ``GPU.storage`` / ``GPU.item``).
* **Reads** copy into one persistent staging buffer (grown on demand) together
  with the status words, submit, map, copy out, unmap. ``queue.read_buffer``
  (a new buffer + encoder + submit per call) is never used.
* **Host writes keep stream order**: ``queue.write_buffer`` lands *before* the
  next submitted command buffer, i.e. before ops already encoded but not yet
  submitted. So a write into the pending batch goes through an upload buffer
  (``write_buffer`` into a fresh region, then an encoded copy in op order);
  a write with nothing pending goes straight to its destination.
* **Index errors** (gather / scatter / cross-entropy targets): a kernel that
  finds an out-of-range value writes the op's tag into the status buffer;
  every read copies the status words out with the data and raises
  ``KernelError`` naming the first failing op. Ops after it still run. The int64
  rule's overflow flags (casts.py) use the same tags, of kind OverflowError.
"""

import os
import struct
import time

import numpy as np

from ...dispatcher import env_choice
from ...interrupts import sigint_held
from .device import F16_FEATURE, create_device, import_wgpu, select_adapter
from .wgsl import ITEMSIZE, MAX_TAGS, PARAM_WORDS, STATUS_WORDS, storage_table

UPLOAD_BYTES = 4 << 20
STAGING_MIN = 1 << 16
# the longest sleep between two polls of a read's wait, in seconds: a long wait notices the
# GPU's end within it (H200, compiled GPT step: 1 ms 39.06 ms a step, 200 us 38.69, 100 us
# 38.52, spinning 38.51, the host's CPU 6.0 / 7.4 / 7.4 / 38.8 ms a step)
NAP_MAX = 0.0001
STATUS_BYTES = 4 * STATUS_WORDS
FIXED_TAGS = 256       # of MAX_TAGS, kept for recorded programs (replay.py)
DATA_OFFSET = (STATUS_BYTES + 255) // 256 * 256   # read data follows the status in staging


def _env_count(name, default):
    """A non-negative int from environment variable `name` (default when unset)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise ValueError(f"environment variable {name} must be a count (0 or more), "
                         f"got {text!r}")
    return int(text)


class RawBlock:
    """A block of an internal buffer (upload / scratch), for ops the backend issues itself."""
    __slots__ = ("buffer", "offset", "arena")

    def __init__(self, buffer, offset):
        self.buffer = buffer
        self.offset = offset
        self.arena = None


class RawView:
    """A contiguous view of an internal buffer (same fields as dispatcher.View)."""
    __slots__ = ("block", "offset", "shape", "strides", "dtype")

    def __init__(self, buffer, byte_offset, shape, dtype):
        self.block = RawBlock(buffer, byte_offset)
        self.offset = 0
        self.shape = tuple(shape)
        strides, acc = [], 1
        for n in reversed(self.shape):
            strides.append(acc)
            acc *= n
        self.strides = tuple(reversed(strides))
        self.dtype = dtype


class Window:
    """A range of a heap arena bound on its own: arenas larger than one storage binding
    are bound in windows of at most GPU.window bytes (windows.py)."""
    __slots__ = ("buffer", "offset", "size", "__weakref__")

    def __init__(self, buffer, offset, size):
        self.buffer = buffer
        self.offset = offset
        self.size = size


class Program:
    __slots__ = ("key", "pipeline", "nbind", "source")

    def __init__(self, key, pipeline, nbind):
        self.key = key
        self.pipeline = pipeline
        self.nbind = nbind


class GPU:
    def __init__(self, adapter=None, batch_ops=None):
        # Ctrl-C is held back inside wgpu-py and across multi-step changes of our own
        # GPU state (interrupts.py says why): wgpu-py's and cffi's Python code is not
        # written for it (cffi's type parser takes its lock outside its ``try``; a map
        # callback interrupted halfway never resolves), and a compute pass begun but not
        # stored leaves the encoder locked. The per-op hot path calls wgpu-native's C
        # functions directly, and a read waits outside the guard (see _wait_mapped).
        self.guard = sigint_held
        with self.guard:
            self._setup(adapter, batch_ops)

    def _setup(self, adapter, batch_ops):
        wgpu = self.wgpu = import_wgpu()
        self.adapter = select_adapter(adapter)
        # the adapter's info read here, under the guard: a later read (the matmul tile
        # table's key) would run wgpu-py's Python property on the op path
        self.adapter_info = dict(self.adapter.info)
        self.device, self.features = create_device(self.adapter)
        # how each dtype code lies in memory on this device (wgsl.storage_table: float16
        # natively where the device has shader-f16) and its bytes an element: views'
        # element offsets are in those units
        self.storage = storage_table(F16_FEATURE in self.features)
        self.item = {code: ITEMSIZE[st] for code, st in self.storage.items()}
        self.queue = self.device.queue
        lim = dict(self.device.limits)
        self.limits = lim
        self.max_binding = min(int(lim["max-storage-buffer-binding-size"]),
                               int(lim["max-buffer-size"]))
        self.max_buffer = int(lim["max-buffer-size"]) // 256 * 256
        # heap arenas may be larger than one binding: they are bound in windows of at most
        # `window` bytes (windows.py); set_window lowers it for tests
        self.window = self.max_binding // 512 * 512
        self.big = []                 # per arena: larger than a window (bound in windows)
        self.arena_sizes = []
        self.any_big = False
        self._windows = {}            # (arena, byte offset, size) -> Window
        self.max_workgroup_storage = int(lim["max-compute-workgroup-storage-size"])
        self.max_groups = int(lim["max-compute-workgroups-per-dimension"])
        self.param_stride = max(256, int(lim["min-uniform-buffer-offset-alignment"]))
        self.batch_ops = int(batch_ops or 1024)
        self.submit_ops = _env_count("TORCHIC_WEBGPU_SUBMIT_OPS", 32)
        U = wgpu.BufferUsage
        self._storage_usage = U.STORAGE | U.COPY_SRC | U.COPY_DST
        self._serial = 0
        self._serials = {}            # id(buffer) -> serial (buffers kept alive in _keep)
        self._keep = []
        self.arenas = []
        self.params_buf = self._buffer(self.batch_ops * self.param_stride,
                                       U.UNIFORM | U.COPY_DST, "torchic-params")
        self.params_host = bytearray(self.batch_ops * self.param_stride)
        self.nparams = 0
        self.status = self._buffer(STATUS_BYTES, self._storage_usage, "torchic-status")
        self.upload = self._buffer(UPLOAD_BYTES, self._storage_usage, "torchic-upload")
        self.upload_used = 0
        self.staging = None
        self._grow_staging(STAGING_MIN)
        self.scratch = {}
        self.encoder = None
        self.cpass = None
        self.pipelines = {}
        self.plans = {}               # elementwise launch plans (elementwise.py)
        self._layouts = {}            # nbind -> (bind group layout, pipeline layout)
        self._bind_groups = {}
        self.tags = {}                # tag -> (op, message, error class) for checked dispatches
        self.shared_tags = {}         # (op, message, error class) -> its tag until the next read
        self.next_tag = 1
        # tags of recorded programs (replay.py) stay valid across reads: the top of the range
        self.fixed_tags = {}
        self.free_fixed_tags = list(range(MAX_TAGS - FIXED_TAGS, MAX_TAGS))
        self.capturing = None         # replay.capture's list while it collects dispatches
        self.capture_tags = {}        # ... and its shared tags (new_tag), while it does
        self.profiling = None         # profiled(): (query set, capacity, program keys)
        self.replayed = 0             # dispatches replayed into the pending batch
        self.failures = []            # (op, message) collected but not yet reported
        self._inflight = None         # (staging, size) of a read interrupted mid-wait
        self.stats = {"submits": 0, "dispatches": 0, "compiles": 0, "reads": 0,
                      "staging_grows": 0, "bind_groups": 0, "uploads_in_batch": 0,
                      "direct_writes": 0}
        self._query = None
        self.times = {"submit": 0.0, "wait": 0.0, "map": 0.0}
        # the per-dispatch hot path and the read wait call wgpu-native directly
        from wgpu.backends.wgpu_native._ffi import ffi, lib
        self._lib = lib
        self._ffi = ffi
        self.wait_mode = env_choice("TORCHIC_WEBGPU_WAIT", "auto", ("auto", "spin", "block"))
        self._offsets = ffi.new("uint32_t[1]")
        # Staging reads map through wgpu-native with a callback of one assignment; it
        # fires inside our polls, which run under the guard, so it always completes.
        result = self._map_result = [None]

        def on_mapped(status, message, userdata1, userdata2):
            result[0] = status
        self._map_callback = ffi.callback(
            "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)", on_mapped)
        self._map_info = ffi.new("WGPUBufferMapCallbackInfo *")
        self._map_info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        self._map_info.callback = self._map_callback

    # -- buffers ------------------------------------------------------------------
    def _buffer(self, size, usage, label):
        buf = self.device.create_buffer(size=int(size), usage=usage, label=label)
        self._serial += 1
        self._serials[id(buf)] = self._serial
        self._keep.append(buf)
        return buf

    def _drop(self, buf):
        self.flush()   # encoded commands may still name it
        self._serials.pop(id(buf), None)
        self._keep = [b for b in self._keep if b is not buf]
        # bind groups naming it die with it
        self._bind_groups = {k: v for k, v in self._bind_groups.items()
                             if buf not in v[1]}

    def set_window(self, nbytes):
        """Bind heap arenas in windows of at most nbytes (tests: a small fake binding limit)."""
        if self.arenas:
            raise RuntimeError("set_window: the heap already has arenas")
        self.window = max(4096, min(int(nbytes), self.max_binding) // 512 * 512)

    def new_arena(self, nbytes):
        if nbytes > self.max_buffer:
            raise MemoryError(f"arena of {nbytes} bytes exceeds the adapter's largest buffer "
                              f"({self.max_buffer} bytes)")
        with self.guard:
            self.arenas.append(self._buffer(nbytes, self._storage_usage,
                                            f"torchic-arena-{len(self.arenas)}"))
            self.arena_sizes.append(nbytes)
            self.big.append(nbytes > self.window)
            self.any_big = self.any_big or nbytes > self.window

    def window_buffer(self, arena, offset, size):
        """The Window (a bindable range) of arena bytes [offset, offset + size)."""
        key = (arena, offset, size)
        win = self._windows.get(key)
        if win is None:
            if len(self._windows) > 4096:     # (their bind groups stay cached)
                self._windows = {}
            win = self._windows[key] = Window(self.arenas[arena], offset, size)
            self._serial += 1
            self._serials[id(win)] = self._serial
        return win

    def scratch_buffer(self, name, nbytes):
        """An internal storage buffer of at least nbytes (reused across ops in stream order)."""
        buf, size = self.scratch.get(name, (None, 0))
        if size < nbytes:     # (sizes are kept here: buf.size is wgpu-py code, unguarded)
            size = max(1 << 16, 1 << (int(nbytes) - 1).bit_length())
            size = min(size, self.max_binding)
            if size < nbytes:
                raise MemoryError(f"scratch buffer of {nbytes} bytes exceeds the adapter's "
                                  f"largest storage binding")
            with self.guard:
                if buf is not None:
                    self._drop(buf)
                buf = self._buffer(size, self._storage_usage, f"torchic-{name}")
                self.scratch[name] = (buf, size)
        return buf

    def _grow_staging(self, nbytes):
        size = max(STAGING_MIN, 1 << (int(nbytes) - 1).bit_length())
        with self.guard:
            if self.staging is not None:
                self._drop(self.staging)
                self.stats["staging_grows"] += 1
            U = self.wgpu.BufferUsage
            self.staging = self._buffer(size, U.MAP_READ | U.COPY_DST, "torchic-staging")

    # -- programs -----------------------------------------------------------------
    def _layout(self, nbind):
        lay = self._layouts.get(nbind)
        if lay is None:
            S = self.wgpu.ShaderStage.COMPUTE
            entries = [{"binding": i, "visibility": S, "buffer": {"type": "storage"}}
                       for i in range(nbind)]
            entries.append({"binding": nbind, "visibility": S,
                            "buffer": {"type": "uniform", "has_dynamic_offset": True,
                                       "min_binding_size": PARAM_WORDS * 4}})
            entries.append({"binding": nbind + 1, "visibility": S,
                            "buffer": {"type": "storage"}})
            bgl = self.device.create_bind_group_layout(entries=entries)
            pl = self.device.create_pipeline_layout(bind_group_layouts=[bgl])
            lay = self._layouts[nbind] = (bgl, pl)
        return lay

    def program(self, key, build):
        """The cached pipeline for ``key``; ``build()`` -> (wgsl, nbind) makes it once."""
        prog = self.pipelines.get(key)
        if prog is None:
            code, nbind = build()
            with self.guard:
                module = self.device.create_shader_module(code=code, label=str(key)[:200])
                pipeline = self.device.create_compute_pipeline(
                    layout=self._layout(nbind)[1],
                    compute={"module": module, "entry_point": "main"}, label=str(key)[:200])
                prog = self.pipelines[key] = Program(key, pipeline, nbind)
                prog.source = code
                self.stats["compiles"] += 1
        return prog

    # -- encoding -----------------------------------------------------------------
    def _encoder(self):
        if self.encoder is None:
            with self.guard:
                self.encoder = self.device.create_command_encoder()
        return self.encoder

    def _begin_pass(self):
        with self.guard:
            self.cpass = self._encoder().begin_compute_pass()
        return self.cpass

    def _end_pass(self):
        if self.cpass is not None:
            with self.guard:
                self.cpass.end()
                self.cpass = None

    def _bind_group(self, nbind, bufs):
        key = (nbind,) + tuple(self._serials[id(b)] for b in bufs)
        hit = self._bind_groups.get(key)
        if hit is None:
            bg = self.new_bind_group(nbind, bufs, self.params_buf)
            hit = self._bind_groups[key] = (bg, tuple(bufs))
        return hit[0]

    def new_bind_group(self, nbind, bufs, params_buf):
        """A bind group of bufs, a parameter buffer (bound at dynamic offsets) and the status."""
        with self.guard:    # (b.size is wgpu-py code too)
            entries = [{"binding": i, "resource": (
                           {"buffer": b.buffer, "offset": b.offset, "size": b.size}
                           if type(b) is Window else
                           {"buffer": b, "offset": 0, "size": b.size})}
                       for i, b in enumerate(bufs)]
            entries.append({"binding": nbind, "resource": {"buffer": params_buf, "offset": 0,
                                                           "size": PARAM_WORDS * 4}})
            entries.append({"binding": nbind + 1, "resource": {"buffer": self.status,
                                                               "offset": 0,
                                                               "size": STATUS_BYTES}})
            self.stats["bind_groups"] += 1
            return self.device.create_bind_group(layout=self._layout(nbind)[0],
                                                 entries=entries)

    def dispatch(self, prog, bufs, words, groups):
        """Encode one dispatch of prog over bufs with parameter words (u32 ints)."""
        if self.capturing is not None:      # (replay.capture: collected, not encoded)
            self.capturing.append((prog, tuple(bufs), tuple(words), tuple(groups)))
            return
        if self.nparams >= self.batch_ops:
            self.flush()
        off = self.nparams * self.param_stride
        try:
            struct.pack_into(f"<{len(words)}I", self.params_host, off, *words)
        except struct.error:   # a negative word: store its two's complement
            struct.pack_into(f"<{len(words)}I", self.params_host, off,
                             *[w & 0xFFFFFFFF for w in words])
        self.nparams += 1
        bg = self._bind_group(prog.nbind, bufs)
        cpass = self.cpass
        if self.profiling is not None:
            cpass = self._profiled_pass(prog)
        elif cpass is None:
            cpass = self._begin_pass()
        # Straight into wgpu-native: wgpu-py's wrappers (error scopes, keep-alive lists,
        # a fresh offsets array per call) cost more than the encoding itself. The pass
        # holds its own references to the pipeline and bind group; both also stay in
        # our caches. Validation errors still surface at encoder.finish().
        lib, raw = self._lib, cpass._internal
        lib.wgpuComputePassEncoderSetPipeline(raw, prog.pipeline._internal)
        self._offsets[0] = off
        lib.wgpuComputePassEncoderSetBindGroup(raw, 0, bg._internal, 1, self._offsets)
        lib.wgpuComputePassEncoderDispatchWorkgroups(raw, *groups)
        self.stats["dispatches"] += 1
        if self.nparams == self.submit_ops:     # (the GPU starts on them: see the header)
            self.flush()

    def new_tag(self, op, message, error=IndexError, shared=False):
        """The status tag a checked dispatch flags (its failure raises `error`(message),
        "{bad}" in message the flagged value, naming op). `shared`: one tag for every such
        (op, message, error) until the next read (the int64 rule's overflow checks: one
        flag per op name is all the error says, and the tags last longer)."""
        entry = (op, message, error)
        if self.capturing is not None:      # a recorded program's tag lives as long as it
            if shared and entry in self.capture_tags:   # (one capture's: replay._collect)
                return self.capture_tags[entry]
            if not self.free_fixed_tags:
                raise RuntimeError("no fixed tag left for a recorded program")
            tag = self.free_fixed_tags.pop()
            self.fixed_tags[tag] = entry
            if shared:
                self.capture_tags[entry] = tag
            return tag
        if shared:
            tag = self.shared_tags.get(entry)
            if tag is not None:
                return tag
        if self.next_tag >= MAX_TAGS - FIXED_TAGS:   # collect the flags, then start anew
            self.read(self.status, 0, 0)
        tag = self.next_tag
        self.next_tag += 1
        self.tags[tag] = entry
        if shared:
            self.shared_tags[entry] = tag
        return tag

    def pending(self):
        return self.encoder is not None

    def flush(self):
        """Submit the pending batch (no wait)."""
        enc = self.encoder
        if enc is None:
            return
        with self.guard:
            nparams = self.nparams
            self.encoder = None
            self.nparams = self.replayed = 0
            self.upload_used = 0
            try:
                self._end_pass()
            finally:
                self.cpass = None
            if nparams:
                self.queue.write_buffer(self.params_buf, 0, self.params_host, 0,
                                        nparams * self.param_stride)
            self.queue.submit([enc.finish()])
            self.stats["submits"] += 1
            del enc     # its last reference: released here, under the guard

    # -- host transfers -------------------------------------------------------------
    def write(self, buf, offset, data):
        """Copy bytes (a contiguous NumPy array) to buf[offset:], in stream order."""
        nbytes = data.nbytes
        if nbytes == 0:
            return
        with self.guard:
            if self.encoder is None:
                self.queue.write_buffer(buf, offset, data)
                self.stats["direct_writes"] += 1
                return
            if nbytes <= UPLOAD_BYTES - self.upload_used:
                at = self.upload_used
                self.queue.write_buffer(self.upload, at, data)
                self._end_pass()
                self.encoder.copy_buffer_to_buffer(self.upload, at, buf, offset, nbytes)
                self.upload_used = (at + nbytes + 255) // 256 * 256
                self.stats["uploads_in_batch"] += 1
                return
            self.flush()
            self.queue.write_buffer(buf, offset, data)
            self.stats["direct_writes"] += 1

    def stage_upload(self, data):
        """Put data into the upload buffer for an op of the pending batch -> (buffer, byte offset)."""
        nbytes = data.nbytes
        with self.guard:
            if nbytes > UPLOAD_BYTES - self.upload_used:
                self.flush()
                if nbytes > self.upload.size:
                    buf = self.scratch_buffer("big-upload", nbytes)
                    self.queue.write_buffer(buf, 0, data)
                    return buf, 0
            at = self.upload_used
            if nbytes:
                self.queue.write_buffer(self.upload, at, data)
            self.upload_used = (at + nbytes + 255) // 256 * 256
            self._encoder()     # the op that consumes it joins this batch
            return self.upload, at

    def read(self, buf, offset, nbytes):
        """Submit everything, wait, and return the bytes of buf[offset:offset+nbytes]; the
        failures the status words flag join ``failures`` (see ``take_failures``).

        Ctrl-C is held back everywhere but in the wait itself. A read interrupted there
        leaves its map in flight (``_inflight``); the next read first finishes it and
        keeps its status words, so no kernel error is lost."""
        if self._inflight is not None:
            self._finish_interrupted_read()
        need = DATA_OFFSET + nbytes
        size = (need + 3) // 4 * 4
        with self.guard:
            if need > self.staging.size:
                self._grow_staging(need)
            enc = self._encoder()
            self._end_pass()
            staging = self.staging
            enc.copy_buffer_to_buffer(self.status, 0, staging, 0, STATUS_BYTES)
            enc.clear_buffer(self.status, 0, STATUS_BYTES)
            if nbytes:
                enc.copy_buffer_to_buffer(buf, offset, staging, DATA_OFFSET, nbytes)
            t0 = time.perf_counter()
            self.flush()
            del enc     # (the encoder is released under the guard, see flush)
            t1 = time.perf_counter()
            self._map_result[0] = None
            self._lib.wgpuBufferMapAsync(staging._internal, self._lib.WGPUMapMode_Read, 0, size,
                                         self._map_info[0])
            self._inflight = (staging, size)
        mapped = self._wait_mapped(staging)     # Ctrl-C here leaves the read in flight
        t2 = time.perf_counter()
        with self.guard:
            self._inflight = None
            status, data = self._take_mapped(staging, size, nbytes, mapped)
            self.failures.extend(self._decode(status))
        t3 = time.perf_counter()
        self.times["submit"] += t1 - t0
        self.times["wait"] += t2 - t1
        self.times["map"] += t3 - t2
        self.stats["reads"] += 1
        return data

    def _finish_interrupted_read(self):
        """Wait for the map of a read that Ctrl-C interrupted; keep its failures."""
        staging, size = self._inflight
        mapped = self._wait_mapped(staging)
        with self.guard:
            self._inflight = None
            status, _ = self._take_mapped(staging, size, 0, mapped)
            # ops encoded since then hold tags of their own: keep those
            self.failures.extend(self._decode(status, reset=False))

    def _wait_mapped(self, staging):
        """Poll wgpu-native until the staging buffer's map is done -> mapped (bool).

        A blocking ``wgpuDevicePoll(wait=True)`` returns milliseconds after the GPU
        is done (docs/perf/webgpu.md), so we poll ourselves: we spin for the first
        half millisecond (most small-model reads finish there), then back off with
        sleeps of up to NAP_MAX so a long wait (a big matmul; lavapipe, which runs on the same
        CPU cores) doesn't burn a core. Ctrl-C is held back only inside each poll
        (where the map callback runs), so a press ends the wait within one poll.
        """
        raw, poll, null = self.device._internal, self._lib.wgpuDevicePoll, self._ffi.NULL
        done, guard = self._map_result, self.guard
        block = self.wait_mode == "block"
        spin_for = 1e9 if self.wait_mode == "spin" else 0.0005
        t0 = time.perf_counter()
        nap = 0.0
        while done[0] is None:
            with guard:
                poll(raw, block, null)
            if done[0] is not None:
                break
            if nap:
                time.sleep(nap)
                nap = min(nap * 2, NAP_MAX)
            elif time.perf_counter() - t0 > spin_for:
                nap = 0.00005
        return done[0] == self._lib.WGPUMapAsyncStatus_Success

    def _take_mapped(self, staging, size, nbytes, mapped):
        """Copy the status words and nbytes of data out of the mapped staging buffer."""
        if not mapped:
            raise RuntimeError("webgpu: the staging buffer could not be mapped for a read "
                               "(the device was lost?)")
        lib, ffi, raw = self._lib, self._ffi, staging._internal
        try:
            ptr = ffi.cast("uint8_t *", lib.wgpuBufferGetConstMappedRange(raw, 0, size))
            mem = ffi.buffer(ptr, size)
            status = np.frombuffer(mem, np.uint32, STATUS_WORDS, 0).copy()
            data = np.frombuffer(mem, np.uint8, nbytes, DATA_OFFSET).copy()
        finally:
            lib.wgpuBufferUnmap(raw)
        return status, data

    def _decode(self, status, reset=True):
        """[(op, message, error class)] of every flagged tag, in issue order; then (reset)
        the tags start anew: every op issued so far has been read."""
        out = []
        bits = status[:32]
        for w in np.flatnonzero(bits):
            word = int(bits[w])
            for b in range(32):
                if word >> b & 1:
                    tag = int(w) * 32 + b
                    op, msg, error = self.tags.pop(tag, None) or self.fixed_tags.get(
                        tag, ("?", "index {bad} out of range", IndexError))
                    bad = int(status[32 + tag])
                    out.append((op, msg.format(bad=bad - (1 << 32) if bad >= 1 << 31 else bad),
                                error))
        if reset:
            self.tags.clear()
            self.shared_tags.clear()
            self.next_tag = 1
        return out

    def take_failures(self):
        """Every (op, message, error class) failed up to the last read (index errors, int64
        overflows), in issue order."""
        failed, self.failures = self.failures, []
        return failed

    # -- GPU timestamps (benchmarks) ----------------------------------------------------
    def has_timestamps(self):
        return "timestamp-query" in self.features

    def profiled(self, fn, capacity=2048):
        """Run fn() with each of its first `capacity` dispatches in a compute pass of its own
        between two GPU timestamps: [(program key, GPU ns)] in dispatch order (a per-kernel
        profile for benchmarks; the passes cost some time between kernels, not in them)."""
        with self.guard:
            self.flush()
            qs = self.device.create_query_set(type="timestamp", count=2 * capacity)
            self.profiling = (qs, capacity, [])
        try:
            fn()
        finally:
            with self.guard:
                keys = self.profiling[2]
                self.profiling = None
                self.flush()
        if not keys:
            qs.destroy()
            return []
        U = self.wgpu.BufferUsage
        with self.guard:
            qbuf = self._buffer(16 * len(keys), U.QUERY_RESOLVE | U.COPY_SRC, "torchic-profile")
            enc = self.device.create_command_encoder()
            enc.resolve_query_set(qs, 0, 2 * len(keys), qbuf, 0)
            self.queue.submit([enc.finish()])
        try:
            ts = np.frombuffer(self.read(qbuf, 0, 16 * len(keys)).tobytes(), np.uint64)
        finally:     # given back now (not left to the garbage collector)
            with self.guard:
                self._drop(qbuf)
                qbuf.destroy()
                qs.destroy()
        period = float(self._lib.wgpuQueueGetTimestampPeriod(self.queue._internal))
        return [(k, float(int(ts[2 * i + 1]) - int(ts[2 * i])) * period)
                for i, k in enumerate(keys)]

    def _profiled_pass(self, prog):
        qs, capacity, keys = self.profiling
        self._end_pass()
        if len(keys) >= capacity:
            return self._begin_pass()
        with self.guard:
            self.cpass = self._encoder().begin_compute_pass(timestamp_writes={
                "query_set": qs, "beginning_of_pass_write_index": 2 * len(keys),
                "end_of_pass_write_index": 2 * len(keys) + 1})
        keys.append(prog.key)
        return self.cpass

    def timed(self, fn):
        """Run fn() (which encodes ops) inside one compute pass between GPU timestamps.

        Returns GPU nanoseconds. fn must not read or exceed batch_ops.
        """
        with self.guard:
            if self._query is None:
                U = self.wgpu.BufferUsage
                self._query = (self.device.create_query_set(type="timestamp", count=2),
                               self._buffer(16, U.QUERY_RESOLVE | U.COPY_SRC, "torchic-ts"))
            qs, qbuf = self._query
            self.flush()
            enc = self._encoder()
            self.cpass = enc.begin_compute_pass(timestamp_writes={
                "query_set": qs, "beginning_of_pass_write_index": 0,
                "end_of_pass_write_index": 1})
        submits, streaming = self.stats["submits"], self.submit_ops
        self.submit_ops = 0          # (one pass, one submit)
        try:
            fn()
        finally:
            self.submit_ops = streaming
        if self.stats["submits"] != submits or self.encoder is not enc:
            raise RuntimeError("timed section was split by a submit (too many ops)")
        with self.guard:
            self._end_pass()
            enc.resolve_query_set(qs, 0, 2, qbuf, 0)
            del enc
        data = self.read(qbuf, 0, 16)
        t0, t1 = np.frombuffer(data.tobytes(), np.uint64)
        period = self._lib.wgpuQueueGetTimestampPeriod(self.queue._internal)
        return float(int(t1) - int(t0)) * float(period)

    def close(self):
        with self.guard:
            self._close()

    def _close(self):
        try:
            self._end_pass()
            self.encoder = None
        except Exception:
            pass
        for b in self._keep:
            try:
                b.destroy()
            except Exception:
                pass
        self._keep = []
        self._serials = {}
        self.arenas = []
        self._windows = {}
        self._bind_groups = {}
        self.pipelines = {}
        try:
            self.device.destroy()
        except Exception:
            pass
