"""Anthropic Messages (/v1/messages, /v1/messages/count_tokens): its body in, its events out.

The body becomes an OpenAI chat body (`messages_to_chat`), so sampling, tools and tool_choice are
checked and turned into the runner command in one place (request_body.chat_call). Decisions for
what has no local meaning:
- `thinking`, `output_config.effort`, `metadata`, `cache_control`, `service_tier` are accepted
  and change nothing; the answer has no thinking blocks.
- `thinking` / `redacted_thinking` blocks in the history are left out of the prompt (their
  signatures only mean something to Anthropic), so `context_management` edits that clear thinking
  are honoured as they stand; other edits are refused.
- Tools with `defer_loading` stay out of the prompt, as Anthropic keeps them out of the context
  until a tool search finds them (there is no tool search here).
- Claude Code's `x-anthropic-billing-header:` system block is addressed to Anthropic's billing,
  not to the model: it is left out of the prompt.
Anything else the engine cannot honour is a 400 naming the field.
"""
from __future__ import annotations

import json
from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response

from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.outputs import Collected, Failed, Finished, Output, TextDelta, ToolCall, Usage
from laya_desktop.engine.request_body import MAX_STOP_STRINGS, TOOL_NAME, chat_call

# Fields with a local meaning, and hints that are accepted and change nothing (module docstring).
BODY_FIELDS = {"model", "messages", "max_tokens", "system", "stop_sequences", "temperature", "top_p",
               "top_k", "stream", "tools", "tool_choice", "tags", "output_format",
               "metadata", "thinking", "output_config", "cache_control", "service_tier",
               "context_management"}
COUNT_FIELDS = BODY_FIELDS - {"stream", "stop_sequences", "temperature", "top_p", "top_k",
                              "service_tier"}
TOOL_FIELDS = {"name", "description", "input_schema", "type", "cache_control", "defer_loading",
               "eager_input_streaming", "input_examples", "strict"}
THINKING_TYPES = ("enabled", "disabled", "adaptive", "between_tools")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
BILLING_HEADER = "x-anthropic-billing-header:"
FIELD_NAMES = {"stop": "stop_sequences", "response_format": "output_config.format"}

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 503: "overloaded_error",
               504: "timeout_error", 529: "overloaded_error"}
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- request: Anthropic body -> chat body --------------------------------------------------------

def _texts(blocks: Any, where: str, allow_billing: bool = False) -> str:
    """A string, or text blocks joined by blank lines (system prompts, system turns)."""
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        raise bad_request(f"'{where}' must be a string or an array of text blocks", "invalid_request")
    parts = []
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise bad_request(f"'{where}[{i}]' must be a text block", "invalid_request")
        if allow_billing and block["text"].startswith(BILLING_HEADER):
            continue
        parts.append(block["text"])
    return "\n\n".join(parts)


def _image_part(block: dict, where: str) -> dict:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source.get("data"), str):
        url = f"data:{source.get('media_type', 'image/png')};base64,{source['data']}"
    elif kind == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise bad_request(f"'{where}.source' must be a base64 or url image source", "invalid_request")
    return {"type": "image_url", "image_url": {"url": url}}


def _document_part(block: dict, where: str) -> dict:
    if isinstance(block.get("citations"), dict) and block["citations"].get("enabled"):
        raise bad_request(f"'{where}.citations' is not supported by this server", "unsupported_parameter")
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    heading = "\n".join(str(block[k]) for k in ("title", "context") if isinstance(block.get(k), str))
    if kind == "text" and isinstance(source.get("data"), str):
        text = source["data"]
    elif kind == "content":
        text = _texts(source.get("content"), f"{where}.source.content")
    elif kind == "base64" and isinstance(source.get("data"), str):
        # A PDF: only a remote model reads it (the local path refuses it by name).
        media = source.get("media_type", "application/pdf")
        return {"type": "file", "file": {"filename": block.get("title") or "document.pdf",
                                         "file_data": f"data:{media};base64,{source['data']}"}}
    else:
        raise bad_request(f"'{where}.source.type' {kind!r} is not supported (text, content or "
                          "base64 documents)", "unsupported_content")
    return {"type": "text", "text": f"{heading}\n\n{text}" if heading else text}


