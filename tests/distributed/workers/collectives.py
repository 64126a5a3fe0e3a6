"""mpiexec -n 2 python collectives.py BACKEND...: all_reduce / broadcast / all_gather checked
against NumPy float64 on each backend: contiguous, transposed, strided, 0-d and 0-size
tensors, float32 and int32, every reduce op; zero-copy buffers on the CPU heaps; results
seen by later ops; ranks disagreeing on shapes raise on every rank. Exits non-zero on any
failure (the uncaught error aborts every rank)."""

import sys

import numpy as np

import torchic as torch
import torchic.distributed as dist

SHAPES = [(5,), (3, 4), (), (0,), (2, 0, 3), (64, 33)]


def values(rank, shape, dtype):
    rng = np.random.default_rng([rank, len(shape), *shape])
    if dtype == "int32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    return rng.uniform(0.5, 2.0, shape).astype(np.float32)


def layouts(array):
    """(name, tensor holding `array`'s values, laid out that way)."""
    yield "contiguous", torch.tensor(array)
    if array.ndim >= 2:
        yield "transposed", torch.tensor(np.ascontiguousarray(array.T)).T
    if array.ndim >= 1:
        wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        wide[..., ::2] = array
        yield "strided", torch.tensor(wide)[..., ::2]


def fresh(array, layout):
    return dict(layouts(array))[layout]


def check(got, want, what, exact=False):
    got = got.numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if exact:
        assert np.array_equal(got, want), f"{what}: {got} != {want}"
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=what)


REDUCE = {"SUM": lambda a: a.sum(0), "AVG": lambda a: a.mean(0), "MAX": lambda a: a.max(0),
          "MIN": lambda a: a.min(0), "PRODUCT": lambda a: a.prod(0)}


def main(backends):
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    for backend in backends:
        torch.init(backend=backend)
        for shape in SHAPES:
            for dtype in ("float32", "int32"):
                mine = values(rank, shape, dtype)
                every = np.stack([values(r, shape, dtype) for r in range(world)])
                exact = dtype == "int32"
                for layout, t in layouts(mine):
                    what = f"{backend} {shape} {dtype} {layout}"
                    for name, ref in REDUCE.items():
                        if name == "AVG" and exact:
                            continue
                        x = fresh(mine, layout)
                        dist.all_reduce(x, op=getattr(dist.ReduceOp, name))
                        want = ref(every.astype(np.float64))
                        check(x, want.astype(mine.dtype) if exact else want,
                              f"all_reduce {name} {what}", exact)
                        check(x + 0, want.astype(mine.dtype) if exact else want,
                              f"all_reduce {name} {what}, read by a later op", exact)
                    for src in range(world):
                        x = fresh(mine, layout)
                        dist.broadcast(x, src=src)
                        check(x, every[src], f"broadcast from {src} {what}", True)
                    outs = [fresh(np.zeros_like(mine), layout) for _ in range(world)]
                    dist.all_gather(outs, t)
                    for r in range(world):
                        check(outs[r], every[r], f"all_gather [{r}] {what}", True)
        # the strings of the issue: "mean", "max"
        t = torch.tensor([1.0, 2.0]) * (rank + 1)
        dist.all_reduce(t, op="mean")
        check(t, np.array([1.0, 2.0]) * (world + 1) / 2, f"{backend} op='mean'")
        # zero-copy on the CPU heaps: the buffer MPI gets is the tensor's own memory
        t = torch.zeros(4)
        buffer, _ = dist.borrow(t)
        buffer[1] = 7.0
        seen = t.numpy()[1]
        assert (seen == 7.0) == (backend in ("workers", "simd")), (backend, seen)
        # ranks disagreeing on the shape: a clear RuntimeError on every rank, no hang
        try:
            dist.all_reduce(torch.ones(rank + 1))
        except RuntimeError as exc:
            assert "disagree" in str(exc) and "rank 1: ('all_reduce', (2,)" in str(exc), exc
        else:
            raise AssertionError("mismatched shapes were not refused")
        dist.barrier()
        print(f"OK collectives {backend} rank {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
