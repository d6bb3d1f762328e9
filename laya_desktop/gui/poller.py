"""One periodic pull of the engine's live state: telemetry samples, events and the model table.

A QTimer starts one worker per tick, never two at once (a slow engine makes ticks skip instead of
piling up requests). Results arrive on the GUI thread as signals; `seq` bookkeeping lives here.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.workers import WorkerPool


class EnginePoller(QObject):
    samples = Signal(list)      # telemetry samples, oldest first
    events = Signal(list)       # engine events (loads, unloads, crashes, emergency unloads)
    models = Signal(list)       # GET /admin/models rows
    config = Signal(dict)       # GET /admin/config, at the start and after each config_applied
    config_revision = Signal(dict, object)   # the same config and its revision (ETag)
    restarted = Signal()        # the engine numbers from 0 again (a new engine process)
    failed = Signal(str)

    def __init__(self, pool: WorkerPool, client: EngineClient, interval_ms: int = 500,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool, self.client = pool, client
        self.telemetry_seq = 0
        self.event_seq = 0
        self._busy = False
        self._want_config = True
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.poll)

    def start(self) -> None:
        self._timer.start()
        self.poll()

    def stop(self) -> None:
        self._timer.stop()

    def poll(self) -> None:
        if self._busy:
            return
        self._busy = True
        want_config, self._want_config = self._want_config, False
        self.pool.submit(self._fetch, self.telemetry_seq, self.event_seq, want_config,
                         returned=self._on_result, errored=self._on_error,
                         finished=self._on_finished)

    def _fetch(self, telemetry_seq: int, event_seq: int, want_config: bool = False) -> tuple:
        """Each endpoint on its own: one failing (say, telemetry) must not hide the others."""
        errors: list[str] = []

        def get(fn, *args, default):
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001 - reported, then the next endpoint
                errors.append(f"{getattr(fn, '__name__', 'call')}: {exc}")
                return default
        telemetry = get(self.client.telemetry, telemetry_seq, default={})
        events = get(self.client.events, event_seq, default={})
        models = get(self.client.models, default=None)
        config = get(self.client.get_config_revision, default=None) if want_config else None
        return telemetry, events, models, (want_config, config), errors

    def _on_result(self, result: tuple) -> None:
        telemetry, events, models, (asked_config, revised), errors = result
        config, etag = revised if revised is not None else (None, None)
        if asked_config and config is None:
            self._want_config = True    # try again on the next tick
        if errors:
            self.failed.emit("; ".join(errors))
        top = telemetry.get("seq")
        if isinstance(top, int) and top < self.telemetry_seq:
            # A restarted engine: what we hold belongs to the old one; read the new one from 0.
            self.telemetry_seq = self.event_seq = 0
            self._want_config = True
            self.restarted.emit()
            return
        samples = telemetry.get("samples") or []
        if samples:
            self.telemetry_seq = max(self.telemetry_seq, max(int(s.get("seq", 0)) for s in samples))
            self.samples.emit(samples)
        evs = events.get("events") or []
        if evs:
            self.event_seq = max(self.event_seq, max(int(e.get("seq", 0)) for e in evs))
            self.events.emit(evs)
            if any(e.get("kind") == "config_applied" for e in evs):
                self._want_config = True
        if isinstance(config, dict) and config:
            self.config.emit(config)
            self.config_revision.emit(config, etag)
        if models is not None:
            self.models.emit(models)

    def _on_error(self, exc: Exception) -> None:
        self.failed.emit(str(exc))

    def _on_finished(self) -> None:
        self._busy = False
        if self._want_config and self._timer.isActive():
            # a config_applied just seen: read the config now, not a tick later (a hand edit
            # reaches the panels within about a second of its save)
            QTimer.singleShot(0, self.poll)

