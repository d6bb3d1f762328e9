"""A strict OpenAI-style upstream on loopback, for remote targets in tests and bench/soak.py.

It answers chat completions (streamed or not, a tool call when the request offers tools) only when
the request names the configured upstream model, carries the configured key and has no Laya-only
fields (`tags`) left in it; anything else is a 400 or 401, and `refusals` says why. Every
`fail_every`-th request answers `fail_status` (503 by default; 429 and 503 with Retry-After), so a
rule's fallback gets exercised. `seen` keeps what each request carried (key, model, body fields).
"""
from __future__ import annotations

import asyncio
import json
import threading
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


class StrictUpstream:
    def __init__(self, model: str, key: str, port: int, fail_every: int = 0,
                 token_delay_s: float = 0.01, fail_status: int = 503):
        self.model, self.key, self.port = model, key, port
        self.fail_every, self.token_delay_s = fail_every, token_delay_s
        self.fail_status = fail_status
        self.seen: list[dict] = []
        self.counts = {"served": 0, "refused": 0, "failed_on_purpose": 0}
        self.refusals: list[str] = []
        self._n = 0
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                Route("/v1/models", self.models, methods=["GET"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "StrictUpstream":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the soak upstream did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def _refuse(self, status: int, why: str) -> Response:
        with self._lock:
            self.counts["refused"] += 1
            if len(self.refusals) < 20:
                self.refusals.append(why)
        return JSONResponse({"error": {"message": why, "type": "invalid_request_error",
                                       "code": "soak_upstream_refused"}}, status_code=status)

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            if len(self.seen) < 1000:
                self.seen.append({"authorization": request.headers.get("authorization"),
                                  "model": body.get("model"), "fields": sorted(body)})
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return self._refuse(401, f"wrong key: {request.headers.get('authorization')!r}")
        if body.get("model") != self.model:
            return self._refuse(400, f"wrong model: {body.get('model')!r}")
        if "tags" in body:
            return self._refuse(400, "tags reached the upstream")
        with self._lock:
            self._n += 1
            fail = self.fail_every and self._n % self.fail_every == 0
            self.counts["failed_on_purpose" if fail else "served"] += 1
        if fail:
            hint = {"Retry-After": "1"} if self.fail_status in (429, 503) else None
            return JSONResponse({"error": {"message": "overloaded", "type": "server_error",
                                           "code": "overloaded"}}, status_code=self.fail_status,
                                headers=hint)
        n = max(1, min(int(body.get("max_tokens") or 16), 64))
        tool = (body.get("tools") or [None])[0]
        if body.get("stream"):
            return StreamingResponse(self._stream(n, tool), media_type="text/event-stream")
        await asyncio.sleep(self.token_delay_s * n)
        message = {"role": "assistant", "content": None if tool else "w " * n}
        if tool:
            message["tool_calls"] = [self._tool_call(tool)]
        return JSONResponse({
            "id": "chatcmpl-soak", "object": "chat.completion", "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if tool else "length"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n}})

    @staticmethod
    def _tool_call(tool: dict) -> dict:
        name = (tool.get("function") or {}).get("name", "tool")
        return {"id": "call_soak", "type": "function",
                "function": {"name": name, "arguments": json.dumps({"city": "Paris"})}}

    async def _stream(self, n: int, tool: dict | None):
        def chunk(delta: dict, finish: str | None = None) -> bytes:
            return ("data: " + json.dumps({
                "id": "chatcmpl-soak", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n").encode()

        yield chunk({"role": "assistant"})
        if tool:
            call = self._tool_call(tool)
            yield chunk({"tool_calls": [{"index": 0, **call}]})
            yield chunk({}, "tool_calls")
        else:
            for _ in range(n):
                await asyncio.sleep(self.token_delay_s)
                yield chunk({"content": "w "})
            yield chunk({}, "length")
        yield b"data: [DONE]\n\n"
