"""torch.distributed under torchic: collectives between processes, on MPI.

    mpiexec -n 2 python train.py

    import torchic as torch
    import torchic.distributed as dist
    dist.init_process_group()                 # rank and world size come from mpiexec
    t = torch.ones(3) * dist.get_rank()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # in place, on every rank

The engine is MPI through mpi4py (`pip install "torchic[distributed]"`: mpi4py and the
MPICH wheel; a system MPI works too). mpi4py is imported by `init_process_group()` and
`is_available()` looks for it without importing it, so `import torchic` never loads MPI.

Zero-copy on the CPU backends: their heap is host memory, so a collective syncs the stream
(every op issued before it has run) and hands MPI a NumPy array over the tensor's own heap
bytes; MPI writes the result there, and ops issued afterwards read it (stream order). A
non-contiguous tensor goes through one contiguous host copy (MPI buffers are contiguous);
webgpu stages every tensor through a host copy (its heap is GPU memory).

Before moving data, each collective checks that the ranks agree on the call (shape, dtype,
op, root) with one two-integer MAX all-reduce of a hash, and on a mismatch every rank
raises a RuntimeError listing what each rank passed, instead of corrupting memory or
hanging. A rank whose main thread ends with an uncaught exception calls MPI_Abort after its
traceback is printed, so mpiexec ends every rank instead of leaving them waiting forever.
"""

import enum
import importlib
import importlib.util
import sys
import time
import zlib
from typing import Any

import numpy as np

from .. import raw
from ..tensor import Tensor

__all__ = ["ReduceOp", "is_available", "is_initialized", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "barrier",
           "all_reduce", "broadcast", "all_gather", "Work"]

INSTALL_HINT = ('pip install "torchic[distributed]" (mpi4py and the mpich wheel from PyPI), '
                'or a system MPI (apt-get install mpich / libopenmpi-dev) and pip install mpi4py')


ABORT_GRACE_S = 1.0


class ReduceOp(enum.Enum):
    """How `all_reduce` combines the ranks' tensors (`dist.ReduceOp.SUM` ...). AVG (the
    mean over ranks) needs a float tensor; BAND / BOR / BXOR need int32."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_OP_NAMES = {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "mean": ReduceOp.AVG,
             "product": ReduceOp.PRODUCT, "prod": ReduceOp.PRODUCT, "min": ReduceOp.MIN,
             "max": ReduceOp.MAX, "band": ReduceOp.BAND, "bor": ReduceOp.BOR,
             "bxor": ReduceOp.BXOR}
_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
            ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


class _Group:
    """The default process group: the MPI module and a private duplicate of COMM_WORLD."""

    def __init__(self, mpi, comm):
        self.MPI = mpi
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.threaded = mpi.Query_thread() == mpi.THREAD_MULTIPLE


_group = None
_previous_excepthook = None


def load_mpi() -> Any:
    """The `mpi4py.MPI` module (importing it initializes MPI), or an ImportError saying what
    to install."""
    try:
        return importlib.import_module("mpi4py.MPI")
    except ImportError as exc:
        raise ImportError(f"torchic.distributed needs MPI and mpi4py, which are not "
                          f"installed ({exc}): {INSTALL_HINT}") from exc
    except (RuntimeError, OSError) as exc:     # mpi4py present, the MPI library is not
        raise RuntimeError(f"torchic.distributed: mpi4py could not load an MPI library "
                           f"({exc}): {INSTALL_HINT}") from exc


def is_available() -> bool:
    """Whether mpi4py is installed (looked up, not imported: MPI stays unloaded)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_initialized() -> bool:
    """Whether `init_process_group()` has run (and `destroy_process_group()` has not)."""
    return _group is not None


