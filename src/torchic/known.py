"""Host-known values of integer tensors: `int(i)`, `i.item()` and `t[i:i + 8]` of a 0-d
integer tensor without a sync or a read (issue 45, eager small programs).

A heap block may carry `known = (code, offset, values)`: the block's elements of dtype
`code` at element offsets offset, offset + 1, ... are `values` (Python ints) as of the last
op issued. Stream order makes that exact: whatever writes the block is issued later, and
every way a block is written forgets what is known of it when the write is issued:

* each backend's `run` (the op's output block, and the inputs of ops that write in place:
  ops.WRITES) and `write` (host -> heap); a compiled program's replay (recording.py: every
  block its records touch, and the caller's argument and output blocks it runs on);
* a block whose memory NumPy aliases (`host_array`: DLPack, `np.asarray(t, copy=False)`,
  the collectives' and DistributedDataParallel's host views) is `shared`: nothing is known
  of it while that storage lives (the alias holds it);
* a new Storage starts with nothing known, and a freed block forgets.

Values become known three ways: a read of one element reads up to WINDOW elements of its
block from there (iterating a small integer tensor reads it once, not once per element);
creation's host write of a small integer array into a new tensor (`torch.tensor`,
`randint`) remembers it, when the array is of the tensor's dtype (what a backend cannot
store, its write refuses); an add / sub / mul of a known 0-d integer tensor with a Python
int or another known one runs no kernel when the result lies in what the result's dtype
and the backend's storage of it hold (Runtime.int_ranges: webgpu keeps int64 in 32-bit
words; outside, the kernel runs, and wraps or raises): the result is a tensor.HostScalar,
its value on the host, its block allocated and written only when something needs the
memory (most such results are only slice bounds: `data[i:i + 8]`). Nothing is known or
used while torchic.compile records a call (a replay runs no Python: a value seen while
recording must not steer it; a read there stays the recorder's CompileError).

Threads: an entry is set on a new tensor's block (no other thread has it yet), or, for a
read, before the read is issued, naming a list filled after it: a write another thread
issues meanwhile forgets the entry, and the list filled later is then nobody's.
"""

import numpy as np

from . import dispatcher
from .dispatcher import DTYPES, ITEMSIZE, View, storage_code

WINDOW = 64      # elements one read of one element brings back (and remembers)
LIMIT = 256      # the largest host write whose values are remembered

ARITH = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__}


def value(t):
    """The known value of one-element integer tensor t, or None (then read it)."""
    st = t._storage
    pending = st.pending      # (a HostScalar's value, not yet in memory: tensor.py)
    if pending is not None and pending[0] == t._dtype and st.runtime is dispatcher._runtime \
            and st.runtime.recorder is None:
        return pending[1]
    block = st.block
    if block is None:
        return None
    k = block.known
    if k is None or k[0] != t._dtype:
        return None
    rt = dispatcher._runtime
    if rt is not st.runtime or rt.recorder is not None:
        return None
    j = t._offset - k[1]
    values = k[2]
    return values[j] if 0 <= j < len(values) else None


def read_one(t):
    """Read the value of one-element integer tensor t (a sync), with up to WINDOW - 1
    elements of its block after it, all remembered; a Python int."""
    st = t._storage
    rt = dispatcher._runtime or dispatcher.runtime()
    if st.runtime is not rt or st.block is None:
        st.check_usable()
    block, code = st.block, t._dtype
    n = min(WINDOW, block.size // ITEMSIZE[storage_code(rt.backend, code)] - t._offset)
    if block.shared or rt.recorder is not None or n < 1:
        return rt.read(View(block, t._offset, (), (), code)).item()
    # the values are filled into a list the block names before the read is issued: a write
    # another thread issues meanwhile forgets the block's entry, and the list filled after
    # it is then nobody's (the read's values never stand for memory written later)
    values = []
    block.known = (code, t._offset, values)
    got = rt.read(View(block, t._offset, (n,), (1,), code)).tolist()
    values.extend(got)      # (one call: atomic for another thread's value())
    return got[0]


def remember(t, values):
    """Record `values` (a list of Python ints, t's elements in row-major order) as t's
    contents, just after the op or write that gives them was issued (the caller knows the
    backend stores exactly these: Runtime.int_ranges); kept only for a contiguous integer
    tensor, outside a recording, in a block no NumPy array aliases."""
    st = t._storage
    block, rt = st.block, st.runtime
    if block is None or block.shared or rt.recorder is not None or \
            t._dtype not in rt.int_ranges or not t.is_contiguous():
        return
    block.known = (t._dtype, t._offset, values)


def written(t, array):
    """After the host write of `array` into new integer tensor t (creation's: no other
    thread has t yet): remember it when it is small and already of t's dtype (no cast between: the
    backend stores exactly these values)."""
    if isinstance(array, np.ndarray) and array.size <= LIMIT and \
            array.dtype == DTYPES[t._dtype] and array.shape == t.shape:
        remember(t, array.ravel().tolist())


def arith(op, code, x, y):
    """op(x, y) ("add", "sub", "mul") of 0-d tensors or Python ints of integer dtype `code`
    when both values are known and the result fits what the current backend stores of
    `code` exactly (its value: the result need not be computed by a kernel), else None."""
    if x.__class__ is not int:
        x = value(x)
    if y.__class__ is not int:
        y = value(y)
    if x is None or y is None:
        return None
    rt = dispatcher._runtime
    bounds = rt.int_ranges.get(code)
    if bounds is None or rt.recorder is not None:
        return None
    z = ARITH[op](x, y)
    return z if bounds[0] <= z <= bounds[1] else None
