"""The engine's periodic work: telemetry (which drives the memory guard) and idle unloads."""
from __future__ import annotations

import asyncio
import time

from laya_desktop.engine.scheduler import Scheduler
from laya_desktop.engine.telemetry_service import TelemetryService

IDLE_CHECK_S = 1.0


def start_background(telemetry: TelemetryService, scheduler: Scheduler) -> list[asyncio.Task]:
    return [asyncio.ensure_future(telemetry.run()),
            asyncio.ensure_future(_idle_unloads(scheduler))]


async def _idle_unloads(scheduler: Scheduler) -> None:
    while True:
        await asyncio.sleep(IDLE_CHECK_S)
        await scheduler.unload_idle(time.time())
