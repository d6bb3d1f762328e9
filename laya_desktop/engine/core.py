"""The engine: one object that owns the running config, the router, the models and the logs.

No module-level state: the ASGI app holds one Engine in `app.state.engine`.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
from pathlib import Path

from laya_desktop.config.schema import Config
from laya_desktop.config.store import config_to_dict, load_config, save_config_atomic
from laya_desktop.config.revision import config_etag, if_match_holds
from laya_desktop.config.validate import validate_config
from laya_desktop.engine.config_watch import EditSettler, file_stamp
from laya_desktop.engine.model_manager import ModelManager
from laya_desktop.engine.privilege import privileged_changes
from laya_desktop.engine.remote import make_client
from laya_desktop.engine.replica_health import ReplicaHealth
from laya_desktop.engine.response_store import ResponseStore
from laya_desktop.engine.runner_effects import RunnerEffects
from laya_desktop.engine.telemetry_service import TelemetryService
from laya_desktop.routing.route_log import RouteInputLog
from laya_desktop.routing.router import Router
from laya_desktop.routing.session_affinity import AffinityTable
from laya_desktop.routing.target_book import TargetBook
from laya_desktop.telemetry.events import EventKind, EventLog, RequestLog

log = logging.getLogger("laya.engine")

CONFIG_POLL_S = 0.25


class ConfigRefused(Exception):
    def __init__(self, errors: list):
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


class ConfigNeedsPrivilege(Exception):
    """The change touches what only the user's own processes may change (engine/privilege.py)."""

    def __init__(self, changes: list[str]):
        super().__init__(", ".join(changes))
        self.changes = changes


class ConfigConflict(Exception):
    """If-Match named a revision that is no longer the running one: someone else changed it."""

    def __init__(self, current: str):
        super().__init__(current)
        self.current = current


