"""The scheduler's real effects: runner processes, the memory estimate, telemetry, the event log."""
from __future__ import annotations

import asyncio
import time
from typing import Callable

from laya_desktop.config.schema import ModelConfig
from laya_desktop.engine.served_model import ServedModel

MEMORY_BACK_TIMEOUT_S = 5.0


class RunnerEffects:
    def __init__(self, events, sample: Callable[[], dict | None]):
        self.events = events
        self._sample = sample

    async def start(self, served: ServedModel) -> None:
        await served.handle.ensure_ready()

    async def stop(self, served: ServedModel, reason: str, grace_s: float | None) -> bool:
        return await served.handle.stop(reason, grace_s=grace_s)

    async def estimate(self, model: ModelConfig) -> tuple[int, int] | None:
        return await asyncio.to_thread(_estimate, model)

    def sample(self) -> dict | None:
        return self._sample()

    def ram_available(self) -> int:
        import psutil  # not on the start-up path: the telemetry sampler imports it in a worker
        return psutil.virtual_memory().available

    async def wait_memory_back(self, before: int, freed: int) -> None:
        import psutil
        deadline = time.monotonic() + MEMORY_BACK_TIMEOUT_S
        while time.monotonic() < deadline:
            if psutil.virtual_memory().available - before >= freed // 2:
                return
            await asyncio.sleep(0.05)

    def record(self, kind: str, **fields) -> None:
        self.events.record(kind, **fields)


def _estimate(model: ModelConfig) -> tuple[int, int] | None:
    """Reads the GGUF's header. Imported here, on the first load: the GGUF reader brings numpy
    (through the gguf package), a fifth of a second that /healthz need not wait for."""
    from laya_desktop.runners.memory_estimate import estimate_model_bytes
    return estimate_model_bytes(model)