def _tool_result(block: dict, where: str) -> dict:
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        raise bad_request(f"'{where}.tool_use_id' must be a string", "invalid_request")
    content = block.get("content", "")
    parts: list[dict] = []
    if isinstance(content, str):
        parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        for j, item in enumerate(content):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "text" and isinstance(item.get("text"), str):
                parts.append({"type": "text", "text": item["text"]})
            elif kind == "image":
                parts.append(_image_part(item, f"{where}.content[{j}]"))
            elif kind == "document":
                parts.append(_document_part(item, f"{where}.content[{j}]"))
            else:
                raise bad_request(f"'{where}.content[{j}].type' {kind!r} is not supported in a "
                                  "tool_result", "unsupported_content")
    else:
        raise bad_request(f"'{where}.content' must be a string or an array of blocks", "invalid_request")
    if block.get("is_error"):
        parts.insert(0, {"type": "text", "text": "Error: "})
    if all(p["type"] == "text" for p in parts):
        return {"role": "tool", "tool_call_id": tool_use_id, "content": "".join(p["text"] for p in parts)}
    return {"role": "tool", "tool_call_id": tool_use_id, "content": parts}


def _user_content(parts: list[dict]) -> str | list[dict]:
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _user_turn(content: list, where: str) -> tuple[list[dict], list[str]]:
    """One Anthropic user turn -> tool messages and user messages, in block order; also the paths
    of blocks only a remote model takes."""
    out: list[dict] = []
    parts: list[dict] = []
    remote_only: list[str] = []

    def flush():
        if parts:
            out.append({"role": "user", "content": _user_content(list(parts))})
            parts.clear()

    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append(_image_part(block, at))
            remote_only.append(f"{at} (image)")
        elif kind == "document":
            part = _document_part(block, at)
            if part["type"] != "text":
                remote_only.append(f"{at} (document)")
            parts.append(part)
        elif kind == "tool_result":
            flush()
            message = _tool_result(block, at)
            if not isinstance(message["content"], str):
                remote_only.append(f"{at} (tool_result with media)")
            out.append(message)
        else:
            raise bad_request(f"'{at}.type' {kind!r} is not supported in a user turn",
                              "unsupported_content")
    flush()
    return out, remote_only


def _assistant_turn(content: list, where: str) -> dict:
    texts: list[str] = []
    calls: list[dict] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise bad_request(f"'{at}' needs a string 'id' and 'name'", "invalid_request")
            calls.append({"id": block["id"], "type": "function",
                          "function": {"name": block["name"],
                                       "arguments": json.dumps(block.get("input") or {},
                                                               ensure_ascii=False)}})
        elif kind in ("thinking", "redacted_thinking"):
            continue  # no local meaning (module docstring)
        else:
            raise bad_request(f"'{at}.type' {kind!r} is not supported in an assistant turn",
                              "unsupported_content")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _messages(messages: Any) -> tuple[list[dict], list[str]]:
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty array", "invalid_messages")
    out: list[dict] = []
    remote_only: list[str] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad_request(f"'{where}' must be an object", "invalid_messages")
        for key in message:
            if key not in ("role", "content", "output_config"):
                raise bad_request(f"'{where}.{key}' is not supported by this server", "unsupported_parameter")
        role, content = message.get("role"), message.get("content")
        if role == "system":
            # Claude Code 2.1 (per-turn-control beta) puts system turns between the others.
            _check_output_config(message.get("output_config"), f"{where}.output_config", allow_format=False)
            out.append({"role": "system", "content": _texts(content, f"{where}.content")})
            continue
        if role not in ("user", "assistant"):
            raise bad_request(f"'{where}.role' must be 'user' or 'assistant', got {role!r}", "invalid_messages")
        if "output_config" in message:
            raise bad_request(f"'{where}.output_config' is only taken on system turns", "unsupported_parameter")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif not isinstance(content, list):
            raise bad_request(f"'{where}.content' must be a string or an array of blocks", "invalid_messages")
        elif role == "user":
            turn, media = _user_turn(content, where)
            out += turn
            remote_only += media
        else:
            out.append(_assistant_turn(content, where))
    return out, remote_only


