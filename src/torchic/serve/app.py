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
bad parameter 400, unknown run 404) or 5xx when the suites cannot be listed.

Only the local machine should reach this server: requests must carry a
``Host`` of this machine (no DNS rebinding), and state-changing requests must be
``application/json`` (a cross-site form cannot send that without a CORS
preflight, which this server never grants).
"""

import asyncio
import contextlib
import json
import os

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .registry import ParamError
from .runs import Catalog, RunManager, UnknownRun, UnknownSuite

STATIC = os.path.join(os.path.dirname(__file__), "static")
KEEPALIVE_S = 15.0
LOCAL_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]


def error(status, message, **extra):
    return JSONResponse({"error": message, **extra}, status_code=status)


async def _json_body(request):
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise HTTPException(415, "send the request body as application/json")
    raw = await request.body()
    if len(raw) > 1 << 20:
        raise HTTPException(413, "request body too large")
    try:
        return json.loads(raw or b"{}")
    except ValueError as exc:
        raise HTTPException(400, f"the request body is not valid JSON: {exc}") from None


def create_app(extra_dirs=(), jobs=1, allowed_hosts=None, python=None):
    catalog = Catalog(extra_dirs, python=python)
    manager = RunManager(catalog, jobs=jobs, python=python)

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
        last = request.headers.get("last-event-id") or request.query_params.get("since")
        try:
            after = int(last) if last not in (None, "") else -1
        except ValueError:
            return error(400, f"bad event id {last!r}")
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
    middleware = []
    if allowed_hosts != ["*"]:
        middleware.append(Middleware(TrustedHostMiddleware,
                                     allowed_hosts=list(allowed_hosts or LOCAL_HOSTS)))
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
