"""Blocking calls to a running engine's admin API, with errors a person can act on."""
from __future__ import annotations

import httpx

from laya_desktop.config.app_token import HEADER as APP_TOKEN_HEADER

LOAD_TIMEOUT_S = 300.0   # a large GGUF may take minutes to map and warm up


class EngineUnreachable(Exception):
    """No engine answered at the address."""


class EngineRefused(Exception):
    """The engine answered with an error (unknown model, load refused, bad key...)."""

    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.code = status, code


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
        return self._call("GET", "/admin/models").get("models", [])

    def load(self, name: str) -> dict:
        return self._call("POST", f"/admin/models/{_quote(name)}/load", timeout=LOAD_TIMEOUT_S)

    def unload(self, name: str) -> dict:
        return self._call("POST", f"/admin/models/{_quote(name)}/unload", timeout=60.0)

    def _call(self, method: str, path: str, timeout: float | None = None) -> dict:
        try:
            kwargs = {"timeout": timeout} if timeout else {}
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise EngineUnreachable(f"the engine at {self.url} did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise EngineUnreachable(f"no engine answers at {self.url} ({_reason(exc)})") from exc
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 400:
            error = body.get("error") if isinstance(body, dict) else None
            error = error if isinstance(error, dict) else {}
            message = error.get("message") or f"HTTP {response.status_code}"
            raise EngineRefused(response.status_code, message, error.get("code"))
        return body if isinstance(body, dict) else {}


def normalize_url(url: str) -> str:
    """The server root: like `laya loadtest`, a trailing /v1 is accepted."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url[:-3] if url.endswith("/v1") else url


def _quote(name: str) -> str:
    from urllib.parse import quote
    return quote(name, safe="")


def _reason(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    return "connection refused" if "refused" in text.lower() else text
