"""The config as the engine has applied it, shared by the panels.

The GUI never writes models.yaml itself: every change is a full config sent with PUT /admin/config,
which the engine validates, applies and saves atomically. A refused config leaves `applied` as it
was and reports the engine's path-qualified errors.
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from laya_desktop.gui.engine_client import EngineClient, EngineError
from laya_desktop.gui.workers import WorkerPool


class ConfigDocument(QObject):
    applied_changed = Signal(dict)   # a fresh copy of the applied config
    refused = Signal(object)         # EngineError with .errors
    failed = Signal(str)

    def __init__(self, pool: WorkerPool, client: EngineClient, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool, self.client = pool, client
        self.applied: dict = {}

    def copy(self) -> dict:
        return copy.deepcopy(self.applied)

    def model_names(self) -> list[str]:
        return [m.get("name", "") for m in self.applied.get("models", [])]

    def refresh(self) -> None:
        self.pool.submit(self.client.get_config, returned=self._set_applied,
                         errored=lambda exc: self.failed.emit(
                             self.tr("reading the config: {error}").format(error=exc)))

    def apply(self, config: dict, on_done: Callable[[bool, object], None] | None = None) -> None:
        """PUT the full config; then read back what the engine holds."""
        def put_then_get(cfg: dict) -> dict:
            self.client.put_config(cfg)
            return self.client.get_config()

        def ok(new: dict) -> None:
            self._set_applied(new)
            if on_done:
                on_done(True, new)

        def bad(exc: Exception) -> None:
            if isinstance(exc, EngineError) and exc.errors:
                self.refused.emit(exc)
            else:
                self.failed.emit(self.tr("applying the config: {error}").format(error=exc))
            if on_done:
                on_done(False, exc)

        self.pool.submit(put_then_get, copy.deepcopy(config), returned=ok, errored=bad)

    def _set_applied(self, config: dict) -> None:
        self.applied = config
        self.applied_changed.emit(copy.deepcopy(config))
