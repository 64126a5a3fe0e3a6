"""Data-parallel makemore under MPI: steps/s at 1 and N processes, the time in all-reduce.

    python scripts/bench_distributed.py                      # 1 and 2 processes, simd
    python scripts/bench_distributed.py --ranks 1,2,4 --backend workers --steps 3000
    python scripts/bench_distributed.py --hidden 2048 --bucket-mb 0.1   # several buckets

For each process count it runs `mpiexec -n N python scripts/bench_distributed.py --worker`
(makemore's CharMLP, the census names, batch 32 per rank, SGD) and reports, from rank 0:
steps/s, rows/s, the time spent inside MPI_Allreduce per step and its share of the step
(it includes waiting for the slower rank), and how long the training loop itself waited
for the averaged gradients (the rest of backward still running, plus the reductions not
hidden behind it), with DDP's overlap on and off. Then it times a bare
MPI_Allreduce of 4 B .. 16 MiB host buffers at 2 processes to fit latency and bandwidth
(the figures docs/distributed.md uses for the N-machine estimate). Prints a JSON summary
last. Needs `pip install "torchic[distributed]"`.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve()


def _mpiexec():
    for folder in (pathlib.Path(sys.executable).parent,
                   pathlib.Path(sysconfig.get_path("scripts"))):
        if (folder / "mpiexec").exists():
            return str(folder / "mpiexec")
    found = shutil.which("mpiexec")
    if found is None:
        sys.exit('mpiexec not found: pip install "torchic[distributed]"')
    return found


def _launch(n, *args, timeout=900):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run = subprocess.run([_mpiexec(), "-n", str(n), sys.executable, str(HERE), *args],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                         timeout=timeout)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode or not lines:
        sys.exit(f"mpiexec -n {n} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    return json.loads(lines[-1])


def worker_train(args):
    import torchic
    import torchic.distributed as dist
    import torchic.nn.functional as F
    from torchic import demo, optim
    from torchic.nn.parallel import DistributedDataParallel

    torchic.init(backend=args.backend, threads=args.threads)
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    words = demo.load_words(None)
    stoi, itos = demo.build_vocab(words)
    X, Y = demo.build_dataset(demo.split_words(words, seed=42)[0], stoi, 3)
    torchic.manual_seed(42)
    net = demo.CharMLP(len(itos), hidden=args.hidden)
    model = DistributedDataParallel(net, bucket_cap_mb=args.bucket_mb)
    model.__dict__["_overlap"] = model._overlap and args.overlap
    opt = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(rank)

    def step():
        ix = rng.integers(0, len(X), args.batch)
        loss = F.cross_entropy(model(torchic.tensor(X[ix])), torchic.tensor(Y[ix]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torchic.sync()
    dist.barrier()
    stats = model.comm_stats
    for key in ("reduce_s", "wait_s"):
        stats[key] = 0.0
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss.item()
    wall = time.perf_counter() - start
    dist.barrier()
    if rank == 0:
        grad_bytes = sum(p.numel() * 4 for p in net.parameters())
        print(json.dumps({
            "ranks": world, "backend": torchic.get_backend(), "overlap": model._overlap,
            "steps_per_s": args.steps / wall, "rows_per_s": args.steps * args.batch * world / wall,
            "step_ms": 1e3 * wall / args.steps, "grad_bytes": grad_bytes,
            "buckets": len(model._buckets),
            "allreduce_ms_per_step": 1e3 * stats["reduce_s"] / args.steps,
            "exposed_wait_ms_per_step": 1e3 * stats["wait_s"] / args.steps}), flush=True)


def worker_allreduce(args):
    import torchic.distributed as dist
    dist.init_process_group()
    group = dist.default_group()
    comm, mpi = group.comm, group.MPI
    out = {}
    for size in [1, 16, 256, 4096, 65536, 2 ** 20, 2 ** 22]:       # float32 elements
        buf = np.ones(size, np.float32)
        reps = max(5, min(2000, 2 ** 24 // (size * 4)))
        for _ in range(3):
            comm.Allreduce(mpi.IN_PLACE, buf, op=mpi.SUM)
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(reps):
            comm.Allreduce(mpi.IN_PLACE, buf, op=mpi.SUM)
        out[size * 4] = (time.perf_counter() - start) / reps
    if group.rank == 0:
        print(json.dumps({"ranks": group.size, "allreduce_s": out}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", default="1,2", help="process counts (default 1,2)")
    p.add_argument("--backend", default="simd")
    p.add_argument("--threads", type=int, default=1, help="backend threads per process (1)")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--batch", type=int, default=32, help="rows per rank per step")
    p.add_argument("--worker", choices=["train", "allreduce"])
    p.add_argument("--hidden", type=int, default=200, help="hidden units (makemore: 200)")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket size (25 MiB)")
    p.add_argument("--overlap", type=int, default=1)
    args = p.parse_args()
    if args.worker == "train":
        return worker_train(args)
    if args.worker == "allreduce":
        return worker_allreduce(args)
    common = ["--backend", args.backend, "--threads", str(args.threads), "--steps",
              str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch),
              "--hidden", str(args.hidden), "--bucket-mb", str(args.bucket_mb)]
    rows = []
    for n in [int(r) for r in args.ranks.split(",")]:
        for overlap in ((1, 0) if n > 1 else (1,)):
            rows.append(_launch(n, "--worker", "train", "--overlap", str(overlap), *common))
    print(f"makemore DDP, hidden {args.hidden}, backend {args.backend}, {args.threads} "
          f"thread(s) per process, batch {args.batch} per rank, {rows[0]['grad_bytes']:,} "
          f"gradient bytes in {rows[-1]['buckets']} bucket(s), {os.cpu_count()} CPU cores")
    print(f"{'ranks':>5} {'overlap':>7} {'steps/s':>8} {'rows/s':>8} {'ms/step':>8} "
          f"{'allreduce ms':>12} {'share':>6} {'waited ms':>9}")
    for r in rows:
        share = r["allreduce_ms_per_step"] / r["step_ms"]
        print(f"{r['ranks']:>5} {str(r['overlap']):>7} {r['steps_per_s']:>8.0f} "
              f"{r['rows_per_s']:>8.0f} {r['step_ms']:>8.3f} {r['allreduce_ms_per_step']:>12.3f} "
              f"{share:>6.1%} {r['exposed_wait_ms_per_step']:>9.3f}")
    micro = _launch(2, "--worker", "allreduce")
    print("bare MPI_Allreduce at 2 processes (host buffers):")
    for nbytes, seconds in micro["allreduce_s"].items():
        print(f"  {int(nbytes):>10,} B  {seconds * 1e6:>10.1f} us  "
              f"{int(nbytes) / seconds / 1e9:>7.2f} GB/s")
    print(json.dumps({"train": rows, "allreduce": micro}))


if __name__ == "__main__":
    main()
