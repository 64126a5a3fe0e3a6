"""The HTTP API and the page (Starlette).

    GET  /                          the page (static/index.html)
    GET  /static/...                its script and style
    GET  /api/suites                the suites, their params, the machine, load errors
    POST /api/suites/reload         list the suite files again (after dropping in a new one)
    POST /api/runs                  {"suite": name, "params": {name: [values]}} -> 201 run
    GET  /api/runs                  every run the server remembers (summaries)
    GET  /api/runs/{id}             one run: rows, logs, errors, status (the JSON download)
    GET  /api/runs/{id}/events      the run's events as Server-Sent Events (replayable:
                                    Last-Event-ID or ?since=N resumes after event N)
    POST /api/runs/{id}/cancel      stop a run (kills its worker process)

Errors are JSON ``{"error": message}`` with a 4xx status (unknown suite 404,
bad parameter 400, unknown run 404, too many runs waiting 429) or 5xx when the
suites cannot be listed.

Any web page the user opens can send requests to a local server, so every
request passes ``LocalGuard`` first:
  * ``Host`` must name this machine when it listens on loopback (400 otherwise):
    a DNS-rebinding page reaches 127.0.0.1 under its own host name;
  * a state-changing request (anything but GET/HEAD) must come from this page:
    ``Sec-Fetch-Site`` same-origin (or none), and an ``Origin`` equal to
    ``http://<Host>`` when the browser sends one (403 otherwise);
  * and it must be ``application/json`` (415): a cross-site form or no-cors
    fetch cannot send that without a CORS preflight, which is never granted.
Request bodies are read up to ``MAX_BODY`` bytes and no further (413), and must
be JSON nested at most ``MAX_DEPTH`` deep (400). Opening a URL never starts
work: the page's deep links only preselect choices.
"""

import asyncio
import contextlib
import json
import os
import re

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .registry import ParamError
from .runs import Catalog, QueueFull, RunManager, UnknownRun, UnknownSuite

STATIC = os.path.join(os.path.dirname(__file__), "static")
KEEPALIVE_S = 15.0
LOCAL_HOSTS = ["127.0.0.1", "localhost", "::1"]
MAX_BODY = 1 << 20           # bytes of a request body (a run request is a few hundred)
MAX_DEPTH = 16               # nesting of a request body (a run request needs 3)
SAFE_METHODS = ("GET", "HEAD")


def error(status, message, **extra):
    return JSONResponse({"error": message, **extra}, status_code=status)


def _host_name(host):
    """The name part of a Host header: 'localhost:8765' -> 'localhost', '[::1]:80' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.partition(":")[0]


class LocalGuard:
    """Host, same-origin and content-type checks of every request (see the module header)."""

    def __init__(self, app, allowed_hosts):
        self.app = app
        self.allowed = None if allowed_hosts == ["*"] else {h.lower() for h in allowed_hosts}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            refusal = self.check(Headers(scope=scope), scope["method"])
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def check(self, headers, method):
        host = headers.get("host", "")
        if self.allowed is not None and _host_name(host) not in self.allowed:
            return error(400, f"this server only answers requests for this machine "
                              f"(Host {host!r} is not one of {sorted(self.allowed)})")
        if method in SAFE_METHODS:
            return None
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return error(403, f"cross-site request refused (Sec-Fetch-Site: {site})")
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host.lower()}":
            return error(403, f"cross-origin request refused (Origin {origin!r} is not "
                              f"this page's http://{host})")
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return error(415, "send the request body as application/json")
        return None


async def _json_body(request):
    """The request's JSON body ({} when empty), read up to MAX_BODY bytes and no further."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise HTTPException(413, f"request body too large (at most {MAX_BODY} bytes)")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise HTTPException(413, f"request body too large (at most {MAX_BODY} bytes)")
            chunks.append(chunk)
    except ClientDisconnect:
        raise HTTPException(400, "the request body was cut short") from None
    raw = b"".join(chunks)
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:   # RecursionError: "[[[[..." a few 1000 deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise HTTPException(400, f"the request body is not valid JSON: {why}") from None
    if _depth(body) > MAX_DEPTH:
        raise HTTPException(400, f"the request body is nested too deeply (at most "
                                 f"{MAX_DEPTH} levels)")
    return body


