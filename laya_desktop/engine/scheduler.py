"""The one owner of the model lifecycle's decisions: loads and their admission, unloads to make
room, the emergency release, idle unloads, and the stops a config change or shutdown asks for.

It decides with the pure functions of memory_policy and acts only through `Effects` (start and
stop a runner, estimate a model, sample memory, record an event), the shape of llama-swap's run
loop and its Effects: the engine passes real ones (engine/runner_effects.py), and
tests/test_scheduler_policy.py drives every decision in-process with fakes.

Loads are serialised twice: one per model (concurrent callers share a load) and one admission at
a time across models, held from the plan to the ready runner (Ollama's scheduler: "block other
requests until we get this pending request running"). Per-model locks alone let two models be
admitted against the same free memory, each plan blind to the other's load in progress.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Iterable, Protocol

from laya_desktop.config.schema import MemoryConfig, ModelConfig
from laya_desktop.engine.memory_guard import loaded_models, memory_state, private_bytes
from laya_desktop.engine.memory_policy import (LoadedModel, plan_admission, plan_emergency,
                                               plan_idle_unloads, pressure)
from laya_desktop.engine.runner_handle import RunnerError, RunnerHandle
from laya_desktop.engine.served_model import LoadRefused, ServedModel
from laya_desktop.telemetry.events import EventKind

log = logging.getLogger("laya.scheduler")

EMERGENCY_GRACE_S = 1.0


class Effects(Protocol):
    """Everything the scheduler does to the world."""

    async def start(self, served: ServedModel) -> None:
        """Start the model's runner and return once it is ready; raises RunnerError."""

    async def stop(self, served: ServedModel, reason: str, grace_s: float | None) -> bool:
        """End the runner; True when this call ended a running process."""

    async def estimate(self, model: ModelConfig) -> tuple[int, int] | None:
        """(RAM, VRAM) bytes the model will need, or None when there is no estimate."""

    def sample(self) -> dict | None:
        """A fresh telemetry sample (machine and runners), or None without telemetry."""

    def ram_available(self) -> int: ...

    async def wait_memory_back(self, before: int, freed: int) -> None:
        """After unloads: until available RAM rose from `before` by about `freed`, or a timeout."""

    def record(self, kind: EventKind, **fields) -> None:
        """An event, once its effect is real."""


class Models(Protocol):
    def get(self, name: str) -> ServedModel | None: ...

    def all(self) -> Iterable[ServedModel]: ...


