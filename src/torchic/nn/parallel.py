"""torch.nn.parallel under torchic: DistributedDataParallel (data parallelism on MPI).

Every rank holds a full copy of the model and runs forward and backward on its own slice
of the batch; the gradients are then averaged over the ranks, so each optimizer step is
the step of one process on the whole (concatenated) batch and every rank's parameters
stay identical.

How gradients travel. At wrap time the parameters are grouped into buckets of about
`bucket_cap_mb` (reverse registration order: backward produces the last layer's
gradients first), each bucket one flat heap tensor. A post-accumulate-grad hook
(`autograd.register_post_accumulate_grad_hook`) fires when a parameter's gradient of the
pass is complete and queues a copy of it into its bucket's slot. When a bucket is full it
is handed, in bucket order (the same order on every rank: MPI collectives must match), to
one communication thread, which syncs the stream (the copies have run) and all-reduces
the bucket in place in heap memory (CPU backends: zero-copy) while the calling thread
goes on issuing the rest of backward and the backend computes it. After the last bucket
the calling thread waits for the reductions and copies the averages back into `.grad`.
webgpu (GPU heap) and an MPI without MPI_THREAD_MULTIPLE reduce each bucket inline
instead, the former through a host copy.
"""

import queue
import threading
import time
import weakref
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from .. import distributed, raw
from ..autograd import no_grad, register_post_accumulate_grad_hook
from ..creation import zeros
from ..interrupts import taken_lock
from .module import Module

__all__ = ["DistributedDataParallel"]

_jobs = None        # the communication thread's queue (started on first use)


def _comm_queue():
    global _jobs
    if _jobs is None:
        _jobs = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(_jobs,), name="torchic-ddp-comm",
                         daemon=True).start()
    return _jobs


def _serve(jobs):
    while True:
        jobs.get()()


# MPI's blocking calls busy-poll: a rank that reaches the all-reduce first would spin a core
# the slower rank (or this rank's own backward) needs. Poll the request and sleep between.
POLL_S = 20e-6


def _wait_politely(request):
    while not request.Test():
        time.sleep(POLL_S)


