"""The engine's periodic work: idle unloads (and, once started, telemetry and the memory guard)."""
from __future__ import annotations

import asyncio
import logging
import time

log = logging.getLogger("laya.engine")

IDLE_CHECK_S = 1.0


def start_background(engine) -> list[asyncio.Task]:
    return [asyncio.ensure_future(_idle_unloads(engine))]


def idle_models(engine, now: float) -> list[str]:
    names = []
    for served in engine.models.models.values():
        cfg = served.config
        if (served.handle is None or cfg.keep_in_memory or cfg.idle_ttl_s == 0
                or served.state != "ready" or served.active or served.queue.queued):
            continue
        if now - max(served.last_used, served.handle.loaded_at or 0) >= cfg.idle_ttl_s:
            names.append(served.name)
    return names


async def _idle_unloads(engine) -> None:
    while True:
        await asyncio.sleep(IDLE_CHECK_S)
        for name in idle_models(engine, time.time()):
            try:
                await engine.models.unload(name, kind="idle_unload", reason="idle TTL reached")
            except Exception:
                log.exception("idle unload of %s failed", name)
