"""The registry of served models: one ServedModel per configured model, kept in step with
config changes.

Loads, unloads and evictions are decided by the scheduler (engine/scheduler.py); the manager
hands them on, so that dispatch and the admin API have one object to ask, and never read a state
to decide for themselves.
"""
from __future__ import annotations

import logging
from typing import Callable

from laya_desktop.config.schema import Config, ModelConfig
from laya_desktop.engine.model_queue import ModelQueue
from laya_desktop.engine.runner_handle import RunnerError, RunnerHandle, runner_spec
from laya_desktop.engine.scheduler import Effects, Scheduler
from laya_desktop.engine.served_model import LoadRefused, ServedModel, ServedState
from laya_desktop.telemetry.events import EventKind

log = logging.getLogger("laya.models")

__all__ = ["ModelManager", "ServedModel", "ServedState", "LoadRefused"]


def _spec_key(model: ModelConfig) -> tuple:
    return (model.backend, model.path, tuple(sorted(runner_spec(model, model.path or "").items())))


class ModelManager:
    def __init__(self, config: Config, effects: Effects,
                 make_runner: Callable[..., RunnerHandle] = RunnerHandle):
        self.effects = effects
        self._make_runner = make_runner  # tests pass runners without a process
        self.models: dict[str, ServedModel] = {}
        self._config = config
        self.scheduler = Scheduler(self, lambda: self._config.memory, effects)
        for model in config.models:
            self.models[model.name] = self._new_served(model, config)

    def _new_served(self, model: ModelConfig, config: Config) -> ServedModel:
        limit = model.effective_parallel if model.is_local else 1_000_000
        queue = ModelQueue(limit, config.scheduler.max_queue)
        handle = self._make_runner(model, on_crash=self._on_crash, on_hang=self._on_hang,
                                   silence_s=config.scheduler.queue_timeout_ms / 1000) \
            if model.is_local else None
        return ServedModel(model, queue, handle)

    def _on_crash(self, handle: RunnerHandle, message: str) -> None:
        self.effects.record(EventKind.RUNNER_CRASHED, model=handle.model.name, reason=message)

    def _on_hang(self, handle: RunnerHandle, message: str) -> None:
        self.effects.record(EventKind.RUNNER_UNRESPONSIVE, model=handle.model.name, reason=message,
                            pid=handle.pid)

    def get(self, name: str) -> ServedModel | None:
        return self.models.get(name)

    def all(self) -> list[ServedModel]:
        return list(self.models.values())

    async def ensure_ready(self, served: ServedModel) -> RunnerHandle:
        return await self.scheduler.ensure_ready(served)

    async def unload(self, name: str, **how) -> bool:
        return await self.scheduler.unload(name, **how)

    async def apply_config(self, config: Config) -> list[str]:
        """Swap in a new config: changed or removed models are unloaded, new ones registered.

        Returns the models to warm up: new or changed ones, and those whose `warmup` was just
        turned on (a model the guard or the idle TTL unloaded is not loaded back by a re-apply)."""
        old = self.models
        new: dict[str, ServedModel] = {}
        to_stop: list[ServedModel] = []
        to_warm: list[str] = []
        for model in config.models:
            prev = old.get(model.name)
            if prev is not None and _spec_key(prev.config) == _spec_key(model):
                if model.warmup and not prev.config.warmup:
                    to_warm.append(model.name)
                prev.config = model
                if prev.handle is not None:
                    prev.handle.reconfigure(model, config.scheduler.queue_timeout_ms / 1000)
                limit = model.effective_parallel if model.is_local else 1_000_000
                prev.queue.resize(limit, config.scheduler.max_queue)
                new[model.name] = prev
            else:
                if prev is not None:
                    to_stop.append(prev)
                new[model.name] = self._new_served(model, config)
                if model.warmup:
                    to_warm.append(model.name)
        to_stop += [m for name, m in old.items() if name not in new]
        self.models = new
        self._config = config
        for served in to_stop:
            await self.scheduler.retire(served)
        return to_warm

    async def warmup(self, names: list[str] | None = None) -> None:
        for served in list(self.models.values()):
            if names is not None and served.name not in names:
                continue
            if served.is_local and served.config.warmup:
                try:
                    await self.ensure_ready(served)
                except (RunnerError, LoadRefused) as exc:
                    log.warning("warm-up of %s failed: %s", served.name, exc)

    async def stop_all(self) -> None:
        await self.scheduler.close()

    def kill_all(self) -> None:
        for m in self.models.values():
            if m.handle is not None:
                m.handle.kill_now()
