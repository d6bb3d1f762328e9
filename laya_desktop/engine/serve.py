"""`laya serve`: load models.yaml, build the engine, run it on uvicorn."""
from __future__ import annotations

import gc
import ipaddress
import logging
import os
import sys
import threading
import time

import uvicorn

from laya_desktop.config.store import ConfigInvalid, find_config_path, load_config
from laya_desktop.engine.app import create_app
from laya_desktop.engine.core import Engine
from laya_desktop.engine.fd_limit import connection_cap, raise_nofile_limit
from laya_desktop.engine.http_server import Bounds, EngineHttpProtocol, EngineServer


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_serve(args) -> int:
    if getattr(args, "log_dir", None):
        from laya_desktop.logfiles import log_to_folder
        log_to_folder(args.log_dir)  # engine.log and runners.log, rotated
    else:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # asyncio warns for every write to a socket whose client already left mid-stream; the
    # request's own cleanup handles that case, so the warnings are only noise.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    # Every request writes a log line; none of the engine's formats shows the caller's file and
    # line, thread or process, so records skip finding them (the logging docs' "Optimization").
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging.logAsyncioTasks = False   # Python 3.12+
    path = find_config_path(args.config)
    try:
        config = load_config(path)
    except ConfigInvalid as exc:
        print(f"laya serve: {path} is invalid:", file=sys.stderr)
        for error in exc.errors:
            print(f"  {error}", file=sys.stderr)
        return 1
    # --host/--port apply to this run only; models.yaml keeps its own server section.
    host = args.host or config.server.host
    port = args.port if args.port is not None else config.server.port
    if not is_loopback(host) and not config.server.api_key:
        print(f"laya serve: refusing to listen on {host} without server.api_key: "
              "set server.api_key in models.yaml (every request then needs "
              "'Authorization: Bearer <key>'), or listen on 127.0.0.1", file=sys.stderr)
        return 2
    engine = Engine(config, config_path=path)
    app = create_app(engine, port=port)
    print(f"laya serve: {path} -> http://{host}:{port}/v1", file=sys.stderr)
    # No access log (the request log is ours) and no X-Forwarded-* rewriting (nothing here reads
    # the client's address): two layers less on every request. httptools parses requests in C
    # (h11 took about an eighth of the engine's CPU time on a relayed request), and
    # EngineHttpProtocol sends an answer's head and body in one write; EngineServer ticks once a
    # second, not ten times. The loop is uvloop's (a dependency) where it imports, asyncio's
    # otherwise.
    bounds = connection_bounds()
    # uvicorn's keep-alive timer and the bounds' sweep agree on how long an idle connection lives.
    server = EngineServer(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                         timeout_graceful_shutdown=5, lifespan="on",
                                         access_log=False, proxy_headers=False,
                                         timeout_keep_alive=bounds.idle_s,
                                         http=EngineHttpProtocol.bounded(bounds), loop="auto"))
    finished = threading.Event()
    if getattr(args, "parent_pipe", None) is not None:
        watch_parent_pipe(args.parent_pipe, server, engine, finished)
    # Everything built so far (modules, config, router) lives as long as the process: out of the
    # collector's sight, a full collection no longer walks it (a stall for whichever request it
    # hits).
    gc.freeze()
    try:
        server.run()
    finally:
        finished.set()
    return 0


def connection_bounds() -> Bounds:
    """The HTTP bounds for this process: its descriptor limit raised as far as it goes and the
    connection cap below it; LAYA_HTTP_TIMEOUT_SCALE (hidden, for tests) scales the timeouts."""
    nofile = raise_nofile_limit()
    bounds = Bounds(max_connections=connection_cap(nofile))
    scale = os.environ.get("LAYA_HTTP_TIMEOUT_SCALE")
    if scale:
        try:
            bounds = bounds.scaled(float(scale))
        except ValueError:
            logging.getLogger("laya.engine").warning(
                "LAYA_HTTP_TIMEOUT_SCALE=%r is no number: the timeouts stay", scale)
    logging.getLogger("laya.engine").info(
        "descriptors: %s; client connections capped at %d", nofile or "no limit",
        bounds.max_connections)
    return bounds


PARENT_GONE_EXIT_S = 1.5  # the engine is gone within 2 s of losing the app that started it
PARENT_GONE_DRAIN_S = 0.3


def watch_parent_pipe(fd: int, server: uvicorn.Server, engine: Engine,
                      finished: threading.Event) -> threading.Thread:
    """Shut down when the app that started us is gone, however it went (SIGKILL included).

    The app keeps the write end of a pipe and we inherit the read end; nothing is ever written,
    so a read returns only at EOF: when the last write end closes, which the kernel does when the
    app dies. A thread, not the event loop, so that a busy or stuck loop cannot delay it. We do not
    use prctl(PR_SET_PDEATHSIG): it fires when the *thread* that forked us exits, and the GUI
    starts the engine from a pool worker that Qt retires after 30 s idle.

    First a clean shutdown (uvicorn stops, the lifespan stops the runners); should that not be done
    within PARENT_GONE_EXIT_S, the runners are killed and the process exits at once.
    """
    def wait_for_eof() -> None:
        try:
            while os.read(fd, 4096):
                pass  # nothing is meant to be written; anything that is means nothing
        except OSError:
            pass
        gone_at = time.monotonic()
        logging.getLogger("laya.engine").warning(
            "the app that started this engine is gone: shutting down")
        # Open streams get a short drain, not the usual graceful period: nobody is left to wait.
        server.config.timeout_graceful_shutdown = PARENT_GONE_DRAIN_S
        server.should_exit = True
        if finished.wait(max(0.0, PARENT_GONE_EXIT_S - (time.monotonic() - gone_at))):
            return
        logging.getLogger("laya.engine").error(
            "clean shutdown took over %.1f s after the app left: killing the runners", PARENT_GONE_EXIT_S)
        engine.models.kill_all()
        os._exit(3)

    thread = threading.Thread(target=wait_for_eof, name="parent-watch", daemon=True)
    thread.start()
    return thread
