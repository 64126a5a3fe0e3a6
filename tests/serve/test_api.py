"""The HTTP API of `python -m torchic serve`, without a browser (fast)."""

import threading
import time

import pytest
from serve_helpers import end_of, rows, start_server, stop_server
from torchic.serve import registry


def test_lists_builtin_and_dropped_in_suites(server):
    status, data = server.get("/api/suites")
    assert status == 200
    by_name = {s["name"]: s for s in data["suites"]}
    for name in ("ops.unary", "ops.binary", "ops.reduce", "ops.matmul", "ops.views", "autograd"):
        assert by_name[name]["kind"] == "test"
    for name in ("matmul", "elementwise", "overhead"):
        assert by_name[name]["kind"] == "bench"
    assert by_name["toy.echo"]["kind"] == "test" and by_name["toy.slow"]["kind"] == "bench"
    backend = next(p for p in by_name["ops.unary"]["params"] if p["name"] == "backend")
    assert "workers" in backend["choices"]
    assert data["backends"]["workers"]["available"] is True
    assert data["backends"]["workers"]["platform"]["kernels"].startswith("NumPy")
    # the page header's machine record is the bench's (bench/machine.py), quick
    machine = data["machine"]
    assert machine["cpu"]["usable_cores"] >= 1 and "flags" not in machine["cpu"]
    assert {"python", "numpy", "torchic"} <= set(machine["versions"]) and "env" in machine
    echo = {p["name"]: p for p in by_name["toy.echo"]["params"]}
    assert echo["tag"]["default"] == ["a"] and echo["n"]["choices"] == [1, 2, 3]
    # a suite file that fails to import is reported; the others still load
    assert any("broken on purpose" in e["error"] for e in data["errors"])


def test_page_and_static_files(server):
    status, html = server.get("/")
    assert status == 200 and "<title>torchic" in html and "/static/app.js" in html
    for path in ("/static/app.js", "/static/plot.js", "/static/style.css"):
        assert server.get(path)[0] == 200


@pytest.mark.parametrize("body,status,needle", [
    ({"suite": "no.such.suite"}, 404, "unknown suite 'no.such.suite'"),
    ({"suite": "toy.echo", "params": {"n": [99]}}, 400, "bad value 99 for parameter 'n'"),
    ({"suite": "toy.echo", "params": {"size": [1]}}, 400, "has no parameter 'size'"),
    ({"suite": "toy.echo", "params": {"n": []}}, 400, "select at least one value of 'n'"),
    ({"suite": "toy.echo", "params": {"n": [{"x": 1}]}}, 400, "bad value"),
    ({"suite": "toy.echo", "params": [1, 2]}, 400, "params must be an object"),
    ({"params": {}}, 400, "missing 'suite'"),
])
def test_bad_requests_are_4xx_with_a_message(server, body, status, needle):
    got, data = server.request("POST", "/api/runs", body)
    assert got == status, data
    assert needle in data["error"]


def test_malformed_requests(server):
    status, data = server.request("POST", "/api/runs", raw=b"{not json",
                                  headers={"Content-Type": "application/json"})
    assert status == 400 and "not valid JSON" in data["error"]
    # a cross-site form can only send text/plain: refused
    status, data = server.request("POST", "/api/runs", raw=b'{"suite": "toy.echo"}',
                                  headers={"Content-Type": "text/plain"})
    assert status == 415
    assert server.get("/api/runs/ffffffffffff")[0] == 404
    assert server.get("/api/runs/ffffffffffff/events")[0] == 404
    assert server.request("POST", "/api/runs/ffffffffffff/cancel", {})[0] == 404
    status, _ = server.request("GET", "/api/suites", headers={"Host": "attacker.example"})
    assert status == 400        # DNS rebinding guard


