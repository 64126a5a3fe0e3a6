"""The heap allocator: a segregated free-list over byte offsets (no I/O).

Why this shape
--------------
Training repeats the same step over and over, so the same tensor sizes are
requested again and again. The fast path is therefore *exact recycling*:
every freed small block goes onto a LIFO bucket for its (rounded) size, and the
next request of that size pops it back in O(1): a dict lookup and a list pop.
LIFO keeps the most recently touched (cache-warm) block in use.

Large blocks (over ``small_max`` bytes) are rarer and big enough that
fragmentation matters, so they take the *coalescing path*: each arena keeps a
list of free ranges sorted by offset; a freed large block is merged with its
free neighbours, and a request takes the first range that fits (splitting off
the rest). Fresh small blocks are carved from the same ranges.

The heap is a list of arenas (one NumPy buffer or GPU buffer each, made by the
backend through the ``new_arena`` callback). When nothing fits, the allocator
first returns every bucketed block to the coalescing lists (so memory parked
in one size class can serve another), then asks for a new arena, and raises
``HeapFullError`` naming the requested / in-use / cap bytes when the cap
would be exceeded.

Blocks never move, so a block can be handed to a new tensor the moment it is
freed: the op stream runs every earlier reader before any later writer (see
``dispatcher.py``).

Threads and deferred frees
--------------------------
The allocator may be called from any thread; one lock guards it. A free can
arrive at any moment: a tensor's last reference may die inside the allocator
itself (the cyclic garbage collector runs on allocation), or on another
thread. So ``free`` only appends the block to a deque (one C call, atomic
under the GIL: ``free`` *is* that deque's append, so a tensor's death costs no
Python frame), and ``alloc`` and ``stats`` take the freed blocks back under
the lock first. A chain like ``x = x + b`` frees one tensor and asks for the
same size right after: when the only freed block has the requested size,
``alloc`` hands it straight back (the books are unchanged).

Ctrl-C: CPython raises a KeyboardInterrupt (and switches threads) only where a call
returns or a Python function starts. So a small block moves between ``_freed``, its
bucket and the caller with no call between its steps (``block = d[0]; del d[0]``, not
``d.popleft()``, whose return is such a point), or with the one call as the move's last step:
a press never leaves a block in two places, nor in none, nor the books half updated.
(A rarer path, a large block's range or a new arena's first block, can lose that block
to a press: a leak, never a block handed out twice.)
"""

import bisect
import collections
import threading

from .interrupts import sigint_held


class HeapFullError(MemoryError):
    """An allocation would take the heap past the cap set at ``init``."""


class Block:
    """A range of one arena: ``arena`` index, byte ``offset``, byte ``size``."""

    __slots__ = ("arena", "offset", "size", "__weakref__")

    def __init__(self, arena, offset, size):
        self.arena = arena
        self.offset = offset
        self.size = size

    def retire(self):
        """Called when the block's range goes back to the free lists: this Block object is
        never handed out again. A subclass (the dispatcher's HeapBlock) drops what the
        layers above cached on it."""

    def __repr__(self):
        return f"Block(arena={self.arena}, offset={self.offset}, size={self.size})"


def round_up(n, multiple):
    return (n + multiple - 1) // multiple * multiple


