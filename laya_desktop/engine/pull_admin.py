"""Model downloads through the engine, for scripts: the same as `laya pull`.

- `POST /admin/models/pull` {"repo": "owner/name[:FILE]", "file", "revision", "name", "rule",
  "n_ctx", "parallel", "register" (default true), "stream" (default true)}: starts the download
  and answers its progress as NDJSON (`application/x-ndjson`, one PullStatus per line, at most
  PROGRESS_HZ a second, the last with `state` done, failed or cancelled; a registered model's
  name in `model_name`). With "stream": false it answers 202 with the job at once. A client that
  leaves the stream leaves the download running.
- `GET /admin/models/pulls`: every job of this engine and their progress.
- `POST /admin/models/pulls/{job}/cancel`; `POST /admin/models/pulls/resume`: start again the
  jobs an earlier run left unfinished.

Downloading writes gigabytes to the user's disk and edits models.yaml, so the POST routes need
the app token or the admin key (engine/privilege.py), as a privileged config change does. A
finished download joins the running config through the same path as PUT /admin/config.
"""
from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from laya_desktop.engine import errors
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.privilege import is_privileged
from laya_desktop.engine.serving import read_json
from laya_desktop.engine.sse import DisconnectAwareStreamingResponse
from laya_desktop.hub.errors import HubError, HubUnreachable, NotEnoughDisk

NDJSON = "application/x-ndjson"
PROGRESS_HZ = 4
FIELDS = {"repo": str, "file": str, "revision": str, "name": str, "rule": str, "n_ctx": int,
          "parallel": int, "register": bool, "stream": bool}
_lock = threading.Lock()


def _manager(request: Request):
    """The engine's one DownloadManager, made on first use (huggingface_hub stays unimported
    until a download is asked for)."""
    app = request.app
    with _lock:
        manager = getattr(app.state, "pulls", None)
        if manager is None:
            from laya_desktop.hub.download import DownloadManager
            from laya_desktop.hub.folders import models_dir, state_file
            try:
                folder = models_dir(app.state.engine.config)
            except ValueError as exc:
                raise ApiError(400, str(exc), "invalid_request_error", "bad_models_dir") from None
            manager = DownloadManager(folder, state_file(folder))
            app.state.pulls = manager
        return manager


def _need_privilege(request: Request) -> None:
    if not is_privileged(request, request.app.state.engine.config):
        raise ApiError(403, "downloading a model needs the admin API key or the app token "
                       "(X-Laya-App-Token, which the desktop app and the laya commands send)",
                       "permission_error", "privilege_required")


def _body(raw) -> dict:
    if not isinstance(raw, dict):
        raise errors.bad_request("the body must be a JSON object with 'repo'", "invalid_pull")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise errors.bad_request(f"unknown field(s) {', '.join(map(repr, unknown))} (valid: "
                                 f"{', '.join(FIELDS)})", "invalid_pull")
    for key, kind in FIELDS.items():
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise errors.bad_request(f"'{key}' must be {'a' if kind is not int else 'an'} "
                                     f"{kind.__name__}", "invalid_pull")
        if kind is int and value < 1:
            raise errors.bad_request(f"'{key}' must be at least 1", "invalid_pull")
    if not raw.get("repo"):
        raise errors.bad_request("'repo' is required (owner/name, optionally :FILE)", "invalid_pull")
    return raw


def _hub_error(exc: HubError) -> ApiError:
    status = 503 if isinstance(exc, HubUnreachable) else 507 if isinstance(exc, NotEnoughDisk) \
        else 404 if exc.code in ("repo_not_found", "no_such_file") else 403 \
        if exc.code == "gated_repo" else 400
    return ApiError(status, str(exc), "invalid_request_error" if status < 500 else "server_error",
                    exc.code)


