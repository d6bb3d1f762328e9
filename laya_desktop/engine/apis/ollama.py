"""Ollama's generation API (/api/chat, /api/generate, /api/embed, /api/embeddings): its bodies in
(ollama_body.py), its objects and NDJSON streams out, on the shared serving path.

A stream is one JSON object per line (`application/x-ndjson`), the last one `done: true` with the
token counts and durations in nanoseconds; a stream that breaks off ends with `{"error": …}`, as
Ollama's own does. Durations are the engine's clock around the runner: `load_duration` is the time
from the parsed request to the runner's accepting it (queue wait and load), `prompt_eval_duration`
from there to the first token, `eval_duration` from the first token to the last. A non-streamed
answer carries `total_duration` and the counts only: the engine sees it whole, not per token.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from laya_desktop.engine import serving
from laya_desktop.engine.apis import ollama_body
from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.model_manager import LoadRefused
from laya_desktop.engine.outputs import (Collected, Failed, Finished, KeepAlive, Output, TextDelta,
                                         ToolCall, Usage)
from laya_desktop.engine.runner_handle import RunnerError

NDJSON = "application/x-ndjson"
DONE_REASONS = {"stop": "stop", "length": "length", "tool_calls": "stop"}
IDIOM_MAX_BYTES = 4096   # a load or unload request is a model name and keep_alive


def line(payload: dict) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def created_at() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def error_response(error: ApiError, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": error.message}, status_code=error.status,
                        headers={**error.headers, **(headers or {})})


def tool_call_json(call: ToolCall, index: int) -> dict:
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        arguments = {}
    return {"id": call.id, "function": {"index": index, "name": call.name,
                                        "arguments": arguments if isinstance(arguments, dict) else {}}}


def ollama_logprobs(entries: list[dict] | None) -> list[dict]:
    """Ollama's entries: token, logprob, bytes and top_logprobs (no token ids)."""
    return [{"token": e["token"], "logprob": e["logprob"], "bytes": e.get("bytes"),
             "top_logprobs": [{"token": t["token"], "logprob": t["logprob"], "bytes": t.get("bytes")}
                              for t in e.get("top_logprobs", [])]} for e in entries or []]


def known_name(body: Any, engine) -> Any:
    """`name:latest` is the name Ollama's clients give a model listed as `name`."""
    model = body.get("model") if isinstance(body, dict) else None
    if (engine is None or not isinstance(model, str) or not model.endswith(":latest")
            or engine.config.model(model) is not None):
        return body
    base = model[:-len(":latest")]
    return {**body, "model": base} if engine.config.model(base) is not None else body


class Clock:
    """The durations of Ollama's last object, in nanoseconds, from the outputs as they arrive."""

    def __init__(self, call: Call):
        self.started = call.options.get("started_ns") or time.monotonic_ns()
        self.accepted = time.monotonic_ns()
        self.first_token: int | None = None

    def token(self) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic_ns()

    def metrics(self, usage: Usage) -> dict:
        end = time.monotonic_ns()
        first = self.first_token or end
        return {"total_duration": end - self.started, "load_duration": self.accepted - self.started,
                "prompt_eval_count": usage.prompt_tokens, "prompt_eval_duration": first - self.accepted,
                "eval_count": usage.completion_tokens, "eval_duration": end - first}


def whole_metrics(call: Call, usage: Usage) -> dict:
    started = call.options.get("started_ns") or time.monotonic_ns()
    return {"total_duration": time.monotonic_ns() - started,
            "prompt_eval_count": usage.prompt_tokens, "eval_count": usage.completion_tokens}