class _Bucket:
    """Parameters whose gradients are reduced together, through one flat heap tensor."""

    def __init__(self, index, params):
        self.index = index
        self.params = params
        self.flat = zeros(sum(p.numel() for p in params))
        self.slots, offset = [], 0
        for p in params:
            self.slots.append(self.flat[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        self.slot_of = {id(p): slot for p, slot in zip(params, self.slots)}
        self.host = self.flat._storage.runtime.backend.host_array(raw.view_of(self.flat))
        self.waiting = len(params)
        # reduced: released by the communication thread; the caller's acquire takes it
        # again for the next step (interrupts.taken_lock: why not a threading.Event)
        self.done = taken_lock()
        self.error = None


class DistributedDataParallel(Module):
    """Data-parallel training over the ranks of `torchic.distributed` (PyTorch's DDP).

    Wrapping broadcasts rank 0's parameters and buffers to every rank (after checking that
    all ranks hold the same parameter names, shapes and dtypes: a RuntimeError otherwise).
    Each `backward()` then averages the gradients over the ranks, in buckets reduced while
    the rest of backward runs (see the module docstring), so `optimizer.step()` keeps the
    ranks' parameters identical. `forward` is the wrapped module's; `.module` is the model.

    Args:
        module (Module): the model (the same architecture on every rank).
        broadcast_buffers (bool): broadcast rank 0's buffers before each forward (default).
        bucket_cap_mb (float): bucket size in MiB (default 25, as PyTorch).
        find_unused_parameters (bool): only False: every parameter must get a gradient.
        The other arguments (device_ids, output_device, dim, process_group, ...) are
        accepted for PyTorch's signature and not used.

    Attributes:
        module (Module): the wrapped model.
        comm_stats (dict): since the wrap: `reductions` and `bytes` all-reduced, `reduce_s`
            (seconds inside MPI's all-reduce) and `wait_s` (seconds backward waited for
            the averaged gradients); scripts/bench_distributed.py reports them.

    Example:
        >>> dist.init_process_group()
        >>> model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
        >>> model(torchic.randn(8, 4)).sum().backward()   # .grad: the mean over ranks
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, init_sync: bool = True) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a torchic.nn.Module, got "
                            f"{type(module).__name__}")
        if find_unused_parameters:
            raise NotImplementedError(
                "DistributedDataParallel(find_unused_parameters=True) is not supported: "
                "every parameter that requires grad must take part in the loss")
        group = distributed.default_group()
        self.module = module
        d = self.__dict__
        d["broadcast_buffers"] = broadcast_buffers
        d["_group"] = group
        d["_comm"] = group.comm.Dup()      # DDP's own traffic, apart from the user's calls
        d["_sync_grads"] = True
        d["_next"] = 0
        d["comm_stats"] = {"reductions": 0, "bytes": 0, "reduce_s": 0.0, "wait_s": 0.0}
        params = [p for p in module.parameters() if p.requires_grad]
        described = [(n, tuple(p.shape), p._dtype, p.requires_grad)
                     for n, p in module.named_parameters()]
        described += [(n, tuple(b.shape), b._dtype) for n, b in module.named_buffers()]
        distributed.agree(d["_comm"], described, "DistributedDataParallel(module)")
        if init_sync:
            self._broadcast(list(module.parameters()) + list(module.buffers()))
        d["_buckets"] = self._make_buckets(params, 25.0 if bucket_cap_mb is None
                                           else float(bucket_cap_mb))
        d["_bucket_of"] = {id(p): b for b in self._buckets for p in b.params}
        d["_overlap"] = (group.threaded and bool(self._buckets)
                         and self._buckets[0].host is not None)
        d["_handles"] = []
        if group.size > 1:
            me = weakref.ref(self)

            def ready(p):
                ddp = me()
                if ddp is not None:
                    ddp._grad_ready(p)
            self._handles.extend(register_post_accumulate_grad_hook(p, ready)
                                 for p in params)

    @staticmethod
    def _make_buckets(params, cap_mb):
        buckets, current, size = [], [], 0
        for p in reversed(params):
            if current and size + p.numel() * 4 > cap_mb * 2 ** 20:
                buckets.append(current)
                current, size = [], 0
            current.append(p)
            size += p.numel() * 4
        if current:
            buckets.append(current)
        return [_Bucket(i, ps) for i, ps in enumerate(buckets)]

    def _broadcast(self, tensors):
        comm = self._comm
        for t in tensors:
            if t.numel():
                buffer, give_back = distributed.borrow(t)
                comm.Bcast(buffer, root=0)
                give_back(self._group.rank != 0)

    # -- the wrapped module ---------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The wrapped module's forward (after broadcasting rank 0's buffers)."""
        if self._next or any(b.waiting != len(b.params) for b in self._buckets):
            missing = [n for n, p in self.module.named_parameters()
                       if id(p) in self._bucket_of and p not in self._arrived()]
            raise RuntimeError(
                f"DistributedDataParallel: the previous backward() did not give every "
                f"parameter a gradient, so its gradients were not averaged; parameters "
                f"without one: {missing}. Every parameter that requires grad must take "
                f"part in the loss (find_unused_parameters is not supported)")
        if self.broadcast_buffers and self._group.size > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        return self.module(*inputs, **kwargs)

    def _arrived(self):
        out = set()
        for b in self._buckets:
            if b.index < self._next or b.waiting == 0:
                out.update(b.params)
        return out

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward() accumulates local gradients without averaging them; the
        first backward after the block averages everything accumulated."""
        old = self._sync_grads
        self.__dict__["_sync_grads"] = False
        try:
            yield
        finally:
            self.__dict__["_sync_grads"] = old

    # -- gradient averaging -----------------------------------------------------------------
    def _grad_ready(self, p):
        if not self._sync_grads:
            return
        bucket = self._bucket_of[id(p)]
        with no_grad():
            raw.copy_into(bucket.slot_of[id(p)], p._grad)
        bucket.waiting -= 1
        while self._next < len(self._buckets) and self._buckets[self._next].waiting == 0:
            self._launch(self._buckets[self._next])
            self.__dict__["_next"] = self._next + 1
        if self._next == len(self._buckets):
            self._finish()

    def _launch(self, bucket):
        if self._overlap:
            _comm_queue().put(lambda: self._reduce(bucket))
        else:                       # the calling thread waits for the whole reduction
            start = time.perf_counter()
            self._reduce(bucket)
            self.comm_stats["wait_s"] += time.perf_counter() - start

    def _reduce(self, bucket):
        """All-reduce one bucket and divide by the world size (on the communication thread
        when overlapping)."""
        mpi, comm, n = self._group.MPI, self._comm, self._group.size
        try:
            if bucket.host is not None:
                bucket.flat._storage.runtime.sync()      # the copies into the bucket ran
                start = time.perf_counter()
                _wait_politely(comm.Iallreduce(mpi.IN_PLACE, bucket.host, op=mpi.SUM))
                np.divide(bucket.host, n, out=bucket.host)
            else:                                        # webgpu: through a host copy
                host = raw.read(bucket.flat)
                start = time.perf_counter()
                _wait_politely(comm.Iallreduce(mpi.IN_PLACE, host, op=mpi.SUM))
                np.divide(host, n, out=host)
                raw.write(bucket.flat, host)
            stats = self.comm_stats
            stats["reduce_s"] += time.perf_counter() - start
            stats["reductions"] += 1
            stats["bytes"] += bucket.flat.numel() * 4
        except BaseException as exc:     # re-raised on the calling thread by _finish
            bucket.error = exc
        finally:
            if bucket.done.locked():     # (not after a Ctrl-C left the last step's unwaited)
                bucket.done.release()

    def _finish(self):
        start = time.perf_counter()
        for b in self._buckets:
            b.done.acquire()
        self.comm_stats["wait_s"] += time.perf_counter() - start
        failed = [(b.index, b.error) for b in self._buckets if b.error is not None]
        for b in self._buckets:
            b.waiting = len(b.params)
            b.error = None
        self.__dict__["_next"] = 0
        if failed:
            index, error = failed[0]
            raise RuntimeError(f"DistributedDataParallel: averaging gradient bucket "
                               f"{index} failed: {error}") from error
        with no_grad():
            for b in self._buckets:
                for p, slot in zip(b.params, b.slots):
                    raw.copy_into(p._grad, slot)

    def __del__(self):
        for handle in self.__dict__.get("_handles", ()):
            handle.remove()
