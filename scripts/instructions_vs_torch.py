"""Instructions per call, torchic (simd, 1 thread) beside PyTorch (1 thread), counted by valgrind
(issue 45's eager rows; docs/perf/eager_overhead.md, seventh pass).

A shared 2-core machine moves wall-clock step times by 2x between runs; an instruction count
does not move. Each case runs N times and 0 times in a fresh process under
`valgrind --tool=cachegrind --cache-sim=no`, and the difference over N is printed. Counts
are not times (PyTorch's C++ and our Python run at different IPC), but they say where each
library spends its work, and A/B two trees of ours exactly.

    PYTHONPATH=$PWD/src python scripts/instructions_vs_torch.py gpt_step add_nograd
    PYTHONPATH=$PWD/src python scripts/instructions_vs_torch.py --libs torchic gpt_step

Needs valgrind on PATH (`apt-get install valgrind`) and, for the PyTorch column, torch.
"""

import argparse
import os
import re
import subprocess
import sys

# case -> (calls for the count, what one call is)
CASES = {
    "bigram_step": (100, "tests/programs/bigram.py's loop body, its loss read"),
    "gpt_step": (30, "tests/programs/gpt.py's loop body, its loss read"),
    "gpt_forward": (30, "gpt.py's model on a fixed batch"),
    "gpt_forward_backward": (30, "the same, then loss.backward()"),
    "gpt_adamw": (50, "AdamW.step() over gpt.py's 38 parameters"),
    "add_nograd": (2000, "y + y, (4, 8, 16) float32"),
    "add_grad": (2000, "x + y, x requiring grad"),
    "matmul_grad": (2000, "(4, 8, 16) @ (16, 16), both requiring grad"),
}


def _child(lib, case, n):
    """Run `case` n times after a warm-up (in the valgrind'ed process)."""
    from torchic.bench import scripts
    if lib == "torch":
        import torch
        torch.set_num_threads(1)
        load = scripts._load
    else:
        import torchic as torch
        torch.init("simd", threads=1)
        scripts._programs_dir()
        from shim import torchic_as_torch    # tests/programs/shim.py

        def load(name):
            with torchic_as_torch():
                return scripts._load(name)
    if case.startswith(("bigram", "gpt")):
        run = load(case.split("_")[0]).trainer()
        model = run.model
        xb, yb = torch.randint(0, 40, (4, 8)), torch.randint(0, 40, (4, 8))
        params = list(model.parameters())
        opt = torch.optim.AdamW(params, lr=1e-3)

        def forward():
            return model(xb, yb)[1]

        def adamw():
            for p in params:
                if p.grad is None:
                    p.grad = torch.randn(p.shape) * 0.01
            opt.step()
        fn = {"bigram_step": lambda: run.step().item(), "gpt_step": lambda: run.step().item(),
              "gpt_forward": forward, "gpt_forward_backward": lambda: forward().backward(),
              "gpt_adamw": adamw}[case]
    else:
        x = torch.randn(4, 8, 16, requires_grad=True)
        y = torch.randn(4, 8, 16)
        w = torch.randn(16, 16, requires_grad=True)
        fn = {"add_nograd": lambda: y + y, "add_grad": lambda: x + y,
              "matmul_grad": lambda: x @ w}[case]
    for _ in range(5):
        fn()
    for _ in range(n):
        fn()


def _count(lib, case, n):
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                          "--cachegrind-out-file=/dev/null", sys.executable, __file__,
                          "--child", lib, case, str(n)],
                         env=env, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if out.returncode != 0 or not found:
        raise SystemExit(f"{lib} {case} x{n} failed:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", default=list(CASES), help=", ".join(CASES))
    p.add_argument("--libs", default="torchic,torch")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        lib, case, n = a.child
        return _child(lib, case, int(n))
    libs = a.libs.split(",")
    print(f"{'case':<22}" + "".join(f"{lib:>14}" for lib in libs) + "   (instructions a call)")
    for case in a.cases:
        if case not in CASES:
            raise SystemExit(f"unknown case {case!r}; cases: {', '.join(CASES)}")
        n = CASES[case][0]
        per = [(_count(lib, case, n) - _count(lib, case, 0)) / n for lib in libs]
        ratio = f"   {per[0] / per[1]:.2f}x" if len(per) == 2 else ""
        print(f"{case:<22}" + "".join(f"{v / 1e3:>13.1f}K" for v in per) + ratio)


if __name__ == "__main__":
    main()
