"""An Anthropic Messages body -> an OpenAI chat body, for request_body.chat_call to check.

Decisions for what has no local meaning:
- `thinking`, `output_config.effort`, `metadata`, `cache_control`, `service_tier` are accepted
  and change nothing; the answer has no thinking blocks.
- `thinking` / `redacted_thinking` blocks in the history are left out of the prompt (their
  signatures only mean something to Anthropic), so `context_management` edits that clear thinking
  are honoured as they stand; other edits are refused.
- Tools with `defer_loading` stay out of the prompt, as Anthropic keeps them out of the context,
  until a `tool_reference` block in a tool result (the answer of the client's own tool search,
  Claude Code's ToolSearch) names them.
- Claude Code's `x-anthropic-billing-header:` system block is addressed to Anthropic's billing,
  not to the model: it is left out of the prompt.
- `system` turns inside `messages` (Claude Code 2.1, per-turn-control beta) stay where they are.
Anything else the engine cannot honour is a 400 naming the field, by the client's own path.
"""
from __future__ import annotations

import json
from typing import Any

from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.field_limits import MAX_STOP_STRINGS, TOOL_NAME, TOOL_NAME_RULE

# Fields with a local meaning, and hints that are accepted and change nothing (see above).
BODY_FIELDS = {"model", "messages", "max_tokens", "system", "stop_sequences", "temperature",
               "top_p", "top_k", "stream", "tools", "tool_choice", "tags", "output_format",
               "metadata", "thinking", "output_config", "cache_control", "service_tier",
               "context_management"}
COUNT_FIELDS = BODY_FIELDS - {"stream", "stop_sequences", "temperature", "top_p", "top_k",
                              "service_tier"}
TOOL_FIELDS = {"name", "description", "input_schema", "type", "cache_control", "defer_loading",
               "eager_input_streaming", "input_examples", "strict"}
THINKING_TYPES = ("enabled", "disabled", "adaptive", "between_tools")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
BILLING_HEADER = "x-anthropic-billing-header:"


def _unsupported(where: str, why: str = "") -> ApiError:
    return bad_request(f"'{where}' is not supported by this server{why}", "unsupported_parameter")


def _invalid(message: str, code: str = "invalid_request") -> ApiError:
    return bad_request(message, code)


def _unsupported_block(where: str, kind: Any, context: str) -> ApiError:
    return bad_request(f"'{where}.type' {kind!r} is not supported {context}", "unsupported_content")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_text_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def _texts(blocks: Any, where: str, skip_billing: bool = False) -> str:
    """A string, or text blocks joined by blank lines (system prompts, system turns)."""
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        raise _invalid(f"'{where}' must be a string or an array of text blocks")
    parts = []
    for i, block in enumerate(blocks):
        if not _is_text_block(block):
            raise _invalid(f"'{where}[{i}]' must be a text block")
        if not (skip_billing and block["text"].startswith(BILLING_HEADER)):
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
        raise _invalid(f"'{where}.source' must be a base64 or url image source")
    return {"type": "image_url", "image_url": {"url": url}}


def _document_part(block: dict, where: str) -> dict:
    if isinstance(block.get("citations"), dict) and block["citations"].get("enabled"):
        raise _unsupported(f"{where}.citations")
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
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
    heading = "\n".join(block[k] for k in ("title", "context") if isinstance(block.get(k), str))
    return {"type": "text", "text": f"{heading}\n\n{text}" if heading else text}


def _tool_result(block: dict, where: str) -> dict:
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        raise _invalid(f"'{where}.tool_use_id' must be a string")
    content = block.get("content", "")
    if isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = []
        for j, item in enumerate(content):
            kind = item.get("type") if isinstance(item, dict) else None
            if _is_text_block(item):
                parts.append({"type": "text", "text": item["text"]})
            elif kind == "image":
                parts.append(_image_part(item, f"{where}.content[{j}]"))
            elif kind == "document":
                parts.append(_document_part(item, f"{where}.content[{j}]"))
            elif kind == "tool_reference" and isinstance(item.get("tool_name"), str):
                parts.append({"type": "text", "text": f"Tool '{item['tool_name']}' is now available."})
            else:
                raise _unsupported_block(f"{where}.content[{j}]", kind, "in a tool_result")
    else:
        raise _invalid(f"'{where}.content' must be a string or an array of blocks")
    prefix = "Error: " if block.get("is_error") else ""
    if all(p["type"] == "text" for p in parts):
        text = prefix + "\n".join(p["text"] for p in parts)
        return {"role": "tool", "tool_call_id": tool_use_id, "content": text}
    if prefix:
        parts.insert(0, {"type": "text", "text": prefix})
    return {"role": "tool", "tool_call_id": tool_use_id, "content": parts}


