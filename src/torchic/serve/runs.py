"""The server side of runs: the suite catalog, run records, worker processes, event logs.

Each run is one worker process (worker.py) whose JSON-line events are appended
to the run's event log; any number of listeners (SSE streams) read that log
from any position, so a page that reconnects, or a second tab, replays the run
exactly and never sees another run's events.

Runs execute one at a time by default (``jobs=1``): a benchmark on a 2-core
machine is only meaningful with the machine to itself, and tests are short.
Runs started meanwhile wait in FIFO order and say so (``queued`` events).
Everything here runs on the server's event loop; the only blocking work (the
suites) happens in the worker processes, so the page stays responsive.
"""

import asyncio
import collections
import json
import os
import secrets
import signal
import sys
import time

from .registry import ParamError, normalize_params, plan

STREAM_LIMIT = 32 << 20      # longest event line accepted from a worker
STDERR_TAIL = 40             # stderr lines kept for a crash report
MAX_QUEUED = 32              # runs waiting for a slot; more are refused (429)
RUN_TIMEOUT_S = 3600.0       # a run's time limit when its suite sets no timeout_s


class UnknownSuite(LookupError):
    pass


class UnknownRun(LookupError):
    pass


class QueueFull(RuntimeError):
    """Too many runs are waiting already (the HTTP API answers 429)."""


def _child_env():
    """The worker must import this same torchic, even when it is not installed."""
    import torchic
    root = os.path.dirname(os.path.dirname(os.path.abspath(torchic.__file__)))
    env = dict(os.environ)
    parts = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


class Catalog:
    """The suites as the worker lists them (names, params, columns, plots), plus the machine."""

    def __init__(self, extra_dirs=(), python=None, timeout_s=120.0):
        self.extra_dirs = [os.path.abspath(d) for d in extra_dirs]
        self.python = python or sys.executable
        self.timeout_s = timeout_s
        self.data = None
        self.error = None
        self._lock = asyncio.Lock()
        self.loaded_at = None

    async def load(self):
        """List the suites again (a worker process imports every suite file)."""
        async with self._lock:
            return await self._load()

    async def ensure(self):
        """The catalog, listing it first if that has not succeeded yet."""
        async with self._lock:
            if self.data is None:
                await self._load()
            return self.data

    async def _load(self):
        args = [self.python, "-m", "torchic.serve.worker", "list"]
        for d in self.extra_dirs:
            args += ["--suites", d]
        proc = await asyncio.create_subprocess_exec(
            *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=_child_env(), limit=STREAM_LIMIT,
            start_new_session=True)   # Ctrl+C is the server's to handle, not the workers'
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.timeout_s)
        except asyncio.TimeoutError:
            _kill(proc)
            await proc.wait()
            self.error = f"listing the suites took more than {self.timeout_s:.0f} s"
            raise RuntimeError(self.error) from None
        except BaseException:      # the server stopping meanwhile: no orphan lister
            _kill(proc)
            raise
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-15:]
            self.error = ("listing the suites failed (exit code "
                          f"{proc.returncode}):\n" + "\n".join(tail))
            raise RuntimeError(self.error)
        lines = out.decode("utf-8", "replace").strip().splitlines()
        try:
            self.data = json.loads(lines[-1])
        except (IndexError, ValueError):
            tail = err.decode("utf-8", "replace").strip().splitlines()[-15:]
            self.error = "listing the suites printed no catalog:\n" + "\n".join(tail)
            raise RuntimeError(self.error) from None
        self.error = None
        self.loaded_at = time.time()
        return self.data

    def suite(self, name):
        for s in (self.data or {}).get("suites", []):
            if s["name"] == name:
                return s
        known = ", ".join(s["name"] for s in (self.data or {}).get("suites", []))
        raise UnknownSuite(f"unknown suite {name!r}; known suites: {known or 'none'}")