def _tools(tools: Any) -> list[dict]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad_request("'tools' must be an array", "invalid_tools")
    out = []
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise bad_request(f"'{where}' must be an object", "invalid_tools")
        if tool.get("type") not in (None, "custom"):
            # Server tools (web_search_*, bash_*, text_editor_*, code_execution_*, ...) run at
            # Anthropic; nothing here would run them.
            raise bad_request(f"'{where}.type' {tool['type']!r} is not supported: only custom tools "
                              "with an input_schema", "unsupported_tool_type")
        for key in tool:
            if key not in TOOL_FIELDS:
                raise bad_request(f"'{where}.{key}' is not supported by this server", "unsupported_parameter")
        if tool.get("strict"):
            raise bad_request(f"'{where}.strict' is not supported by this server (a forced "
                              "tool_choice constrains the call to the schema)", "unsupported_parameter")
        if not isinstance(tool.get("name"), str) or not TOOL_NAME.match(tool["name"]):
            raise bad_request(f"'{where}.name' must be a name of letters, digits, '_' or '-'", "invalid_tools")
        if not isinstance(tool.get("input_schema"), dict):
            raise bad_request(f"'{where}.input_schema' must be a JSON schema object", "invalid_tools")
        if tool.get("defer_loading"):
            continue  # stays out of the prompt (module docstring)
        function: dict[str, Any] = {"name": tool["name"], "parameters": tool["input_schema"]}
        description = tool.get("description")
        examples = tool.get("input_examples")
        if isinstance(examples, list) and examples:
            shown = "\n".join(json.dumps(e, ensure_ascii=False) for e in examples)
            description = f"{description or ''}\n\nExample inputs:\n{shown}".strip()
        if isinstance(description, str):
            function["description"] = description
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any, chat: dict) -> None:
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "auto":
        chat["tool_choice"] = "auto"
    elif kind == "any":
        chat["tool_choice"] = "required"
    elif kind == "none":
        chat["tool_choice"] = "none"
    elif kind == "tool":
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    else:
        raise bad_request("'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'", "invalid_tool_choice")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None:
        if not isinstance(disable, bool):
            raise bad_request("'tool_choice.disable_parallel_tool_use' must be a boolean", "invalid_tool_choice")
        chat["parallel_tool_calls"] = not disable


def _check_output_config(config: Any, where: str, allow_format: bool = True) -> dict | None:
    """`effort` is a hint; `format` (JSON schema output) is the chat body's response_format."""
    if config is None:
        return None
    if not isinstance(config, dict):
        raise bad_request(f"'{where}' must be an object", "invalid_request")
    for key, value in config.items():
        if key == "effort":
            if value is not None and value not in EFFORTS:
                raise bad_request(f"'{where}.effort' must be one of {list(EFFORTS)}", "invalid_request")
        elif key != "format" or not allow_format:
            raise bad_request(f"'{where}.{key}' is not supported by this server", "unsupported_parameter")
    return _output_format(config.get("format"), f"{where}.format")


def _output_format(fmt: Any, where: str) -> dict | None:
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
        raise bad_request(f"'{where}' must be {{\"type\": \"json_schema\", \"schema\": {{...}}}}",
                          "invalid_response_format")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}


def _check_hints(body: dict) -> None:
    thinking = body.get("thinking")
    if thinking is not None and (not isinstance(thinking, dict) or thinking.get("type") not in THINKING_TYPES):
        raise bad_request(f"'thinking.type' must be one of {list(THINKING_TYPES)}", "invalid_request")
    if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
        raise bad_request("'metadata' must be an object", "invalid_request")
    management = body.get("context_management")
    if management is not None:
        edits = management.get("edits") if isinstance(management, dict) else None
        if not isinstance(edits, list):
            raise bad_request("'context_management.edits' must be an array", "invalid_request")
        for i, edit in enumerate(edits):
            kind = edit.get("type") if isinstance(edit, dict) else None
            if not (isinstance(kind, str) and kind.startswith("clear_thinking_")):
                raise bad_request(f"'context_management.edits[{i}].type' {kind!r} is not supported "
                                  "(thinking is never in the prompt here; other edits are not done)",
                                  "unsupported_parameter")


def _sampling(body: dict, chat: dict) -> None:
    for name, (lo, hi) in (("temperature", (0.0, 1.0)), ("top_p", (0.0, 1.0))):
        value = body.get(name)
        if value is not None:
            if not _is_number(value) or not lo <= value <= hi:
                raise bad_request(f"'{name}' must be a number between {lo} and {hi}", f"invalid_{name}")
            chat[name] = value
    if body.get("top_k") is not None:
        if not _is_int(body["top_k"]) or body["top_k"] < 0:
            raise bad_request("'top_k' must be a non-negative integer", "invalid_top_k")
        if body["top_k"] > 0:
            chat["top_k"] = body["top_k"]
    stop = body.get("stop_sequences")
    if stop is not None:
        if (not isinstance(stop, list) or len(stop) > MAX_STOP_STRINGS
                or not all(isinstance(s, str) and s for s in stop)):
            raise bad_request(f"'stop_sequences' must be an array of at most {MAX_STOP_STRINGS} "
                              "non-empty strings", "invalid_stop")
        if stop:
            chat["stop"] = stop