def _abort_on_uncaught(exc_type, exc, tb):
    """sys.excepthook while a group exists: print the traceback, then MPI_Abort, so that the
    other ranks (maybe waiting in a collective for this one) end too instead of hanging."""
    (_previous_excepthook or sys.__excepthook__)(exc_type, exc, tb)
    group = _group
    if group is not None and group.size > 1:
        print(f"torchic.distributed: rank {group.rank} of {group.size} raised "
              f"{exc_type.__name__}; aborting every rank (MPI_Abort)", file=sys.stderr,
              flush=True)
        # MPI_Abort makes the launcher kill every process at once, dropping output still on
        # its way through the launcher's pipes (seen with MPICH's hydra): give it a moment
        time.sleep(ABORT_GRACE_S)
        group.MPI.COMM_WORLD.Abort(1)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the default process group: every process started by `mpiexec -n N` (or just
    this one, world size 1, when run without a launcher).

    Rank and world size come from the MPI launcher; `world_size` / `rank`, when given, must
    match them. `backend` may be None, "mpi" or "gloo" (PyTorch's CPU backend name: the
    same collectives here); "nccl" is refused (no CUDA). `init_method`, `store`, `timeout`
    and the other arguments are accepted for PyTorch's signature and not used: MPI's
    launcher connects the processes, and a rank that raises aborts the job (see the module
    docstring) rather than the others timing out.

    Example:
        >>> dist.init_process_group(backend="gloo")
        >>> dist.get_world_size()
        1
    """
    global _group, _previous_excepthook
    if _group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() not in ("mpi", "gloo", "cpu:gloo"):
        if "nccl" in str(backend).lower():
            raise RuntimeError("the nccl backend needs CUDA GPUs: torchic runs on the CPU; "
                               "use backend='mpi' or 'gloo' (both are MPI here)")
        raise ValueError(f"unknown backend {backend!r}: torchic.distributed runs on MPI "
                         f"(backend None, 'mpi' or 'gloo')")
    mpi = load_mpi()
    group = _Group(mpi, mpi.COMM_WORLD.Dup())
    for name, given, actual in (("world_size", world_size, group.size),
                                ("rank", rank, group.rank)):
        if given not in (-1, None) and given != actual:
            group.comm.Free()
            raise ValueError(f"init_process_group({name}={given}), but the MPI launcher "
                             f"gives this process {name} {actual}")
    _group = group
    if sys.excepthook is not _abort_on_uncaught:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def destroy_process_group(group: Any = None) -> None:
    """Leave the default process group (MPI itself stays initialized until exit)."""
    global _group
    current = _require()
    _group = None
    if sys.excepthook is _abort_on_uncaught:
        sys.excepthook = _previous_excepthook or sys.__excepthook__
    current.comm.Free()


def _require():
    if _group is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _group


def default_group() -> _Group:
    """The default group (its `comm`, `rank`, `size`, `MPI`); ValueError before init."""
    return _require()


def get_rank(group: Any = None) -> int:
    """This process's rank in the default group, 0 .. world size - 1."""
    return _require().rank


def get_world_size(group: Any = None) -> int:
    """The number of processes in the default group."""
    return _require().size


def get_backend(group: Any = None) -> str:
    """The name of the engine under the default group: "mpi"."""
    _require()
    return "mpi"


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None,
            timeout: Any = None) -> "Work | None":
    """Wait until every rank of the default group has called `barrier()`."""
    _require().comm.Barrier()
    return _done(async_op)


class Work:
    """What a collective returns with `async_op=True`. torchic's collectives complete
    before they return, so `wait()` returns at once."""

    def wait(self, timeout: Any = None) -> bool:
        """Wait for the collective (already done): True."""
        return True

    def is_completed(self) -> bool:
        """Whether the collective has finished: always True."""
        return True

    def is_success(self) -> bool:
        """Whether the collective succeeded (a failure raises instead): True."""
        return True


def _done(async_op):
    return Work() if async_op else None


def agree(comm, what, call: str) -> None:
    """Raise a RuntimeError on every rank unless all ranks passed the same `what` (a
    repr-able description of a collective): one MAX all-reduce of (hash, -hash), then,
    only on a mismatch, an all-gather of the descriptions for the message."""
    mpi = _require().MPI
    key = zlib.crc32(repr(what).encode())
    pair = np.array([key, -key], np.int64)
    comm.Allreduce(mpi.IN_PLACE, pair, op=mpi.MAX)
    if pair[0] != -pair[1]:
        every = comm.allgather(what)
        listed = "; ".join(f"rank {r}: {w}" for r, w in enumerate(every))
        raise RuntimeError(f"{call}: the ranks disagree on the call ({listed}); every rank "
                           f"must pass tensors of the same shape and dtype")


def _describe(t):
    return (tuple(t.shape), {"f32": "float32", "i32": "int32"}.get(t._dtype, t._dtype))


def borrow(t: Tensor):
    """(buffer, give_back): a contiguous NumPy buffer holding `t`'s values for MPI, and a
    function that makes `t` hold the buffer's (changed) values afterwards.

    CPU backends: the stream is synced and the buffer *is* `t`'s heap memory (nothing to
    give back) when `t` is contiguous, else a contiguous copy written back into the heap.
    webgpu: a host copy, written back with one upload."""
    st = t._storage
    view = raw.view_of(t)
    memory = st.runtime.backend.host_array(view)
    if memory is None:                       # webgpu: GPU memory, stage through the host
        buffer = raw.read(t)

        def upload(changed=True):
            if changed:
                raw.write(t, buffer)
                st.version += 1
        return buffer, upload
    st.runtime.sync()                        # every op writing t has run
    if memory.flags.c_contiguous:
        def bump(changed=True):
            if changed:
                st.version += 1
        return memory, bump
    buffer = np.ascontiguousarray(memory)

    def write_back(changed=True):
        if changed:
            memory[...] = buffer                 # the stream is idle: nothing races this
            st.version += 1
    return buffer, write_back


