"""The CPU heap: arenas of host memory (NumPy byte buffers) and views onto them."""

import numpy as np

from ...dispatcher import DTYPES
from ...interrupts import sigint_held

# 64-byte alignment inside an arena is enough for AVX-512 loads; blocks are
# 256-byte aligned by the allocator anyway (the same rule as the GPU heap).
ARENA_ALIGN = 64


class HostHeap:
    def __init__(self):
        self.arenas = []     # NumPy uint8 arrays, aligned to ARENA_ALIGN
        self.addresses = []  # raw address of each arena (for native kernels)

    def new_arena(self, nbytes):
        raw = np.zeros(nbytes + ARENA_ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % ARENA_ALIGN
        arena = raw[start:start + nbytes]
        address = arena.ctypes.data
        with sigint_held:   # both lists, or neither: index i is one arena in each
            self.arenas.append(arena)
            self.addresses.append(address)

    def array(self, view):
        """A NumPy array aliasing the view's memory (no copy), cached on the view."""
        cached = view.resolved
        if cached is not None:
            return cached
        dtype = DTYPES[view.dtype]
        item = dtype.itemsize
        block = view.block
        arr = view.resolved = np.ndarray(view.shape, dtype, self.arenas[block.arena],
                                         block.offset + view.offset * item,
                                         tuple(s * item for s in view.strides))
        return arr

    def alias(self, view):
        """A new NumPy array over the view's memory (no copy, strides included; its base is
        the arena, which it keeps alive): what DLPack export hands out."""
        item = DTYPES[view.dtype].itemsize
        block = view.block
        return np.ndarray(view.shape, DTYPES[view.dtype], self.arenas[block.arena],
                          block.offset + view.offset * item,
                          tuple(s * item for s in view.strides))

    def address(self, view):
        """Byte address of the view's first element."""
        return (self.addresses[view.block.arena] + view.block.offset
                + view.offset * DTYPES[view.dtype].itemsize)

    def close(self):
        self.arenas.clear()
        self.addresses.clear()
