"""The OpenAI-compatible endpoints: /v1/chat/completions, /v1/completions, /v1/models."""
from __future__ import annotations

import json
import time
import uuid

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from laya_desktop.engine import errors
from laya_desktop.engine.dispatch import LocalGeneration, start_generation
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.remote import RemoteStream
from laya_desktop.engine.request_body import chat_command, completion_command, wants_usage_in_stream
from laya_desktop.engine.sse import DONE, DisconnectAwareStreamingResponse, sse

MAX_BODY_BYTES = 32 * 1024 * 1024
# Runner errors that mean "try again" (503), not a fault in the engine (500); kv_full: ARCHITECTURE.md.
UNAVAILABLE_CODES = ("runner_crashed", "model_unloaded", "kv_full")


def _too_large() -> ApiError:
    return ApiError(413, f"request body over {MAX_BODY_BYTES} bytes", "invalid_request_error",
                    "request_too_large")


async def read_json(request: Request):
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise _too_large()
    raw = bytearray()
    async for chunk in request.stream():  # a chunked body has no length: stop at the limit
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise _too_large()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}", "invalid_json") from None


class RequestRecord:
    """What the request log keeps of one request, filled in as it goes."""

    def __init__(self, path: str):
        self.fields = {"path": path, "rule": None, "model": None, "fallback_from": None,
                       "status": None, "prompt_tokens": None, "completion_tokens": None,
                       "cached_tokens": None, "ttft_ms": None, "duration_ms": None}
        self.started = time.monotonic()
        self.generation = None

    def finish(self, engine, status: int) -> None:
        ended = time.monotonic()
        self.fields["status"] = status
        self.fields["duration_ms"] = round((ended - self.started) * 1000, 1)
        if isinstance(self.generation, LocalGeneration):
            self.fields["engine_ms"] = self.generation.engine_overhead_ms(self.started, ended)
        engine.record_request(self.fields)


async def chat_completions(request: Request) -> Response:
    return await _serve(request, "chat")


async def completions(request: Request) -> Response:
    return await _serve(request, "completion")


async def _serve(request: Request, kind: str) -> Response:
    engine = request.app.state.engine
    record = RequestRecord(request.url.path)
    route_headers: dict[str, str] = {}
    try:
        body = await read_json(request)
        command = chat_command(body) if kind == "chat" else completion_command(body)
        path, header_tags = request.url.path, request.headers.get("x-laya-tags")
        started = time.perf_counter_ns()
        decision = engine.router.decide_body(path, body, header_tags)
        route_us = (time.perf_counter_ns() - started) / 1000
        if decision is None:
            raise errors.model_not_found(body.get("model"))
        rule = decision.rule if decision.rule is not None else "direct"
        record.fields["rule"] = rule
        route_headers = {"X-Laya-Route": rule, "X-Laya-Route-Us": f"{route_us:.1f}"}
        gen = await _unless_client_leaves(request, lambda: start_generation(
            engine.models, [decision.target, *decision.fallbacks], command, body, request.url.path,
            engine.config.scheduler.queue_timeout_ms / 1000, engine.remote))
    except ApiError as exc:
        record.finish(engine, exc.status)
        return exc.response(route_headers)
    if gen is None:  # the client went away while the request waited for a slot or a load
        record.finish(engine, 499)
        return Response(status_code=499)
    record.generation = gen
    served_name = gen.served.name
    route_headers["X-Laya-Model"] = served_name
    record.fields["model"] = served_name
    if served_name != decision.target:
        route_headers["X-Laya-Fallback-From"] = decision.target
        record.fields["fallback_from"] = decision.target
    record.fields["ttft_ms"] = round((gen.first_event_at - gen.started) * 1000, 1)
    if isinstance(gen, RemoteStream):
        return _relay_remote(engine, gen, route_headers, record)
    if body.get("stream"):
        stream = _stream_local(engine, gen, kind, wants_usage_in_stream(body), record)
        return DisconnectAwareStreamingResponse(stream, media_type="text/event-stream",
                                                headers={**route_headers, "Cache-Control": "no-cache"})
    return await _collect_local(request, engine, gen, kind, route_headers, record)


async def _unless_client_leaves(request: Request, start):
    """`await start()` (queue wait, model load, first event), given up as soon as the client
    disconnects, so a gone client does not keep its place in the queue. None when it left."""
    outcome: dict = {}

    async def watch(cancel_scope) -> None:
        # The body has been read: all that can still arrive is the disconnect.
        while (await request.receive())["type"] != "http.disconnect":
            pass
        cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, tg.cancel_scope)
        try:
            outcome["result"] = await start()
        except Exception as exc:  # re-raised below, outside the task group (no ExceptionGroup)
            outcome["error"] = exc
        tg.cancel_scope.cancel()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def _relay_remote(engine, gen: RemoteStream, headers: dict, record: RequestRecord) -> Response:
    status = gen.response.status_code

    async def body():
        nonlocal status
        try:
            async for chunk in gen.raw():
                yield chunk
        except httpx.HTTPError as exc:
            # The remote broke off mid-answer: a stream still ends in OpenAI's error shape.
            status = 502
            if gen.stream:
                yield b"\n\n" + sse({"error": {
                    "message": f"remote model '{gen.served.name}' broke off: {exc!r}",
                    "type": "server_error", "code": "remote_error", "param": None}}) + DONE
        finally:
            with anyio.CancelScope(shield=True):
                await gen.close()
                usage = gen.usage or {}
                record.fields["prompt_tokens"] = usage.get("prompt_tokens")
                record.fields["completion_tokens"] = usage.get("completion_tokens")
                record.finish(engine, status)

    media_type = gen.response.headers.get("content-type", "application/json")
    return DisconnectAwareStreamingResponse(body(), status_code=gen.response.status_code,
                                            media_type=media_type, headers=headers)


