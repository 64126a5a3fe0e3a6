"""Run a catalogue of cases in a child process, with per-case reports and a watchdog.

Why a child process: a bad input must never crash (a signal) or hang the
interpreter. Inside pytest a segfault kills the whole session and a hang
eats CI's budget, so each catalogue runs in a child:

* the parent starts one child per backend, which imports torchic once, inits
  the backend once and runs every case in turn, printing one JSON line when a
  case starts and one with its outcome (exception type and MRO, message,
  whether the runtime was still usable afterwards);
* the parent reads those lines with a per-case deadline. If the child dies
  (exit status, or the signal that killed it) or a case overruns its deadline
  (the child's process group is killed), that case is recorded as a crash or
  a hang, and a fresh child resumes at the next case.

So 50 cases x 3 backends cost three interpreter starts, not 150.

A catalogue is a module with ``CASES``: a list of objects with ``name`` and
``fn(backend_name)``. The child imports it by file path.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------------------------
# child side
# ------------------------------------------------------------------------------------
def _emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _load_module(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("_catalogue", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_catalogue"] = mod
    spec.loader.exec_module(mod)
    return mod


def _restore_runtime(torchic, dispatcher, backend):
    """Make `backend` current again with the default heap cap (cases may re-init)."""
    rt = dispatcher._runtime
    if (rt is None or rt.closed or rt.backend.name != backend
            or rt.allocator.cap_bytes != dispatcher.DEFAULT_HEAP_CAP):
        torchic.init(backend)


def _sanity(torchic):
    """The runtime still computes right after the case (and no error was left queued)."""
    pending = None
    try:
        torchic.sync()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        pending = f"{type(exc).__name__}: {exc}"
    try:
        value = (torchic.arange(4).float() * 2).sum().item()
        sane = value == 12.0
        why = "" if sane else f"(arange(4) * 2).sum() gave {value}"
    except Exception as exc:  # noqa: BLE001
        sane, why = False, f"{type(exc).__name__}: {exc}"
    return pending, sane, why


def child_main(module_path, backend, start):
    import torchic
    from torchic import dispatcher
    mod = _load_module(module_path)
    torchic.init(backend)
    for i, case in enumerate(mod.CASES):
        if i < start:
            continue
        _emit({"start": i})
        t0 = time.perf_counter()
        rec = {"i": i, "name": case.name, "raised": False}
        try:
            case.fn(backend)
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt cases included
            rec.update(raised=True, type=type(exc).__name__,
                       mro=[c.__name__ for c in type(exc).__mro__],
                       msg=str(exc), tb=traceback.format_exc(limit=6)[-2000:])
        rec["secs"] = round(time.perf_counter() - t0, 4)
        try:
            _restore_runtime(torchic, dispatcher, backend)
            rec["pending"], rec["sane"], rec["sane_why"] = _sanity(torchic)
        except BaseException as exc:  # noqa: BLE001
            rec.update(pending=None, sane=False, sane_why=f"{type(exc).__name__}: {exc}")
        _emit(rec)
    _emit({"done": True})


# ------------------------------------------------------------------------------------
# parent side
# ------------------------------------------------------------------------------------
def _describe_exit(rc):
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run_batch(module_path, backend, n_cases, case_timeout=30.0, start_timeout=60.0,
              env=None):
    """Run every case of the catalogue on `backend`; return (results by index, exits).

    A result is the child's record, or {"crash": why, "stderr": tail} or
    {"hang": seconds}. `exits` lists how each child ended ("exit status 0" when clean).
    """
    results, exits = {}, []
    start = 0
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    while start < n_cases:
        with tempfile.TemporaryFile(mode="w+") as err:
            proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "child", module_path, backend,
                 str(start)],
                stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
                env=child_env, start_new_session=True, bufsize=1)
            current, next_start, done, last_done = None, None, False, start - 1
            deadline = time.monotonic() + start_timeout
            import selectors
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            buf = ""
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    if time.monotonic() < deadline:
                        continue
                    # hang: kill the whole process group, resume after the case
                    _kill_group(proc)
                    if current is not None:
                        results[current] = {"hang": case_timeout}
                        next_start = current + 1
                    else:
                        next_start = n_cases
                        exits.append("hung at exit" if done else
                                     f"hung between cases (after case {last_done})")
                    break
                chunk = os.read(proc.stdout.fileno(), 65536).decode()
                if not chunk:     # EOF: the child ended
                    rc = proc.wait()
                    exits.append(_describe_exit(rc))
                    if current is not None:
                        err.seek(0)
                        results[current] = {"crash": _describe_exit(rc),
                                            "stderr": err.read()[-3000:]}
                        next_start = current + 1
                    elif not done:
                        err.seek(0)
                        exits[-1] += " between cases: " + err.read()[-3000:]
                        # resume after the last finished case, if this child made progress
                        next_start = last_done + 1 if last_done >= start else n_cases
                    break
                buf += chunk
                while "\n" in buf:
                    line, buf = buf.split("\n", 1)
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue   # stray print from a case
                    if "start" in msg:
                        current = msg["start"]
                        deadline = time.monotonic() + case_timeout
                    elif "i" in msg:
                        results[msg["i"]] = msg
                        last_done = msg["i"]
                        current = None
                        deadline = time.monotonic() + case_timeout
                    elif msg.get("done"):
                        done = True
                        deadline = time.monotonic() + case_timeout  # time to exit
            sel.close()
            proc.stdout.close()
            if proc.poll() is None:
                _kill_group(proc)
            start = n_cases if next_start is None else next_start
    return results, exits


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "child":
        sys.path.insert(0, HERE)
        child_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit("usage: _batch.py child MODULE_PATH BACKEND START")
