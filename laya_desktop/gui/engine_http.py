"""HTTP on QtNetwork: asynchronous on the GUI thread's event loop, so a stalled engine never
blocks the GUI, and `abort()` ends every request at once (QNetworkReply.abort()), before or after
the response headers.

Requests start on the GUI thread (`send`, `fetch`) and their end comes as a callback there; no
thread ever waits on one.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QByteArray, QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtNetwork import (
    QNetworkAccessManager, QNetworkProxy, QNetworkProxyFactory, QNetworkProxyQuery, QNetworkReply,
    QNetworkRequest,
)

from laya_desktop.gui.engine_errors import EngineError, error_of

_CANCELLED = (QNetworkReply.NetworkError.OperationCanceledError,
              QNetworkReply.NetworkError.TimeoutError)
# an answer cut short: its status came, the rest of its body did not
_CONNECTION_LOST = (QNetworkReply.NetworkError.RemoteHostClosedError,
                    QNetworkReply.NetworkError.UnknownNetworkError)


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)   # names in lower case

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def checked(self) -> Answer:
        error = error_of(self.status, self.body)
        if error is not None:
            raise error
        return self


class EngineHttp(QObject):
    """Requests to one base URL with fixed headers. Create it on the GUI thread, with a parent:
    it must end by `deleteLater()` (or with its parent), never by Python's collector, which may
    run while QtNetwork is still delivering one of its replies."""
    _abort_queued = Signal()

    def __init__(self, base_url: str, headers: dict[str, str] | None = None, *,
                 system_proxy: bool = False, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.base_url = base_url.rstrip("/")
        self._headers = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
        self._system_proxy = system_proxy
        self._manager: QNetworkAccessManager | None = None   # made on the first request
        self._gui_thread = threading.get_ident()
        self._replies: dict[QNetworkReply, Callable[[QNetworkReply], None]] = {}
        self._aborted = False
        self._abort_queued.connect(self._abort_replies, Qt.ConnectionType.QueuedConnection)

    @property
    def aborted(self) -> bool:
        return self._aborted

    def set_header(self, name: str, value: str | None) -> None:
        """Send `name: value` with every later request (None: no longer). Any thread: the list is
        replaced whole, never changed in place under a request being built."""
        kept = [(k, v) for k, v in self._headers if k.lower() != name.lower().encode()]
        self._headers = kept + ([(name.encode(), value.encode())] if value else [])

    # --- the GUI thread ------------------------------------------------------------------------
    def _network(self) -> QNetworkAccessManager:
        # Made on first use, so that a process without a Qt application that only asks
        # `EngineClient.healthy()` (over httpx) creates no Qt network objects at all.
        if self._manager is None:
            self._manager = QNetworkAccessManager(self)
            self._manager.setAutoDeleteReplies(True)
            proxy = QNetworkProxy(QNetworkProxy.ProxyType.NoProxy)   # the engine is on loopback
            if self._system_proxy:   # a remote API: the proxy of the environment or the system
                query = QNetworkProxyQuery(QUrl(self.base_url))
                proxy = (QNetworkProxyFactory.systemProxyForQuery(query) or [proxy])[0]
            self._manager.setProxy(proxy)
        return self._manager

    def send(self, method: str, path: str, body: Any, timeout_s: float,
             on_finished: Callable[[QNetworkReply], None],
             headers: dict[str, str] | None = None) -> QNetworkReply:
        """Start a request; `on_finished(reply)` runs once, when it ends (within `abort()` for an
        abort; on a later turn of the event loop for a request sent after it); the reply deletes
        itself afterwards."""
        if threading.get_ident() != self._gui_thread:
            raise RuntimeError("QtNetwork requests start on the GUI thread, not in a worker")
        request = QNetworkRequest(QUrl(self.base_url + path))
        request.setTransferTimeout(int(timeout_s * 1000))
        for name, value in self._headers:
            request.setRawHeader(name, value)
        for name, value in (headers or {}).items():   # this request's own (If-Match)
            request.setRawHeader(name.encode(), value.encode())
        data = QByteArray(b"" if body is None else json.dumps(body).encode())
        if body is not None:
            request.setHeader(QNetworkRequest.KnownHeaders.ContentTypeHeader, "application/json")
        network = self._network()
        if method == "GET":
            reply = network.get(request)
        else:
            reply = network.sendCustomRequest(request, method.encode(), data)
        self._replies[reply] = on_finished
        reply.finished.connect(self._finished)
        if self._aborted:   # unless it ended by itself first (then it may be deleted already)
            QTimer.singleShot(0, lambda: reply.abort() if reply in self._replies else None)
        return reply

    def fetch(self, method: str, path: str, body: Any, timeout_s: float,
              on_answer: Callable[[Answer | EngineError], None],
              headers: dict[str, str] | None = None) -> QNetworkReply:
        """`send`, read whole: the answer (any status), or the error that left none."""
        return self.send(method, path, body, timeout_s,
                         lambda reply: on_answer(self.answer_of(reply, timeout_s)), headers)

    def answer_of(self, reply: QNetworkReply, timeout_s: float) -> Answer | EngineError:
        if self._aborted:   # a reply sent after abort() may finish before its abort runs
            return EngineError("the request was aborted", kind="aborted")
        failure = self.failure_of(reply, timeout_s)
        if failure is not None:
            return failure
        status = reply.attribute(QNetworkRequest.Attribute.HttpStatusCodeAttribute)
        headers = {bytes(k.data()).decode("latin-1").lower(): bytes(v.data()).decode("latin-1")
                   for k, v in reply.rawHeaderPairs()}
        return Answer(int(status), bytes(reply.readAll().data()), headers)

    def failure_of(self, reply: QNetworkReply, timeout_s: float) -> EngineError | None:
        """Why a reply ended without a whole answer; None when it has one (whatever its status)."""
        error = reply.error()
        if error in _CANCELLED:
            if self._aborted:
                return EngineError("the request was aborted", kind="aborted")
            return EngineError(f"no answer within {timeout_s:g} s", kind="timeout")
        if reply.attribute(QNetworkRequest.Attribute.HttpStatusCodeAttribute) is None \
                or error in _CONNECTION_LOST:
            return EngineError(reply.errorString() or "no answer", kind="network")
        return None

    def _finished(self) -> None:
        reply = self.sender()
        on_finished = self._replies.pop(reply, None)
        if on_finished is not None:
            on_finished(reply)

    def _abort_replies(self) -> None:
        for reply in list(self._replies):
            reply.abort()

    # --- any thread ----------------------------------------------------------------------------
    def abort(self) -> None:
        """End every request in flight and fail later ones at once. Final; any thread."""
        self._aborted = True
        if threading.get_ident() == self._gui_thread:
            self._abort_replies()
        else:
            self._abort_queued.emit()