def _registrar(engine, loop: asyncio.AbstractEventLoop, body: dict):
    """What a finished download runs (on its own thread): add the model to the running config."""
    def register(status) -> str:
        from laya_desktop.hub.register import registration
        config = engine.config_dict()
        new, name, _ = registration(config, Path(status.local_path), name=body.get("name"),
                                    rule=body.get("rule"), n_ctx=body.get("n_ctx"),
                                    parallel=body.get("parallel"),
                                    reserved_system_gb=engine.config.memory.reserved_system_gb)
        if new == config:
            return name
        future = asyncio.run_coroutine_threadsafe(engine.apply_raw_config(new), loop)
        try:
            future.result(timeout=120)
        except ApiError as exc:
            raise ValueError(exc.message) from None
        except Exception as exc:  # ConfigRefused and the like: say what, keep the download
            detail = "; ".join(f"{e.path}: {e.message}" for e in getattr(exc, "errors", [])) \
                or str(exc)
            raise ValueError(detail) from None
        return name
    return register


async def pull(request: Request) -> Response:
    _need_privilege(request)
    body = _body(await read_json(request))
    from laya_desktop.hub.choose import pick, split_repo
    from laya_desktop.hub.files import repo_choices
    manager = _manager(request)
    try:
        repo_id, wanted = split_repo(body["repo"])
    except ValueError as exc:
        raise errors.bad_request(str(exc), "invalid_pull") from None
    wanted = body.get("file") or wanted
    try:
        files = await asyncio.to_thread(repo_choices, repo_id, revision=body.get("revision") or "main")
        choice = pick(files, wanted)
        if choice is None:
            if not files.choices:
                raise HubError(f"{repo_id} has no GGUF file or MLX build that Laya can serve")
            raise ApiError(400, f"{repo_id} offers several: name one in 'file' (valid: "
                           f"{', '.join(c.quant for c in files.choices)})",
                           "invalid_request_error", "choice_needed",
                           extra={"choices": [c.to_dict() for c in files.choices]})
        on_done = (_registrar(request.app.state.engine, asyncio.get_running_loop(), body)
                   if body.get("register", True) else None)
        job = await asyncio.to_thread(manager.start, repo_id, choice, on_done=on_done)
    except HubError as exc:
        raise _hub_error(exc) from None
    if not body.get("stream", True):
        return JSONResponse({"job": manager.status(job).to_dict()}, status_code=202)
    return DisconnectAwareStreamingResponse(_progress(manager, job), media_type=NDJSON)


async def _progress(manager, job: str):
    last = None
    while True:
        status = manager.status(job)
        line = status.to_dict()
        if line != last:
            yield json.dumps(line).encode() + b"\n"
            last = line
        if status.finished:
            return
        await asyncio.sleep(1 / PROGRESS_HZ)


async def list_pulls(request: Request) -> Response:
    manager = getattr(request.app.state, "pulls", None)
    jobs = manager.jobs() if manager is not None else []
    pending = manager.pending() if manager is not None else []
    running = {j.job_id for j in jobs}
    return JSONResponse({"pulls": [j.to_dict() for j in jobs],
                         "unfinished_earlier": [{"job_id": p.get("job_id"), "repo_id": p.get("repo_id"),
                                                 "quant": p.get("choice", {}).get("quant")}
                                                for p in pending if p.get("job_id") not in running]})


async def cancel_pull(request: Request) -> Response:
    _need_privilege(request)
    job = request.path_params["job_id"]
    manager = getattr(request.app.state, "pulls", None)
    if manager is None or manager.status(job) is None:
        raise ApiError(404, f"no download {job!r}", "invalid_request_error", "pull_not_found")
    cancelled = manager.cancel(job)
    return JSONResponse({"cancelled": cancelled, "job": manager.status(job).to_dict()})


async def resume_pulls(request: Request) -> Response:
    _need_privilege(request)
    manager = _manager(request)
    engine = request.app.state.engine
    loop = asyncio.get_running_loop()
    started = await asyncio.to_thread(manager.resume_pending, _registrar(engine, loop, {}))
    return JSONResponse({"resumed": [manager.status(j).to_dict() for j in started]})


def routes() -> list[Route]:
    return [Route("/admin/models/pull", pull, methods=["POST"]),
            Route("/admin/models/pulls", list_pulls, methods=["GET"]),
            Route("/admin/models/pulls/resume", resume_pulls, methods=["POST"]),
            Route("/admin/models/pulls/{job_id}/cancel", cancel_pull, methods=["POST"])]
