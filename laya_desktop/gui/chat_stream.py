"""One streamed chat completion on the GUI thread: events are read as they arrive (readyRead) and
`cancel()` aborts the reply, which ends the engine's side of the request (it cancels the sequence)
at once, before or after the response headers."""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QNetworkReply, QNetworkRequest

from laya_desktop.admin_api.calls import CHAT_PATH
from laya_desktop.gui.chat_events import ChatEvents, StreamStats
from laya_desktop.gui.engine_errors import EngineError, error_of
from laya_desktop.gui.engine_http import EngineHttp

STREAM_TIMEOUT_S = 300.0   # the longest silence between two pieces of a reply


class ChatStream(QObject):
    item = Signal(object)     # a text delta (str), or the tool calls so far (list of dicts)
    ended = Signal(object)    # None, or the EngineError that ended it; once, never from cancel()

    def __init__(self, http: EngineHttp, body: dict, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.stats = StreamStats(started=time.perf_counter())
        self._events = ChatEvents(self.stats)
        self._http = http
        self._status: int | None = None
        self._error_body = b""
        self._cancelled = self._over = self._reply_done = False
        self._reply = http.send("POST", CHAT_PATH, {**body, "stream": True},
                                STREAM_TIMEOUT_S, self._on_finished)
        self._reply.metaDataChanged.connect(self._on_headers)
        self._reply.readyRead.connect(self._on_data)

    @property
    def tool_calls(self) -> list[dict]:
        return self._events.tool_calls

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def over(self) -> bool:
        return self._over

    def cancel(self) -> None:
        """Stop the reply now (GUI thread); `ended` is not emitted for it."""
        self._cancelled = True
        if not self._over:
            self._end(None, emit=False)
        self._abort()

    def _abort(self) -> None:
        if not self._reply_done:
            self._reply_done = True
            self._reply.abort()

    def _on_headers(self) -> None:
        if self._status is not None:
            return
        status = self._reply.attribute(QNetworkRequest.Attribute.HttpStatusCodeAttribute)
        if status is None:
            return
        self._status = int(status)
        for attr, header in (("route", "x-laya-route"), ("model", "x-laya-model"),
                             ("route_us", "x-laya-route-us")):
            if self._reply.hasRawHeader(header):
                setattr(self.stats, attr, bytes(self._reply.rawHeader(header).data()).decode())

    def _on_data(self) -> None:
        self._on_headers()
        self._take(bytes(self._reply.readAll().data()))

    def _take(self, data: bytes) -> None:
        if self._over or not data:
            return
        if self._status is not None and self._status >= 400:
            self._error_body += data
            return
        try:
            items = self._events.feed(data)
        except (EngineError, ValueError) as exc:
            self._end(exc if isinstance(exc, EngineError) else EngineError(f"bad event: {exc}"))
            self._abort()
            return
        for item in items:
            if self._over:     # a slot stopped it
                return
            self.item.emit(item)
        if self._events.done and not self._over:
            self._end(None)

    def _on_finished(self, reply: QNetworkReply) -> None:
        self._reply_done = True
        if self._over:
            return
        if self._http.aborted:          # the app is closing, or the engine restarting
            self._cancelled = True
            self._end(None)
            return
        self._on_headers()
        failure = self._http.failure_of(reply, STREAM_TIMEOUT_S)
        if failure is None:
            self._take(bytes(reply.readAll().data()))
            failure = error_of(self._status or 0, self._error_body)
        if not self._over:
            self._end(failure)

    def _end(self, error: EngineError | None, emit: bool = True) -> None:
        self._over = True
        self.stats.ended = time.perf_counter()
        self.stats.stopped = self._cancelled
        if emit:
            self.ended.emit(error)
