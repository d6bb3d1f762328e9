"""The registry of served models: their runners, queues, use times, loads and unloads.

Which model to unload is decided by the pure functions in memory_policy; this module only carries
the decisions out and records each as an event once its effect is real.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from enum import StrEnum

from laya_desktop.config.schema import Config, ModelConfig
from laya_desktop.engine.model_queue import ModelQueue
from laya_desktop.engine.runner_handle import RunnerError, RunnerHandle, RunnerState, runner_spec

log = logging.getLogger("laya.models")


class LoadRefused(Exception):
    """Admission control said no: the model would not fit in memory."""


class ServedState(StrEnum):
    """A served model's state on the wire: its runner's, plus "busy" (ready, requests in flight)
    and "remote" (no runner)."""
    UNLOADED = RunnerState.UNLOADED.value
    LOADING = RunnerState.LOADING.value
    READY = RunnerState.READY.value
    BUSY = "busy"
    STOPPING = RunnerState.STOPPING.value
    ERROR = RunnerState.ERROR.value
    REMOTE = "remote"


@dataclass
class ServedModel:
    config: ModelConfig
    queue: ModelQueue
    handle: RunnerHandle | None = None  # None for remote models
    last_used: float = 0.0
    requests_total: int = 0
    tokens_window: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def is_local(self) -> bool:
        return self.handle is not None

    @property
    def active(self) -> int:
        return self.queue.active

    @property
    def state(self) -> ServedState:
        if self.handle is None:
            return ServedState.REMOTE
        if self.handle.is_ready and self.queue.active > 0:
            return ServedState.BUSY
        return ServedState(self.handle.state)

    @property
    def busy(self) -> bool:
        """Not to be unloaded for an idle TTL or to make room: requests in flight or waiting,
        or a load under way. The one definition the guard and the idle unloads both use."""
        return (self.queue.active > 0 or self.queue.queued > 0
                or (self.handle is not None and self.handle.is_loading))

    @property
    def answers_now(self) -> bool:
        """Serves a request without a load first: a ready runner, or a remote model."""
        return self.handle is None or self.handle.is_ready

    def touch(self) -> None:
        self.last_used = time.time()


def _spec_key(model: ModelConfig) -> tuple:
    return (model.backend, model.path, tuple(sorted(runner_spec(model, model.path or "").items())))


class ModelManager:
    def __init__(self, config: Config, events, admission=None):
        self.events = events
        self.admission = admission  # async callable(ServedModel) -> None, raises LoadRefused
        self.models: dict[str, ServedModel] = {}
        self._load_locks: dict[str, asyncio.Lock] = {}
        # One admission at a time, held from the plan to the ready runner (Ollama's scheduler:
        # "block other requests until we get this pending request running"). Per-model locks
        # alone let two models be admitted against the same free memory, each plan blind to
        # the other's load in progress.
        self._admission_lock = asyncio.Lock()
        self._config = config
        self._closed = False  # stop_all() ran: the engine is shutting down, load nothing more
        for model in config.models:
            self.models[model.name] = self._new_served(model, config)

    def _new_served(self, model: ModelConfig, config: Config) -> ServedModel:
        limit = model.effective_parallel if model.is_local else 1_000_000
        queue = ModelQueue(limit, config.scheduler.max_queue)
        handle = RunnerHandle(model, on_crash=self._on_crash, on_hang=self._on_hang,
                              silence_s=config.scheduler.queue_timeout_ms / 1000) \
            if model.is_local else None
        return ServedModel(model, queue, handle)

    def _on_crash(self, handle: RunnerHandle, message: str) -> None:
        self.events.record("runner_crashed", model=handle.model.name, reason=message)

    def _on_hang(self, handle: RunnerHandle, message: str) -> None:
        self.events.record("runner_unresponsive", model=handle.model.name, reason=message,
                           pid=handle.pid)

    def get(self, name: str) -> ServedModel | None:
        return self.models.get(name)

    async def ensure_ready(self, served: ServedModel) -> RunnerHandle:
        handle = served.handle
        assert handle is not None
        if handle.is_ready:
            return handle
        # Shielded: a caller that goes away (a client leaving while it waits for the load) must
        # not cut short an admission that is unloading other models to make room.
        return await asyncio.shield(self._load(served))

    async def _load(self, served: ServedModel) -> RunnerHandle:
        handle = served.handle
        assert handle is not None
        lock = self._load_locks.setdefault(served.name, asyncio.Lock())
        async with lock:
            if handle.is_ready:
                return handle
            self._check_loadable(served)
            async with self._admission_lock:
                self._check_loadable(served)
                if self.admission is not None:
                    await self.admission(served)
                self._check_loadable(served)
                self.events.record("model_loading", model=served.name)
                started = time.monotonic()
                try:
                    await handle.ensure_ready()
                except RunnerError as exc:
                    self.events.record("load_failed", model=served.name, reason=str(exc))
                    raise
                self.events.record("model_loaded", model=served.name, pid=handle.pid,
                                   load_ms=round((time.monotonic() - started) * 1000, 1))
        return handle

    def _check_loadable(self, served: ServedModel) -> None:
        if self._closed or served.handle.retired:
            reason = "the engine is shutting down" if self._closed else "the config changed"
            raise RunnerError(f"model '{served.name}' not loaded: {reason}", "model_unloaded")

    async def unload(self, name: str, kind: str = "model_unloaded", reason: str = "requested",
                     freed_bytes: int | None = None, grace_s: float | None = None,
                     **extra) -> bool:
        served = self.models.get(name)
        if served is None or served.handle is None:
            return False
        handle = served.handle
        pid = handle.pid
        if not await handle.stop(reason, grace_s=grace_s):
            return False  # another unload got there first and recorded it
        self.events.record(kind, model=name, reason=reason, freed_bytes=freed_bytes, pid=pid, **extra)
        return True

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
            if served.handle is not None:
                # Requests still waiting in the old queue move to the new model (dispatch); one
                # already inside a load of the old model gets a clean error; none restarts it.
                served.handle.retire()
                pid = served.handle.pid
                if await served.handle.stop("config changed"):
                    self.events.record("model_unloaded", model=served.name, reason="config changed",
                                       pid=pid)
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
        self._closed = True
        await asyncio.gather(*(m.handle.stop("engine shutdown") for m in self.models.values()
                               if m.handle is not None), return_exceptions=True)

    def kill_all(self) -> None:
        for m in self.models.values():
            if m.handle is not None:
                m.handle.kill_now()
