"""The engine's state as the GUI knows it, in one owner: the applied config and its revision, the
telemetry samples, events, model table and request log. The panels subscribe to its signals and
change the config only through `apply`.

One poll loop reads the logs with `?since=SEQ` (admin_api/calls.py): each tick sends its calls
at once over QtNetwork on the GUI thread and handles the answers together when the last one is in,
so no worker ever waits on the network and a slow engine makes ticks skip instead of piling up.

The GUI never writes models.yaml itself: every change is a full config sent with PUT
/admin/config, which the engine validates, applies and saves atomically, and whose answer is the
config applied and its revision; a refused config leaves `applied` as it was and reports the
engine's path-qualified errors. A PUT names the revision its edits started from (If-Match), so a
config changed meanwhile (a hand edit of models.yaml, another client) is refused with 409 instead
of overwritten. A `config_applied` event of another revision than ours is read and announced as
`changed_elsewhere`; the panels decide what to do with their edits.
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from laya_desktop.admin_api import calls
from laya_desktop.admin_api.answers import ConfigApplied, ConfigRevision, Page
from laya_desktop.gui.engine_client import EngineClient, EngineError
from laya_desktop.telemetry.events import EventKind

POLL_MS = 500
REQUESTS_EVERY = 2     # ticks: the request log is read at half the Monitor's pace


class EngineState(QObject):
    # `object`, not list or dict: passed as they are, not converted to QVariant and back (which
    # costs a copy and turns an EventKind into a plain str)
    applied_changed = Signal(object)    # a fresh copy of the applied config (dict)
    changed_elsewhere = Signal(object)  # applied by someone else: a hand edit, another client
    refused = Signal(object)          # EngineError with .errors
    conflict = Signal(object)         # EngineError 409: changed since the edits' revision
    failed = Signal(str)              # reading or applying the config went wrong
    samples = Signal(object)          # telemetry samples (list), oldest first
    events = Signal(object)           # engine events, oldest first; `kind` an EventKind
    models = Signal(object)           # GET /admin/models rows
    requests = Signal(object)         # new request-log entries, oldest first (while followed)
    restarted = Signal()              # a new engine process: it numbers from 0 again
    poll_failed = Signal(str)         # an endpoint of the poll did not answer
    requests_failed = Signal(str)     # the request log's did not

    def __init__(self, client: EngineClient, parent: QObject | None = None,
                 interval_ms: int = POLL_MS) -> None:
        super().__init__(parent)
        self.client = client
        self.applied: dict = {}
        self.etag: str | None = None      # the revision of `applied`
        self.telemetry_seq = self.event_seq = self.request_seq = 0
        self._puts = 0                    # our PUTs in flight
        self._revisions_during_put: set[str | None] = set()   # config_applied seen meanwhile
        self._want_config = True
        self._following_requests = False
        self._tick = 0
        self._requests_tick = -REQUESTS_EVERY
        self._in_flight = False
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.poll)

    # --- the config ----------------------------------------------------------------------------
    def copy(self) -> dict:
        return copy.deepcopy(self.applied)

    def model_names(self) -> list[str]:
        return [m.get("name", "") for m in self.applied.get("models", [])]

    def refresh(self) -> None:
        """Read the applied config now."""
        self.client.send(calls.config(), returned=self._on_config, errored=lambda exc:
                         self.failed.emit(self.tr("reading the config: {error}").format(error=exc)))

    def apply(self, config: dict, on_done: Callable[[bool, object], None] | None = None,
              base: str | None = None) -> None:
        """PUT the full config, made from revision `base` (default: the applied one); the answer
        is the applied config and its revision. A 409 reads the config again."""
        if_match = base or self.etag

        def ok(answer: ConfigApplied) -> None:
            self._puts -= 1
            new = answer.config
            if new is not None:
                self._set_applied(new, answer.etag)
            else:                         # an engine that does not echo it: read it
                self.refresh()
                new = config
            if not self._puts:
                others = self._revisions_during_put - {self.etag}
                self._revisions_during_put.clear()
                if others and answer.config is not None:
                    self.refresh()        # another change landed around ours: read the last one
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
        self.client.send(calls.put_config(copy.deepcopy(config), if_match),
                         returned=ok, errored=bad)

    def follow(self, config: dict, etag: str | None) -> None:
        """A config the engine holds now, read after a `config_applied` or a refresh."""
        if etag is not None and etag == self.etag:
            return
        if self._puts:                    # most likely our own PUT: its answer decides
            self._revisions_during_put.add(etag)
            return
        had = bool(self.applied)
        self._set_applied(config, etag)
        if had:
            self.changed_elsewhere.emit(copy.deepcopy(config))

    def _on_config(self, revision: ConfigRevision) -> None:
        self.follow(revision.config, revision.etag)

    def _set_applied(self, config: dict, etag: str | None = None) -> None:
        self.applied = config
        self.etag = etag
        self.applied_changed.emit(copy.deepcopy(config))

    # --- the poll loop -------------------------------------------------------------------------
    def start(self) -> None:
        self._want_config = True
        self._timer.start()
        self.poll()

    def stop(self) -> None:
        self._timer.stop()

    @property
    def polling(self) -> bool:
        return self._timer.isActive()

    def follow_requests(self, on: bool) -> None:
        """Read the request log too (the Requests view is shown), from where it was left."""
        self._following_requests = on
        if on:
            self._requests_tick = -REQUESTS_EVERY   # at the next tick

    def poll(self) -> None:
        if self._in_flight:
            return
        self._tick += 1
        wanted: dict[str, calls.Call] = {
            "telemetry": calls.telemetry(self.telemetry_seq),
            "events": calls.events(self.event_seq),
            "models": calls.models(),
        }
        if self._want_config:
            self._want_config = False
            wanted["config"] = calls.config()
        if self._following_requests and self._tick - self._requests_tick >= REQUESTS_EVERY:
            self._requests_tick = self._tick
            wanted["requests"] = calls.requests(self.request_seq)
        self._in_flight = True
        answers: dict[str, object] = {}
        errors: dict[str, str] = {}

        def arrived(key: str, answer: object) -> None:
            answers[key] = answer
            if len(answers) == len(wanted):
                self._on_tick(answers, errors)

        for key, call in wanted.items():   # each on its own: one failing must not hide the rest
            self.client.send(call, returned=lambda a, k=key: arrived(k, a),
                             errored=lambda exc, k=key: (errors.__setitem__(k, str(exc)),
                                                         arrived(k, None)))

    def _on_tick(self, answers: dict[str, object], errors: dict[str, str]) -> None:
        self._in_flight = False
        if errors:
            self.poll_failed.emit("; ".join(f"{key}: {text}" for key, text in errors.items()))
        if "requests" in errors:
            self.requests_failed.emit(errors["requests"])
        if "config" in answers and answers["config"] is None:
            self._want_config = True      # try again on the next tick
        telemetry, events, requests = (answers.get(k) for k in ("telemetry", "events", "requests"))
        if self._restarted(telemetry, self.telemetry_seq) or self._restarted(requests,
                                                                             self.request_seq):
            # A new engine: what we hold belongs to the old one; read the new one from 0.
            self.telemetry_seq = self.event_seq = self.request_seq = 0
            self._want_config = True
            self.restarted.emit()
            self._poll_again_soon()
            return
        if isinstance(telemetry, Page) and telemetry.items:
            self.telemetry_seq = max(self.telemetry_seq, telemetry.newest)
            self.samples.emit(telemetry.items)
        if isinstance(events, Page) and events.items:
            self.event_seq = max(self.event_seq, events.newest)
            self.events.emit(events.items)
            self._note_config_events(events.items)
        revision = answers.get("config")
        if isinstance(revision, ConfigRevision) and revision.config:
            self.follow(revision.config, revision.etag)
        models = answers.get("models")
        if isinstance(models, list):
            self.models.emit(models)
        if isinstance(requests, Page) and requests.items:
            self.request_seq = max(self.request_seq, requests.newest)
            self.requests.emit(requests.items)
        self._poll_again_soon()

    @staticmethod
    def _restarted(page: object, held: int) -> bool:
        return isinstance(page, Page) and page.seq < held

    def _note_config_events(self, events: list[dict]) -> None:
        for event in events:
            if event.get("kind") != EventKind.CONFIG_APPLIED:
                continue
            revision = event.get("revision")
            if revision is not None and revision == self.etag:
                continue                  # the config we hold (our PUT's answer, or a read)
            if self._puts:
                self._revisions_during_put.add(revision)
            else:
                self._want_config = True

    def _poll_again_soon(self) -> None:
        if self._want_config and self._timer.isActive():
            # a config changed elsewhere: read it now, not a tick later (a hand edit reaches the
            # panels within about a second of its save)
            QTimer.singleShot(0, self.poll)
