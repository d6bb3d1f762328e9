"""The `anthropic` remote backend, for requests that came in another API (chat, Responses).

A Messages request passes through to it natively (engine/remote.py). Anything else arrives as its
chat-completions view: `messages_body` turns that into a Messages request, and `outputs` reads the
answer (SSE or JSON) back as the shared outputs, tool_use blocks as `ToolCall`s.
"""
from __future__ import annotations

import json
import os
from typing import Any, AsyncIterator

import httpx

from laya_desktop.engine.errors import bad_request
from laya_desktop.engine.outputs import Failed, Finished, Output, TextDelta, ToolCall, Usage

ANTHROPIC_VERSION = "2023-06-01"
# Messages requires max_tokens; a chat request may leave it out.
DEFAULT_MAX_TOKENS = 4096
# Chat fields that change the answer and that Messages has no way to carry: refused by name.
UNTRANSLATABLE = ("response_format", "logprobs", "top_logprobs", "frequency_penalty",
                  "presence_penalty", "logit_bias", "seed", "min_p", "repeat_penalty", "audio",
                  "modalities", "prediction")
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
                  "refusal": "stop", "max_tokens": "length",
                  "model_context_window_exceeded": "length", "tool_use": "tool_calls"}
ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
                "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
                "overloaded_error": 503, "timeout_error": 504}


def auth_headers(model_config, client_headers) -> dict:
    headers = {"anthropic-version": client_headers.get("anthropic-version") or ANTHROPIC_VERSION}
    beta = client_headers.get("anthropic-beta")
    if beta:
        headers["anthropic-beta"] = beta
    key = os.environ.get(model_config.api_key_env) if model_config.api_key_env else None
    if key:
        headers["x-api-key"] = key
    return headers


# --- chat body -> Messages body -----------------------------------------------------------------

def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict)
                       and isinstance(p.get("text"), str))
    return ""


def _is_data_url(url: Any) -> bool:
    return isinstance(url, str) and url.startswith("data:") and ";base64," in url


def _image_block(url: str) -> dict:
    if _is_data_url(url):
        media_type, data = url[5:].split(";base64,", 1)
        source = {"type": "base64", "media_type": media_type, "data": data}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: Any, where: str) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for j, part in enumerate(content):
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            if part.get("text"):
                blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            blocks.append(_image_block(str(url)))
        elif kind == "file" and _is_data_url((part.get("file") or {}).get("file_data")):
            media_type, data = part["file"]["file_data"][5:].split(";base64,", 1)
            blocks.append({"type": "document",
                           "source": {"type": "base64", "media_type": media_type, "data": data}})
        else:
            raise bad_request(f"'{where}[{j}]' ({kind}) cannot be sent to an Anthropic model",
                              "unsupported_content")
    return blocks


def _tool_use(call: dict, where: str) -> dict:
    fn = call["function"]
    arguments = fn.get("arguments") or "{}"
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        raise bad_request(f"'{where}.function.arguments' is not valid JSON",
                          "invalid_messages") from None
    return {"type": "tool_use", "id": call.get("id") or "toolu_0", "name": fn["name"],
            "input": value if isinstance(value, dict) else {}}


def _turns(messages: list) -> tuple[list[str], list[dict]]:
    """(system texts, alternating turns): tool results and consecutive turns of one role merge,
    as Messages wants each tool_result in the user turn right after its tool_use."""
    system: list[str] = []
    turns: list[dict] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        where = f"messages[{i}]"
        if role in ("system", "developer"):
            system.append(_text(m.get("content")))
            continue
        blocks = _blocks(m.get("content"), f"{where}.content")
        if role == "tool":
            result = {"type": "tool_result", "tool_use_id": str(m.get("tool_call_id") or "")}
            role, blocks = "user", [{**result, "content": blocks} if blocks else result]
        elif role == "assistant":
            blocks += [_tool_use(c, f"{where}.tool_calls[{k}]")
                       for k, c in enumerate(m.get("tool_calls") or [])]
        elif role != "user":
            raise bad_request(f"'{where}.role' {role!r} cannot be sent to an Anthropic model",
                              "invalid_messages")
        if not blocks:
            continue  # Messages refuses empty turns and empty text blocks
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def _tool(fn: dict) -> dict:
    tool = {"name": fn["name"],
            "input_schema": fn.get("parameters") or {"type": "object", "properties": {}}}
    if fn.get("description"):
        tool["description"] = fn["description"]
    return tool


def _tool_choice(chat: dict) -> dict | None:
    choice = chat.get("tool_choice")
    single = chat.get("parallel_tool_calls") is False
    if choice is None and not single:
        return None
    if choice is None or choice == "auto":
        out = {"type": "auto"}
    elif choice == "none":
        out = {"type": "none"}
    elif choice == "required":
        out = {"type": "any"}
    elif isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else choice.get("name")
        out = {"type": "tool", "name": name}
    else:
        raise bad_request("'tool_choice' cannot be sent to an Anthropic model",
                          "invalid_tool_choice")
    if single and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


