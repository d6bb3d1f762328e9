"""Anthropic Messages (/v1/messages, /v1/messages/count_tokens): its body in, its events out.

The body becomes an OpenAI chat body (messages_body.py: what is accepted, dropped from the prompt
or refused, and why), which request_body.chat_call checks and turns into the runner command like
any chat request. The writer turns the shared outputs into Anthropic's message or its SSE events.
"""
from __future__ import annotations

import json
from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response

from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.apis.messages_body import messages_to_chat
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import (Collected, Failed, Finished, KeepAlive, Output, TextDelta, ToolCall,
                                         Usage)
from laya_desktop.engine.request_body import chat_call

FIELD_NAMES = {"stop": "stop_sequences", "response_format": "output_config.format"}
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 503: "overloaded_error",
               504: "timeout_error", 529: "overloaded_error"}
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def error_body(error: ApiError) -> dict:
    fallback = "api_error" if error.status >= 500 else "invalid_request_error"
    return {"type": "error",
            "error": {"type": ERROR_TYPES.get(error.status, fallback), "message": error.message}}


def usage_json(usage: Usage) -> dict:
    # Anthropic counts cached prompt tokens apart: input + cache_read + cache_creation = prompt.
    return {"input_tokens": usage.prompt_tokens - usage.cached_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": usage.cached_tokens,
            "output_tokens": usage.completion_tokens}


def stop_reason(finish_reason: str, tool_calls: bool) -> str:
    return "tool_use" if tool_calls else STOP_REASONS.get(finish_reason, "end_turn")


def _tool_input(call: ToolCall) -> dict:
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def event(name: str, **fields) -> bytes:
    """One SSE event as Anthropic sends it: an `event:` line, and `type` repeated in the data."""
    data = json.dumps({"type": name, **fields}, separators=(",", ":"), ensure_ascii=False)
    return f"event: {name}\ndata: {data}\n\n".encode()


class MessagesApi:
    name = "messages"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        return self._call(body, count_only=False)

    def parse_count(self, body: Any, headers: Headers) -> Call:
        return self._call(body, count_only=True)

    def _call(self, body: Any, count_only: bool) -> Call:
        chat, remote_only = messages_to_chat(body, count_only)
        path = "/v1/messages/count_tokens" if count_only else "/v1/messages"
        call = chat_call(chat, api="messages", path=path, body=body, field_names=FIELD_NAMES,
                         options={"stop_sequences": chat.get("stop", [])})
        call.remote_only = remote_only  # named by the client's own paths, not the chat body's
        return call

    def count_response(self, input_tokens: int) -> dict:
        return {"input_tokens": input_tokens}

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse(error_body(error), status_code=error.status,
                            headers={**error.headers, **(headers or {})})

    def stream_failure(self, failed: Failed) -> bytes:
        """The event that ends a stream that failed midway (also for a relayed stream)."""
        return event("error", error=error_body(ApiError(failed.status, failed.message))["error"])

    async def stream(self, call: Call, outputs: AsyncIterator[Output],
                     meta: Meta) -> AsyncIterator[bytes]:
        yield event("message_start", message={
            "id": "msg_" + meta.hex_id, "type": "message", "role": "assistant", "model": meta.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            # A local runner has counted the prompt by now (a remote's stream is relayed as it
            # came); what the cache served is known once the prompt is read: message_delta
            # carries the split.
            "usage": {"input_tokens": meta.prompt_tokens or 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 0}})
        yield event("ping")
        index, text_open, calls = 0, False, 0
        async for out in outputs:
            if isinstance(out, TextDelta) and out.text:
                if not text_open:
                    yield event("content_block_start", index=index,
                                content_block={"type": "text", "text": ""})
                    text_open = True
                yield event("content_block_delta", index=index,
                            delta={"type": "text_delta", "text": out.text})
            elif isinstance(out, ToolCall):
                if text_open:
                    yield event("content_block_stop", index=index)
                    index, text_open = index + 1, False
                yield event("content_block_start", index=index, content_block={
                    "type": "tool_use", "id": out.id, "name": out.name, "input": {}})
                yield event("content_block_delta", index=index, delta={
                    "type": "input_json_delta", "partial_json": out.arguments or "{}"})
                yield event("content_block_stop", index=index)
                index, calls = index + 1, calls + 1
            elif isinstance(out, KeepAlive):
                yield event("ping")
            elif isinstance(out, Finished):
                if index == 0 and not text_open:   # an empty answer still has its text block
                    yield event("content_block_start", index=0,
                                content_block={"type": "text", "text": ""})
                    text_open = True
                if text_open:
                    yield event("content_block_stop", index=index)
                yield event("message_delta", usage=usage_json(out.usage), delta={
                    "stop_reason": stop_reason(out.finish_reason, calls > 0), "stop_sequence": None})
                yield event("message_stop")
                return
            elif isinstance(out, Failed):
                yield self.stream_failure(out)
                return
        yield self.stream_failure(Failed("internal", "the generation ended without finishing"))

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        content: list[dict] = []
        if result.text or not result.tool_calls:
            content.append({"type": "text", "text": result.text})
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c)}
                    for c in result.tool_calls]
        return {"id": "msg_" + meta.hex_id, "type": "message", "role": "assistant",
                "model": meta.model, "content": content,
                "stop_reason": stop_reason(result.finish_reason, bool(result.tool_calls)),
                "stop_sequence": None, "usage": usage_json(result.usage)}


MESSAGES = MessagesApi()
