"""The local server as a security surface: any web page the user opens can send
requests to 127.0.0.1, so only this machine's own page may change anything.

Host names (DNS rebinding), cross-site / cross-origin requests, content types,
body size and nesting limits, event ids, the queue cap and the run time limit.
The deep link (opening a URL never starts a run) is tested in the browser:
test_page_e2e.py::test_deep_link_preselects_and_waits_for_a_click.
"""

import asyncio
import os
import re
import socket
import time

import pytest
from serve_helpers import end_of, missing_modules, require, rows, start_server, stop_server

POSTS = ["/api/runs", "/api/suites/reload", "/api/runs/{id}/cancel"]
RUN = {"suite": "toy.echo", "params": {"n": [1]}}


def host_port(server):
    host, port = server.url.split("//")[1].split(":")
    return host, int(port)


def run_count(server):
    status, data = server.get("/api/runs")
    assert status == 200
    return len(data["runs"])


@pytest.fixture(scope="module")
def finished_run(server):
    """A finished run (its events and its cancel endpoint are fair game)."""
    run_id, events = server.run("toy.echo", {"n": [1]})
    assert end_of(events)["status"] == "done"
    return run_id, len(events)


def raw_request(server, head, timeout=20):
    """Send raw request bytes; (status, the whole response) once the server answers."""
    with socket.create_connection(host_port(server), timeout=timeout) as sock:
        sock.sendall(head)
        data = b""
        while True:
            headers, _, body = data.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length: *([0-9]+)", headers)
            if length and len(body) >= int(length.group(1)):
                break
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


# -- Host header: DNS rebinding -------------------------------------------------------------------
@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}",
                                  "127.0.0.1.attacker.example", "localhost.attacker.example:{port}",
                                  "[::2]:{port}", "0.0.0.0:{port}", ""])
def test_foreign_host_names_are_refused(server, host):
    _, port = host_port(server)
    for method, path, body in (("GET", "/", None), ("GET", "/api/suites", None),
                               ("POST", "/api/runs", RUN)):
        before = run_count(server)
        status, data = server.request(method, path, body, headers={"Host": host.format(port=port)})
        assert status == 400, (method, path, status, data)
        assert "only answers requests for this machine" in data["error"]
        assert run_count(server) == before


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}",
                                  "[::1]:{port}", "localhost"])
def test_this_machines_host_names_are_served(server, host):
    _, port = host_port(server)
    status, data = server.request("GET", "/api/suites", headers={"Host": host.format(port=port)})
    assert status == 200 and data["suites"]


# -- same origin ----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},          # another port of localhost is another origin
    {"Origin": "http://attacker.example"},
    {"Origin": "null"},                       # sandboxed frames, file:// pages
    {"Origin": "http://localhost:1"},
    {"Origin": "https://{host}"},
    {"Origin": "http://{host}", "Sec-Fetch-Site": "cross-site"},
])
def test_cross_site_state_changes_are_refused(server, finished_run, path, headers):
    host = server.url.split("//")[1]
    headers = {k: v.format(host=host) for k, v in headers.items()}
    before = run_count(server)
    status, data = server.request("POST", path.format(id=finished_run[0]), RUN, headers=headers)
    assert status == 403, (status, data)
    assert "refused" in data["error"]
    assert run_count(server) == before


def test_same_origin_requests_are_accepted(server):
    headers = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    status, data = server.request("POST", "/api/runs", RUN, headers=headers)
    assert status == 201, data
    assert end_of(server.events(data["id"]))["status"] == "done"
    status, data = server.request("POST", f"/api/runs/{data['id']}/cancel", {}, headers=headers)
    assert status == 200 and data["status"] == "done"


# -- content type ---------------------------------------------------------------------------------
@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", None])
def test_state_changes_need_a_json_content_type(server, finished_run, path, ctype):
    headers = {"Content-Type": ctype} if ctype else {}
    before = run_count(server)
    status, data = server.request("POST", path.format(id=finished_run[0]),
                                  raw=b'{"suite": "toy.echo"}', headers=headers)
    assert status == 415, (status, data)
    assert "application/json" in data["error"]
    assert run_count(server) == before


def test_json_content_type_with_a_charset_is_accepted(server):
    status, data = server.request("POST", "/api/runs", raw=b'{"suite": "toy.echo"}',
                                  headers={"Content-Type": "application/json; charset=utf-8"})
    assert status == 201, data
    assert end_of(server.events(data["id"]))["status"] == "done"


# -- body size and shape --------------------------------------------------------------------------
def test_a_declared_oversized_body_is_refused_unread(server):
    # no body follows: the server must answer from the Content-Length alone
    status, data = raw_request(server, (
        b"POST /api/runs HTTP/1.1\r\nHost: " + server.url.split("//")[1].encode() +
        b"\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"))
    assert status == 413 and b"request body too large" in data


def test_the_body_limit_is_enforced_while_reading():
    """A streamed (chunked) body is read up to the limit and no further."""
    require(not missing_modules("starlette"), "starlette is not installed")
    from torchic.serve.app import MAX_BODY, create_app
    app = create_app()
    chunk = b" " * 65536
    offered = 64                              # 4 MiB in all, never ending on its own
    taken = []
    sent = []

    async def receive():
        taken.append(1)
        return {"type": "http.request", "body": chunk, "more_body": len(taken) < offered}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/api/runs", "raw_path": b"/api/runs",
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 8765),
             "headers": [(b"host", b"127.0.0.1:8765"), (b"content-type", b"application/json"),
                         (b"transfer-encoding", b"chunked")]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413
    assert len(taken) == MAX_BODY // len(chunk) + 1     # stopped at the first chunk past it


