"""The engine's HTTP API for the GUI: it sends admin_api's calls (admin_api/calls.py describes
each one) over QtNetwork, on the GUI thread and asynchronously, so no worker waits on the network
and a stalled engine never blocks the GUI. The chat streams the same way (`chat`). `abort()` ends
every request at once. Errors come back as `EngineError` with the engine's message (and for a
refused config, its path-qualified error list), so panels can show them as they are.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
from PySide6.QtCore import QCoreApplication
from PySide6.QtNetwork import QNetworkReply

from laya_desktop.admin_api import calls
from laya_desktop.config import app_token as app_token_file
from laya_desktop.gui.chat_events import StreamStats
from laya_desktop.gui.chat_stream import ChatStream
from laya_desktop.gui.engine_errors import EngineError
from laya_desktop.gui.engine_http import Answer, EngineHttp

__all__ = ["ChatStream", "EngineClient", "EngineError", "StreamStats", "remote_model_ids"]

T = TypeVar("T")


class EngineClient:
    """Create it and use it on the GUI thread; `abort()` and `healthy()` serve any thread."""

    def __init__(self, base_url: str, api_key: str | None = None,
                 app_token: str | None = None) -> None:
        """`app_token`: the token this app gives the engine it starts; the token file of the
        engine that answers at base_url (on this machine) takes over once it is there."""
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = EngineHttp(self.base_url, self._headers, parent=QCoreApplication.instance())
        self._own_token = app_token
        self._use_token(app_token)

    def _use_token(self, token: str | None) -> None:
        self.app_token = token
        self.http.set_header(app_token_file.HEADER, token)

    def refresh_app_token(self) -> None:
        """Read the token of the engine listening at base_url, if it runs on this machine: the
        one we started, or one we attached to. Cheap (one small file); any thread."""
        parts = urlsplit(self.base_url)
        if parts.port is None or not app_token_file.is_local_host(parts.hostname or ""):
            return
        token = app_token_file.read_token(parts.port) or self._own_token
        if token != self.app_token:
            self._use_token(token)

    def abort(self) -> None:
        self.http.abort()

    def close(self) -> None:
        self.http.abort()
        self.http.deleteLater()

    def healthy(self, timeout: float = 2.0) -> bool:
        """A short blocking probe of its own, for the engine's start-up wait (a worker, or a
        process without a Qt event loop: gui/engine_process.py); everything else is `send`."""
        if self.http.aborted:
            return False
        try:
            ok = httpx.get(self.base_url + "/healthz", headers=self._headers, timeout=timeout,
                           trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False
        if ok:   # up: maybe a new engine at the address (attached to, or restarted), a new token
            self.refresh_app_token()
        return ok

    def send(self, call: calls.Call[T], returned: Callable[[T], Any] | None = None,
             errored: Callable[[Exception], Any] | None = None,
             finished: Callable[[], Any] | None = None) -> QNetworkReply:
        """Start `call` (GUI thread). When it ends, on a later turn of the event loop, exactly
        one of `returned(answer)` (the call's typed answer) and `errored(EngineError)` runs, then
        `finished()`."""
        def on_outcome(outcome: Answer | EngineError) -> None:
            try:
                if isinstance(outcome, EngineError):
                    raise outcome
                answer = call.answer(outcome.status, outcome.body, outcome.headers)
            except EngineError as exc:
                if errored is not None:
                    errored(exc)
            else:
                if returned is not None:
                    returned(answer)
            finally:
                if finished is not None:
                    finished()
        return self.http.fetch(call.method, call.path, call.body, call.timeout_s, on_outcome,
                               dict(call.headers) or None)

    def warm_up(self, name: str, returned: Callable[[dict], Any] | None = None,
                errored: Callable[[Exception], Any] | None = None) -> None:
        """Load a model and run one token through it, so the first real request is fast."""
        self.send(calls.load(name),
                  returned=lambda _row: self.send(calls.one_token(name), returned, errored),
                  errored=errored)

    def chat(self, body: dict) -> ChatStream:
        """Start a streamed chat completion (GUI thread): its `item` signal brings text deltas
        and, after each tool-call delta, the calls so far; `ended` comes once."""
        return ChatStream(self.http, body)


def remote_model_ids(answer: Answer) -> list[str]:
    """The model ids in a remote OpenAI-compatible API's answer to GET {base_url}/models."""
    data = answer.checked().json()
    items = data.get("data", data.get("models", [])) if isinstance(data, dict) else data
    return [str(m.get("id", m.get("name", m))) if isinstance(m, dict) else str(m)
            for m in items or []]