def _check_tensor(t, call):
    if not isinstance(t, Tensor):
        raise TypeError(f"{call}: expected a torchic Tensor, got {type(t).__name__}")


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    found = _OP_NAMES.get(str(getattr(op, "name", op)).lower().rsplit(".", 1)[-1])
    if found is None:
        raise ValueError(f"all_reduce: unknown op {op!r} (dist.ReduceOp.SUM, AVG, PRODUCT, "
                         f"MIN, MAX, BAND, BOR or BXOR)")
    return found


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Combine `tensor` across all ranks, in place: afterwards every rank holds the sum
    (or AVG / PRODUCT / MIN / MAX / BAND / BOR / BXOR) of all ranks' tensors.

    Args:
        tensor (Tensor): the same shape and dtype on every rank (else a RuntimeError).
        op (ReduceOp): `dist.ReduceOp.SUM` by default; the strings "sum", "mean", "max" ...
            are accepted too.
        async_op (bool): return a `Work` (already complete) instead of None.

    Example:
        >>> t = torchic.tensor([1.0, 2.0])
        >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)
        >>> t          # with one process
        tensor([1., 2.])
    """
    g = _require()
    _check_tensor(tensor, "all_reduce")
    op = _reduce_op(op)
    floating = tensor._dtype == "f32"
    if op is ReduceOp.AVG and not floating:
        raise RuntimeError("all_reduce: ReduceOp.AVG needs a float tensor, got int32")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise RuntimeError(f"all_reduce: ReduceOp.{op.name} needs an int32 tensor, got "
                           f"float32")
    agree(g.comm, ("all_reduce",) + _describe(tensor) + (op.name,), "all_reduce")
    if tensor.numel() == 0:
        return _done(async_op)
    buffer, give_back = borrow(tensor)
    g.comm.Allreduce(g.MPI.IN_PLACE, buffer, op=getattr(g.MPI, _MPI_OPS[op]))
    if op is ReduceOp.AVG:
        np.divide(buffer, g.size, out=buffer)
    give_back()
    return _done(async_op)


def broadcast(tensor: Tensor, src: int | None = None, group: Any = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Copy rank `src`'s `tensor` into `tensor` on every other rank (in place).

    Example:
        >>> t = torchic.arange(3.0) if dist.get_rank() == 0 else torchic.zeros(3)
        >>> dist.broadcast(t, src=0)
        >>> t
        tensor([0., 1., 2.])
    """
    g = _require()
    _check_tensor(tensor, "broadcast")
    src = group_src if src is None else src
    if src is None:
        raise ValueError("broadcast: src (the rank whose tensor is sent) is required")
    if not 0 <= int(src) < g.size:
        raise ValueError(f"broadcast: src {src} is not a rank of the group (0 .. "
                         f"{g.size - 1})")
    agree(g.comm, ("broadcast",) + _describe(tensor) + (int(src),), "broadcast")
    if tensor.numel() == 0:
        return _done(async_op)
    buffer, give_back = borrow(tensor)
    g.comm.Bcast(buffer, root=int(src))
    give_back(g.rank != int(src))
    return _done(async_op)


def all_gather(tensor_list: list, tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Fill `tensor_list[r]` with rank r's `tensor`, on every rank.

    Args:
        tensor_list (list of Tensor): world-size tensors of `tensor`'s shape and dtype,
            overwritten in place.
        tensor (Tensor): this rank's contribution (the same shape on every rank).

    Example:
        >>> out = [torchic.zeros(2) for _ in range(dist.get_world_size())]
        >>> dist.all_gather(out, torchic.ones(2) * dist.get_rank())
        >>> out        # with one process
        [tensor([0., 0.])]
    """
    g = _require()
    _check_tensor(tensor, "all_gather")
    if not isinstance(tensor_list, (list, tuple)):
        raise TypeError(f"all_gather: tensor_list must be a list of tensors, got "
                        f"{type(tensor_list).__name__}")
    if len(tensor_list) != g.size:
        raise ValueError(f"all_gather: tensor_list must hold world_size = {g.size} tensors, "
                         f"got {len(tensor_list)}")
    for i, out in enumerate(tensor_list):
        _check_tensor(out, "all_gather")
        if out.shape != tensor.shape or out._dtype != tensor._dtype:
            raise RuntimeError(f"all_gather: tensor_list[{i}] has shape {list(out.shape)} "
                               f"({out.dtype}), but the tensor has shape "
                               f"{list(tensor.shape)} ({tensor.dtype})")
    agree(g.comm, ("all_gather",) + _describe(tensor), "all_gather")
    if tensor.numel() == 0:
        return _done(async_op)
    send, _ = borrow(tensor)
    received = np.empty((g.size,) + tuple(tensor.shape), send.dtype)
    g.comm.Allgather(send, received)
    for out, part in zip(tensor_list, received):
        buffer, give_back = borrow(out)
        buffer[...] = part
        give_back()
    return _done(async_op)

