"""Fixtures for the simd backend's own tests: a runtime and a view harness.

These tests drive the backend directly (dispatcher.init + View + run/read),
below the Tensor frontend, so that each kernel is tested against NumPy with
exactly the operand layouts we choose (transposed, sliced, stride 0, offsets).
"""

import os

import numpy as np
import pytest

from torchic import dispatcher
from torchic.dispatcher import DTYPES, ITEMSIZE, View

REQUIRE_ALL = os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1"


def _simd_available():
    cls = dispatcher.backend_class("simd")
    return cls.available()


@pytest.fixture(scope="session")
def simd_ok():
    ok, why = _simd_available()
    if not ok:
        if REQUIRE_ALL:
            pytest.fail(f"the simd backend is required but unavailable: {why}")
        pytest.skip(f"simd backend unavailable: {why}")
    return True


class Harness:
    """Puts NumPy arrays into the heap under any layout and runs ops on them."""

    def __init__(self, rt):
        self.rt = rt

    def empty(self, shape, dtype="f32"):
        n = int(np.prod(shape)) if len(shape) else 1
        blk = self.rt.alloc(max(n, 1) * max(ITEMSIZE[dtype], 4))
        strides = tuple(int(s) for s in np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1])
        return View(blk, 0, tuple(shape), strides, dtype)

    def put(self, x, layout="contiguous", dtype=None):
        """A view holding x (values), laid out as: contiguous | transposed | strided | offset."""
        x = np.asarray(x)
        dt = dtype or ("i32" if x.dtype.kind in "iu" else "f32")
        x = x.astype(DTYPES[dt])
        if layout == "contiguous" or x.ndim == 0:
            v = self.empty(x.shape, dt)
            self.rt.write(v, x)
            return v
        if layout == "transposed":
            base = self.put(np.ascontiguousarray(np.transpose(x)), dtype=dt)
            return View(base.block, 0, x.shape, tuple(reversed(base.strides)), dt)
        if layout == "strided":   # every other element of the last axis, at an offset
            big = np.zeros(x.shape[:-1] + (2 * x.shape[-1] + 3,), x.dtype)
            big[..., 3::2] = x
            base = self.put(big, dtype=dt)
            st = list(base.strides)
            st[-1] *= 2
            return View(base.block, 3, x.shape, tuple(st), dt)
        raise ValueError(layout)

    def view(self, base, offset, shape, strides):
        return View(base.block, offset, tuple(shape), tuple(strides), base.dtype)

    def run(self, op, out, *inputs, **params):
        self.rt.run(op, out, tuple(inputs), params)
        return self.rt.read(out)


@pytest.fixture(scope="module")
def rt(simd_ok):
    rt = dispatcher.init("simd", threads=2)
    yield rt
    if dispatcher._runtime is rt:
        dispatcher.shutdown()


@pytest.fixture
def h(rt):
    return Harness(rt)