def _user_turn(content: list, where: str) -> tuple[list[dict], list[str]]:
    """One user turn -> tool and user messages in block order, and the paths of the blocks that
    only a remote model takes."""
    out: list[dict] = []
    parts: list[dict] = []
    remote_only: list[str] = []

    def flush():
        if parts:
            text_only = all(p["type"] == "text" for p in parts)
            out.append({"role": "user",
                        "content": "\n".join(p["text"] for p in parts) if text_only else list(parts)})
            parts.clear()

    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if _is_text_block(block):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append(_image_part(block, at))
            remote_only.append(f"{at} (image)")
        elif kind == "document":
            parts.append(_document_part(block, at))
            if parts[-1]["type"] != "text":
                remote_only.append(f"{at} (document)")
        elif kind == "tool_result":
            flush()
            out.append(_tool_result(block, at))
            if not isinstance(out[-1]["content"], str):
                remote_only.append(f"{at} (tool_result with media)")
        else:
            raise _unsupported_block(at, kind, "in a user turn")
    flush()
    return out, remote_only


def _assistant_turn(content: list, where: str) -> dict:
    texts: list[str] = []
    calls: list[dict] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if _is_text_block(block):
            texts.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise _invalid(f"'{at}' needs a string 'id' and 'name'")
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append({"id": block["id"], "type": "function",
                          "function": {"name": block["name"], "arguments": arguments}})
        elif kind not in ("thinking", "redacted_thinking"):   # those: see the module docstring
            raise _unsupported_block(at, kind, "in an assistant turn")
    message: dict[str, Any] = {"role": "assistant",
                               "content": "".join(texts) if texts or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _messages(messages: Any) -> tuple[list[dict], list[str]]:
    if not isinstance(messages, list) or not messages:
        raise _invalid("'messages' must be a non-empty array", "invalid_messages")
    out: list[dict] = []
    remote_only: list[str] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _invalid(f"'{where}' must be an object", "invalid_messages")
        for key in message:
            if key not in ("role", "content", "output_config"):
                raise _unsupported(f"{where}.{key}")
        role, content = message.get("role"), message.get("content")
        if role == "system":
            _output_config(message.get("output_config"), f"{where}.output_config", formats=False)
            out.append({"role": "system", "content": _texts(content, f"{where}.content")})
            continue
        if role not in ("user", "assistant"):
            raise _invalid(f"'{where}.role' must be 'user' or 'assistant', got {role!r}",
                           "invalid_messages")
        if "output_config" in message:
            raise _unsupported(f"{where}.output_config", " (only on system turns)")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif not isinstance(content, list):
            raise _invalid(f"'{where}.content' must be a string or an array of blocks",
                           "invalid_messages")
        elif role == "user":
            turn, media = _user_turn(content, where)
            out += turn
            remote_only += media
        else:
            out.append(_assistant_turn(content, where))
    return out, remote_only


def _referenced_tools(messages: list) -> set[str]:
    """Names of deferred tools that tool results have loaded with `tool_reference` blocks."""
    names = set()
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            inner = block.get("content") if isinstance(block, dict) else None
            if block.get("type") == "tool_result" and isinstance(inner, list):
                names.update(item.get("tool_name") for item in inner if isinstance(item, dict)
                             and item.get("type") == "tool_reference")
    return names


def _tool(tool: Any, where: str, loaded: set[str]) -> dict | None:
    """A custom tool -> an OpenAI function tool; None for one that stays out of the prompt."""
    if not isinstance(tool, dict):
        raise _invalid(f"'{where}' must be an object", "invalid_tools")
    if tool.get("type") not in (None, "custom"):
        # Server tools (web_search_*, bash_*, text_editor_*, code_execution_*, ...) run at
        # Anthropic; nothing here would run them.
        raise bad_request(f"'{where}.type' {tool['type']!r} is not supported: only custom tools "
                          "with an input_schema", "unsupported_tool_type")
    for key in tool:
        if key not in TOOL_FIELDS:
            raise _unsupported(f"{where}.{key}")
    if tool.get("strict"):
        raise _unsupported(f"{where}.strict", " (a forced tool_choice keeps a call to its schema)")
    if not isinstance(tool.get("name"), str) or not TOOL_NAME.match(tool["name"]):
        raise _invalid(f"'{where}.name' must be {TOOL_NAME_RULE}", "invalid_tools")
    if not isinstance(tool.get("input_schema"), dict):
        raise _invalid(f"'{where}.input_schema' must be a JSON schema object", "invalid_tools")
    if tool.get("defer_loading") and tool["name"] not in loaded:
        return None
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool["input_schema"]}
    description = tool.get("description")
    examples = tool.get("input_examples")
    if isinstance(examples, list) and examples:
        shown = "\n".join(json.dumps(e, ensure_ascii=False) for e in examples)
        description = f"{description or ''}\n\nExample inputs:\n{shown}".strip()
    if isinstance(description, str):
        function["description"] = description
    return {"type": "function", "function": function}


def _tools(tools: Any, loaded: set[str]) -> list[dict]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _invalid("'tools' must be an array", "invalid_tools")
    converted = (_tool(tool, f"tools[{i}]", loaded) for i, tool in enumerate(tools))
    return [tool for tool in converted if tool is not None]


