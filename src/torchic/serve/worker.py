"""The worker process: lists the suites, or runs one suite, for the server.

    python -m torchic.serve.worker list [--suites DIR ...]   -> one JSON document
    python -m torchic.serve.worker run  < spec.json           -> JSON lines, one event each

Every run gets a fresh process. torchic's runtime is process-global
(``torchic.init`` replaces it), a kernel can crash or hang a process, and a
benchmark wants the machine to itself; a process per run gives each run a
clean runtime, lets the server stop a run by killing it, and keeps the server
up whatever a suite does. The server never imports torchic itself.

Protocol: the events go to the process's original stdout, one JSON object per
line; the file descriptor 1 is then pointed at stderr, so stray prints (from
Python or from native code) cannot corrupt the stream; the server shows
stderr lines as log lines.
"""

import argparse
import json
import os
import sys
import time
import traceback

from . import registry
from .context import (LockedEmitter, RunContext, Sessions, Skip, backend_available,
                      backend_platform, clean)


def _protocol_stream():
    """A private copy of stdout for events; fd 1 (and sys.stdout) now go to stderr."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def _writer(stream):
    def write(event):
        stream.write(json.dumps(clean(event), allow_nan=False, separators=(",", ":")) + "\n")
        stream.flush()
    return write


def machine_summary():
    """The page header's machine record: the bench's, quick (bench/machine.py)."""
    try:
        from torchic.bench import machine
        return machine.collect(quick=True)
    except Exception as exc:  # noqa: BLE001  (best effort; never stops the listing)
        import platform
        return {"versions": {"python": platform.python_version()},
                "error": f"{type(exc).__name__}: {exc}"}


def list_suites(extra_dirs):
    found, errors = registry.discover(extra_dirs)
    described = []
    for suite in found.values():
        try:
            described.append(suite.describe())
        except Exception as exc:  # noqa: BLE001  (a broken params callable)
            errors.append({"module": suite.module, "source": suite.source, "suite": suite.name,
                           "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc(limit=8)})
    backends = {}
    try:
        from torchic import dispatcher
        for name in dispatcher.backend_names():
            ok, why = backend_available(name)
            backends[name] = ({"available": True, "platform": backend_platform(name)} if ok
                              else {"available": False, "reason": why})
    except Exception as exc:  # noqa: BLE001
        errors.append({"module": "torchic", "error": f"{type(exc).__name__}: {exc}"})
    return {"suites": described, "errors": errors, "backends": backends,
            "machine": machine_summary()}


def run_suite(spec, emit):
    """Run every combination of spec["params"] of one suite; returns the final status."""
    t_start = time.perf_counter()
    try:
        registry.import_suite_file(spec["module"], spec.get("source"))
        suite = registry.suites().get(spec["suite"])
        if suite is None:
            raise LookupError(f"suite {spec['suite']!r} is not defined by {spec['module']} "
                              f"any more (reload the page)")
    except Exception as exc:  # noqa: BLE001
        emit({"type": "error", "message": f"could not load the suite: {type(exc).__name__}: "
                                          f"{exc}", "traceback": traceback.format_exc()})
        emit({"type": "end", "status": "error", "elapsed_s": 0.0})
        return "error"

    selection = spec["params"]
    combos, skipped = registry.plan(suite.skip_rules(), selection)
    emit({"type": "start", "total": len(combos), "pid": os.getpid(),
          "combinations": len(combos),
          "skipped": [{"combination": c, "why": why} for c, why in skipped]})
    sessions = Sessions()
    counts = {}
    errors = 0
    try:
        for i, combo in enumerate(combos):
            label = " ".join(f"{k}={v}" for k, v in combo.items())
            emit({"type": "progress", "done": i, "total": len(combos), "label": label})
            run = RunContext(emit, combo, i, len(combos), selection, sessions)
            try:
                suite.fn(run, **combo)
            except Skip as exc:
                run.row(status="skip", message=str(exc))
            except Exception as exc:  # noqa: BLE001  (shown on the page; the run goes on)
                errors += 1
                message = f"{type(exc).__name__}: {exc}"
                emit({"type": "error", "combination": combo, "message": message,
                      "traceback": traceback.format_exc()})
                run.row(status="error", message=message[:2000])
                sessions.close()   # a failed combination may leave its session broken
            for k, v in run.counts.items():
                counts[k] = counts.get(k, 0) + v
        emit({"type": "progress", "done": len(combos), "total": len(combos), "label": ""})
    finally:
        try:
            sessions.close()
        except Exception as exc:  # noqa: BLE001
            errors += 1
            emit({"type": "error", "message": f"closing the session failed: {exc}",
                  "traceback": traceback.format_exc()})
    failed = errors or any(counts.get(s) for s in ("fail", "error", "mismatch"))
    status = "failed" if failed else "done"
    emit({"type": "end", "status": status, "counts": counts,
          "elapsed_s": round(time.perf_counter() - t_start, 3)})
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torchic.serve.worker")
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="print the suites as one JSON document")
    p_list.add_argument("--suites", action="append", default=[], metavar="DIR")
    sub.add_parser("run", help="run the suite described by the JSON spec on stdin")
    args = parser.parse_args(argv)
    out = _protocol_stream()
    if args.command == "list":
        out.write(json.dumps(clean(list_suites(args.suites)), allow_nan=False) + "\n")
        out.flush()
        return 0
    spec = json.loads(sys.stdin.read())
    for d in spec.get("extra_dirs", []):   # so a suite's sibling helpers import like built-ins'
        if d not in sys.path:
            sys.path.append(d)
    emit = LockedEmitter(_writer(out))
    status = run_suite(spec, emit)
    out.flush()
    return 0 if status in ("done", "failed") else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # skip interpreter teardown hangs of native libraries (GPU drivers): the results are out
    os._exit(code)
