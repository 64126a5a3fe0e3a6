"""Command line of `python -m torchic serve`: parse, bind, serve, open the browser."""

import argparse
import asyncio
import errno
import ipaddress
import os
import socket
import sys
import threading
import webbrowser

DEFAULT_PORT = 8765
MISSING = ("the page needs the `serve` extra: pip install 'torchic[serve]' "
           "(starlette and uvicorn); missing: {}")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m torchic serve",
        description="The interactive test and benchmark page (a local web server).")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    p.add_argument("--suites", action="append", default=[], metavar="DIR",
                   help="also load suite files from DIR (repeatable)")
    p.add_argument("--jobs", type=int, default=1,
                   help="runs executed at the same time (default 1: benchmarks need the "
                        "cores to themselves; others wait in a queue)")
    p.add_argument("--max-queued", type=int, default=None, metavar="N",
                   help="runs that may wait for a slot; more are refused with 429 "
                        "(default 32)")
    p.add_argument("--run-timeout", type=float, default=None, metavar="SECONDS",
                   help="stop a run (marked failed) that runs longer than this, unless its "
                        "suite sets its own timeout_s (default 3600)")
    p.add_argument("--log-level", default="warning",
                   choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn's log level (default warning)")
    args = p.parse_args(argv)
    if not 0 <= args.port <= 65535:
        p.error(f"--port must be in 0..65535, got {args.port}")
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if args.max_queued is not None and args.max_queued < 0:
        p.error("--max-queued must be at least 0")
    if args.run_timeout is not None and not 0 < args.run_timeout < float("inf"):
        p.error("--run-timeout must be a positive number of seconds")
    for d in args.suites:
        if not os.path.isdir(d):
            p.error(f"--suites {d!r} is not a folder")
    return args


def bind(host, port):
    """A listening socket (so a busy port is a clear message, and --port 0 works)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    if os.name != "nt":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise SystemExit(f"torchic serve: port {port} is in use; pass --port N "
                             f"(or --port 0 for any free port)") from None
        raise SystemExit(f"torchic serve: cannot listen on {host}:{port}: {exc}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def main(argv=None):
    args = parse_args(list(argv or []))
    missing = [m for m in ("starlette", "uvicorn") if not _importable(m)]
    if missing:
        print("torchic serve: " + MISSING.format(", ".join(missing)), file=sys.stderr)
        return 2
    import uvicorn

    from .app import LOCAL_HOSTS, create_app

    local = _is_loopback(args.host)
    if not local:
        print(f"torchic serve: listening on {args.host}: anyone who can reach this machine "
              f"can start runs", file=sys.stderr)
    app = create_app(args.suites, jobs=args.jobs,
                     allowed_hosts=LOCAL_HOSTS + [args.host.lower()] if local else ["*"],
                     max_queued=args.max_queued, run_timeout_s=args.run_timeout)
    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{port}/"
    config = uvicorn.Config(app, log_level=args.log_level, lifespan="on",
                            timeout_graceful_shutdown=3, access_log=args.log_level in
                            ("info", "debug"))
    manager = app.state.manager

    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None):
            # stop the runs first: their end events ("cancelled: the server stopped") close
            # the open event streams at once instead of holding the graceful shutdown up
            await manager.shutdown()
            await super().shutdown(sockets=sockets)

    server = Server(config)

    async def serve():
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            print(f"torchic serve: {url}  (Ctrl+C stops)", flush=True)
            if not args.no_browser:
                threading.Thread(target=_open_browser, args=(url,), daemon=True).start()
        await task

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


def _open_browser(url):
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        # no graphical session: webbrowser would fall back to a console browser that
        # takes over this terminal
        print(f"torchic serve: no display; open {url} in a browser", file=sys.stderr)
        return
    try:
        if not webbrowser.open(url, new=2):
            print(f"torchic serve: could not open a browser; open {url} yourself",
                  file=sys.stderr)
    except Exception as exc:  # noqa: BLE001  (no browser is not an error)
        print(f"torchic serve: could not open a browser ({exc}); open {url} yourself",
              file=sys.stderr)


def _is_loopback(host):
    """True for a loopback address or 'localhost' (this machine only: Host is checked)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _importable(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None