class Run:
    """One run: its request, its state and its event log (events are append-only)."""

    def __init__(self, suite, params):
        self.id = secrets.token_hex(6)
        self.suite = suite                  # the catalog description
        self.params = params                # {name: [choices]}, validated
        self.total = len(plan(suite.get("skip"), params)[0])   # those that run
        self.status = "queued"              # queued, running, done, failed, error, cancelled
        self.events = []
        self.created = time.time()
        self.started = self.finished = None
        self.proc = None
        self.cancel_requested = False
        self._changed = asyncio.Event()
        self.task = None

    @property
    def ended(self):
        return self.finished is not None

    def add(self, event):
        if self.ended:
            return
        event = dict(event)
        event["seq"] = len(self.events)
        event.setdefault("t", round(time.time() - self.created, 3))
        self.events.append(event)
        if event.get("type") == "end":
            self.status = event.get("status", "done")
            self.finished = time.time()
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_beyond(self, seq, timeout):
        """Wait until an event after `seq` exists or the run ended (False on timeout)."""
        changed = self._changed
        if len(self.events) > seq + 1 or self.ended:
            return True
        try:
            await asyncio.wait_for(changed.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    def summary(self):
        return {"id": self.id, "suite": self.suite["name"], "kind": self.suite["kind"],
                "params": self.params, "total": self.total, "status": self.status,
                "created": self.created, "started": self.started, "finished": self.finished,
                "events": len(self.events)}

    def record(self):
        """Everything about the run (the per-run JSON download)."""
        rows = [e["row"] for e in self.events if e.get("type") == "row"]
        logs = [e.get("text", "") for e in self.events if e.get("type") == "log"]
        errors = [{k: v for k, v in e.items() if k not in ("seq", "type")}
                  for e in self.events if e.get("type") == "error"]
        end = next((e for e in self.events if e.get("type") == "end"), {})
        return dict(self.summary(), rows=rows, logs=logs, errors=errors,
                    counts=end.get("counts", {}), elapsed_s=end.get("elapsed_s"))


class RunManager:
    """Starts, queues, times out and cancels runs.

    At most ``max_queued`` runs wait for a slot (more are refused with QueueFull),
    and every run is stopped after its suite's ``timeout_s``, or ``run_timeout_s``
    when the suite sets none, counted from when it starts running.
    """

    def __init__(self, catalog, jobs=1, keep=200, python=None, max_queued=None,
                 run_timeout_s=None):
        self.catalog = catalog
        self.jobs = max(1, int(jobs))
        self.keep = keep
        self.max_queued = MAX_QUEUED if max_queued is None else int(max_queued)
        self.run_timeout_s = RUN_TIMEOUT_S if run_timeout_s is None else float(run_timeout_s)
        self.python = python or sys.executable
        self.runs = collections.OrderedDict()
        self._slots = asyncio.Semaphore(self.jobs)
        self._waiting = []          # queued runs, FIFO
        self._closing = False

    # -- requests -----------------------------------------------------------------------------
    async def start(self, suite_name, params):
        await self.catalog.ensure()
        suite = self.catalog.suite(suite_name)            # UnknownSuite
        normalized = normalize_params(suite, params)      # ParamError
        if self._closing:
            raise RuntimeError("the server is shutting down")
        if len(self._waiting) >= self.max_queued:
            raise QueueFull(f"too many runs waiting: {len(self._waiting)} wait for their "
                            f"turn already (at most {self.max_queued}, --max-queued); "
                            f"start this one when they have run, or stop some")
        run = Run(suite, normalized)
        self.runs[run.id] = run
        self._evict()
        self._waiting.append(run)
        run.add({"type": "queued", "position": len(self._waiting) - 1 + self._busy(),
                 "suite": suite["name"], "params": normalized, "total": run.total})
        run.task = asyncio.get_running_loop().create_task(self._execute(run))
        return run

    def get(self, run_id):
        run = self.runs.get(run_id)
        if run is None:
            raise UnknownRun(f"unknown run {run_id!r} (finished runs are kept for the last "
                             f"{self.keep} runs only)")
        return run

    def cancel(self, run_id):
        run = self.get(run_id)
        if run.ended:
            return run
        run.cancel_requested = True
        if run.proc is not None and run.proc.returncode is None:
            _kill(run.proc)
        elif run.status == "queued":
            self._finish(run, "cancelled", "cancelled before it started")
        return run

    async def shutdown(self):
        """Cancel every run (idempotent); their end events close the open streams."""
        self._closing = True
        for run in list(self.runs.values()):
            if not run.ended:
                run.cancel_requested = True
                if run.proc is not None and run.proc.returncode is None:
                    _kill(run.proc)
                elif run.status == "queued":
                    self._finish(run, "cancelled", "the server stopped before the run started")
        tasks = [r.task for r in self.runs.values() if r.task and not r.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    # -- execution ------------------------------------------------------------------------------
    def _busy(self):
        return sum(1 for r in self.runs.values() if r.status == "running")

    def _evict(self):
        finished = [rid for rid, r in self.runs.items() if r.ended]
        for rid in finished[:max(0, len(self.runs) - self.keep)]:
            del self.runs[rid]

    def _finish(self, run, status, message=None):
        if run in self._waiting:
            self._waiting.remove(run)
        if message:
            run.add({"type": "error" if status in ("failed", "error") else "log",
                     "message": message, "text": message})
        run.add({"type": "end", "status": status,
                 "elapsed_s": round(time.time() - (run.started or run.created), 3)})

    async def _execute(self, run):
        try:
            async with self._slots:
                if run in self._waiting:
                    self._waiting.remove(run)
                for i, other in enumerate(self._waiting):   # tell the others they moved up
                    other.add({"type": "queued", "position": i + self._busy() + 1})
                if run.ended:
                    return
                if run.cancel_requested:
                    self._finish(run, "cancelled", "cancelled before it started")
                    return
                run.status = "running"
                run.started = time.time()
                run.add({"type": "running"})
                await self._run_worker(run)
        except asyncio.CancelledError:
            if run.proc is not None and run.proc.returncode is None:
                _kill(run.proc)
            if not run.ended:
                self._finish(run, "cancelled", "the server stopped")
            raise
        except Exception as exc:  # noqa: BLE001  (a server-side failure ends this run only)
            if not run.ended:
                self._finish(run, "error", f"the server could not run this suite: "
                                           f"{type(exc).__name__}: {exc}")

    async def _run_worker(self, run):
        spec = {"suite": run.suite["name"], "module": run.suite["module"],
                "source": run.suite["source"], "params": run.params,
                "extra_dirs": self.catalog.extra_dirs}
        proc = await asyncio.create_subprocess_exec(
            self.python, "-m", "torchic.serve.worker", "run",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=_child_env(), limit=STREAM_LIMIT,
            start_new_session=True)
        run.proc = proc
        if run.cancel_requested:
            _kill(proc)
        proc.stdin.write(json.dumps(spec).encode())
        try:
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass
        tail = collections.deque(maxlen=STDERR_TAIL)
        child_end = []

        async def pump_events():
            async for line in proc.stdout:
                text = line.decode("utf-8", "replace").strip()
                if not text:
                    continue
                try:
                    event = json.loads(text)
                except ValueError:
                    run.add({"type": "log", "text": text, "stream": "stdout"})
                    continue
                if not isinstance(event, dict) or "type" not in event:
                    run.add({"type": "log", "text": text, "stream": "stdout"})
                elif event["type"] == "end":
                    child_end.append(event)          # added after the process exits
                else:
                    event.pop("seq", None)
                    run.add(event)

        async def pump_stderr():
            async for line in proc.stderr:
                text = line.decode("utf-8", "replace").rstrip("\n")
                tail.append(text)
                run.add({"type": "log", "text": text, "stream": "stderr"})

        timeout = run.suite.get("timeout_s") or self.run_timeout_s
        where = "the suite's timeout_s" if run.suite.get("timeout_s") else "--run-timeout"
        pumps = asyncio.gather(pump_events(), pump_stderr(), proc.wait())
        timed_out = False
        try:
            await asyncio.wait_for(pumps, timeout)
        except asyncio.TimeoutError:
            timed_out = True
            _kill(proc)
            await proc.wait()
        except BaseException:
            # a broken stream (an over-long line) or the server stopping: never leave the
            # worker running behind the run's back
            pumps.cancel()
            _kill(proc)
            await asyncio.shield(proc.wait())
            raise
        if run.cancel_requested:
            self._finish(run, "cancelled", "the server stopped" if self._closing else "cancelled")
        elif timed_out:
            self._finish(run, "failed", f"stopped: the run took longer than its time limit "
                                        f"of {timeout:g} s ({where})")
        elif child_end:
            event = child_end[-1]
            event.pop("seq", None)
            run.add(event)
        else:
            code = proc.returncode
            why = (f"killed by signal {-code} ({_signame(-code)})" if code < 0
                   else f"exit code {code}")
            self._finish(run, "failed", f"the worker process died ({why}) before the run "
                                        f"finished; last output:\n" + "\n".join(tail))


def _signame(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return "?"


def _kill(proc):
    try:
        proc.kill()
    except ProcessLookupError:
        pass


__all__ = ["Catalog", "Run", "RunManager", "UnknownRun", "UnknownSuite", "QueueFull",
           "ParamError"]
