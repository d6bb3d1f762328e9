"""POST /admin/route/replay (what-if) and GET /admin/stats (route distribution, target figures)."""
from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from laya_desktop.config.validate import validate_config
from laya_desktop.engine import errors
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.serving import read_json
from laya_desktop.routing.distribution import distribution
from laya_desktop.routing.replay import replay
from laya_desktop.routing.router import Router

DEFAULT_WINDOW_S = 3600.0
MAX_WINDOW_S = 7 * 24 * 3600.0


def _int_field(body: dict, key: str, default: int, low: int) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise errors.bad_request(f"'{key}' must be an integer of at least {low}, got {value!r}",
                                 f"invalid_{key}")
    return value


def _candidate(engine, body: dict) -> dict:
    """The config to replay against: `config` (a whole one, like PUT /admin/config) or `routes`
    (the running config with these rules)."""
    if ("config" in body) == ("routes" in body):
        raise errors.bad_request("send either 'config' (a whole config like PUT /admin/config) "
                                 "or 'routes' (a rule list for the running config)",
                                 "invalid_replay")
    if "config" in body:
        if not isinstance(body["config"], dict):
            raise errors.bad_request("'config' must be a JSON object shaped like models.yaml",
                                     "invalid_replay")
        return body["config"]
    return {**engine.config_dict(), "routes": body["routes"]}


async def route_replay(request: Request) -> Response:
    engine = request.app.state.engine
    body = await read_json(request)
    if not isinstance(body, dict):
        raise errors.bad_request("the body must be a JSON object with 'routes' or 'config'",
                                 "invalid_replay")
    raw = _candidate(engine, body)
    limit = _int_field(body, "limit", max(1, engine.route_inputs.size), 1)
    max_moved = _int_field(body, "max_moved", 200, 0)
    config, problems = validate_config(raw)
    if problems or config is None:
        detail = [{"path": e.path, "message": e.message} for e in problems]
        raise ApiError(400, f"candidate config refused: {len(problems)} error(s)",
                       "invalid_config", "invalid_config", extra={"errors": detail})
    if not engine.route_inputs.size:
        raise ApiError(409, "the route log is off (server.route_log_size: 0): nothing to replay",
                       "invalid_request_error", "route_log_off")
    entries = engine.route_inputs.recent(limit)
    before = engine.router
    # compiling a big keyword list and replaying 1,000+ requests: off the event loop
    result = await asyncio.to_thread(lambda: replay(entries, before, Router(config), max_moved))
    result["log_size"] = engine.route_inputs.size
    return JSONResponse(result)


async def stats(request: Request) -> Response:
    engine = request.app.state.engine
    raw = request.query_params.get("window_s", str(DEFAULT_WINDOW_S))
    try:
        window = float(raw)
    except ValueError:
        window = -1.0
    if not 0 < window <= MAX_WINDOW_S:
        raise errors.bad_request(f"'window_s' must be a number of seconds in (0, {MAX_WINDOW_S:g}], "
                                 f"got {raw!r}", "invalid_window")
    log = engine.requests
    _, items = log.since(0)
    answer = distribution(items, time.time(), window, log_full=len(log.ring) >= log.ring.capacity)
    answer["targets"] = engine.targets.snapshot()
    answer["route_log"] = {"size": engine.route_inputs.size, "kept": len(engine.route_inputs)}
    return JSONResponse(answer)


def routes() -> list[Route]:
    return [Route("/admin/route/replay", route_replay, methods=["POST"]),
            Route("/admin/stats", stats, methods=["GET"])]
