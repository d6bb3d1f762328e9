"""Remote targets (`openai`, `anthropic`): requests go out through pooled keep-alive connections.

A request in an API the remote speaks passes through unchanged (tool calls and all) except
`model`, which becomes the remote's name, and Laya's own `tags` field, which stays here. Any other
request is translated: its chat-completions view goes to an `openai` remote's chat endpoint, or
is converted to Messages for an `anthropic` one, and the answer comes back as shared outputs.
"""
from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import dataclass, field

import httpx

from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.outputs import Failed
from laya_desktop.engine.upstream_http import Origin, UpstreamClient

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 300.0
MAX_CONNECTIONS = 200
MAX_IDLE = 32
LAYA_FIELDS = ("tags",)
USAGE_TAIL_BYTES = 4096   # of a stream, kept to find its usage in
_JSON = json.JSONDecoder()
TIMEOUT = {"timeout": httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S).as_dict()}
# No Accept-Encoding: a relayed answer goes out byte for byte, so it must come in uncompressed.
REQUEST_HEADERS = {"Accept": "*/*", "User-Agent": "laya-desktop"}


class RemoteError(Exception):
    def __init__(self, api_error: ApiError):
        super().__init__(api_error.message)
        self.api_error = api_error


class RemoteClient:
    """The pooled connections to remote models.

    A remote reached directly goes through engine/upstream_http.py, a lean HTTP/1.1 client
    (httpx's transport took about half of the engine's CPU time on a relayed request). One behind
    a proxy from the environment (HTTP(S)_PROXY / ALL_PROXY, unless NO_PROXY exempts its host)
    goes through an httpx transport, as before. Both raise httpx's errors and answer with
    httpx.Response's interface. Neither loads the CA certificates before an https remote is used.
    """

    def __init__(self):
        self._direct = UpstreamClient(CONNECT_TIMEOUT_S, READ_TIMEOUT_S, MAX_CONNECTIONS, MAX_IDLE)
        self._proxied: dict[str, httpx.AsyncHTTPTransport] = {}   # by proxy URL
        # by URL: an Origin (direct), or the parsed URL and its proxy's transport
        self._routes: dict[str, Origin | tuple[httpx.URL, httpx.AsyncHTTPTransport]] = {}

    def _route(self, url: str) -> Origin | tuple[httpx.URL, httpx.AsyncHTTPTransport]:
        route = self._routes.get(url)
        if route is None:
            if len(self._routes) > 1024:   # remote URLs come from models.yaml: a few per config
                self._routes.clear()
            parsed = httpx.URL(url)
            proxies = urllib.request.getproxies()
            proxy = proxies.get(parsed.scheme) or proxies.get("all")
            if not proxy or urllib.request.proxy_bypass(parsed.host):
                route = Origin(parsed)
            else:
                transport = self._proxied.get(proxy)
                if transport is None:
                    transport = self._proxied[proxy] = httpx.AsyncHTTPTransport(
                        proxy=proxy, limits=httpx.Limits(max_connections=MAX_CONNECTIONS,
                                                         max_keepalive_connections=MAX_IDLE))
                route = (parsed, transport)
            self._routes[url] = route
        return route

    async def post(self, url: str, payload: dict, headers: dict):
        """POST `payload` as JSON; the answer's body is left to stream (aiter_raw, aread)."""
        # the encoding httpx's json= uses
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
        route = self._route(url)
        if isinstance(route, Origin):
            return await self._direct.post(route, {**REQUEST_HEADERS, **headers}, body)
        parsed, transport = route
        request = httpx.Request("POST", parsed, headers={**REQUEST_HEADERS, **headers},
                                content=body, extensions=TIMEOUT)
        response = await transport.handle_async_request(request)
        response.request = request
        return response

    async def aclose(self) -> None:
        await self._direct.aclose()
        for transport in self._proxied.values():
            await transport.aclose()


def make_client() -> RemoteClient:
    return RemoteClient()


def remote_url(base_url: str, path: str) -> str:
    suffix = path[len("/v1"):] if path.startswith("/v1/") else path
    return base_url.rstrip("/") + suffix


def api_root(model) -> str:
    """The remote's /v1 root: OpenAI base URLs carry it, Anthropic's (as its SDK takes them) don't."""
    root = model.base_url.rstrip("/")
    if model.backend == "anthropic" and not root.endswith("/v1"):
        root += "/v1"
    return root


def speaks_natively(model, api: str) -> bool:
    if model.backend == "anthropic":
        return api == "messages"
    return api in ("chat", "completions", "embeddings") or (api == "responses" and model.responses)


def _openai_headers(model) -> dict:
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(model.api_key_env) if model.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


@dataclass
class RemoteStream:
    served: object
    response: httpx.Response
    started: float
    first_event_at: float
    stream: bool
    attempts: list = field(default_factory=list)
    tail: bytes = b""   # the answer's end, where its usage is: read once the answer is out

    async def raw(self):
        tail = b""
        async for chunk in self.response.aiter_raw():
            tail = (tail + chunk)[-USAGE_TAIL_BYTES:]
            yield chunk
        self.tail = tail

    async def read(self) -> bytes:
        """The whole answer (a non-streamed one)."""
        self.tail = await self.response.aread()
        return self.tail

    @property
    def usage(self) -> dict | None:
        return find_usage(self.tail)

    passthrough = True

    async def close(self) -> None:
        await self.response.aclose()
        self.served.touch()


