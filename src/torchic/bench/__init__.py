"""`python -m torchic bench`: torchic's backends measured beside NumPy and PyTorch in one run.

    python -m torchic bench                      # every suite, every available backend
    python -m torchic bench matmul --threads 1,2 --backends simd
    python -m torchic bench --quick              # toy sizes, seconds (what CI runs)

Modules, in the order a run uses them:

    suites.py   the cases (what is computed, how much work, the expected result)
    impls.py    torchic backends and references (NumPy, PyTorch CPU/CUDA, tinygrad)
                behind one small interface, with the fairness rules
    timing.py   warm-up, autorange, medians
    runner.py   the loop suite -> threads -> impl -> case, one record per figure
    targets.py  the backend issues' goals as ratios within the run
    machine.py  CPU, caches, BLAS kernel, versions, env of the run
    report.py   text and Markdown tables (README section via scripts/gen_perf_readme.py)
    plots.py    PNG plots
    cli.py      argparse and the output files (results.json, results.md, *.png)
"""

from .cli import build_parser, main

__all__ = ["main", "build_parser"]
