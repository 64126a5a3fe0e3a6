"""Helpers for the serve tests: a real `python -m torchic serve` on a free port.

The server runs as a subprocess with the built-in suites plus the toy suites of
``toy_suites/`` (deterministic values, a suite that raises, one that crashes its
worker, a slow one for concurrency and cancelling, and a file that fails to
import). One server is shared by the whole tests/serve session.

Missing pieces (starlette / uvicorn, and for the browser test Playwright and
Chromium) skip locally with the reason, but fail when TORCHIC_REQUIRE_ALL_BACKENDS=1
(set by .ci/run): in CI nothing may silently not run.
"""

import http.client
import importlib.util
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOY_SUITES = os.path.join(HERE, "toy_suites")
REQUIRE_ALL = os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1"


def require(condition, why):
    """Skip with `why` unless TORCHIC_REQUIRE_ALL_BACKENDS=1, where it is a failure."""
    if condition:
        return
    if REQUIRE_ALL:
        pytest.fail(f"{why} (required: TORCHIC_REQUIRE_ALL_BACKENDS=1)")
    pytest.skip(why)


def missing_modules(*names):
    return [n for n in names if importlib.util.find_spec(n) is None]


class Server:
    def __init__(self, proc, url, stderr_path):
        self.proc, self.url, self.stderr_path = proc, url.rstrip("/"), stderr_path

    # -- HTTP helpers (stdlib only) -------------------------------------------------------------
    def request(self, method, path, body=None, headers=None, raw=None):
        """(status, parsed JSON or text) of one request."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, _parse(res.read(), res.headers)
        except urllib.error.HTTPError as err:
            return err.code, _parse(err.read(), err.headers)

    def get(self, path):
        return self.request("GET", path)

    def start(self, suite, params=None):
        status, data = self.request("POST", "/api/runs", {"suite": suite, "params": params or {}})
        assert status == 201, (status, data)
        return data["id"]

    def events(self, run_id, since=None, timeout=60):
        """Every event of the run from the SSE stream (after `since`), up to its end."""
        host, port = self.url.split("//")[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        headers = {"Accept": "text/event-stream"}
        if since is not None:
            headers["Last-Event-ID"] = str(since)
        conn.request("GET", f"/api/runs/{run_id}/events", headers=headers)
        res = conn.getresponse()
        if res.status == 204:
            return []
        assert res.status == 200, res.status
        assert res.getheader("Content-Type").startswith("text/event-stream")
        out, ids, deadline = [], [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = res.readline()
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line.startswith("id: "):
                ids.append(int(line[4:]))
            elif line.startswith("data: "):
                event = json.loads(line[6:])
                assert event["seq"] == ids[-1]
                out.append(event)
                if event["type"] == "end":
                    break
        conn.close()
        return out

    def run(self, suite, params=None, timeout=60):
        run_id = self.start(suite, params)
        return run_id, self.events(run_id, timeout=timeout)

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()


def _parse(raw, headers):
    if (headers.get("Content-Type") or "").startswith("application/json"):
        return json.loads(raw)
    return raw.decode("utf-8", "replace")


def rows(events):
    return [e["row"] for e in events if e["type"] == "row"]


def end_of(events):
    ends = [e for e in events if e["type"] == "end"]
    assert len(ends) == 1, [e["type"] for e in events]
    return ends[0]


def start_server(tmp_dir, *extra):
    """Start `python -m torchic serve --port 0` (plus the toy suites); returns a Server."""
    missing = missing_modules("starlette", "uvicorn")
    require(not missing, f"the serve extra is not installed (missing {', '.join(missing)}): "
                         f"pip install -e '.[serve]'")
    stderr_path = os.path.join(str(tmp_dir), "server.stderr")
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "torchic", "serve", "--port", "0", "--no-browser",
             "--suites", TOY_SUITES, *extra],
            stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    url = None
    deadline = time.monotonic() + 60
    while url is None and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        m = re.search(r"(http://\S+)", line)
        if m:
            url = m.group(1)
    if url is None:
        proc.kill()
        proc.wait()
        pytest.fail("the server did not start:\n" + open(stderr_path).read()[-3000:])
    srv = Server(proc, url, stderr_path)
    # the first listing (suite files + backend probes) happens at start-up; wait for it
    status, data = srv.get("/api/suites")
    assert status == 200, data
    return srv


def stop_server(srv, timeout=15):
    """Ctrl+C, as a user would; returns the exit code (fails if it does not stop)."""
    srv.proc.send_signal(signal.SIGINT)
    try:
        return srv.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait()
        pytest.fail(f"the server did not stop within {timeout} s of Ctrl+C")