def _depth(value):
    """How deeply lists and objects nest in a parsed JSON value (iterative: no recursion)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _event_index(text, name):
    """The event id of Last-Event-ID / ?since=: a non-negative decimal integer, else 400."""
    if not re.fullmatch(r"[0-9]{1,18}", text):
        raise HTTPException(400, f"bad {name} {text!r}: expected an event number (0, 1, ...)")
    return int(text)


def create_app(extra_dirs=(), jobs=1, allowed_hosts=None, python=None, max_queued=None,
               run_timeout_s=None):
    catalog = Catalog(extra_dirs, python=python)
    manager = RunManager(catalog, jobs=jobs, python=python, max_queued=max_queued,
                         run_timeout_s=run_timeout_s)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        loading = asyncio.create_task(_load_quietly(catalog))
        try:
            yield
        finally:
            loading.cancel()
            await manager.shutdown()

    async def index(request):
        return FileResponse(os.path.join(STATIC, "index.html"),
                            headers={"Cache-Control": "no-cache"})

    async def suites(request):
        try:
            data = await catalog.ensure()
        except Exception as exc:  # noqa: BLE001
            return error(500, f"{exc}")
        return JSONResponse(dict(data, jobs=manager.jobs))

    async def reload_suites(request):
        await _json_body(request)
        try:
            data = await catalog.load()
        except Exception as exc:  # noqa: BLE001
            return error(500, f"{exc}")
        return JSONResponse(dict(data, jobs=manager.jobs))

    async def start_run(request):
        body = await _json_body(request)
        if not isinstance(body, dict):
            return error(400, "the request body must be a JSON object")
        name = body.get("suite")
        if not isinstance(name, str) or not name:
            return error(400, "missing 'suite': the name of the suite to run")
        try:
            run = await manager.start(name, body.get("params"))
        except UnknownSuite as exc:
            return error(404, str(exc.args[0]), suite=name)
        except ParamError as exc:
            return error(400, str(exc), suite=name)
        except QueueFull as exc:
            return error(429, str(exc), suite=name)
        except RuntimeError as exc:   # the suites cannot be listed / server stopping
            return error(503, str(exc))
        return JSONResponse(run.summary(), status_code=201,
                            headers={"Location": f"/api/runs/{run.id}"})

    async def list_runs(request):
        return JSONResponse({"runs": [r.summary() for r in manager.runs.values()]})

    async def get_run(request):
        try:
            run = manager.get(request.path_params["run_id"])
        except UnknownRun as exc:
            return error(404, str(exc.args[0]))
        return JSONResponse(run.record())

    async def cancel_run(request):
        await _json_body(request)
        try:
            run = manager.cancel(request.path_params["run_id"])
        except UnknownRun as exc:
            return error(404, str(exc.args[0]))
        return JSONResponse(run.summary())

    async def events(request):
        try:
            run = manager.get(request.path_params["run_id"])
        except UnknownRun as exc:
            return error(404, str(exc.args[0]))
        after = -1
        for name, text in (("?since=", request.query_params.get("since")),
                           ("Last-Event-ID", request.headers.get("last-event-id"))):
            if text is not None:      # the header (EventSource reconnecting) wins
                after = _event_index(text, name)
        if after >= len(run.events):
            return error(400, f"the run has no event {after} yet (its last is "
                              f"{len(run.events) - 1})")
        if run.ended and after >= len(run.events) - 1:
            # everything was delivered: 204 tells EventSource not to reconnect
            return Response(status_code=204)
        return StreamingResponse(_sse(run, after), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache",
                                          "X-Accel-Buffering": "no"})

    async def not_found(request, exc):
        if request.url.path.startswith("/api/") or exc.status_code != 404:
            return error(exc.status_code, exc.detail)
        return error(404, f"no page at {request.url.path}")

    routes = [
        Route("/", index),
        Route("/api/suites", suites),
        Route("/api/suites/reload", reload_suites, methods=["POST"]),
        Route("/api/runs", start_run, methods=["POST"]),
        Route("/api/runs", list_runs, methods=["GET"]),
        Route("/api/runs/{run_id}", get_run),
        Route("/api/runs/{run_id}/events", events),
        Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(LocalGuard, allowed_hosts=list(allowed_hosts or LOCAL_HOSTS))]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                    exception_handlers={HTTPException: not_found})
    app.state.catalog = catalog
    app.state.manager = manager
    return app


async def _load_quietly(catalog):
    """List the suites at start-up so the page's first request finds them ready."""
    with contextlib.suppress(Exception):
        await catalog.ensure()


async def _sse(run, after):
    """The run's events after index `after`, then one per new event, until the end."""
    seq = after
    while True:
        while seq + 1 < len(run.events):
            seq += 1
            event = run.events[seq]
            yield f"id: {seq}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"
            if event.get("type") == "end":
                return
        if run.ended and seq + 1 >= len(run.events):
            return
        if not await run.wait_beyond(seq, KEEPALIVE_S):
            yield ": keepalive\n\n"
