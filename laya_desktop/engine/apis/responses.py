"""The OpenAI Responses API (`POST /v1/responses`): its body in as a `Call`, the shared outputs
out as response objects and the typed SSE events the OpenAI SDK and Codex parse.

Responses that are not `store: false` are kept in the engine's `ResponseStore`, so a later
request can continue them with `previous_response_id` or point at their items.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.apis.responses_input import FIELD_NAMES, to_chat
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import (Collected, Failed, Finished, KeepAlive, Output, TextDelta,
                                         ToolCall, Usage)
from laya_desktop.engine.request_body import chat_call
from laya_desktop.engine.response_store import ResponseStore, StoredResponse

PATH = "/v1/responses"


def store_of(engine: Any) -> ResponseStore | None:
    return getattr(engine, "responses", None)


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex


def event(kind: str, seq: int, payload: dict) -> bytes:
    data = json.dumps({"type": kind, "sequence_number": seq, **payload}, separators=(",", ":"),
                      ensure_ascii=False)
    return f"event: {kind}\ndata: {data}\n\n".encode()


def responses_usage(usage: Usage) -> dict:
    return {"input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def _logprobs(entries: list[dict] | None) -> list[dict]:
    return [{"token": e["token"], "logprob": e["logprob"], "bytes": e.get("bytes") or [],
             "top_logprobs": [{"token": t["token"], "logprob": t["logprob"], "bytes": t.get("bytes") or []}
                              for t in e.get("top_logprobs", [])]} for e in entries or []]


def _text_part(text: str, logprobs: list[dict]) -> dict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs}


def _message_item(item_id: str, status: str, parts: list[dict]) -> dict:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": parts}


def _custom_input(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        return value["input"]
    return arguments


def call_item(call: Call, tool_call: ToolCall, item_id: str, status: str, empty: bool = False) -> dict:
    """A tool call as an output item; `empty` for the `output_item.added` form."""
    if call.options.get("tool_kinds", {}).get(tool_call.name) == "custom":
        return {"id": item_id, "type": "custom_tool_call", "status": status, "call_id": tool_call.id,
                "name": tool_call.name, "input": "" if empty else _custom_input(tool_call.arguments)}
    item = {"id": item_id, "type": "function_call", "status": status, "call_id": tool_call.id,
            "name": tool_call.name, "arguments": "" if empty else tool_call.arguments}
    namespace = call.options.get("namespaces", {}).get(tool_call.name)
    if namespace:
        item["namespace"] = namespace
    return item


def response_object(call: Call, meta: Meta, status: str, output: list[dict],
                    usage: Usage | None = None, error: dict | None = None) -> dict:
    body = call.body
    reasoning = body.get("reasoning") if isinstance(body.get("reasoning"), dict) else {}
    text = body.get("text") if isinstance(body.get("text"), dict) else {}
    return {
        "id": "resp_" + meta.hex_id, "object": "response", "created_at": meta.created,
        "status": status, "background": False, "error": error,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None, "model": meta.model, "output": output,
        "parallel_tool_calls": call.parallel_tool_calls,
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "safety_identifier": body.get("safety_identifier"), "service_tier": "default",
        "store": body.get("store") is not False,
        "temperature": body.get("temperature", 1.0),
        "text": {"format": text.get("format") or {"type": "text"},
                 "verbosity": text.get("verbosity") or "medium"},
        "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
        "top_logprobs": body.get("top_logprobs") or 0, "top_p": body.get("top_p", 1.0),
        "truncation": "disabled", "usage": responses_usage(usage) if usage is not None else None,
        "user": body.get("user"), "metadata": body.get("metadata") or {},
    }


def _status(finish_reason: str) -> str:
    return "incomplete" if finish_reason == "length" else "completed"


def remember(call: Call, meta: Meta, response: dict, text: str, tool_calls: list[ToolCall]) -> None:
    """Keep a finished response for `previous_response_id`, unless the client said `store: false`."""
    store = store_of(meta.engine)
    if store is None or call.body.get("store") is False:
        return
    chat_calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                  for c in tool_calls]
    answer: dict[str, Any] = {"role": "assistant", "content": text or None}
    if chat_calls:
        answer["tool_calls"] = chat_calls
    items = dict(call.options.get("item_messages", {}))
    for item in response["output"]:
        if item["type"] == "message":
            items[item["id"]] = [{"role": "assistant", "content": item["content"][0]["text"]}]
        else:
            index = next(i for i, c in enumerate(tool_calls) if c.id == item["call_id"])
            items[item["id"]] = [{"role": "assistant", "content": None, "tool_calls": [chat_calls[index]]}]
    store.put(StoredResponse(response["id"], [*call.options.get("conversation", []), answer],
                             response, items, call.options.get("body_bytes", 0)))


def _has_responses_upstream(engine: Any) -> bool:
    config = getattr(engine, "config", None)
    return any(getattr(m, "responses", False) for m in getattr(config, "models", []))


class ResponsesApi:
    name = "responses"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        converted = to_chat(body, store_of(engine), defer_unknown=_has_responses_upstream(engine))
        options = {"conversation": converted.conversation, "item_messages": converted.item_messages,
                   "tool_kinds": converted.tool_kinds, "namespaces": converted.namespaces,
                   "ignored_tools": converted.ignored_tools,
                   "unresolved_previous_response_id": converted.unresolved_previous}
        return chat_call(converted.chat, api=self.name, path=PATH, body=body,
                         field_names=FIELD_NAMES, options=options)

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error.response(headers)

    def stream_failure(self, failed: Failed) -> bytes:
        """Ends a relayed stream that broke off (its own sequence numbers are the upstream's)."""
        return event("error", 0, {"code": failed.code, "message": failed.message, "param": None})

    async def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]:
        seq = 0

        def emit(kind: str, **payload) -> bytes:
            nonlocal seq
            seq += 1
            return event(kind, seq - 1, payload)

        output: list[dict] = []
        texts: list[str] = []
        tool_calls: list[ToolCall] = []
        message: dict | None = None           # the open message item: its id, index, text, logprobs

        def close_message(status: str):
            nonlocal message
            m, message = message, None
            text = "".join(m["text"])
            part = _text_part(text, m["logprobs"])
            item = _message_item(m["id"], status, [part])
            output.append(item)
            texts.append(text)
            where = {"item_id": m["id"], "output_index": m["index"], "content_index": 0}
            return [emit("response.output_text.done", **where, text=text, logprobs=m["logprobs"]),
                    emit("response.content_part.done", **where, part=part),
                    emit("response.output_item.done", output_index=m["index"], item=item)]

        started = response_object(call, meta, "in_progress", [])
        yield emit("response.created", response=started)
        yield emit("response.in_progress", response=started)
        async for out in outputs:
            if isinstance(out, TextDelta):
                if not out.text and not out.logprobs:
                    continue
                if message is None:
                    message = {"id": _id("msg_"), "index": len(output), "text": [], "logprobs": []}
                    yield emit("response.output_item.added", output_index=message["index"],
                               item=_message_item(message["id"], "in_progress", []))
                    yield emit("response.content_part.added", item_id=message["id"],
                               output_index=message["index"], content_index=0,
                               part=_text_part("", []))
                logprobs = _logprobs(out.logprobs)
                message["text"].append(out.text)
                message["logprobs"] += logprobs
                yield emit("response.output_text.delta", item_id=message["id"],
                           output_index=message["index"], content_index=0, delta=out.text,
                           logprobs=logprobs)
            elif isinstance(out, KeepAlive):
                # Codex's idle timeout counts events, not bytes: a repeated in_progress is one.
                yield emit("response.in_progress", response=started)
            elif isinstance(out, ToolCall):
                if message is not None:
                    for chunk in close_message("completed"):
                        yield chunk
                index, item_id = len(output), _id("fc_")
                tool_calls.append(out)
                yield emit("response.output_item.added", output_index=index,
                           item=call_item(call, out, item_id, "in_progress", empty=True))
                item = call_item(call, out, item_id, "completed")
                if item["type"] == "custom_tool_call":
                    yield emit("response.custom_tool_call_input.delta", item_id=item_id,
                               output_index=index, delta=item["input"])
                    yield emit("response.custom_tool_call_input.done", item_id=item_id,
                               output_index=index, input=item["input"])
                else:
                    yield emit("response.function_call_arguments.delta", item_id=item_id,
                               output_index=index, delta=out.arguments)
                    yield emit("response.function_call_arguments.done", item_id=item_id,
                               output_index=index, name=out.name, arguments=out.arguments)
                output.append(item)
                yield emit("response.output_item.done", output_index=index, item=item)
            elif isinstance(out, Finished):
                status = _status(out.finish_reason)
                if message is not None:
                    for chunk in close_message(status):
                        yield chunk
                final = response_object(call, meta, status, output, out.usage)
                remember(call, meta, final, "".join(texts), tool_calls)
                yield emit("response.completed" if status == "completed" else "response.incomplete",
                           response=final)
                return
            elif isinstance(out, Failed):
                error = {"code": out.code, "message": out.message}
                yield emit("response.failed",
                           response=response_object(call, meta, "failed", output, error=error))
                return
        # the outputs ended without a verdict: the generation was cut off
        error = {"code": "server_error", "message": "the generation ended without finishing"}
        yield emit("response.failed", response=response_object(call, meta, "failed", output, error=error))

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        status = _status(result.finish_reason)
        output: list[dict] = []
        if result.text or not result.tool_calls:
            output.append(_message_item(_id("msg_"), status,
                                        [_text_part(result.text, _logprobs(result.logprobs))]))
        output += [call_item(call, c, _id("fc_"), "completed") for c in result.tool_calls]
        response = response_object(call, meta, status, output, result.usage)
        remember(call, meta, response, result.text, result.tool_calls)
        return response


RESPONSES = ResponsesApi()


async def retrieve_response(request: Request) -> Response:
    """`GET /v1/responses/{response_id}`: a stored response, as it was answered."""
    response_id = request.path_params["response_id"]
    store = store_of(request.app.state.engine)
    record = store.get(response_id) if store is not None else None
    if record is None:
        return ApiError(404, f"Response with id '{response_id}' not found.", "invalid_request_error",
                        "response_not_found", extra={"param": "response_id"}).response()
    return JSONResponse(record.response)


async def delete_response(request: Request) -> Response:
    """`DELETE /v1/responses/{response_id}`."""
    response_id = request.path_params["response_id"]
    store = store_of(request.app.state.engine)
    if store is None or not store.delete(response_id):
        return ApiError(404, f"Response with id '{response_id}' not found.", "invalid_request_error",
                        "response_not_found", extra={"param": "response_id"}).response()
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})