def messages_body(chat: dict, remote_model: str) -> dict:
    """An (already checked) OpenAI chat body -> an Anthropic Messages request."""
    for name in UNTRANSLATABLE:
        value = chat.get(name)
        plain_text = name == "response_format" and isinstance(value, dict) \
            and value.get("type") == "text"
        if value is None or value is False or value == 0 or plain_text:
            continue
        raise bad_request(f"'{name}' is not supported by the Anthropic model this request is "
                          "routed to", "unsupported_parameter")
    if chat.get("n") not in (None, 1):
        raise bad_request("'n' is not supported by the Anthropic model this request is routed to",
                          "unsupported_parameter")
    system, turns = _turns(chat["messages"])
    max_tokens = chat.get("max_completion_tokens") or chat.get("max_tokens") or DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {"model": remote_model, "messages": turns, "max_tokens": max_tokens}
    if any(system):
        body["system"] = "\n\n".join(s for s in system if s)
    temperature = chat.get("temperature")
    if temperature is not None:
        if temperature > 1:
            raise bad_request("'temperature' must be at most 1 for the Anthropic model this request "
                              "is routed to", "invalid_temperature")
        body["temperature"] = temperature
    for name in ("top_p", "top_k"):
        if chat.get(name) is not None:
            body[name] = chat[name]
    stop = chat.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    tools = chat.get("tools") or []
    if tools:
        body["tools"] = [_tool(t["function"]) for t in tools]
        choice = _tool_choice(chat)
        if choice is not None:
            body["tool_choice"] = choice
    if isinstance(chat.get("user"), str):
        body["metadata"] = {"user_id": chat["user"]}
    if chat.get("stream"):
        body["stream"] = True
    return body


# --- Messages answer -> outputs -----------------------------------------------------------------

def _usage(usage: dict, into: Usage) -> None:
    cached = int(usage.get("cache_read_input_tokens") or 0)
    if usage.get("input_tokens") is not None:
        into.prompt_tokens = (int(usage["input_tokens"]) + cached
                              + int(usage.get("cache_creation_input_tokens") or 0))
        into.cached_tokens = cached
    if usage.get("output_tokens") is not None:
        into.completion_tokens = int(usage["output_tokens"])


def _failed(error: Any) -> Failed:
    error = error if isinstance(error, dict) else {}
    kind = error.get("type") or "api_error"
    status = ERROR_STATUS.get(kind, 502)
    return Failed("remote_error" if status >= 500 else kind,
                  f"remote model answered {kind}: {error.get('message') or 'no message'}", status)


def _message_outputs(message: dict) -> list[Output]:
    if message.get("type") == "error":
        return [_failed(message.get("error"))]
    outs: list[Output] = []
    for block in message.get("content") or []:
        if block.get("type") == "text" and block.get("text"):
            outs.append(TextDelta(block["text"]))
        elif block.get("type") == "tool_use":
            outs.append(ToolCall(block.get("id", ""), block.get("name", ""),
                                 json.dumps(block.get("input") or {}, ensure_ascii=False)))
    usage = Usage()
    _usage(message.get("usage") or {}, usage)
    outs.append(Finished(FINISH_REASONS.get(message.get("stop_reason"), "stop"), usage))
    return outs


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, dict]]:
    name, data = "", []
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            try:
                payload = json.loads("\n".join(data))
            except json.JSONDecodeError:
                payload = {}
            yield name or payload.get("type", ""), payload
            name, data = "", []


async def outputs(response: httpx.Response, stream: bool) -> AsyncIterator[Output]:
    if not stream:
        try:
            message = json.loads(await response.aread())
        except json.JSONDecodeError:
            yield Failed("remote_error", "the remote model's answer is not JSON", 502)
            return
        for out in _message_outputs(message):
            yield out
        return
    usage, finish = Usage(), "stop"
    tools: dict[int, dict] = {}
    async for name, payload in _sse_events(response):
        if name == "message_start":
            _usage((payload.get("message") or {}).get("usage") or {}, usage)
        elif name == "content_block_start":
            block = payload.get("content_block") or {}
            if block.get("type") == "tool_use":
                tools[payload.get("index", 0)] = {"id": block.get("id", ""), "json": [],
                                                  "name": block.get("name", "")}
            elif block.get("type") == "text" and block.get("text"):
                yield TextDelta(block["text"])
        elif name == "content_block_delta":
            delta = payload.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                yield TextDelta(delta["text"])
            elif delta.get("type") == "input_json_delta" and payload.get("index", 0) in tools:
                tools[payload.get("index", 0)]["json"].append(delta.get("partial_json", ""))
        elif name == "content_block_stop" and payload.get("index", 0) in tools:
            tool = tools.pop(payload.get("index", 0))
            yield ToolCall(tool["id"], tool["name"], "".join(tool["json"]) or "{}")
        elif name == "message_delta":
            finish = FINISH_REASONS.get((payload.get("delta") or {}).get("stop_reason"), finish)
            _usage(payload.get("usage") or {}, usage)
        elif name == "message_stop":
            yield Finished(finish, usage)
            return
        elif name == "error":
            yield _failed(payload.get("error"))
            return
    yield Failed("remote_error", "the remote model's stream ended before message_stop", 502)
