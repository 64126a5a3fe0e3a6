"""raw.new_tensor: a fresh contiguous tensor, made by Storage and Tensor._make (the one
constructor), reusing a recycled block's View only when the layout is the same."""

import numpy as np

from torchic import raw
from torchic.tensor import Storage, Tensor


def _fields(obj):
    return {name: getattr(obj, name) for name in type(obj).__slots__ if name != "__weakref__"}


def test_new_tensor_has_the_fields_make_gives(backend):
    t = raw.new_tensor((3, 4))
    ref_storage = Storage(t._storage.runtime, t._storage.block)
    assert _fields(t._storage) == _fields(ref_storage)
    ref_storage.block = None      # (not ours to free)
    ref = Tensor._make(t._storage, 0, (3, 4), (4, 1), "f32")
    fields, want = _fields(t), _fields(ref)
    assert fields.pop("_view") is not None and want.pop("_view") is None
    assert fields == want


def test_new_tensor_view_is_reused_only_for_the_same_layout(backend):
    t = raw.new_tensor((8, 8))
    v = t._view
    assert (v.block, v.offset, v.shape, v.strides, v.dtype) == \
        (t._storage.block, 0, (8, 8), (8, 1), "f32")
    block = t._storage.block
    del t
    u = raw.new_tensor((8, 8))          # the same block comes back, and its View with it
    assert u._storage.block is block and u._view is v
    del u
    w = raw.new_tensor((64,))           # same bytes, another layout: a new View
    assert w._storage.block is block and w._view is not v and w._view.shape == (64,)
    raw.write(w, np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(raw.read(w), np.arange(64))
