"""`python -m torchic serve`: the interactive test and benchmark page.

    python -m torchic serve [--port 8765] [--no-browser] [--suites DIR] [--jobs 1]
                            [--max-queued 32] [--run-timeout 3600]

The page lists every suite: the kernel parity tests (each op family on each
backend against NumPy float64) and the benchmarks of ``python -m torchic
bench``, each with one button per parameter value and "Run all". Results stream
in as they are produced (table rows, a log panel, a progress bar, a plot) and
can be downloaded as JSON.

Add a suite by dropping one file into ``torchic/serve/suites/`` (or a folder
given with ``--suites``) that calls ``define_test`` or ``define_bench``; see
``registry.py`` for the contract and ``suites/`` for examples.

How it fits together:

    browser ──HTTP/SSE──> app.py (Starlette on uvicorn; one event loop, never blocks)
                            │  runs.py: catalog, run records, per-run event logs
                            └─> worker.py in a fresh process per run (and for listing):
                                  imports the suite file, calls fn(run, **combination),
                                  writes JSON-line events back (context.py builds them)

The server process never initializes a torchic backend; workers do, one run
at a time (``--jobs``), so runs never share a runtime and benchmarks do not
compete for the cores.
"""

from .context import Skip
from .registry import define_bench, define_test

__all__ = ["define_bench", "define_test", "Skip", "main"]


def main(argv=None):
    from .cli import main as _main
    return _main(argv)
