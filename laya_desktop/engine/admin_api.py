"""Admin endpoints: config, route explanations, model control, events and the request log."""
from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from laya_desktop.engine import errors, field_limits
from laya_desktop.engine.core import ConfigConflict, ConfigNeedsPrivilege, ConfigRefused
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.model_manager import LoadRefused
from laya_desktop.engine.privilege import is_privileged
from laya_desktop.engine.prompt_cache_admin import cache_summary
from laya_desktop.engine.serving import read_json
from laya_desktop.engine.runner_handle import RunnerError
from laya_desktop.routing.request import extract
from laya_desktop.routing.router import explanation_json


def _engine(request: Request):
    return request.app.state.engine


def _since(request: Request) -> int:
    raw = request.query_params.get("since", "0")
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(f"'since' must be an integer, got {raw!r}", "invalid_since") from None


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def get_config(request: Request) -> Response:
    engine = _engine(request)
    return JSONResponse(engine.config_dict(), headers={"ETag": engine.config_etag})


async def put_config(request: Request) -> Response:
    raw = await read_json(request)
    if not isinstance(raw, dict):
        raise errors.bad_request("the config must be a JSON object shaped like models.yaml")
    engine = _engine(request)
    try:
        config = await engine.apply_raw_config(
            raw, privileged=is_privileged(request, engine.config),
            if_match=request.headers.get("if-match"))
    except ConfigRefused as exc:
        message = f"config refused: {len(exc.errors)} error(s); nothing was changed"
        detail = [{"path": e.path, "message": e.message} for e in exc.errors]
        raise ApiError(400, message, "invalid_config", "invalid_config", extra={"errors": detail})
    except ConfigNeedsPrivilege as exc:
        raise ApiError(403, f"changing {', '.join(exc.changes)} needs the admin API key or the "
                       "app token (X-Laya-App-Token, which the desktop app and the laya commands "
                       "send); nothing was changed", "permission_error", "privilege_required",
                       extra={"changes": exc.changes}) from None
    except ConfigConflict as exc:
        raise ApiError(409, "the config changed since it was read (a hand edit of models.yaml or "
                       "another client): read it again (GET /admin/config) and apply your change "
                       "to that; nothing was changed", "invalid_request_error", "config_conflict",
                       extra={"etag": exc.current}) from None
    from laya_desktop.config.store import config_to_dict
    return JSONResponse({"status": "applied", "config": config_to_dict(config)},
                        headers={"ETag": engine.config_etag})


async def explain_route(request: Request) -> Response:
    engine = _engine(request)
    body = await read_json(request)
    if not isinstance(body, dict):
        raise errors.bad_request("the body must be a JSON object like a chat or completion request")
    path = body.get("path") or ("/v1/completions" if "prompt" in body else "/v1/chat/completions")
    if not isinstance(path, str):
        raise errors.bad_request("'path' must be a string such as '/v1/chat/completions'", "invalid_path")
    header_tags = request.headers.get("x-laya-tags")
    field_limits.check_request(body, header_tags, "chat")   # what is explained, as if sent
    router = engine.router
    embedded_before = router.semantic.embedded  # texts embedded by requests so far, not by this
    started = time.perf_counter_ns()
    router.decide_body(path, body, header_tags)
    decision_us = (time.perf_counter_ns() - started) / 1000
    explanation = router.explain(extract(path, body, header_tags))
    answer = explanation_json(explanation, round(decision_us, 2))
    if router.semantic.mask:
        answer["semantic_texts_embedded"] = embedded_before
    return JSONResponse(answer)


def model_summary(served) -> dict:
    cfg = served.config
    handle = served.handle
    stats = handle.stats if handle else {}
    info = handle.info if handle else {}
    return {
        "name": served.name,
        "backend": cfg.backend,
        "state": served.state,
        "pid": handle.pid if handle else None,
        "last_used": served.last_used or None,
        "error": handle.error if handle else None,
        "pinned": cfg.keep_in_memory,
        "path": cfg.path,
        "n_ctx": cfg.n_ctx if cfg.is_local else None,
        "parallel": cfg.effective_parallel if cfg.is_local else None,
        "active": served.active,
        "queued": served.queue.queued,
        "requests_total": served.requests_total,
        "kv_used_tokens": stats.get("kv_used_tokens"),
        "kv_capacity_tokens": stats.get("kv_capacity_tokens", info.get("kv_capacity_tokens")),
        "kv_bytes_per_token": stats.get("kv_bytes_per_token", info.get("kv_bytes_per_token")),
        "tokens_per_s": stats.get("tokens_per_s"),
        "n_threads_now": stats.get("n_threads_now"),   # a GGUF model's governor's choice
        "thread_switches": stats.get("thread_switches"),
        "steps_by_threads": stats.get("steps_by_threads"),
        "loaded_at": handle.loaded_at if handle else None,
    }


async def list_models(request: Request) -> Response:
    engine = _engine(request)
    models = [model_summary(m) for m in engine.models.models.values()]
    health = getattr(engine, "health", None)
    if health is not None:   # a remote model's up / ejected / unknown (engine/replica_health.py)
        for entry, served in zip(models, engine.models.models.values()):
            if not served.is_local:
                entry.update(health.summary(served.name))
    telemetry = getattr(engine, "telemetry", None)
    for entry, served in zip(models, engine.models.models.values()):
        sampled = telemetry.latest_models.get(entry["name"]) if telemetry is not None else None
        if sampled is not None:
            entry.update(sampled.memory_json())
        entry["prompt_cache"] = cache_summary(served, sampled)
    return JSONResponse({"models": models})


def _served_or_404(engine, name: str):
    served = engine.models.get(name)
    if served is None:
        raise errors.model_not_found(name)
    return served


async def load_model(request: Request) -> Response:
    engine = _engine(request)
    served = _served_or_404(engine, request.path_params["name"])
    if not served.is_local:
        raise errors.bad_request(f"model '{served.name}' is remote; there is nothing to load",
                                 "not_loadable")
    try:
        await engine.models.ensure_ready(served)
    except LoadRefused as exc:
        raise errors.unavailable(str(exc), "load_refused") from None
    except RunnerError as exc:
        raise errors.unavailable(str(exc), exc.code) from None
    return JSONResponse(model_summary(served))


async def unload_model(request: Request) -> Response:
    engine = _engine(request)
    served = _served_or_404(engine, request.path_params["name"])
    unloaded = await engine.models.unload(served.name, reason="admin request")
    return JSONResponse({**model_summary(served), "unloaded": unloaded})


async def events(request: Request) -> Response:
    seq, items = _engine(request).events.since(_since(request))
    return JSONResponse({"seq": seq, "events": items})


def _request_filters(request: Request) -> dict:
    """?rule=, ?model=, ?status= (each optional, exact match); `seq` still names the newest entry."""
    wanted = {key: request.query_params[key] for key in ("rule", "model") if key in request.query_params}
    raw = request.query_params.get("status")
    if raw is not None:
        if not (raw.isascii() and raw.isdigit()):  # "²".isdigit() holds, int("²") fails
            raise errors.bad_request(f"'status' must be an HTTP status such as 200, got {raw!r}",
                                     "invalid_status")
        wanted["status"] = int(raw)
    return wanted


async def requests_log(request: Request) -> Response:
    wanted = _request_filters(request)
    seq, items = _engine(request).requests.since(_since(request))
    if wanted:
        items = [i for i in items if all(i.get(k) == v for k, v in wanted.items())]
    return JSONResponse({"seq": seq, "requests": items})
