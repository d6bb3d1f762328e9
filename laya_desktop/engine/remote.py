"""Remote OpenAI-compatible targets: requests pass through a pooled async HTTP client.

Bodies and answers pass through unchanged (tool calls and all) except `model`, which becomes the
remote's name, and Laya's own `tags` field, which stays here.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

import httpx

from laya_desktop.engine.errors import ApiError

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 300.0
LAYA_FIELDS = ("tags",)


class RemoteError(Exception):
    def __init__(self, api_error: ApiError):
        super().__init__(api_error.message)
        self.api_error = api_error


def make_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=32),
    )


def remote_url(base_url: str, path: str) -> str:
    suffix = path[len("/v1"):] if path.startswith("/v1/") else path
    return base_url.rstrip("/") + suffix


@dataclass
class RemoteStream:
    served: object
    response: httpx.Response
    started: float
    first_event_at: float
    stream: bool
    attempts: list = field(default_factory=list)
    usage: dict | None = None

    async def raw(self):
        tail = b""
        async for chunk in self.response.aiter_raw():
            tail = (tail + chunk)[-4096:]
            yield chunk
        self.usage = _find_usage(tail)

    async def close(self) -> None:
        await self.response.aclose()
        self.served.touch()


def _find_usage(tail: bytes) -> dict | None:
    text = tail.decode("utf-8", "ignore")
    for line in reversed(text.splitlines()):
        line = line.removeprefix("data:").strip()
        if not line.startswith("{"):
            continue
        try:
            usage = json.loads(line).get("usage")
        except json.JSONDecodeError:
            continue
        if isinstance(usage, dict):
            return usage
    return None


async def open_remote(client: httpx.AsyncClient, served, body: dict, path: str) -> RemoteStream:
    model = served.config
    payload = {k: v for k, v in body.items() if k not in LAYA_FIELDS}
    payload["model"] = model.effective_remote_model
    headers = {"Content-Type": "application/json"}
    if model.api_key_env:
        key = os.environ.get(model.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
    started = time.monotonic()
    request = client.build_request("POST", remote_url(model.base_url, path), json=payload,
                                   headers=headers)
    served.touch()
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise RemoteError(ApiError(502, f"remote model '{model.name}' unreachable: {exc!r}",
                                   "server_error", "remote_unreachable")) from None
    if response.status_code >= 400:
        detail = (await response.aread()).decode("utf-8", "replace")[:500]
        await response.aclose()
        error = ApiError(response.status_code if response.status_code < 500 else 502,
                         f"remote model '{model.name}' answered {response.status_code}: {detail}",
                         "server_error" if response.status_code >= 500 else "invalid_request_error",
                         "remote_error")
        if response.status_code in (408, 429) or response.status_code >= 500:
            raise RemoteError(error)
        raise error
    return RemoteStream(served, response, started, time.monotonic(), bool(body.get("stream")))