class OllamaApi:
    """One of Ollama's generation endpoints; `kind` says which body and which answer."""
    name = "ollama"

    def __init__(self, kind: str):
        self.kind = kind   # "chat" | "generate" | "embed" | "embeddings"
        self.path = f"/api/{kind}"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        body = known_name(body, engine)
        if self.kind == "chat":
            return ollama_body.chat_request(body, self.path)
        if self.kind == "generate":
            return ollama_body.generate_request(body, self.path)
        return ollama_body.embed_request(body, self.path, legacy=self.kind == "embeddings")

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error_response(error, headers)

    def stream_failure(self, failed: Failed) -> bytes:
        return line({"error": failed.message})

    def _piece(self, meta: Meta, text: str, done: bool = False, **extra) -> dict:
        head = {"model": meta.model, "created_at": created_at()}
        if self.kind == "chat":
            message = {"role": "assistant", "content": text, **extra.pop("message", {})}
            return {**head, "message": message, "done": done, **extra}
        extra.pop("message", None)
        return {**head, "response": text, "done": done, **extra}

    async def stream(self, call: Call, outputs: AsyncIterator[Output],
                     meta: Meta) -> AsyncIterator[bytes]:
        clock = Clock(call)
        wants_logprobs = bool(call.command["params"].get("logprobs"))
        calls = 0
        async for out in outputs:
            if isinstance(out, TextDelta):
                if out.text or (wants_logprobs and out.logprobs):
                    clock.token()
                    extra = {"logprobs": ollama_logprobs(out.logprobs)} if wants_logprobs else {}
                    yield line(self._piece(meta, out.text, **extra))
            elif isinstance(out, ToolCall):
                clock.token()
                yield line(self._piece(meta, "", message={"tool_calls": [tool_call_json(out, calls)]}))
                calls += 1
            elif isinstance(out, KeepAlive):
                # Ollama has no heartbeat; an empty piece is one that every client reads as nothing
                yield line(self._piece(meta, ""))
            elif isinstance(out, Finished):
                yield line(self._piece(meta, "", done=True,
                                       done_reason=DONE_REASONS.get(out.finish_reason, "stop"),
                                       **clock.metrics(out.usage)))
                return
            elif isinstance(out, Failed):
                yield self.stream_failure(out)
                return
        yield self.stream_failure(Failed("internal", "the generation ended without finishing"))

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        if self.kind == "embeddings":
            return {"embedding": (result.embeddings or [[]])[0]}
        if self.kind == "embed":
            return {"model": meta.model, "embeddings": result.embeddings or [],
                    "total_duration": whole_metrics(call, result.usage)["total_duration"],
                    "prompt_eval_count": result.usage.prompt_tokens}
        extra: dict[str, Any] = {"done_reason": DONE_REASONS.get(result.finish_reason, "stop"),
                                 **whole_metrics(call, result.usage)}
        if result.tool_calls:
            extra["message"] = {"tool_calls": [tool_call_json(c, i)
                                               for i, c in enumerate(result.tool_calls)]}
        if call.command["params"].get("logprobs"):
            extra["logprobs"] = ollama_logprobs(result.logprobs)
        return self._piece(meta, result.text, done=True, **extra)


CHAT = OllamaApi("chat")
GENERATE = OllamaApi("generate")
EMBED = OllamaApi("embed")
EMBEDDINGS = OllamaApi("embeddings")


def endpoint(api: OllamaApi):
    """serving.serve, with Ollama's load/unload requests answered first and the stream typed as
    NDJSON (serving types every stream as SSE)."""
    async def handle(request: Request) -> Response:
        if api.kind in ("chat", "generate"):
            answer = await _load_or_unload(request, api)
            if answer is not None:
                return answer
        response = await serving.serve(request, api)
        if isinstance(response, StreamingResponse) and response.media_type == "text/event-stream":
            response.media_type = NDJSON
            response.headers["content-type"] = NDJSON
        return response
    handle.__name__ = f"serve_ollama_{api.kind}"
    return handle


async def _load_or_unload(request: Request, api: OllamaApi) -> Response | None:
    """Ollama's idioms: a registered model and nothing to answer loads it (`done_reason: "load"`),
    or with `keep_alive: 0` unloads it ("unload"). None for any other request, whose body
    serving then reads again from the request (Starlette keeps it)."""
    length = request.headers.get("content-length")
    if not (length and length.isdigit() and int(length) <= IDIOM_MAX_BYTES):
        return None
    try:
        body = serving.parse_json(await request.body())
    except ApiError:
        return None   # serving answers it
    engine = request.app.state.engine
    body = known_name(body, engine)
    if not ollama_body.is_load_idiom(body, api.kind):
        return None
    served = engine.models.get(body["model"])
    if served is None:
        return None   # not a model's own name: routed and refused like any empty request
    unload = ollama_body.unload_asked(body)
    try:
        if unload and served.is_local:
            await engine.models.unload(served.name, reason="Ollama API keep_alive 0")
        elif served.is_local:
            await engine.models.ensure_ready(served)
    except LoadRefused as exc:
        return error_response(ApiError(503, str(exc), "server_error", "load_refused"))
    except RunnerError as exc:
        return error_response(ApiError(503, str(exc), "server_error", exc.code))
    meta = Meta(model=served.name)
    return JSONResponse(api._piece(meta, "", done=True, done_reason="unload" if unload else "load"),
                        headers={"X-Laya-Model": served.name})
