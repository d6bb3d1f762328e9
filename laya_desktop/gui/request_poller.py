"""A periodic pull of `GET /admin/requests?since=SEQ` in a worker, one at a time.

Kept apart from EnginePoller: the request log is read only by the Requests view and at its own
pace, and a slow answer here must not hold back the Monitor's samples.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.workers import WorkerPool


class RequestLogPoller(QObject):
    entries = Signal(list)      # new request-log entries, oldest first
    restarted = Signal()        # a new engine process numbers from 1 again
    failed = Signal(str)

    def __init__(self, pool: WorkerPool, client: EngineClient, interval_ms: int = 1000,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool, self.client = pool, client
        self.seq = 0
        self.running = False
        self._in_flight = False
        # single-shot, armed when a pull ends: the next starts interval_ms after it, never overlaps
        self._next = QTimer(self)
        self._next.setSingleShot(True)
        self._next.setInterval(interval_ms)
        self._next.timeout.connect(self._pull)

    def start(self) -> None:
        self.running = True
        if not self._in_flight:
            self._pull()

    def stop(self) -> None:
        self.running = False
        self._next.stop()

    def _pull(self) -> None:
        self._in_flight = True
        self.pool.submit(self.client.requests, self.seq, returned=self._on_result,
                         errored=lambda exc: self.failed.emit(str(exc)), finished=self._on_finished)

    def _on_result(self, payload) -> None:
        if not isinstance(payload, dict):
            return
        top = payload.get("seq")
        if isinstance(top, int) and top < self.seq:
            self.seq = 0
            self.restarted.emit()
            return
        items = [e for e in payload.get("requests") or [] if isinstance(e, dict)]
        if items:
            self.seq = max(self.seq, max(int(e.get("seq", 0)) for e in items))
            self.entries.emit(items)

    def _on_finished(self) -> None:
        self._in_flight = False
        if self.running:
            self._next.start()
