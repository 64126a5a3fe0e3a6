"""What a suite function gets as ``run``: rows, logs, progress, cases, sessions.

    def unary(run, backend, layout):
        run.use_backend(backend)                  # torchic.init, reused across combinations
        for name, fn, ref in run.each(CASES):     # progress within this combination
            run.test(name, lambda: check(fn, ref, layout=layout))
        run.log("done", backend)

Every row carries the combination's parameters first (``backend``, ``layout``
above), then the fields the suite gives, so a row is always attributable.
Everything goes out through ``emit`` as one JSON-able event dict; the worker
process (worker.py) writes them to the server, which streams them to the page.
"""

import contextlib
import math
import sys
import threading
import time
import traceback

PROGRESS_INTERVAL_S = 0.05


class Skip(Exception):
    """Raised by a suite (``raise run.skip("why")``): this combination or case cannot run here."""


class Sessions:
    """One cached context manager at a time (a backend init, thread limits, ...).

    Entering a session with the key of the current one reuses it; a different
    key closes the current one first. Combinations that share a setting (same
    backend and threads) therefore share one ``torchic.init``.
    """

    def __init__(self):
        self.key = None
        self.value = None
        self._stack = None

    def enter(self, key, factory):
        if self._stack is not None and self.key == key:
            return self.value
        self.close()
        stack = contextlib.ExitStack()
        try:
            value = stack.enter_context(factory())
        except BaseException:
            stack.close()
            raise
        self.key, self.value, self._stack = key, value, stack
        return value

    def close(self):
        stack, self._stack, self.key, self.value = self._stack, None, None, None
        if stack is not None:
            stack.close()


_available_cache = {}


def backend_available(name):
    """(ok, why) for a torchic backend, cached per process (webgpu's probe takes ~1 s)."""
    if name not in _available_cache:
        from torchic import dispatcher
        try:
            _available_cache[name] = tuple(dispatcher.backend_class(name).available())
        except Exception as exc:  # noqa: BLE001
            _available_cache[name] = (False, f"{type(exc).__name__}: {exc}")
    return _available_cache[name]


def backend_platform(name):
    """An available backend's describe_platform() (best effort: an error says why not)."""
    from torchic import dispatcher
    try:
        return dispatcher.backend_class(name).describe_platform()
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}


@contextlib.contextmanager
def torchic_session(name, threads=None):
    import torchic
    torchic.init(name, threads=threads)
    try:
        yield torchic
    finally:
        torchic.shutdown()


def sync_torchic():
    """Surface a kernel error left behind (if a torchic runtime is active)."""
    dispatcher = sys.modules.get("torchic.dispatcher")
    if dispatcher is not None and dispatcher._runtime is not None \
            and not dispatcher._runtime.closed:
        dispatcher._runtime.sync()


def clean(value):
    """A JSON-safe copy: NumPy scalars to Python, non-finite floats to strings."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    item = getattr(value, "item", None)       # NumPy scalar / 0-d array
    if callable(item):
        try:
            return clean(item())
        except (TypeError, ValueError):
            pass
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    return str(value)


class RunContext:
    """The ``run`` argument of a suite function, for one combination of parameters."""

    Skip = Skip

    def __init__(self, emit, combo, index, total, selection, sessions):
        self._emit = emit
        self.params = dict(combo)          # this combination
        self.selection = selection         # every selected value, {name: [choices]}
        self.index, self.total = index, total
        self._sessions = sessions
        self._last_progress = 0.0
        self.counts = {}                   # row status -> count (for the run summary)

    # -- output -------------------------------------------------------------------------------
    def log(self, *parts):
        self._emit({"type": "log", "text": " ".join(str(p) for p in parts)})

    def row(self, row=None, **fields):
        """Add one table row: the combination's parameters, then these fields."""
        data = dict(self.params)
        data.update(row or {})
        data.update(fields)
        status = data.get("status")
        if status is not None:
            self.counts[status] = self.counts.get(status, 0) + 1
        self._emit({"type": "row", "row": clean(data)})
        return data

    def progress(self, done, total):
        """Progress within this combination (the page's bar covers the whole run)."""
        now = time.monotonic()
        if done < total and now - self._last_progress < PROGRESS_INTERVAL_S:
            return
        self._last_progress = now
        frac = min(max(done / total, 0.0), 1.0) if total else 1.0
        self._emit({"type": "progress", "done": round(self.index + frac, 4), "total": self.total})

    def each(self, items):
        """Iterate over items, reporting progress as it goes."""
        items = list(items)
        for i, item in enumerate(items):
            self.progress(i, len(items))
            yield item
        self.progress(len(items), len(items))

    # -- tests --------------------------------------------------------------------------------
    def skip(self, why):
        return Skip(why)

    def test(self, case, fn, **fields):
        """Run one test case: a row with status pass / fail / skip / error and its time.

        fn() may return a dict of extra fields (max_err, ...). An AssertionError is a
        failure; any other exception is an error; both keep ``exc.fields`` if set.
        """
        t0 = time.perf_counter()
        extra, status, message = {}, "pass", ""
        try:
            result = fn()
            sync_torchic()
            if isinstance(result, dict):
                extra = result
        except Skip as exc:
            status, message = "skip", str(exc)
        except AssertionError as exc:
            status, message = "fail", str(exc).strip() or "assertion failed"
            extra = getattr(exc, "fields", {}) or {}
        except Exception as exc:  # noqa: BLE001  (a case's error is its row, the run goes on)
            status = "error"
            message = f"{type(exc).__name__}: {exc}"
            extra = getattr(exc, "fields", {}) or {}
            self.log(f"{case}: {traceback.format_exc(limit=6)}")
        if status != "pass":
            try:   # clear a pending kernel error so that it is not blamed on the next case
                sync_torchic()
            except Exception:  # noqa: BLE001
                pass
        data = {"case": case, "status": status}
        data.update(extra)
        data.update(ms=round((time.perf_counter() - t0) * 1e3, 3), message=message[:2000])
        data.update(fields)
        return self.row(data)

    # -- sessions -------------------------------------------------------------------------------
    def session(self, key, factory):
        """Enter factory() (a context manager), reusing it while the key stays the same."""
        return self._sessions.enter(key, factory)

    def use_backend(self, name, threads=None):
        """Make torchic backend `name` current (skips the combination if unavailable)."""
        ok, why = backend_available(name)
        if not ok:
            raise Skip(f"backend {name!r} unavailable: {why}")
        return self.session(("torchic", name, threads), lambda: torchic_session(name, threads))


class LockedEmitter:
    """Serializes emit calls from several threads (a suite may log from its own threads)."""

    def __init__(self, write):
        self._write = write
        self._lock = threading.Lock()

    def __call__(self, event):
        with self._lock:
            self._write(event)
