"""The engine's HTTP API for the GUI. Each method is one request of the API (docs/ARCHITECTURE.md).

The requests run on QtNetwork (gui/engine_http.py): the admin calls block, so panels make them in
workers, while the chat streams on the GUI thread (`chat`). `abort()` ends every one of them at
once. Errors come back as `EngineError` with the engine's message (and for a refused config, its
path-qualified error list), so panels can show them as they are.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
from PySide6.QtCore import QCoreApplication

from laya_desktop.config import app_token as app_token_file
from laya_desktop.gui.chat_events import StreamStats
from laya_desktop.gui.chat_stream import ChatStream
from laya_desktop.gui.engine_errors import EngineError
from laya_desktop.gui.engine_http import Answer, EngineHttp

__all__ = ["ChatStream", "EngineClient", "EngineError", "StreamStats", "remote_model_ids"]

ADMIN_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 300.0


class EngineClient:
    """Create it on the GUI thread. The admin calls block: make them from workers. `abort()` (any
    thread) ends every call in flight at once and fails later ones fast: a stalled engine must not
    hold the app open at exit."""

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

    def _get(self, path: str, **params: Any) -> Any:
        query = f"?{urlencode(params)}" if params else ""
        return self.http.call("GET", path + query, timeout_s=ADMIN_TIMEOUT_S).json()

    def _post(self, path: str, body: Any = None, timeout_s: float = ADMIN_TIMEOUT_S) -> Any:
        return self.http.call("POST", path, body, timeout_s).json()

    # --- admin ---------------------------------------------------------------------------------
    def healthy(self, timeout: float = 2.0) -> bool:
        """A short probe of its own (closed when it ends), so that it also serves a process
        without a Qt event loop (gui/engine_process.py's wait for a child to come up)."""
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

    def get_config(self) -> dict:
        return self._get("/admin/config")

    def get_config_revision(self) -> tuple[dict, str | None]:
        """The applied config and its revision (the ETag that PUT takes back as If-Match)."""
        answer = self.http.call("GET", "/admin/config", timeout_s=ADMIN_TIMEOUT_S)
        return answer.json(), answer.headers.get("etag")

    def put_config(self, config: dict, if_match: str | None = None) -> Any:
        return self.put_config_revision(config, if_match)[0]

    def put_config_revision(self, config: dict,
                            if_match: str | None = None) -> tuple[dict, str | None]:
        """PUT the whole config: the engine's answer ({"status", "config"}) and the new revision.
        With `if_match`, a config changed since that revision is refused (409 config_conflict)."""
        answer = self.http.call("PUT", "/admin/config", config, LOAD_TIMEOUT_S,
                                headers={"If-Match": if_match} if if_match else None)
        return answer.json(), answer.headers.get("etag")

    def explain(self, prompt: str, tags: list[str], model: str | None) -> dict:
        body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], "tags": tags}
        if model:
            body["model"] = model
        return self._post("/admin/route/explain", body)

    def models(self) -> list[dict]:
        return self._get("/admin/models").get("models", [])

    def load(self, name: str) -> Any:
        return self._post(f"/admin/models/{name}/load", timeout_s=LOAD_TIMEOUT_S)

    def unload(self, name: str) -> Any:
        return self._post(f"/admin/models/{name}/unload", timeout_s=LOAD_TIMEOUT_S)

    def telemetry(self, since: int) -> dict:
        return self._get("/admin/telemetry", since=since)

    def events(self, since: int) -> dict:
        return self._get("/admin/events", since=since)

    def requests(self, since: int) -> dict:
        return self._get("/admin/requests", since=since)

    def route_replay(self, routes: list[dict]) -> dict:
        """What these rules would change for the recently logged requests (nothing is applied)."""
        return self._post("/admin/route/replay", {"routes": routes}, timeout_s=LOAD_TIMEOUT_S)

    def semantic_probe(self, semantic: dict, prompts: list[str], recent: int = 200,
                       precision: float = 0.95, others: list[dict] | None = None,
                       false_positive: float = 0.05) -> dict:
        """Scores for a semantic condition being edited (POST /admin/route/semantic); `others`:
        the other rules' {name, semantic}, which a learned head scores it against."""
        return self._post("/admin/route/semantic", {"semantic": semantic, "prompts": prompts,
                                                    "recent": recent, "precision": precision,
                                                    "others": others or [],
                                                    "false_positive": false_positive},
                          timeout_s=LOAD_TIMEOUT_S)

    def route_stats(self, window_s: float) -> dict:
        return self._get("/admin/stats", window_s=window_s)

    def warm_up(self, name: str) -> dict:
        """Load a model and run one token through it, so the first real request is fast."""
        self.load(name)
        body = {"model": name, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        return self._post("/v1/chat/completions", body, timeout_s=LOAD_TIMEOUT_S)

    # --- chat ----------------------------------------------------------------------------------
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