class Engine:
    def __init__(self, config: Config, config_path: Path | None = None):
        self.config = config
        self.config_etag = config_etag(config)
        self.config_path = config_path
        self.router = Router(config)
        self.events = EventLog()
        self.requests = RequestLog()
        self.events.add_listener(lambda event: self.metrics.observe_event(event))
        self.responses = ResponseStore()  # the Responses API's previous_response_id
        # the scheduler admits a load against a fresh sample, taken when it asks for one
        self.models = ModelManager(config, RunnerEffects(self.events,
                                                         sample=lambda: self.telemetry.sample_once()))
        # remote models' up/ejected state, fed by requests and probes (engine/replica_health.py)
        self.health = ReplicaHealth(self._health_settings, on_change=self._health_changed)
        self.targets = TargetBook(is_loaded=self._is_loaded, capacity_of=self._capacity_of,
                                  usable=self.health.usable)   # what rule strategies choose by
        self.affinity = AffinityTable()   # conversation -> the target that served it
        self._prober = None   # active health checks, started with the engine
        self.route_inputs = RouteInputLog(config.server.route_log_size)  # for the what-if replay
        self.remote = make_client()
        self.started_at = time.time()
        self.telemetry = TelemetryService(self.models, lambda: self.config.memory.sample_hz,
                                          on_sample=self.models.scheduler.on_sample)
        self._apply_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self._config_stamp = self._stamp()

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        self._tasks.append(asyncio.ensure_future(self.models.warmup()))
        if self.config_path is not None:
            self._tasks.append(asyncio.ensure_future(self._watch_config_file()))
        from laya_desktop.engine.background import start_background
        self._tasks += start_background(self.telemetry, self.models.scheduler)
        from laya_desktop.engine.replica_probe import Prober
        self._prober = Prober(self.health, lambda: self.config.models)
        self._tasks.append(asyncio.ensure_future(self._prober.run()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.models.stop_all()
        await self.remote.aclose()
        self.telemetry.close()

    # -- config ------------------------------------------------------------------------------
    async def apply_raw_config(self, raw: dict, persist: bool = True,
                               privileged: bool = True, if_match: str | None = None) -> Config:
        config, errors = validate_config(raw)
        if errors or config is None:
            raise ConfigRefused(errors)
        async with self._apply_lock:
            if if_match is not None and not if_match_holds(if_match, self.config_etag):
                raise ConfigConflict(self.config_etag)
            if not privileged:  # compared under the lock: against the config it would replace
                if changes := privileged_changes(self.config, config):
                    raise ConfigNeedsPrivilege(changes)
            if persist and self.config_path is not None:
                try:
                    await asyncio.to_thread(save_config_atomic, config, self.config_path)
                except OSError as exc:
                    # Disk full, a read-only folder, a file size limit: the atomic save left the
                    # old file as it was, so the running config stays too; say so, by name.
                    from laya_desktop.engine.errors import ApiError
                    message = (f"cannot save {self.config_path}: {exc.strerror or exc}; nothing "
                               "was changed (the running config and the file are as they were)")
                    self.events.record(EventKind.CONFIG_SAVE_FAILED, reason=message)
                    raise ApiError(500, message, "server_error", "config_not_saved") from None
                self._config_stamp = self._stamp()
            await self._swap_config(config, source="api" if persist else "file")
        return config

    async def _swap_config(self, config: Config, source: str) -> None:
        # semantic rules embed their examples here (tens of ms each): off the event loop
        self.router = await asyncio.to_thread(Router, config)
        self.config = config
        self.config_etag = config_etag(config)
        self.route_inputs.resize(config.server.route_log_size)
        self.health.forget_except({m.name for m in config.models if not m.is_local})
        if self._prober is not None:
            self._prober.wake()
        to_warm = await self.models.apply_config(config)
        # the revision lets a client that made this change (its PUT answered it) skip a re-read
        self.events.record(EventKind.CONFIG_APPLIED, reason=f"from {source}",
                           revision=self.config_etag)
        # tracked, so that stop() ends it before stop_all() instead of it loading models after
        self._tasks = [t for t in self._tasks if not t.done()]
        if to_warm:
            self._tasks.append(asyncio.ensure_future(self.models.warmup(to_warm)))

    def _health_settings(self, name: str):
        model = self.config.model(name)
        return None if model is None or model.is_local else model.health

    def _health_changed(self, kind: str, model: str, extra: dict) -> None:
        event_kind = EventKind(kind)
        self.events.record(event_kind, model=model, **extra)
        log.warning("remote model %s: %s %s", model, kind, extra.get("reason") or "")

    def _capacity_of(self, name: str) -> int | None:
        """Requests a target serves at once when the config says: a local model's `parallel`,
        a remote's `slots`."""
        model = self.config.model(name)
        if model is None:
            return None
        return model.effective_parallel if model.is_local else model.slots

    def upstream_health(self) -> dict[str, str]:
        return {m.name: self.health.summary(m.name)["health"]
                for m in self.config.models if not m.is_local}

    def _is_loaded(self, name: str) -> bool:
        served = self.models.get(name)
        return served is not None and served.answers_now

    def config_dict(self) -> dict:
        return config_to_dict(self.config)

    def _stamp(self):
        return file_stamp(self.config_path)

    async def _watch_config_file(self) -> None:
        """Apply hand edits of models.yaml once they are whole (config_watch); a broken edit
        keeps the running config."""
        settler = EditSettler()
        while True:
            await asyncio.sleep(CONFIG_POLL_S)
            stamp = self._stamp()
            if not settler.ready(stamp, self._config_stamp, time.monotonic()):
                continue
            try:
                config = await asyncio.to_thread(load_config, self.config_path)
            except Exception as exc:  # ConfigInvalid or an unreadable file
                if self._stamp() != stamp:
                    continue   # written again while it was read: wait for that edit to settle
                self._config_stamp = stamp
                errors = getattr(exc, "errors", None) or [str(exc)]
                reason = "; ".join(str(e) for e in errors)
                log.warning("models.yaml changed but was refused, keeping the running config: %s",
                            reason)
                self.events.record(EventKind.CONFIG_REJECTED, reason=reason)
                continue
            if self._stamp() != stamp:
                continue
            self._config_stamp = stamp
            async with self._apply_lock:
                # compared under the lock: a PUT that is saving this very file may be under way
                if config == self.config:
                    continue
                await self._swap_config(config, source="file")
            log.info("applied the edited %s", self.config_path)

    # -- request log -------------------------------------------------------------------------
    @functools.cached_property
    def metrics(self):
        """/metrics' registry (telemetry/prometheus.EngineMetrics), built on first use (an
        event, a request, a scrape): prometheus_client need not load before /healthz answers."""
        from laya_desktop.telemetry.prometheus import EngineMetrics
        return EngineMetrics(live=self._live_figures, upstreams=self.upstream_health)

    def record_request(self, fields: dict) -> None:
        self.metrics.observe_request(self.requests.record(**fields))

    def _live_figures(self) -> tuple[dict | None, dict]:
        """What /metrics' gauges read: the latest sample and each model's record as it is now."""
        return self.telemetry.samples.latest(), self.telemetry.live_models()
