"""Sampling at memory.sample_hz: the machine, each runner, their KV caches; kept in a ring buffer.

Each sample also goes to the memory guard, so it reacts within one sample period.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from typing import Callable

from laya_desktop.runners.cadence import STATS_PUSH_S
from laya_desktop.telemetry.model_sample import MLX_FIGURES, ModelSample
from laya_desktop.telemetry.ring import SeqRing
from laya_desktop.telemetry.spare_fds import out_of_descriptors
from laya_desktop.telemetry.system_sampler import SystemSampler, process_memory

log = logging.getLogger("laya.telemetry")

HOUR_AT_4HZ = 4 * 3600


class TelemetryService:
    def __init__(self, models, sample_hz: Callable[[], float],
                 on_sample: Callable[[dict], None] | None = None,
                 capacity: int = HOUR_AT_4HZ + 1024):
        self.models = models          # the registry: all() -> the served models
        self.sample_hz = sample_hz    # the running config's memory.sample_hz
        self.on_sample = on_sample    # the memory guard's emergency release
        self.samples = SeqRing(capacity)
        self.sampler = SystemSampler()
        self.latest_models: dict[str, ModelSample] = {}  # by name, from the latest sample

    def live_models(self) -> dict[str, ModelSample]:
        """The latest sample's records, each with the model's state and request counts as they
        are now (a sample may be up to a sampling period old): what /metrics' gauges read."""
        live = {}
        for served in self.models.all():
            sampled = self.latest_models.get(served.name) or ModelSample(served.state)
            live[served.name] = replace(sampled, state=served.state, active=served.active,
                                        queued=served.queue.queued)
        return live

    @staticmethod
    def _model_sample(served, gpu_by_pid: dict[int, int]) -> ModelSample:
        handle = served.handle
        pid = handle.pid
        mem = (process_memory(pid) if pid else None) or {}
        stats = handle.live_stats
        kv_used = stats.get("kv_used_tokens")
        per_token = stats.get("kv_bytes_per_token") or handle.info.get("kv_bytes_per_token")
        capacity = stats.get("kv_capacity_tokens") or handle.info.get("kv_capacity_tokens")
        return ModelSample(
            state=served.state, pid=pid,
            rss=mem.get("rss"), private=mem.get("private"), shared=mem.get("shared"),
            vram=gpu_by_pid.get(pid) if pid else None,
            kv_used_tokens=kv_used, kv_capacity_tokens=capacity,
            kv_bytes=int(kv_used * per_token) if kv_used is not None and per_token else None,
            kv_capacity_bytes=int(capacity * per_token) if capacity and per_token else None,
            active=served.active, queued=served.queue.queued,
            tokens_per_s=stats.get("tokens_per_s"),
            prompt_cache={k: v for k, v in stats.items() if k.startswith("prompt_cache_")} or None,
            **{key: stats[key] for key in MLX_FIGURES if key in stats})

    def sample_once(self) -> dict:
        try:
            return self._sample_once()
        except OSError as exc:
            if not out_of_descriptors(exc):
                raise
        # every descriptor is taken (a connection flood): sample with the spare ones
        with self.sampler.spare.released():
            return self._sample_once()

    def _sample_once(self) -> dict:
        sample = self.sampler.sample()
        gpu_by_pid: dict[int, int] = {}
        for gpu in sample["gpus"]:
            for pid, used in (gpu.get("processes") or {}).items():
                gpu_by_pid[int(pid)] = gpu_by_pid.get(int(pid), 0) + int(used)
        models: dict[str, ModelSample] = {}
        for served in self.models.all():
            if served.handle is not None:
                models[served.name] = self._model_sample(served, gpu_by_pid)
        self.latest_models = models
        sample["models"] = {name: model.to_json() for name, model in models.items()}
        self.samples.append(sample)
        return sample

    async def _poll_runner_stats(self, period: float) -> None:
        now = time.monotonic()
        for served in self.models.all():
            handle = served.handle
            if handle is not None and handle.is_ready and needs_poll(handle.stats_at, now, period):
                try:
                    await handle.send({"op": "stats"})
                except Exception:
                    pass  # a dying runner is reported by its own handle

    async def run(self) -> None:
        # The GPUs are looked for here, in a worker thread, not while the engine starts: /healthz
        # need not wait for NVML. A sample taken meanwhile (an admission's) waits for the answer.
        await asyncio.to_thread(self.sampler.start)
        next_at = time.monotonic()
        while True:
            period = 1.0 / max(self.sample_hz(), 0.01)
            await self._poll_runner_stats(period)
            try:
                sample = self.sample_once()
            except Exception:
                log.exception("telemetry sample failed")
                sample = None
            if sample is not None and self.on_sample is not None:
                self.on_sample(sample)
            next_at += period
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind (a stalled loop): don't try to catch up in a burst
                next_at = time.monotonic()
                delay = 0
            await asyncio.sleep(delay)

    def close(self) -> None:
        self.sampler.close()


def needs_poll(stats_at: float, now: float, period: float) -> bool:
    """Whether to ask a runner for its stats before this sample. A busy runner pushes them every
    STATS_PUSH_S anyway; asking as well wakes its stdin thread beside the decoding threads, and
    the engine for the answer, 4 times a second for nothing."""
    return now - stats_at >= 1.5 * max(period, STATS_PUSH_S)
