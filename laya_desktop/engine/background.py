"""The engine's periodic work: telemetry (which drives the memory guard) and idle unloads."""
from __future__ import annotations

import asyncio
import logging
import time

from laya_desktop.engine.memory_policy import LoadedModel, plan_idle_unloads

log = logging.getLogger("laya.engine")

IDLE_CHECK_S = 1.0


def start_background(engine) -> list[asyncio.Task]:
    return [asyncio.ensure_future(engine.telemetry.run()),
            asyncio.ensure_future(_idle_unloads(engine))]


def idle_candidates(engine) -> tuple[list[LoadedModel], dict[str, float]]:
    loaded, ttls = [], {}
    for served in engine.models.models.values():
        if served.handle is None or not served.handle.is_ready:
            continue
        loaded.append(LoadedModel(
            name=served.name, pinned=served.config.keep_in_memory, busy=served.busy,
            last_used=max(served.last_used, served.handle.loaded_at or 0)))
        ttls[served.name] = served.config.idle_ttl_s
    return loaded, ttls


async def _idle_unloads(engine) -> None:
    while True:
        await asyncio.sleep(IDLE_CHECK_S)
        loaded, ttls = idle_candidates(engine)
        for name in plan_idle_unloads(loaded, time.time(), ttls):
            try:
                await engine.models.unload(name, kind="idle_unload",
                                           reason=f"idle for {ttls[name]} s")
            except Exception:
                log.exception("idle unload of %s failed", name)