@dataclass
class TranslatedStream:
    """A remote answer in another API than the client's, read as shared outputs."""
    served: object
    response: httpx.Response
    source: object                 # async iterator of outputs, from remote_openai / remote_anthropic
    started: float
    first_event_at: float
    stream: bool
    attempts: list = field(default_factory=list)
    passthrough = False

    async def outputs(self, call: Call):
        try:
            async for out in self.source:
                yield out
        except httpx.HTTPError as exc:
            yield Failed("remote_error", f"remote model '{self.served.name}' broke off: {exc!r}", 502)

    async def close(self) -> None:
        await self.response.aclose()
        self.served.touch()


def find_usage(tail: bytes) -> dict | None:
    """The token counts of the last "usage" object in an answer's end (a whole JSON answer, or
    the last SSE events), or None. Only that object is parsed, not the answer: the key's quotes
    cannot occur inside a JSON string, where quotes are escaped."""
    at = tail.rfind(b'"usage"')
    while at >= 0:
        rest = tail[at + 7:].decode("utf-8", "ignore").lstrip()
        if rest.startswith(":"):
            try:
                usage, _ = _JSON.raw_decode(rest[1:].lstrip())
            except ValueError:
                usage = None
            if isinstance(usage, dict):
                # Anthropic and Responses count input/output tokens; chat counts prompt/completion
                return {"prompt_tokens": usage.get("prompt_tokens", usage.get("input_tokens")),
                        "completion_tokens": usage.get("completion_tokens",
                                                       usage.get("output_tokens"))}
        at = tail.rfind(b'"usage"', 0, at)
    return None


async def open_remote(client: RemoteClient, served, call: Call, client_headers=None):
    """A RemoteStream to relay as it comes, or a TranslatedStream of outputs."""
    model = served.config
    remote_name = model.effective_remote_model
    if model.backend == "anthropic":
        from laya_desktop.engine import remote_anthropic
        headers = {"Content-Type": "application/json",
                   **remote_anthropic.auth_headers(model, client_headers or {})}
    else:
        headers = _openai_headers(model)
    if speaks_natively(model, call.api):
        payload = {k: v for k, v in call.body.items() if k not in LAYA_FIELDS}
        payload["model"] = remote_name
        started = time.monotonic()
        response = await _send(client, served, remote_url(api_root(model), call.path), payload, headers)
        return RemoteStream(served, response, started, time.monotonic(), call.stream)
    if call.command.get("kind") != "chat":   # only a chat translates into another API
        raise bad_request(f"model '{model.name}' ({model.backend}) cannot serve {call.path}",
                          "model_not_supported")
    if model.backend == "anthropic":
        from laya_desktop.engine import remote_anthropic
        payload = remote_anthropic.messages_body(call.chat, remote_name)
        payload["stream"] = call.stream
        url = remote_url(api_root(model), "/v1/messages")
        read = remote_anthropic.outputs
    else:
        from laya_desktop.engine import remote_openai
        payload = {k: v for k, v in call.chat.items() if k not in LAYA_FIELDS}
        payload["model"] = remote_name
        payload["stream"] = call.stream
        if call.stream:
            payload["stream_options"] = {"include_usage": True}
        url = remote_url(api_root(model), "/v1/chat/completions")
        read = remote_openai.chat_outputs
    started = time.monotonic()
    response = await _send(client, served, url, payload, headers)
    return TranslatedStream(served, response, read(response, call.stream), started,
                            time.monotonic(), call.stream)


def redact_key(text: str, model) -> str:
    """`text` without the model's API key: an upstream's 401 may quote the key it was sent, and
    its detail goes into our error body."""
    key = os.environ.get(model.api_key_env) if model.api_key_env else None
    if key and len(key) >= 4:
        text = text.replace(key, "[redacted]")
    return text


async def _send(client: RemoteClient, served, url: str, payload: dict,
                headers: dict) -> httpx.Response:
    model = served.config
    served.touch()
    try:
        response = await client.post(url, payload, headers)
    except httpx.HTTPError as exc:
        raise RemoteError(ApiError(502, f"remote model '{model.name}' unreachable: {exc!r}",
                                   "server_error", "remote_unreachable")) from None
    if response.status_code >= 400:
        detail = redact_key((await response.aread()).decode("utf-8", "replace"), model)[:500]
        await response.aclose()
        # The upstream's Retry-After reaches the client; a 429 without one still says to retry.
        hint = response.headers.get("retry-after") or ("1" if response.status_code == 429 else None)
        error = ApiError(response.status_code if response.status_code < 500 else 502,
                         f"remote model '{model.name}' answered {response.status_code}: {detail}",
                         "server_error" if response.status_code >= 500 else "invalid_request_error",
                         "remote_error", headers={"Retry-After": hint} if hint else None)
        if response.status_code in (408, 429) or response.status_code >= 500:
            raise RemoteError(error)
        raise error
    return response
