"""Issue 44: `python -m torchic serve` exits within a second of SIGTERM (what a service
manager or `kill` sends), idle and with a run in flight and its event stream open."""

import signal
import subprocess
import threading
import time

import pytest
from serve_helpers import end_of, start_server


def _term_and_time(srv):
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    try:
        code = srv.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait()
        pytest.fail("the server did not stop within 10 s of SIGTERM")
    return code, time.monotonic() - t0


def _assert_clean_exit(srv, code):
    # uvicorn shuts down gracefully, then re-raises the signal it caught: the exit status
    # says "terminated by SIGTERM" as for any program (0 would do too)
    err = open(srv.stderr_path).read()
    assert code in (0, -signal.SIGTERM), (code, err[-2000:])
    assert "Traceback" not in err, err[-3000:]


def test_sigterm_stops_an_idle_server_within_a_second(tmp_path):
    srv = start_server(tmp_path)
    code, took = _term_and_time(srv)
    assert took < 1.0, f"{took:.2f} s"
    _assert_clean_exit(srv, code)


def test_sigterm_stops_runs_and_streams_within_a_second(tmp_path):
    srv = start_server(tmp_path)
    try:
        run_id = srv.start("toy.slow", {"tag": "left", "steps": 400})
        seen = {}
        stream = threading.Thread(target=lambda: seen.__setitem__("ev", srv.events(run_id)))
        stream.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not srv.get(f"/api/runs/{run_id}")[1]["rows"]:
            time.sleep(0.05)
        code, took = _term_and_time(srv)
        assert took < 1.0, f"{took:.2f} s"
        _assert_clean_exit(srv, code)
        stream.join(10)
        assert end_of(seen["ev"])["status"] == "cancelled", seen["ev"][-3:]
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
