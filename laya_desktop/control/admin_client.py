"""Blocking calls to a running engine's admin API, with errors a person can act on. The calls
themselves (paths, quoting, bodies, answers) are admin_api/calls.py's; this sends them."""
from __future__ import annotations

from typing import TypeVar

import httpx

from laya_desktop.admin_api import calls
from laya_desktop.admin_api.errors import AdminError
from laya_desktop.config.app_token import HEADER as APP_TOKEN_HEADER

LOAD_TIMEOUT_S = calls.LOAD_TIMEOUT_S
T = TypeVar("T")


class EngineUnreachable(Exception):
    """No engine answered at the address."""


EngineRefused = AdminError   # the engine answered with an error (unknown model, load refused...)


class AdminClient:
    """`app_token`: the engine's token file's content (config/app_token.py), for an engine on this
    machine: it opens the admin API and privileged config changes without the admin key."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 10.0,
                 app_token: str | None = None):
        self.url = normalize_url(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        if app_token:
            headers[APP_TOKEN_HEADER] = app_token
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def __enter__(self) -> "AdminClient":
        return self

    def __exit__(self, *exc) -> None:
        self._http.close()

    def models(self) -> list[dict]:
        return self.send(calls.models())

    def load(self, name: str) -> dict:
        return self.send(calls.load(name))

    def unload(self, name: str) -> dict:
        return self.send(calls.unload(name))

    def send(self, call: calls.Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, json=call.body,
                                          headers=dict(call.headers), timeout=call.timeout_s)
        except httpx.TimeoutException as exc:
            raise EngineUnreachable(f"the engine at {self.url} did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise EngineUnreachable(f"no engine answers at {self.url} ({_reason(exc)})") from exc
        return call.answer(response.status_code, response.content, response.headers)


def normalize_url(url: str) -> str:
    """The server root: like `laya loadtest`, a trailing /v1 is accepted."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url[:-3] if url.endswith("/v1") else url


def _reason(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    return "connection refused" if "refused" in text.lower() else text
