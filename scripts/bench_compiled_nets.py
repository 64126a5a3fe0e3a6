"""Issue 45's row for issue 42's models: the LeNet and LSTM LM training steps (bench/conv.py,
bench/lstm.py: the same weights, batches and optimizers) eager and compiled, torchic (simd)
beside PyTorch CPU in one process, rounds interleaved; ms per step (median of 3 rounds).
(The bench's rows of the same steps: `python -m torchic bench compile --cases lenet,lstm_lm
--refs torch,torch-compile`.)

    PYTHONPATH=$PWD/src python scripts/bench_compiled_nets.py lenet 1
    PYTHONPATH=$PWD/src python scripts/bench_compiled_nets.py lstm 2 torchic.compile,torch.compile

The third argument picks implementations (default: all four): LIB.MODE with LIB torchic or
torch, MODE eager or compile (torchic.compile / torch.compile of the step's forward,
backward and optimizer update; the batch's upload and the loss's .item() stay outside).
"""

import statistics
import sys
import time

ALL = "torchic.eager,torchic.compile,torch.eager,torch.compile"


def make_step(lib, model_name, compiled):
    """step() -> the loss (a float): one training step of `model_name` on lib (the bench's
    own step, bench/conv.py model_step)."""
    from torchic.bench import conv
    return conv.model_step(model_name, lib, compiled)


def main():
    model_name, threads = sys.argv[1], int(sys.argv[2])
    if model_name not in ("lenet", "lstm"):
        raise SystemExit(f"model must be lenet or lstm, got {model_name!r}")
    import torch
    import torchic
    torch.set_num_threads(threads)
    torchic.init("simd", threads=threads)
    libs = {"torch": torch, "torchic": torchic}
    steps = {}
    for name in (sys.argv[3] if len(sys.argv) > 3 else ALL).split(","):
        lib, mode = name.split(".")
        steps[name] = make_step(libs[lib], model_name, mode == "compile")
        for _ in range(4):      # warm-up: records / compiles
            steps[name]()
    n = 30 if model_name == "lenet" else 4
    times = {name: [] for name in steps}
    for _ in range(3):
        for name, step in steps.items():
            t = time.perf_counter()
            for _ in range(n):
                step()
            times[name].append((time.perf_counter() - t) / n * 1e3)
    print(model_name, f"threads={threads}",
          "  ".join(f"{k} {statistics.median(v):.2f} ms" for k, v in times.items()))


if __name__ == "__main__":
    main()
