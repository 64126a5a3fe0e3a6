"""Fixtures for the webgpu-specific tests (adapter, batching, caches, matmul edges).

They run on whatever adapter wgpu picks (Mesa's lavapipe on the CI machine, which
is slow: keep every problem small). Without an adapter they skip, unless
TORCHIC_REQUIRE_ALL_BACKENDS=1 (CI), where a missing adapter is a failure.
"""

import os

import numpy as np
import pytest

import torchic
from torchic import dispatcher
from torchic.dispatcher import View

REQUIRE_ALL = os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1"


def _require_webgpu():
    ok, why = dispatcher.backend_class("webgpu").available()
    if not ok:
        if REQUIRE_ALL:
            pytest.fail(f"backend 'webgpu' is required but unavailable: {why}")
        pytest.skip(f"backend 'webgpu' unavailable: {why}")


@pytest.fixture
def rt():
    """A fresh webgpu runtime for one test."""
    _require_webgpu()
    runtime = torchic.init("webgpu")
    yield runtime
    try:
        runtime.sync()
    finally:
        torchic.shutdown()


@pytest.fixture
def webgpu_available():
    _require_webgpu()


class Heap:
    """Tensors as raw views of one runtime's heap: rt.alloc + View, filled from NumPy."""

    def __init__(self, runtime):
        self.rt = runtime

    def put(self, array, dtype=None):
        array = np.ascontiguousarray(array)
        dtype = dtype or ("i32" if array.dtype.kind in "iu" else "f32")
        array = array.astype(np.int32 if dtype == "i32" else np.float32)
        blk = self.rt.alloc(max(array.nbytes, 4))
        v = View(blk, 0, array.shape, c_strides(array.shape), dtype)
        self.rt.write(v, array)
        return v

    def empty(self, shape, dtype="f32"):
        blk = self.rt.alloc(max(4 * int(np.prod(shape)), 4))
        return View(blk, 0, tuple(shape), c_strides(shape), dtype)


def c_strides(shape):
    strides, acc = [], 1
    for n in reversed(tuple(shape)):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


@pytest.fixture
def heap(rt):
    return Heap(rt)