def messages_to_chat(body: Any, count_only: bool = False) -> tuple[dict, list[str]]:
    """An Anthropic Messages body -> (an OpenAI chat body, paths of remote-only blocks)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    allowed = COUNT_FIELDS if count_only else BODY_FIELDS
    for key in body:
        if key not in allowed:
            raise bad_request(f"'{key}' is not supported by this server", "unsupported_parameter")
    max_tokens = body.get("max_tokens")
    if not count_only and max_tokens is None:
        raise bad_request("'max_tokens' is required", "invalid_max_tokens")
    if max_tokens is not None and (not _is_int(max_tokens) or max_tokens < 1):
        raise bad_request("'max_tokens' must be a positive integer", "invalid_max_tokens")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be a boolean", "invalid_stream")
    _check_hints(body)
    messages, remote_only = _messages(body.get("messages"))
    if body.get("system") is not None:
        system = _texts(body["system"], "system", allow_billing=True)
        if system:
            messages.insert(0, {"role": "system", "content": system})
    chat: dict[str, Any] = {"messages": messages, "stream": stream}
    for key in ("model", "tags"):
        if key in body:
            chat[key] = body[key]
    if max_tokens is not None:
        chat["max_tokens"] = max_tokens
    _sampling(body, chat)
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
    _tool_choice(body.get("tool_choice"), chat)
    response_format = _check_output_config(body.get("output_config"), "output_config")
    if response_format is None:
        response_format = _output_format(body.get("output_format"), "output_format")
    if response_format is not None:
        chat["response_format"] = response_format
    return chat, remote_only


# --- answers: outputs -> Anthropic's message and events ------------------------------------------

def error_body(error: ApiError) -> dict:
    kind = ERROR_TYPES.get(error.status, "api_error" if error.status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}


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


def event(name: str, payload: dict) -> bytes:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return f"event: {name}\ndata: {data}\n\n".encode()


def _failure(out: Failed) -> bytes:
    return event("error", error_body(ApiError(out.status, out.message)))


class MessagesApi:
    name = "messages"

    def parse(self, body: Any, headers: Headers) -> Call:
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

    async def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]:
        yield event("message_start", {"type": "message_start", "message": {
            "id": "msg_" + meta.hex_id, "type": "message", "role": "assistant", "model": meta.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            # The prompt's size is known once the runner is done: message_delta carries it.
            "usage": {"input_tokens": 0, "output_tokens": 0}}})
        yield event("ping", {"type": "ping"})
        index, open_text, calls = 0, False, 0

        def stop_block() -> bytes:
            return event("content_block_stop", {"type": "content_block_stop", "index": index})

        async for out in outputs:
            if isinstance(out, TextDelta):
                if not out.text:
                    continue
                if not open_text:
                    yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {"type": "text", "text": ""}})
                    open_text = True
                yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "text_delta", "text": out.text}})
            elif isinstance(out, ToolCall):
                if open_text:
                    yield stop_block()
                    index, open_text = index + 1, False
                yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "tool_use", "id": out.id,
                                                                      "name": out.name, "input": {}}})
                yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "input_json_delta",
                                                              "partial_json": out.arguments or "{}"}})
                yield stop_block()
                index, calls = index + 1, calls + 1
            elif isinstance(out, Finished):
                if not open_text and index == 0:  # an empty answer still has its (empty) text block
                    yield event("content_block_start", {"type": "content_block_start", "index": 0,
                                                        "content_block": {"type": "text", "text": ""}})
                    open_text = True
                if open_text:
                    yield stop_block()
                yield event("message_delta", {"type": "message_delta",
                                              "delta": {"stop_reason": stop_reason(out.finish_reason, calls > 0),
                                                        "stop_sequence": None},
                                              "usage": usage_json(out.usage)})
                yield event("message_stop", {"type": "message_stop"})
                return
            elif isinstance(out, Failed):
                yield _failure(out)
                return
        yield _failure(Failed("internal", "the generation ended without finishing", 500))

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        content: list[dict] = []
        if result.text or not result.tool_calls:
            content.append({"type": "text", "text": result.text})
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c)}
                    for c in result.tool_calls]
        return {"id": "msg_" + meta.hex_id, "type": "message", "role": "assistant", "model": meta.model,
                "content": content, "stop_reason": stop_reason(result.finish_reason, bool(result.tool_calls)),
                "stop_sequence": None, "usage": usage_json(result.usage)}


MESSAGES = MessagesApi()