def _ids(kind: str) -> tuple[str, int]:
    prefix = "chatcmpl-" if kind == "chat" else "cmpl-"
    return prefix + uuid.uuid4().hex[:24], int(time.time())


def _usage(done: dict) -> dict:
    usage = done.get("usage") or {}
    prompt = usage.get("prompt_tokens", 0)
    completion = usage.get("completion_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)}}


def _note_usage(record: RequestRecord, usage: dict) -> None:
    record.fields["prompt_tokens"] = usage["prompt_tokens"]
    record.fields["completion_tokens"] = usage["completion_tokens"]
    record.fields["cached_tokens"] = usage["prompt_tokens_details"]["cached_tokens"]


def _error_payload(event: dict) -> dict:
    code = event.get("code") or "internal"
    return {"error": {"message": event.get("message") or "generation failed",
                      "type": "server_error", "code": code, "param": None}}


async def _stream_local(engine, gen: LocalGeneration, kind: str, include_usage: bool,
                        record: RequestRecord):
    cid, created = _ids(kind)
    model = gen.served.name
    status = 200

    def chunk(delta_text: str | None, finish: str | None, role: bool = False) -> bytes:
        if kind == "chat":
            delta = {"role": "assistant", "content": ""} if role else (
                {"content": delta_text} if delta_text is not None else {})
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                        "model": model, "choices": [choice]})
        choice = {"index": 0, "text": delta_text or "", "logprobs": None, "finish_reason": finish}
        return sse({"id": cid, "object": "text_completion", "created": created, "model": model,
                    "choices": [choice]})

    try:
        if kind == "chat":
            yield chunk(None, None, role=True)
        async for event in gen.events():
            kind_of = event.get("event")
            if kind_of == "token":
                yield chunk(event.get("text", ""), None)
            elif kind_of == "done":
                yield chunk(None, event.get("finish_reason", "stop"))
                usage = _usage(event)
                _note_usage(record, usage)
                if include_usage:
                    yield sse({"id": cid, "object": "chat.completion.chunk" if kind == "chat"
                               else "text_completion", "created": created, "model": model,
                               "choices": [], "usage": usage})
            elif kind_of == "error":
                status = 503 if event.get("code") in UNAVAILABLE_CODES else 500
                yield sse(_error_payload(event))
        yield DONE
    except BaseException:
        status = 499  # the client went away
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await gen.close()
            record.finish(engine, status)


async def _collect_local(request: Request, engine, gen: LocalGeneration, kind: str,
                         headers: dict, record: RequestRecord) -> Response:
    parts: list[str] = []
    done: dict | None = None
    failure: dict | None = None

    async def collect():
        nonlocal done, failure
        async for event in gen.events():
            if event.get("event") == "token":
                parts.append(event.get("text", ""))
            elif event.get("event") == "done":
                done = event
            elif event.get("event") == "error":
                failure = event

    async def watch_disconnect(cancel_scope):
        while not await request.is_disconnected():
            await anyio.sleep(0.25)
        cancel_scope.cancel()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_disconnect, tg.cancel_scope)
            await collect()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await gen.close()
    if failure is not None or done is None:
        event = failure or {"code": "client_disconnected", "message": "client went away"}
        code = event.get("code")
        status = 503 if code in UNAVAILABLE_CODES else 499 if code == "client_disconnected" else 500
        record.finish(engine, status)
        if status == 503:
            headers = {**headers, "Retry-After": "2"}
        return JSONResponse(_error_payload(event), status_code=status, headers=headers)
    usage = _usage(done)
    _note_usage(record, usage)
    record.finish(engine, 200)
    cid, created = _ids(kind)
    text = "".join(parts)
    finish = done.get("finish_reason", "stop")
    if kind == "chat":
        choice = {"index": 0, "message": {"role": "assistant", "content": text},
                  "logprobs": None, "finish_reason": finish}
        payload = {"id": cid, "object": "chat.completion", "created": created,
                   "model": gen.served.name, "choices": [choice], "usage": usage}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        payload = {"id": cid, "object": "text_completion", "created": created,
                   "model": gen.served.name, "choices": [choice], "usage": usage}
    return JSONResponse(payload, headers=headers)


async def list_models(request: Request) -> Response:
    engine = request.app.state.engine
    created = int(engine.started_at)
    data = [{"id": "auto", "object": "model", "created": created, "owned_by": "laya"}]
    data += [{"id": m.name, "object": "model", "created": created, "owned_by": "laya",
              "backend": m.backend} for m in engine.config.models]
    return JSONResponse({"object": "list", "data": data})