class Allocator:
    def __init__(self, new_arena, cap_bytes, arena_bytes=64 << 20, max_arena_bytes=None,
                 align=256, small_max=1 << 20, block_type=Block):
        """new_arena(nbytes) -> None is called to grow the heap by one arena.

        cap_bytes: the most the heap may hold in arenas together.
        arena_bytes: the usual arena size; a bigger request gets an arena of its own.
        max_arena_bytes: the largest arena the backend can make (a GPU binding limit).
        block_type: the Block class handed out (a subclass may carry caches of the layer
        above; the allocator only calls its retire()).
        """
        self._new_arena = new_arena
        self.block_type = block_type
        self.cap_bytes = int(cap_bytes)
        self.arena_bytes = int(arena_bytes)
        self.max_arena_bytes = int(max_arena_bytes or cap_bytes)
        self.align = int(align)
        if self.align <= 0 or self.align & (self.align - 1):
            raise ValueError(f"alignment must be a power of two, got {align}")
        self._align_mask = self.align - 1
        self.small_max = int(small_max)
        self.arena_sizes = []     # bytes of each arena
        self._free_ranges = []    # per arena: sorted list of [offset, size]
        self._buckets = {}        # rounded size -> list of free Blocks, LIFO
        self.in_use = 0
        self.peak = 0
        self.live_blocks = 0
        self.recycled = 0         # requests served from a bucket (O(1) path)
        self.fresh = 0            # requests carved from free ranges / new arenas
        self.lock = threading.Lock()
        self._freed = collections.deque()   # blocks given back, not taken back yet (the top)
        self.free = self._freed.append

    # -- public ---------------------------------------------------------------
    @property
    def capacity(self):
        return sum(self.arena_sizes)

    def alloc(self, nbytes):
        size = (nbytes + self._align_mask) & ~self._align_mask if nbytes > 0 else self.align
        with self.lock:
            freed = self._freed
            if freed:
                block = freed[0]
                if block is freed[-1] and block.size == size and size <= self.small_max:
                    del freed[0]         # freed and asked for again: straight back
                    self.recycled += 1
                    return block
                self._take_back()
            if size <= self.small_max:
                bucket = self._buckets.get(size)
                if bucket:   # the O(1) path: a block of exactly this size was freed before
                    block = bucket[-1]
                    del bucket[-1]
                    self.recycled += 1
                    self.in_use += size
                    self.live_blocks += 1
                    if self.in_use > self.peak:
                        self.peak = self.in_use
                    return block
            placed = self._carve(size)
            if placed is None:
                self._flush_buckets()
                placed = self._carve(size)
            if placed is None:
                placed = self._grow_and_carve(size, nbytes)
            self.fresh += 1
            return self._hand_out(placed[0], placed[1], size)

    def _take_back(self):
        """Return every freed block to its bucket or free range (under the lock)."""
        freed, buckets = self._freed, self._buckets
        while freed:             # oldest first: the last freed ends on top of its bucket
            block = freed[0]
            del freed[0]
            size = block.size
            self.in_use -= size
            self.live_blocks -= 1
            if size <= self.small_max:
                if size not in buckets:
                    buckets[size] = []
                buckets[size].append(block)   # (the move's last step; handed out as it is)
            else:
                block.retire()
                self._release_range(block.arena, block.offset, size)

    def discard_freed(self):
        """Forget blocks freed after the heap itself was closed."""
        self._freed.clear()

    def stats(self):
        with self.lock:
            self._take_back()
            return self._stats()

    def _stats(self):
        parked = sum(size * len(b) for size, b in self._buckets.items())
        return {
            "bytes_in_use": self.in_use,
            "peak_bytes": self.peak,
            "live_blocks": self.live_blocks,
            "heap_capacity": self.capacity,
            "heap_cap": self.cap_bytes,
            "arenas": len(self.arena_sizes),
            "bytes_in_buckets": parked,
            "recycled_allocs": self.recycled,
            "fresh_allocs": self.fresh,
        }

    def free_ranges(self):
        """(arena, offset, size) of every range not handed out (for tests)."""
        with self.lock:
            self._take_back()
            out = [(a, o, s) for a, ranges in enumerate(self._free_ranges) for o, s in ranges]
            out += [(b.arena, b.offset, b.size)
                    for bucket in self._buckets.values() for b in bucket]
        return out

    # -- internals --------------------------------------------------------------
    def _hand_out(self, arena, offset, size):
        self.in_use += size
        self.live_blocks += 1
        if self.in_use > self.peak:
            self.peak = self.in_use
        return self.block_type(arena, offset, size)

    def _carve(self, size):
        for arena, ranges in enumerate(self._free_ranges):
            for i, (offset, free) in enumerate(ranges):
                if free >= size:
                    if free == size:
                        del ranges[i]
                    else:
                        ranges[i] = [offset + size, free - size]
                    return arena, offset
        return None

    def _release_range(self, arena, offset, size):
        ranges = self._free_ranges[arena]
        i = bisect.bisect_left(ranges, [offset, 0])
        # merge with the following range
        if i < len(ranges) and offset + size == ranges[i][0]:
            size += ranges[i][1]
            del ranges[i]
        # merge with the preceding range
        if i > 0 and ranges[i - 1][0] + ranges[i - 1][1] == offset:
            ranges[i - 1][1] += size
        else:
            ranges.insert(i, [offset, size])

    def _flush_buckets(self):
        buckets, self._buckets = self._buckets, {}
        for entries in buckets.values():
            for b in entries:
                self._release_range(b.arena, b.offset, b.size)

    def _grow_and_carve(self, size, requested):
        room = self.cap_bytes - self.capacity
        if size > room:
            raise HeapFullError(
                f"heap cap exceeded: requested {requested} bytes, {self.in_use} bytes in use, "
                f"heap holds {self.capacity} of its cap of {self.cap_bytes} bytes "
                f"(raise it with torchic.init(heap_cap=...))")
        if size > self.max_arena_bytes:
            raise HeapFullError(
                f"cannot allocate {requested} bytes: larger than the backend's largest "
                f"buffer ({self.max_arena_bytes} bytes)")
        # the usual arena size, or what still fits under the cap / in one buffer
        arena_size = min(max(self.arena_bytes, size), self.max_arena_bytes, room)
        # Arena i here must be the backend's arena i: a Ctrl-C between making it and
        # recording it would shift every later arena by one (interrupts.py)
        with sigint_held:
            self._new_arena(arena_size)
            self.arena_sizes.append(arena_size)
            self._free_ranges.append([[0, arena_size]])
        return self._carve(size)