@pytest.mark.parametrize("raw,needle", [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"suite": "toy.echo", "params": {"n": ' + b"[" * 50 + b"]" * 50 + b"}}",
     "nested too deeply"),
    (b'{"suite": "toy.echo", "params": {"n": ' + b"[" * 900 + b"1" + b"]" * 900 + b"}}",
     "nested too deeply"),
    (b'{"suite": "toy.\xff"}', "not valid JSON"),
    (b'{"suite": "toy.echo", "params": {"n": [1' + b"0" * 5000 + b"]}}", "not valid JSON"),
    (b"\x00\x01", "not valid JSON"),
])
def test_malformed_bodies_are_400_not_500(server, raw, needle):
    before = run_count(server)
    status, data = server.request("POST", "/api/runs", raw=raw,
                                  headers={"Content-Type": "application/json"})
    assert status == 400, (status, data)
    assert needle in data["error"]
    assert run_count(server) == before
    assert server.get("/api/suites")[0] == 200


# -- event ids ------------------------------------------------------------------------------------
@pytest.mark.parametrize("since", ["abc", "-1", "-5", "1.5", "1e3", "%201", "1_0", "+1", "",
                                   "99999999999999999999999"])
def test_bad_since_is_400(server, finished_run, since):
    status, data = server.get(f"/api/runs/{finished_run[0]}/events?since={since}")
    assert status == 400, (status, data)
    assert "event number" in data["error"]


def test_since_beyond_the_last_event_is_400(server, finished_run):
    run_id, n = finished_run
    status, data = server.get(f"/api/runs/{run_id}/events?since={n}")
    assert status == 400 and f"no event {n}" in data["error"]
    assert server.get(f"/api/runs/{run_id}/events?since={n - 1}")[0] == 204   # all delivered
    status, text = server.get(f"/api/runs/{run_id}/events?since=0")
    assert status == 200 and "id: 1\n" in text and "id: 0\n" not in text


def test_bad_last_event_id_is_400(server, finished_run):
    status, data = server.request("GET", f"/api/runs/{finished_run[0]}/events",
                                  headers={"Last-Event-ID": "-3"})
    assert status == 400 and "Last-Event-ID" in data["error"]


# -- queue cap and time limit (a server of their own) ---------------------------------------------
@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    # (a limit that toy.slow's 20 s passes and a toy.echo run, a worker process started and
    # torchic imported, never reaches: 2 s did on a machine with both cores busy)
    srv = start_server(tmp_path_factory.mktemp("strict"), "--max-queued", "1",
                       "--run-timeout", "8")
    yield srv
    assert stop_server(srv) == 0, srv.stderr()[-3000:]


def wait_status(srv, run_id, status, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if srv.get(f"/api/runs/{run_id}")[1]["status"] == status:
            return
        time.sleep(0.05)
    pytest.fail(f"run {run_id} never became {status}")


def test_queued_runs_are_capped_with_429(strict):
    running = strict.start("toy.hold")               # 20 s, its own limit of 120 s
    wait_status(strict, running, "running")
    queued = strict.start("toy.echo")
    before = run_count(strict)
    status, data = strict.request("POST", "/api/runs", RUN)
    assert status == 429, data
    assert "too many runs waiting" in data["error"] and "--max-queued" in data["error"]
    assert run_count(strict) == before
    # the queue frees as runs leave it
    assert strict.request("POST", f"/api/runs/{queued}/cancel", {})[0] == 200
    third = strict.start("toy.echo")
    assert strict.request("POST", f"/api/runs/{running}/cancel", {})[0] == 200
    assert end_of(strict.events(running))["status"] == "cancelled"   # not its time limit
    assert end_of(strict.events(third))["status"] == "done"


def test_a_run_past_its_time_limit_is_stopped_and_failed(strict):
    run_id, events = strict.run("toy.slow", {"tag": "left", "steps": 400})   # 20 s unchecked
    end = end_of(events)
    assert end["status"] == "failed"
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert errors == ["stopped: the run took longer than its time limit of 8 s (--run-timeout)"]
    assert len(rows(events)) < 400
    pid = next(e["pid"] for e in events if e["type"] == "start")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)                                     # the worker is gone
    record = strict.get(f"/api/runs/{run_id}")[1]
    assert record["status"] == "failed" and record["errors"][0]["message"] == errors[0]
    # the server goes on
    _, events = strict.run("toy.echo", {"n": [2]})
    assert end_of(events)["status"] == "done"


@pytest.mark.parametrize("args,needle", [
    (["--run-timeout", "0"], "--run-timeout must be a positive"),
    (["--run-timeout", "inf"], "--run-timeout must be a positive"),
    (["--max-queued", "-1"], "--max-queued must be at least 0"),
])
def test_bad_limits_are_refused_by_the_command_line(args, needle, capsys):
    from torchic.serve.cli import parse_args
    with pytest.raises(SystemExit):
        parse_args(args)
    assert needle in capsys.readouterr().err