def _tool_choice(choice: Any, chat: dict) -> None:
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "tool":
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif kind in ("auto", "any", "none"):
        chat["tool_choice"] = "required" if kind == "any" else kind
    else:
        raise _invalid("'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'",
                       "invalid_tool_choice")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None:
        if not isinstance(disable, bool):
            raise _invalid("'tool_choice.disable_parallel_tool_use' must be a boolean",
                           "invalid_tool_choice")
        chat["parallel_tool_calls"] = not disable


def _output_config(config: Any, where: str, formats: bool = True) -> dict | None:
    """`effort` is a hint; `format` (JSON schema output) becomes the chat body's response_format."""
    if config is None:
        return None
    if not isinstance(config, dict):
        raise _invalid(f"'{where}' must be an object")
    for key, value in config.items():
        if key == "effort":
            if value is not None and value not in EFFORTS:
                raise _invalid(f"'{where}.effort' must be one of {list(EFFORTS)}")
        elif key != "format" or not formats:
            raise _unsupported(f"{where}.{key}")
    return _output_format(config.get("format"), f"{where}.format")


def _output_format(fmt: Any, where: str) -> dict | None:
    if fmt is None:
        return None
    if not (isinstance(fmt, dict) and fmt.get("type") == "json_schema"
            and isinstance(fmt.get("schema"), dict)):
        raise _invalid(f"'{where}' must be {{\"type\": \"json_schema\", \"schema\": {{...}}}}",
                       "invalid_response_format")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}


def _check_hints(body: dict) -> None:
    thinking = body.get("thinking")
    if thinking is not None and (not isinstance(thinking, dict)
                                 or thinking.get("type") not in THINKING_TYPES):
        raise _invalid(f"'thinking.type' must be one of {list(THINKING_TYPES)}")
    if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
        raise _invalid("'metadata' must be an object")
    if body.get("service_tier") is not None and not isinstance(body["service_tier"], str):
        raise _invalid("'service_tier' must be a string")
    if body.get("cache_control") is not None and not isinstance(body["cache_control"], dict):
        raise _invalid("'cache_control' must be an object")
    management = body.get("context_management")
    if management is None:
        return
    edits = management.get("edits") if isinstance(management, dict) else None
    if not isinstance(edits, list):
        raise _invalid("'context_management.edits' must be an array")
    for i, edit in enumerate(edits):
        kind = edit.get("type") if isinstance(edit, dict) else None
        if not (isinstance(kind, str) and kind.startswith("clear_thinking_")):
            raise bad_request(f"'context_management.edits[{i}].type' {kind!r} is not supported "
                              "(thinking is never in the prompt here; other edits are not done)",
                              "unsupported_parameter")


def _sampling(body: dict, chat: dict) -> None:
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is not None:
            if not _is_number(value) or not 0 <= value <= 1:
                raise _invalid(f"'{name}' must be a number between 0 and 1", f"invalid_{name}")
            chat[name] = value
    top_k = body.get("top_k")
    if top_k is not None:
        if not _is_int(top_k) or top_k < 0:
            raise _invalid("'top_k' must be a non-negative integer", "invalid_top_k")
        if top_k > 0:
            chat["top_k"] = top_k
    stop = body.get("stop_sequences")
    if stop is not None:
        if (not isinstance(stop, list) or len(stop) > MAX_STOP_STRINGS
                or not all(isinstance(s, str) and s for s in stop)):
            raise _invalid(f"'stop_sequences' must be an array of at most {MAX_STOP_STRINGS} "
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
            raise _unsupported(key)
    max_tokens = body.get("max_tokens")
    if not count_only and max_tokens is None:
        raise _invalid("'max_tokens' is required", "invalid_max_tokens")
    if max_tokens is not None and (not _is_int(max_tokens) or max_tokens < 1):
        raise _invalid("'max_tokens' must be a positive integer", "invalid_max_tokens")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _invalid("'stream' must be a boolean", "invalid_stream")
    _check_hints(body)
    messages, remote_only = _messages(body.get("messages"))
    if body.get("system") is not None:
        system = _texts(body["system"], "system", skip_billing=True)
        if system:
            messages.insert(0, {"role": "system", "content": system})
    chat: dict[str, Any] = {"messages": messages, "stream": stream}
    for key in ("model", "tags"):
        if key in body:
            chat[key] = body[key]
    if max_tokens is not None:
        chat["max_tokens"] = max_tokens
    _sampling(body, chat)
    tools = _tools(body.get("tools"), _referenced_tools(body["messages"]))
    if tools:
        chat["tools"] = tools
    _tool_choice(body.get("tool_choice"), chat)
    response_format = (_output_config(body.get("output_config"), "output_config")
                       or _output_format(body.get("output_format"), "output_format"))
    if response_format is not None:
        chat["response_format"] = response_format
    return chat, remote_only
