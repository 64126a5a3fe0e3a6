"""`python -m torchic bench`: argument parsing and the files a run writes."""

import argparse
import json
import os
import sys

from .machine import without_openblas_tuning
from .suites import SUITES


def _csv(kind):
    def parse(text):
        items = [x.strip() for x in text.split(",") if x.strip()]
        if kind is int:
            try:
                items = [int(x) for x in items]
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected comma-separated integers, got "
                                                 f"{text!r}") from None
            if any(x < 1 for x in items):
                raise argparse.ArgumentTypeError("thread counts must be >= 1")
            return sorted(set(items))
        return items
    return parse


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m torchic bench",
        description="Measure torchic's backends beside NumPy and PyTorch (and tinygrad, PyTorch "
                    "CUDA where present) in one run; print tables, write JSON and PNG plots.",
        epilog="suites: " + ", ".join(SUITES) + " (default: all). Example: python -m torchic "
               "bench matmul overhead --backends simd --threads 1,2")
    p.add_argument("suites", nargs="*", metavar="SUITE", help="suites to run (default: all)")
    p.add_argument("--quick", action="store_true",
                   help="toy sizes and few repeats: every suite in seconds (CI)")
    p.add_argument("--backends", type=_csv(str), default=None,
                   help="torchic backends, comma-separated, or 'none' (default: every "
                        "registered one; unavailable ones are skipped with a note)")
    p.add_argument("--refs", "--references", dest="references", type=_csv(str), default=None,
                   help="reference libraries: numpy,torch,torch-compile,torch-cuda,"
                        "torch-cuda-compile,tinygrad or 'none' (default: every importable one "
                        "but torch-compile, PyTorch CPU's torch.compile of the gpt steps, whose "
                        "compiling takes minutes)")
    p.add_argument("--threads", type=_csv(int), default=None,
                   help="thread counts, comma-separated (default: matmul 1,2,4..cores; "
                        "other suites 1,cores)")
    p.add_argument("--cases", type=_csv(str), default=None,
                   help="only the cases of these names, comma-separated (e.g. "
                        "bigram_script,gpt_script of the train suite; default: every case)")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed samples per figure, at least (default 7, --quick 3); the median "
                        "is reported")
    p.add_argument("--rounds", type=int, default=None,
                   help="measure every implementation in this many rounds, interleaved, and "
                        "pool the samples (default 3, --quick 1): on a noisy machine the "
                        "implementations then see the same conditions")
    p.add_argument("--out", default="bench-results",
                   help="output folder for results.json, results.md and the plots "
                        "(default: bench-results)")
    p.add_argument("--no-plots", action="store_true", help="do not draw PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress lines (tables only)")
    p.add_argument("--keep-openblas-env", action="store_true",
                   help="keep OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE if set (by default the bench "
                        "runs itself again without them, so NumPy's OpenBLAS picks the kernel "
                        "for this CPU)")
    p.add_argument("--fail-on-targets", action="store_true",
                   help="exit with status 1 if a target with a goal fails or is missing")
    return p


def _rerun_without_openblas_tuning(argv):
    """Replace this process by the same bench with OPENBLAS_CORETYPE / _L2_SIZE unset.

    OpenBLAS reads them when NumPy loads it (already done: `import torchic` loads NumPy), so only
    a new process sees them gone. NumPy then runs the kernel OpenBLAS picks for this CPU; the
    workers backend, whose kernels are NumPy's, runs it too. The report says what was removed.
    """
    env, removed = without_openblas_tuning(os.environ)
    if env is None:
        return
    print("bench: running again without " + ", ".join(f"{k}={v}" for k, v in removed.items()) +
          " (NumPy's OpenBLAS then picks its own kernel; --keep-openblas-env keeps them)",
          file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "torchic.bench", *argv], env)


def main(argv=None):
    """Entry point of `python -m torchic bench`; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    suites = args.suites or list(SUITES)
    bad = [s for s in suites if s not in SUITES]
    if bad:
        print(f"unknown suite(s): {', '.join(bad)}; known: {', '.join(SUITES)}", file=sys.stderr)
        return 2
    for flag in ("repeat", "rounds"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            print(f"--{flag} must be >= 1", file=sys.stderr)
            return 2
    refs = args.references
    if refs is not None and refs == ["none"]:
        refs = []

    from . import plots, report
    from .runner import Runner
    try:
        runner = Runner(suites, quick=args.quick, backends=args.backends, references=refs,
                        threads=args.threads, repeat=args.repeat, rounds=args.rounds, cases=args.cases,
                        stream=None if args.quiet else sys.stderr)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.keep_openblas_env:   # the arguments are valid: measure in a fresh process
        _rerun_without_openblas_tuning(argv)
    results = runner.run(argv=argv)

    os.makedirs(args.out, exist_ok=True)
    files = []
    if not args.no_plots:
        written, notes = plots.write_plots(results, args.out)
        files += written
        results["notes"] += notes
        results["plots"] = [os.path.basename(f) for f in written]
    json_path = os.path.join(args.out, "results.json")
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1, default=str)
        f.write("\n")
    md_path = os.path.join(args.out, "results.md")
    with open(md_path, "w") as f:
        f.write(report.markdown_report(results, plots=results.get("plots", [])))
    print(report.terminal_report(results))
    errors = [r for r in results["records"] if r.get("error")]
    wrong = [r for r in results["records"] if r.get("check", "ok") != "ok"]
    print(f"\nwrote {json_path}, {md_path}" + "".join(f", {p}" for p in files) +
          f"  ({results['elapsed_s']:.0f} s)")
    if errors:
        print(f"{len(errors)} figure(s) failed with an error (see 'error' in the JSON)")
    if wrong:
        print(f"{len(wrong)} figure(s) computed a WRONG result (see 'check' in the JSON)")
    if args.fail_on_targets and any(t["status"] in ("FAIL", "missing") and t["goal"] is not None
                                    for t in results["targets"]):
        return 1
    return 0
