"""A model's saved prompt states as the admin API shows and clears them (runners/prompt_cache.py).

The files are the runner's. For a model that is not loaded the engine reads their sizes itself;
clearing removes them and tells a loaded runner to drop its RAM tier too (what the slots hold
stays: it belongs to the requests running in them).

    DELETE /admin/models/{name}/prompt-cache  ->  {"model", "disk_bytes_freed", "runner_cleared"}
"""
from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from laya_desktop.app_files import PROMPT_CACHE_SUFFIX, prompt_cache_folder
from laya_desktop.engine import errors
from laya_desktop.engine.runner_handle import RunnerError


def cache_files(model_name: str) -> list[Path]:
    try:
        return [p for p in prompt_cache_folder(model_name).iterdir() if p.suffix == PROMPT_CACHE_SUFFIX]
    except OSError:   # no folder yet: nothing saved
        return []


def disk_bytes(model_name: str) -> int:
    return _total_size(cache_files(model_name))


def _total_size(files: list[Path]) -> int:
    total = 0
    for path in files:
        try:
            total += path.stat().st_size
        except OSError:
            pass   # removed by the runner's own eviction meanwhile
    return total


def remove_files(model_name: str) -> int:
    freed = 0
    for path in cache_files(model_name):
        try:
            size = path.stat().st_size
            path.unlink()
            freed += size
        except OSError:
            pass
    return freed


async def clear_prompt_cache(request: Request) -> Response:
    engine = request.app.state.engine
    name = request.path_params["name"]
    served = engine.models.get(name)
    if served is None:
        raise errors.model_not_found(name)
    if not served.is_local:
        raise errors.bad_request(f"model '{name}' is remote; its upstream keeps its own cache",
                                 "not_local")
    before = disk_bytes(name)
    handle = served.handle
    runner_cleared = False
    if handle is not None and served.state.loaded:
        try:
            await handle.send({"op": "clear_prompt_cache"})
            runner_cleared = True
        except RunnerError:   # a runner that just went: its files are removed below all the same
            pass
    remove_files(name)   # the runner removes its own too; whichever comes second finds none
    return JSONResponse({"model": name, "disk_bytes_freed": before,
                         "runner_cleared": runner_cleared})


def cache_summary(served, sampled) -> dict | None:
    """`prompt_cache` of a local model's /admin/models entry: bytes in the runner's RAM and on
    disk (the runner's own figures while loaded, the folder's otherwise); None without a cache."""
    budgets = getattr(served.config, "prompt_cache", None)
    if not served.is_local or budgets is None or not (budgets.ram_mb or budgets.disk_mb):
        return None
    # the last sample of a model that has been unloaded since is stale: read the folder then
    stats = getattr(sampled, "prompt_cache", None) if sampled is not None and served.state.loaded else None
    if stats:
        return {"ram_bytes": stats.get("prompt_cache_ram_bytes", 0),
                "disk_bytes": stats.get("prompt_cache_disk_bytes", 0),
                "entries": stats.get("prompt_cache_ram_entries", 0) + stats.get("prompt_cache_disk_entries", 0)}
    files = cache_files(served.name)
    return {"ram_bytes": 0, "disk_bytes": _total_size(files), "entries": len(files)}
