"""The engine's HTTP API as plain blocking calls. Qt-free: the GUI runs every call in a worker.

Each method is one request of the engine's HTTP API (docs/ARCHITECTURE.md). Errors come back as
`EngineError` with the engine's message (and for a refused config, its path-qualified error list),
so panels can show them as is.
"""
from __future__ import annotations

import json
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from laya_desktop.gui.abortable_http import Sockets, abortable_client

ADMIN_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
LOAD_TIMEOUT = httpx.Timeout(300.0, connect=3.0)
STREAM_TIMEOUT = httpx.Timeout(connect=3.0, read=300.0, write=10.0, pool=5.0)


class EngineError(Exception):
    def __init__(self, message: str, status: int | None = None, kind: str | None = None,
                 errors: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.errors = status, kind, errors or []

    def describe(self) -> str:
        lines = [str(self)]
        lines += [f"{e.get('path', '')}: {e.get('message', '')}" for e in self.errors]
        return "\n".join(lines)


@dataclass
class StreamStats:
    """What the chat shows under a reply."""
    route: str | None = None
    model: str | None = None
    route_us: str | None = None
    started: float = 0.0
    first_token: float | None = None
    ended: float | None = None
    chunks: int = 0
    completion_tokens: int | None = None
    finish_reason: str | None = None
    stopped: bool = False

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_token is None else (self.first_token - self.started) * 1000

    @property
    def tokens_per_s(self) -> float | None:
        tokens = self.completion_tokens if self.completion_tokens is not None else self.chunks
        if self.first_token is None or self.ended is None or tokens < 2:
            return None
        span = self.ended - self.first_token
        return (tokens - 1) / span if span > 0 else None


@dataclass(eq=False)
class ChatStream:
    """One streamed completion. `cancel()` may be called from any thread, before or after the
    response headers: it cuts the stream's own connection, which ends the engine's side of the
    request (the engine cancels the sequence) and wakes the worker reading it."""
    stats: StreamStats = field(default_factory=StreamStats)
    sockets: Sockets = field(default_factory=Sockets)
    tool_calls: list[dict] = field(default_factory=list)   # {"id", "name", "arguments"} per index

    def cancel(self) -> None:
        self.sockets.abort()

    @property
    def cancelled(self) -> bool:
        return self.sockets.aborted


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        err = response.json().get("error", {})
    except (ValueError, AttributeError):
        err = {}
    if not isinstance(err, dict):
        err = {"message": str(err)}
    raise EngineError(err.get("message") or f"HTTP {response.status_code}", response.status_code,
                      err.get("type") or err.get("code"), err.get("errors"))


class EngineClient:
    """Blocking calls, made from workers. `abort()` (any thread) ends every call in flight at once
    and fails later ones fast: a stalled engine must not hold the app open at exit."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._sockets = Sockets()
        self._streams: weakref.WeakSet[ChatStream] = weakref.WeakSet()
        self._http = abortable_client(self._sockets, base_url=self.base_url, headers=self._headers,
                                      timeout=ADMIN_TIMEOUT)

    def abort(self) -> None:
        self._sockets.abort()
        for stream in list(self._streams):
            stream.cancel()

    def close(self) -> None:
        self._http.close()

    def _get(self, path: str, **params: Any) -> Any:
        r = self._http.get(path, params=params or None)
        _raise_for(r)
        return r.json()

    def _post(self, path: str, body: Any = None, timeout: httpx.Timeout = ADMIN_TIMEOUT) -> Any:
        r = self._http.post(path, json=body, timeout=timeout)
        _raise_for(r)
        return r.json() if r.content else None

    # --- admin ---------------------------------------------------------------------------------
    def healthy(self, timeout: float = 2.0) -> bool:
        try:
            return self._http.get("/healthz", timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False

    def get_config(self) -> dict:
        return self._get("/admin/config")

    def put_config(self, config: dict) -> Any:
        r = self._http.put("/admin/config", json=config, timeout=LOAD_TIMEOUT)
        _raise_for(r)
        return r.json() if r.content else None

    def explain(self, prompt: str, tags: list[str], model: str | None) -> dict:
        body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], "tags": tags}
        if model:
            body["model"] = model
        return self._post("/admin/route/explain", body)

    def models(self) -> list[dict]:
        return self._get("/admin/models").get("models", [])

    def load(self, name: str) -> Any:
        return self._post(f"/admin/models/{name}/load", timeout=LOAD_TIMEOUT)

    def unload(self, name: str) -> Any:
        return self._post(f"/admin/models/{name}/unload", timeout=LOAD_TIMEOUT)

    def telemetry(self, since: int) -> dict:
        return self._get("/admin/telemetry", since=since)

    def events(self, since: int) -> dict:
        return self._get("/admin/events", since=since)

    def requests(self, since: int) -> dict:
        return self._get("/admin/requests", since=since)

    def route_replay(self, routes: list[dict]) -> dict:
        """What these rules would change for the recently logged requests (nothing is applied)."""
        return self._post("/admin/route/replay", {"routes": routes}, timeout=LOAD_TIMEOUT)

    def semantic_probe(self, semantic: dict, prompts: list[str], recent: int = 200,
                       precision: float = 0.95) -> dict:
        """Scores for a semantic condition being edited (POST /admin/route/semantic)."""
        return self._post("/admin/route/semantic", {"semantic": semantic, "prompts": prompts,
                                                    "recent": recent, "precision": precision},
                          timeout=LOAD_TIMEOUT)

    def route_stats(self, window_s: float) -> dict:
        return self._get("/admin/stats", window_s=window_s)

    def warm_up(self, name: str) -> dict:
        """Load a model and run one token through it, so the first real request is fast."""
        self.load(name)
        body = {"model": name, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        return self._post("/v1/chat/completions", body, timeout=LOAD_TIMEOUT)

    # --- chat ----------------------------------------------------------------------------------
    def chat_stream(self, body: dict, stream: ChatStream) -> Iterator[str | list[dict]]:
        """Yield text deltas of a streamed chat completion, and after each tool-call delta a copy
        of the calls so far (`stream.tool_calls`); fills `stream.stats` as it goes.
        Each stream has its own connection, so that cancelling it cuts nothing else."""
        stats = stream.stats
        stats.started = time.perf_counter()
        self._streams.add(stream)
        if self._sockets.aborted:
            stream.cancel()
        try:
            with abortable_client(stream.sockets, base_url=self.base_url, headers=self._headers,
                                  timeout=STREAM_TIMEOUT) as http:
                with http.stream("POST", "/v1/chat/completions",
                                 json={**body, "stream": True}) as response:
                    yield from _read_stream(response, stream)
        except httpx.HTTPError:
            if not stream.cancelled:
                raise
        finally:
            stats.ended = time.perf_counter()
            stats.stopped = stream.cancelled
            self._streams.discard(stream)


def _read_stream(response: httpx.Response, stream: ChatStream) -> Iterator[str]:
    stats = stream.stats
    if response.status_code >= 400:
        response.read()
        _raise_for(response)
    stats.route = response.headers.get("x-laya-route")
    stats.model = response.headers.get("x-laya-model")
    stats.route_us = response.headers.get("x-laya-route-us")
    for line in response.iter_lines():
        if stream.cancelled:
            return
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        chunk = json.loads(data)
        if "error" in chunk:
            err = chunk["error"]
            raise EngineError(err.get("message", str(err)), kind=err.get("type"))
        usage = chunk.get("usage")
        if usage and usage.get("completion_tokens") is not None:
            stats.completion_tokens = usage["completion_tokens"]
        for choice in chunk.get("choices", []):
            if choice.get("finish_reason"):
                stats.finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            calls = delta.get("tool_calls")
            if (text or calls) and stats.first_token is None:
                stats.first_token = time.perf_counter()
            if text:
                stats.chunks += 1
                yield text
            if isinstance(calls, list) and calls:
                _gather_tool_calls(stream.tool_calls, calls)
                yield [dict(c) for c in stream.tool_calls]


def _gather_tool_calls(gathered: list[dict], deltas: list) -> None:
    """OpenAI streams a call's id and name first, then its arguments in pieces, keyed by index."""
    for position, delta in enumerate(deltas):
        if not isinstance(delta, dict):
            continue
        index = delta.get("index", position)
        if not isinstance(index, int) or not 0 <= index < 128:
            continue
        while len(gathered) <= index:
            gathered.append({"id": "", "name": "", "arguments": ""})
        entry = gathered[index]
        fn = delta.get("function") or {}
        entry["id"] = delta.get("id") or entry["id"]
        entry["name"] += fn.get("name") or ""
        arguments = fn.get("arguments")
        entry["arguments"] += arguments if isinstance(arguments, str) else \
            (json.dumps(arguments, ensure_ascii=False) if arguments is not None else "")


def probe_remote(base_url: str, api_key: str | None, timeout: float = 10.0,
                 sockets: Sockets | None = None) -> list[str]:
    """GET {base_url}/models of a remote OpenAI-compatible API; the model ids it lists.
    `sockets.abort()` ends the probe early (the dialog closes, the app exits)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with abortable_client(sockets or Sockets(), trust_env=True, headers=headers,
                          timeout=httpx.Timeout(timeout, connect=5.0)) as http:
        r = http.get(base_url.rstrip("/") + "/models")
    _raise_for(r)
    data = r.json()
    items = data.get("data", data.get("models", [])) if isinstance(data, dict) else data
    return [str(m.get("id", m.get("name", m))) if isinstance(m, dict) else str(m) for m in items]
