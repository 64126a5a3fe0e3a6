"""makemore: train a character-level MLP on a list of names and sample new ones.

    python examples/makemore.py                                   # census names, 200k steps
    python examples/makemore.py --data names.txt --steps 200000   # the classic setting
    python examples/makemore.py --sample-only makemore.safetensors
    mpiexec -n 2 python examples/makemore.py --ddp --steps 20000  # data-parallel, 2 processes

A thin command line over torchic.demo (the model, training loop, sampling and
checkpoints live there so that `python -m torchic demo` runs the same code).
Writes makemore.safetensors and makemore-loss.png to --out (default: here).
Run with --help for every option.

--ddp trains with torchic.distributed over the processes mpiexec starts (pip install
"torchic[distributed]"): each rank draws --batch rows per step from its DistributedSampler
share of the training set, DistributedDataParallel averages the gradients, so one step
trains on --batch x N rows. Rank 0 prints, evaluates, samples and saves the checkpoint.
"""

import os
import sys
import time
from collections.abc import Iterator

import numpy as np

import torchic
import torchic.distributed as dist
import torchic.nn.functional as F
from torchic import demo, optim
from torchic.nn.parallel import DistributedDataParallel
from torchic.utils.data import DistributedSampler


def _batches(sampler: DistributedSampler, batch: int) -> Iterator[np.ndarray]:
    """Index batches of `batch` from the sampler's share, epoch after epoch."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        ix = np.fromiter(sampler, np.int64, len(sampler))
        for lo in range(0, len(ix) - batch + 1, batch):
            yield ix[lo:lo + batch]
        epoch += 1


def ddp_main(argv: list[str]) -> int:
    """`mpiexec -n N python examples/makemore.py --ddp [options]`."""
    parser = demo.build_parser("makemore.py --ddp", demo.CLASSIC_STEPS, ".")
    args = parser.parse_args(argv)
    torchic.init(backend=args.backend, threads=args.threads)
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    say = print if rank == 0 else (lambda *a, **k: None)
    words = demo.load_words(args.data)
    stoi, itos = demo.build_vocab(words)
    tr, va, _ = demo.split_words(words, seed=args.seed)
    Xtr, Ytr = demo.build_dataset(tr, stoi, args.context)
    Xva, Yva = demo.build_dataset(va, stoi, args.context)
    torchic.manual_seed(args.seed)
    model = DistributedDataParallel(demo.CharMLP(len(itos), args.context, args.emb,
                                                 args.hidden))
    say(f"torchic {torchic.__version__} | {world} processes | backend "
        f"{torchic.get_backend()} | batch {args.batch} per rank ({args.batch * world} a step)")
    opt = optim.SGD(model.parameters(), lr=args.lr)
    decay_at = args.decay_at or max(1, args.steps // 2)
    sched = optim.lr_scheduler.MultiStepLR(opt, [decay_at], gamma=args.lr_final / args.lr)
    batches = _batches(DistributedSampler(range(len(Xtr)), seed=args.seed), args.batch)
    t0 = time.perf_counter()
    for step in range(args.steps):
        ix = next(batches)
        loss = F.cross_entropy(model(torchic.tensor(Xtr[ix])), torchic.tensor(Ytr[ix]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 1000 == 0 or step == args.steps - 1:
            say(f"step {step:7d}  loss (rank 0's rows) {loss.item():.4f}")
    wall = time.perf_counter() - t0
    say(f"trained {args.steps:,} steps in {wall:.1f} s ({args.steps / wall:,.0f} steps/s, "
        f"{args.steps * args.batch * world / wall:,.0f} rows/s over {world} processes)")
    if rank == 0:
        net = model.module
        assert isinstance(net, demo.CharMLP)
        print(f"final loss: train {demo.evaluate(net, Xtr, Ytr):.4f}  "
              f"val {demo.evaluate(net, Xva, Yva):.4f}")
        gen = torchic.Generator().manual_seed(args.seed + 1)
        for name in demo.sample(net, itos, args.samples, generator=gen):
            print("  " + name)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            ckpt = os.path.join(args.out, "makemore.safetensors")
            demo.save_model(net, itos, ckpt, {"steps": str(args.steps), "ranks": str(world)})
            print(f"checkpoint: {ckpt}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--ddp" in argv:
        argv.remove("--ddp")
        sys.exit(ddp_main(argv))
    sys.exit(demo.main(argv, prog="makemore.py", steps=demo.CLASSIC_STEPS, out=".", ddp=True))