def test_run_streams_rows_logs_progress_and_end(server):
    run_id, events = server.run("toy.echo", {"n": [1, 2, 3], "tag": "a"})
    types = [e["type"] for e in events]
    assert types[:3] == ["queued", "running", "start"] and types[-1] == "end"
    assert [e["seq"] for e in events] == list(range(len(events)))
    got = rows(events)
    assert [(r["n"], r["tag"], r["case"], r["status"], r["value"]) for r in got] == [
        (1, "a", "times ten 1", "pass", 10), (2, "a", "times ten 2", "pass", 20),
        (3, "a", "times ten 3", "pass", 30)]
    logs = [e["text"] for e in events if e["type"] == "log"]
    assert "echo n=2 tag=a" in logs
    progress = [e["done"] for e in events if e["type"] == "progress"]
    assert progress == sorted(progress) and progress[-1] == 3
    end = end_of(events)
    assert end["status"] == "done" and end["counts"] == {"pass": 3}
    # the run record (per-run JSON) holds the same rows
    status, record = server.get(f"/api/runs/{run_id}")
    assert status == 200 and record["rows"] == got and record["status"] == "done"
    # replay after an event id (what EventSource does on reconnect)
    tail = server.events(run_id, since=3)
    assert [e["seq"] for e in tail] == list(range(4, len(events)))
    # everything delivered: 204 so EventSource stops reconnecting
    assert server.events(run_id, since=len(events) - 1) == []


def test_skipped_combinations_are_not_run_nor_counted(server):
    run_id, events = server.run("toy.skips", {"a": [1, 2, 3], "b": ["x", "y"]})
    start = next(e for e in events if e["type"] == "start")
    assert start["total"] == 4
    assert start["skipped"] == [{"combination": {"a": 2, "b": "y"}, "why": "no y at a=2"},
                                {"combination": {"a": 3, "b": "y"}, "why": "a=3 runs once"}]
    assert [(r["a"], r["b"]) for r in rows(events)] == [(1, "x"), (1, "y"), (2, "x"), (3, "x")]
    assert server.get(f"/api/runs/{run_id}")[1]["total"] == 4


def test_failed_cases_mark_the_run_failed(server):
    _, events = server.run("toy.echo", {"n": [1], "tag": ["b"]})
    statuses = [r["status"] for r in rows(events)]
    assert statuses == ["pass", "fail"]
    assert rows(events)[1]["message"] == "expected failure"
    assert end_of(events)["status"] == "failed"


def test_a_raising_suite_shows_the_error_and_the_run_goes_on(server):
    _, events = server.run("toy.boom", {"x": [1, 2, 3]})
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and "RuntimeError: boom at x=2" in errors[0]["message"]
    assert errors[0]["combination"] == {"x": 2} and "Traceback" in errors[0]["traceback"]
    assert [(r["x"], r["status"]) for r in rows(events)] == [(1, "pass"), (2, "error"),
                                                            (3, "pass")]
    assert end_of(events)["status"] == "failed"
    assert server.get("/api/suites")[0] == 200          # the server is still up


def test_a_crashing_worker_is_reported(server):
    _, events = server.run("toy.crash")
    assert rows(events)[0]["value"] == 1                # what came before the crash is kept
    errors = [e for e in events if e["type"] == "error"]
    assert errors and "worker process died" in errors[-1]["message"]
    assert "SIGKILL" in errors[-1]["message"]
    assert end_of(events)["status"] == "failed"
    assert server.get("/api/suites")[0] == 200


