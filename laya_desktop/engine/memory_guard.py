"""The memory guard: admission before a load, emergency release while serving.

Decisions come from the pure functions in memory_policy; this module gathers their inputs from
telemetry and carries the answers out (unloading ends runner processes), recording each event
once its effect is real.
"""
from __future__ import annotations

import asyncio
import logging
import time

import psutil

from laya_desktop.engine.memory_policy import (LoadedModel, MemoryState, plan_admission,
                                               plan_emergency, pressure)
from laya_desktop.engine.model_manager import LoadRefused
from laya_desktop.runners.memory_estimate import estimate_model_bytes
from laya_desktop.telemetry.system_sampler import process_memory

log = logging.getLogger("laya.guard")

MEMORY_BACK_TIMEOUT_S = 5.0
EMERGENCY_GRACE_S = 1.0


class MemoryGuard:
    def __init__(self, engine):
        self.engine = engine
        self.releasing = False
        self._unloading: asyncio.Task | None = None
        # The RAM estimate each admitted runner was let in with, by the handle it was made for
        # (a config change makes a new handle, and with it a new estimate).
        self._admitted: dict[str, tuple[object, int]] = {}

    # -- inputs ------------------------------------------------------------------------------
    def _loaded(self, sample: dict, with_loading: bool = False) -> list[LoadedModel]:
        out = []
        for name, entry in sample.get("models", {}).items():
            served = self.engine.models.get(name)
            if served is None or served.handle is None or entry.get("pid") is None:
                continue
            if not (served.handle.is_ready or (with_loading and served.handle.is_loading)):
                continue
            memory = (entry.get("private") or 0) + (entry.get("shared") or 0)
            handle, estimate = self._admitted.get(name, (None, 0))
            reserved = max(0, estimate - memory) if handle is served.handle else 0
            out.append(LoadedModel(
                name=name, pinned=served.config.keep_in_memory,
                busy=served.busy,  # a load under way is never evicted
                last_used=max(served.last_used, served.handle.loaded_at or 0),
                memory_bytes=memory, vram_bytes=entry.get("vram") or 0, reserved_bytes=reserved))
        return out

    @staticmethod
    def _state(sample: dict, loaded: list[LoadedModel], models: dict) -> MemoryState:
        gpus = sample.get("gpus") or []
        mapped = sum((models.get(m.name) or {}).get("shared") or 0 for m in loaded)
        return MemoryState(ram_total=sample["ram_total"], ram_available=sample["ram_available"],
                           ram_used=sample["ram_used"],
                           vram_total=sum(g.get("total") or 0 for g in gpus),
                           vram_used=sum(g.get("used") or 0 for g in gpus), mapped_bytes=mapped)

    # -- emergency release -------------------------------------------------------------------
    def on_sample(self, sample: dict) -> None:
        cfg = self.engine.config.memory
        if not cfg.guard or (self._unloading is not None and not self._unloading.done()):
            return
        loaded = self._loaded(sample)
        state = self._state(sample, loaded, sample.get("models", {}))
        names = plan_emergency(state, loaded, cfg, releasing=self.releasing)
        if not names:
            self.releasing = False
            return
        found = pressure(state, cfg, with_band=self.releasing)
        reason = found.message if found else "memory pressure"
        victim = next(m for m in loaded if m.name == names[0])
        self.releasing = True
        self._unloading = asyncio.ensure_future(self._release(victim, reason))

    async def _release(self, victim: LoadedModel, reason: str) -> None:
        served = self.engine.models.get(victim.name)
        pid = served.handle.pid if served and served.handle else None
        mem = process_memory(pid) if pid else None
        freed = mem["private"] if mem else victim.memory_bytes
        log.warning("memory guard: unloading %s (%s)", victim.name, reason)
        try:
            await self.engine.models.unload(victim.name, kind="emergency_unload", reason=reason,
                                            freed_bytes=freed, grace_s=EMERGENCY_GRACE_S,
                                            busy=victim.busy)
        except Exception:
            log.exception("emergency unload of %s failed", victim.name)

    # -- admission ---------------------------------------------------------------------------
    async def admit(self, served) -> None:
        """Make room for `served` before its load, or raise LoadRefused (recorded as load_refused)."""
        estimate = await asyncio.to_thread(estimate_model_bytes, served.config)
        if estimate is None:
            return
        ram_need, vram_need = estimate
        telemetry = self.engine.telemetry
        sample = telemetry.sample_once() if telemetry else None
        if sample is None:
            return
        # Loading models too (a load not yet running holds none of its estimate): the model
        # manager admits one model at a time, so this is only a second line of defence.
        loaded = [m for m in self._loaded(sample, with_loading=True) if m.name != served.name]
        state = self._state(sample, loaded, sample.get("models", {}))
        plan = plan_admission(ram_need, vram_need, state, loaded, self.engine.config.memory)
        log.info("admission of %s: %s", served.name, plan.message)
        if not plan.fits:
            self.engine.events.record("load_refused", model=served.name, reason=plan.message,
                                      needed_bytes=ram_need, available_bytes=plan.available_bytes)
            raise LoadRefused(f"model '{served.name}' not loaded: {plan.message}")
        self._admitted[served.name] = (served.handle, ram_need)
        if plan.evict:
            before = psutil.virtual_memory().available
            models = sample.get("models", {})
            freed = sum((models.get(name) or {}).get("private") or 0 for name in plan.evict)
            for name in plan.evict:
                await self.engine.models.unload(name, reason=f"making room for {served.name}",
                                                guard_action="evict")
            await self._wait_memory_back(before, freed)

    @staticmethod
    async def _wait_memory_back(before: int, freed: int) -> None:
        """Ollama's lesson: after an unload, wait until free memory really came back."""
        deadline = time.monotonic() + MEMORY_BACK_TIMEOUT_S
        while time.monotonic() < deadline:
            if psutil.virtual_memory().available - before >= freed // 2:
                return
            await asyncio.sleep(0.05)
