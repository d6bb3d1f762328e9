"""`laya serve`: load models.yaml, build the engine, run it on uvicorn."""
from __future__ import annotations

import ipaddress
import logging
import sys

import uvicorn

from laya_desktop.config.store import ConfigInvalid, find_config_path, load_config
from laya_desktop.engine.app import create_app
from laya_desktop.engine.core import Engine


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
    app = create_app(engine)
    print(f"laya serve: {path} -> http://{host}:{port}/v1", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning",
                timeout_graceful_shutdown=5, lifespan="on")
    return 0