def test_concurrent_runs_keep_their_own_results(server):
    results = {}

    def go(tag):
        results[tag] = server.run("toy.slow", {"tag": tag, "steps": 4})

    threads = [threading.Thread(target=go, args=(t,)) for t in ("left", "right", "third")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    ids = {results[t][0] for t in results}
    assert len(ids) == 3
    for tag, (_, events) in results.items():
        got = rows(events)
        assert [r["tag"] for r in got] == [tag] * 4, tag
        assert [r["step"] for r in got] == [0, 1, 2, 3]
        assert end_of(events)["status"] == "done"
    # runs execute one at a time: someone had to wait
    waited = [max(e["position"] for e in ev if e["type"] == "queued")
              for _, ev in results.values()]
    assert max(waited) >= 1


def test_cancel_stops_a_run(server):
    run_id = server.start("toy.slow", {"tag": "left", "steps": 400})    # 20 s if not stopped
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not server.get(f"/api/runs/{run_id}")[1]["rows"]:
        time.sleep(0.05)
    status, summary = server.request("POST", f"/api/runs/{run_id}/cancel", {})
    assert status == 200
    events = server.events(run_id, timeout=10)
    assert end_of(events)["status"] == "cancelled"
    assert 0 < len(rows(events)) < 400
    assert server.get(f"/api/runs/{run_id}")[1]["status"] == "cancelled"
    # cancelling a finished run changes nothing
    assert server.request("POST", f"/api/runs/{run_id}/cancel", {})[1]["status"] == "cancelled"


def test_builtin_parity_suite_passes_on_workers(server):
    _, events = server.run("ops.unary", {"backend": "workers", "layout": "strided"})
    got = rows(events)
    from torchic.testing import family
    assert len(got) == 2 * len(family("unary")) and {r["status"] for r in got} == {"pass"}, got
    assert all(r["max_err"] < 1e-4 and r["grad_err"] < 1e-3 for r in got)
    assert end_of(events)["status"] == "done"


def test_builtin_bench_reports_figures(server):
    _, events = server.run("matmul", {"impl": ["workers", "numpy"], "threads": [1],
                                      "size": ["64"], "budget": "quick"})
    got = rows(events)
    # the float32 product and its float64 twin (docs/DTYPES.md's dgemm target), each beside NumPy
    assert sorted((r["case"], r["impl"], r["size"], r["metric"], r["status"]) for r in got) == [
        (case, impl, "64", "GFLOPS", "ok") for case in ("matmul", "matmul_f64")
        for impl in ("numpy", "workers")], got
    assert all(r["value"] > 0 and r["median_ms"] > 0 and r["n"] == 64 for r in got)


def test_ctrl_c_stops_running_runs_and_the_server(tmp_path):
    srv = start_server(tmp_path)
    try:
        run_id = srv.start("toy.slow", {"tag": "left", "steps": 400})
        queued_id = srv.start("toy.slow", {"tag": "right", "steps": 4})
        seen = {}
        streams = [threading.Thread(target=lambda r=r: seen.__setitem__(r, srv.events(r)))
                   for r in (run_id, queued_id)]
        for t in streams:
            t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not srv.get(f"/api/runs/{run_id}")[1]["rows"]:
            time.sleep(0.05)
        t0 = time.monotonic()
        assert stop_server(srv) == 0
        assert time.monotonic() - t0 < 5          # open streams do not hold the shutdown up
        for t in streams:
            t.join(10)
        for r in (run_id, queued_id):
            assert end_of(seen[r])["status"] == "cancelled", seen[r][-3:]
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


BUILTIN = ["ops.unary", "ops.binary", "ops.compare", "ops.reduce", "ops.matmul", "ops.views",
           "autograd", "matmul", "elementwise", "reduce", "overhead", "train", "memory"]


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_suite_runs_clean(server, name):
    """Smoke: one small combination of each built-in suite on `workers` (catches rot)."""
    _, catalog = server.get("/api/suites")
    suite = next(s for s in catalog["suites"] if s["name"] == name)
    preferred = {"backend": "workers", "impl": "workers", "threads": 1, "budget": "quick"}
    selection = {p["name"]: [preferred[p["name"]]] if p["name"] in preferred else p["default"]
                 for p in suite["params"]}
    # the first default combination that runs (a case is measured at its own sizes only)
    combo = registry.plan(suite["skip"], selection)[0][0]
    params = {k: [v] for k, v in combo.items()}
    _, events = server.run(name, params, timeout=120)
    got = rows(events)
    assert got, events[-3:]
    assert {r["status"] for r in got} <= {"pass", "ok"}, [r for r in got
                                                         if r["status"] not in ("pass", "ok")]
    assert end_of(events)["status"] == "done"
