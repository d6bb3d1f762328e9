"""The config as the engine has applied it, shared by the panels.

The GUI never writes models.yaml itself: every change is a full config sent with PUT /admin/config,
which the engine validates, applies and saves atomically. A refused config leaves `applied` as it
was and reports the engine's path-qualified errors.

Each applied config has a revision (the engine's ETag). A PUT names the revision its edits started
from (If-Match), so a config changed meanwhile (a hand edit of models.yaml, another client) is
refused with 409 instead of overwritten; `follow` takes in a config the engine applied from
elsewhere, and `changed_elsewhere` tells the panels, which decide what to do with their edits.
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from laya_desktop.gui.engine_client import EngineClient, EngineError
from laya_desktop.gui.workers import WorkerPool


class ConfigDocument(QObject):
    applied_changed = Signal(dict)   # a fresh copy of the applied config
    changed_elsewhere = Signal(dict)  # applied by someone else: a hand edit, another client
    refused = Signal(object)         # EngineError with .errors
    conflict = Signal(object)        # EngineError 409: changed since the edits' revision
    failed = Signal(str)

    def __init__(self, pool: WorkerPool, client: EngineClient, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool, self.client = pool, client
        self.applied: dict = {}
        self.etag: str | None = None    # the revision of `applied`
        self._puts = 0                  # our PUTs in flight
        self._seen_during_put = False   # a config_applied read while one was: which came last?

    def copy(self) -> dict:
        return copy.deepcopy(self.applied)

    def model_names(self) -> list[str]:
        return [m.get("name", "") for m in self.applied.get("models", [])]

    def refresh(self) -> None:
        self.pool.submit(self.client.get_config_revision,
                         returned=lambda answer: self.follow(*answer),
                         errored=lambda exc: self.failed.emit(
                             self.tr("reading the config: {error}").format(error=exc)))

    def apply(self, config: dict, on_done: Callable[[bool, object], None] | None = None,
              base: str | None = None) -> None:
        """PUT the full config, made from revision `base` (default: the applied one); the
        engine's answer is the applied config. A 409 reads the config again."""
        if_match = base or self.etag

        def ok(answer: tuple) -> None:
            self._puts -= 1
            body, etag = answer
            new = body.get("config") if isinstance(body, dict) else None
            if isinstance(new, dict):
                self._set_applied(new, etag)
            else:                       # an engine that does not echo it: read it
                self.refresh()
                new = config
            if self._seen_during_put and not self._puts:
                self._seen_during_put = False
                self.refresh()          # another change landed around ours: read the last one
            if on_done:
                on_done(True, new)

        def bad(exc: Exception) -> None:
            self._puts -= 1
            if isinstance(exc, EngineError) and exc.status == 409:
                self.conflict.emit(exc)
                self.refresh()
            elif isinstance(exc, EngineError) and exc.errors:
                self.refused.emit(exc)
            else:
                self.failed.emit(self.tr("applying the config: {error}").format(error=exc))
            if on_done:
                on_done(False, exc)

        self._puts += 1
        self.pool.submit(self.client.put_config_revision, copy.deepcopy(config), if_match,
                         returned=ok, errored=bad)

    def follow(self, config: dict, etag: str | None) -> None:
        """A config the engine holds now (a refresh, or the poller after `config_applied`)."""
        if etag is not None and etag == self.etag:
            return
        if self._puts:                  # most likely our own PUT: its answer decides
            self._seen_during_put = True
            return
        had = bool(self.applied)
        self._set_applied(config, etag)
        if had:
            self.changed_elsewhere.emit(copy.deepcopy(config))

    def _set_applied(self, config: dict, etag: str | None = None) -> None:
        self.applied = config
        self.etag = etag
        self.applied_changed.emit(copy.deepcopy(config))