class Scheduler:
    def __init__(self, models: Models, memory: Callable[[], MemoryConfig], effects: Effects):
        self.models = models
        self.memory = memory          # the running config's memory section
        self.effects = effects
        self._load_locks: dict[str, asyncio.Lock] = {}
        self._admission_lock = asyncio.Lock()
        self._closed = False          # close() ran: the engine is shutting down, load nothing more
        # The RAM estimate each admitted runner was let in with, by the handle it was made for
        # (a config change makes a new handle, and with it a new estimate).
        self._admitted: dict[str, tuple[object, int]] = {}
        self.releasing = False        # an emergency release is under way (hysteresis)
        self._unloading: asyncio.Task | None = None

    # -- loads -------------------------------------------------------------------------------
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
        async with self._load_locks.setdefault(served.name, asyncio.Lock()):
            if handle.is_ready:
                return handle
            self._check_loadable(served)
            async with self._admission_lock:
                self._check_loadable(served)
                await self._admit(served)
                self._check_loadable(served)
                self.effects.record(EventKind.MODEL_LOADING, model=served.name)
                started = time.monotonic()
                try:
                    await self.effects.start(served)
                except RunnerError as exc:
                    self.effects.record(EventKind.LOAD_FAILED, model=served.name, reason=str(exc))
                    raise
                self.effects.record(EventKind.MODEL_LOADED, model=served.name, pid=handle.pid,
                                    load_ms=round((time.monotonic() - started) * 1000, 1))
        return handle

    def _check_loadable(self, served: ServedModel) -> None:
        if self._closed or served.handle.retired:
            reason = "the engine is shutting down" if self._closed else "the config changed"
            raise RunnerError(f"model '{served.name}' not loaded: {reason}", "model_unloaded")

    async def _admit(self, served: ServedModel) -> None:
        """Make room for `served` before its load, or raise LoadRefused (recorded as load_refused)."""
        estimate = await self.effects.estimate(served.config)
        if estimate is None:
            return
        ram_need, vram_need = estimate
        sample = self.effects.sample()
        if sample is None:
            return
        # Loading models too (a load not yet running holds none of its estimate): admissions
        # are one at a time, so this is only a second line of defence.
        loaded = [m for m in loaded_models(sample, self.models.get, self._admitted, with_loading=True)
                  if m.name != served.name]
        plan = plan_admission(ram_need, vram_need, memory_state(sample, loaded), loaded,
                              self.memory())
        log.info("admission of %s: %s", served.name, plan.message)
        if not plan.fits:
            self.effects.record(EventKind.LOAD_REFUSED, model=served.name, reason=plan.message,
                                needed_bytes=ram_need, available_bytes=plan.available_bytes)
            raise LoadRefused(f"model '{served.name}' not loaded: {plan.message}")
        self._admitted[served.name] = (served.handle, ram_need)
        if plan.evict:
            before = self.effects.ram_available()
            freed = sum(private_bytes(sample, name) for name in plan.evict)
            for name in plan.evict:
                await self.unload(name, reason=f"making room for {served.name}",
                                  guard_action="evict")
            # Ollama's lesson: after an unload, wait until free memory really came back.
            await self.effects.wait_memory_back(before, freed)

    # -- unloads -----------------------------------------------------------------------------
    async def unload(self, name: str, kind: EventKind = EventKind.MODEL_UNLOADED, reason: str = "requested",
                     freed_bytes: int | None = None, grace_s: float | None = None,
                     **extra) -> bool:
        """Stop the model's runner; True (and the event recorded) when this call stopped it.
        Nothing is checked first: a runner that is not up, or is being stopped by another
        caller, answers False from its own stop."""
        served = self.models.get(name)
        if served is None or served.handle is None:
            return False
        pid = served.handle.pid
        if not await self.effects.stop(served, reason, grace_s):
            return False
        self.effects.record(kind, model=name, reason=reason, freed_bytes=freed_bytes, pid=pid,
                            **extra)
        return True

    async def retire(self, served: ServedModel) -> None:
        """A config change replaced or removed the model: stop it, and never start it again.
        Requests still waiting in its queue move to the new model (dispatch); one already inside
        a load of the old model gets a clean error."""
        if served.handle is None:
            return
        served.handle.retire()
        pid = served.handle.pid
        if await self.effects.stop(served, "config changed", None):
            self.effects.record(EventKind.MODEL_UNLOADED, model=served.name, reason="config changed",
                                pid=pid)

    async def close(self) -> None:
        """Engine shutdown: stop every runner, load nothing more."""
        self._closed = True
        await asyncio.gather(*(self.effects.stop(m, "engine shutdown", None)
                               for m in self.models.all() if m.handle is not None),
                             return_exceptions=True)

    # -- emergency release (each telemetry sample) ---------------------------------------------
    def on_sample(self, sample: dict) -> asyncio.Task | None:
        """One model unloaded per sample at most, in a task of its own (returned)."""
        cfg = self.memory()
        if not cfg.guard or (self._unloading is not None and not self._unloading.done()):
            return None
        loaded = loaded_models(sample, self.models.get, self._admitted)
        state = memory_state(sample, loaded)
        names = plan_emergency(state, loaded, cfg, releasing=self.releasing)
        if not names:
            self.releasing = False
            return None
        found = pressure(state, cfg, with_band=self.releasing)
        victim = next(m for m in loaded if m.name == names[0])
        self.releasing = True
        self._unloading = asyncio.ensure_future(self._release(
            victim, found.message if found else "memory pressure",
            private_bytes(sample, victim.name) or victim.memory_bytes))
        return self._unloading

    async def _release(self, victim: LoadedModel, reason: str, freed: int) -> None:
        log.warning("memory guard: unloading %s (%s)", victim.name, reason)
        try:
            await self.unload(victim.name, kind=EventKind.EMERGENCY_UNLOAD, reason=reason,
                              freed_bytes=freed, grace_s=EMERGENCY_GRACE_S, busy=victim.busy)
        except Exception:
            log.exception("emergency unload of %s failed", victim.name)

    # -- idle unloads --------------------------------------------------------------------------
    def _idle_candidates(self) -> tuple[list[LoadedModel], dict[str, float]]:
        loaded, ttls = [], {}
        for served in self.models.all():
            if served.handle is None or not served.handle.is_ready:
                continue
            loaded.append(LoadedModel(name=served.name, pinned=served.config.keep_in_memory,
                                      busy=served.busy, last_used=served.last_active))
            ttls[served.name] = served.config.idle_ttl_s
        return loaded, ttls

    async def unload_idle(self, now: float) -> list[str]:
        """Unload the models idle past their TTL at `now` (wall clock); returns those unloaded."""
        loaded, ttls = self._idle_candidates()
        done = []
        for name in plan_idle_unloads(loaded, now, ttls):
            try:
                if await self.unload(name, kind=EventKind.IDLE_UNLOAD, reason=f"idle for {ttls[name]} s"):
                    done.append(name)
            except Exception:
                log.exception("idle unload of %s failed", name)
        return done
