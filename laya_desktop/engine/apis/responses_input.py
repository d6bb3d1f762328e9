"""An OpenAI Responses request body -> the chat-completions body that the shared path checks.

Input items become chat messages (llama-server's `convert_responses_to_chatcmpl` does the same),
Responses' flat function tools become chat's nested ones, `text.format` becomes
`response_format`. What the Responses API accepts but has no meaning here is accepted; what would
change the answer and cannot be honoured is a 400 naming the field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.field_limits import TOOL_NAME, TOOL_NAME_RULE, check_tool_count
from laya_desktop.engine.response_store import ResponseStore

# Accepted, and without effect on a local answer: caching hints, tracing, billing, reasoning
# settings for models that do not reason, the store flag's other half (`include`).
NO_LOCAL_MEANING = ("reasoning", "include", "prompt_cache_key", "prompt_cache_retention", "metadata",
                    "service_tier", "user", "safety_identifier", "client_metadata", "stream_options")
HANDLED = ("model", "input", "instructions", "previous_response_id", "tools", "tool_choice",
           "parallel_tool_calls", "max_output_tokens", "temperature", "top_p", "top_logprobs",
           "text", "stream", "store", "truncation", "background", "tags")
# Laya's chat-completions sampling extensions, taken in Responses bodies too.
LAYA_SAMPLING = ("seed", "top_k", "min_p", "repeat_penalty", "stop", "frequency_penalty",
                 "presence_penalty")
KNOWN = set(NO_LOCAL_MEANING) | set(HANDLED) | set(LAYA_SAMPLING)
# Hosted tools that agents offer on every turn (Codex: `web_search`) and that a model here
# simply never calls: accepted and left out of the tools the model sees.
IGNORED_TOOL_TYPES = ("web_search", "web_search_preview")
MESSAGE_ROLES = ("user", "system", "developer", "assistant")
FIELD_NAMES = {"response_format": "text.format", "max_tokens": "max_output_tokens",
               "tools": "tools", "tool_choice": "tool_choice", "logprobs": "include",
               "top_logprobs": "top_logprobs", "messages": "input"}
HINT_TYPES = (("reasoning", dict, "an object"), ("stream_options", dict, "an object"),
              ("service_tier", str, "a string"), ("prompt_cache_retention", str, "a string"))
LOGPROBS_INCLUDE = "message.output_text.logprobs"
CUSTOM_PARAMETERS = {"type": "object", "properties": {"input": {"type": "string"}},
                     "required": ["input"]}


def previous_not_found(response_id: str) -> ApiError:
    return ApiError(404, f"Previous response with id '{response_id}' not found.",
                    "invalid_request_error", "previous_response_not_found",
                    extra={"param": "previous_response_id"})


@dataclass
class Converted:
    chat: dict
    conversation: list[dict]              # chat messages without the instructions, for the store
    unresolved_previous: str | None = None   # an id only a Responses upstream may know
    item_messages: dict[str, list[dict]] = field(default_factory=dict)
    tool_kinds: dict[str, str] = field(default_factory=dict)     # name -> "custom" (else function)
    namespaces: dict[str, str] = field(default_factory=dict)     # tool name -> its namespace
    ignored_tools: list[str] = field(default_factory=list)


# -- input items -------------------------------------------------------------------------------
def _text_of(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise bad_request(f"'{where}' must be a string", "invalid_input")
    return value


def _content(content: Any, where: str) -> str | list[dict]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"'{where}' must be a string or an array of content parts", "invalid_input")
    parts: list[dict] = []
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": _text_of(part.get("text"), at + ".text")})
        elif kind == "refusal":
            parts.append({"type": "text", "text": _text_of(part.get("refusal"), at + ".refusal")})
        elif kind == "input_image":
            if not isinstance(part.get("image_url"), str):
                raise bad_request(f"'{at}': only images given by 'image_url' are supported "
                                  "(this server has no Files API)", "unsupported_input")
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"],
                                                             "detail": part.get("detail") or "auto"}})
        elif kind == "input_file":
            if not isinstance(part.get("file_data"), str):
                raise bad_request(f"'{at}': only files given by 'file_data' are supported",
                                  "unsupported_input")
            spec = {"file_data": part["file_data"]}
            if isinstance(part.get("filename"), str):
                spec["filename"] = part["filename"]
            parts.append({"type": "file", "file": spec})
        else:
            raise bad_request(f"'{at}.type' {kind!r} is not supported (input_text, output_text, "
                              "refusal, input_image, input_file)", "unsupported_input")
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _tool_output(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = []
        for j, part in enumerate(output):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("input_text", "output_text", "text"):
                raise bad_request(f"'{where}[{j}].type' {kind!r}: a tool result can only hold text "
                                  "here", "unsupported_input")
            texts.append(_text_of(part.get("text"), f"{where}[{j}].text"))
        return "\n".join(texts)
    raise bad_request(f"'{where}' must be a string or an array of text parts", "invalid_input")


def _add_tool_call(messages: list[dict], call: dict) -> None:
    """Consecutive calls (and the text just before them) are one assistant turn in chat."""
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        # a new dict and list: the last message may be shared with a stored response
        messages[-1] = {**last, "tool_calls": [*last.get("tool_calls", []), call]}
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _call_id(item: dict, where: str) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise bad_request(f"'{where}.call_id' must be a non-empty string", "invalid_input")
    return call_id


def input_messages(items: Any, store: ResponseStore | None, where: str = "input"
                   ) -> tuple[list[dict], dict[str, list[dict]]]:
    """Input items -> chat messages, and each identified item's messages (for item_reference)."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}], {}
    if not isinstance(items, list):
        raise bad_request(f"'{where}' must be a string or an array of items", "invalid_input")
    messages: list[dict] = []
    by_id: dict[str, list[dict]] = {}
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise bad_request(f"'{at}' must be an object", "invalid_input")
        kind = item.get("type", "message" if "role" in item else None)
        added: list[dict] = []
        if kind == "message":
            role = item.get("role")
            if role not in MESSAGE_ROLES:
                raise bad_request(f"'{at}.role' must be one of {list(MESSAGE_ROLES)}, got {role!r}",
                                  "invalid_input")
            content = _content(item.get("content"), at + ".content")
            if role == "assistant" and not isinstance(content, str):
                raise bad_request(f"'{at}.content': an assistant message can only hold text",
                                  "invalid_input")
            added = [{"role": "system" if role == "developer" else role, "content": content}]
            messages += added
        elif kind in ("function_call", "custom_tool_call"):
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise bad_request(f"'{at}.name' must be a non-empty string", "invalid_input")
            if kind == "function_call":
                arguments = item.get("arguments", "{}")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments, ensure_ascii=False)
            else:
                arguments = json.dumps({"input": _text_of(item.get("input"), at + ".input")},
                                       ensure_ascii=False)
            call = {"id": _call_id(item, at), "type": "function",
                    "function": {"name": name, "arguments": arguments}}
            _add_tool_call(messages, call)
            added = [{"role": "assistant", "content": None, "tool_calls": [call]}]
        elif kind in ("function_call_output", "custom_tool_call_output"):
            added = [{"role": "tool", "tool_call_id": _call_id(item, at),
                      "content": _tool_output(item.get("output"), at + ".output")}]
            messages += added
        elif kind == "reasoning":
            continue  # a model's own reasoning (often encrypted): no model here can read it back
        elif kind == "item_reference":
            found = store.item(item.get("id")) if store is not None and isinstance(item.get("id"), str) else None
            if found is None:
                raise bad_request(f"'{at}.id': no stored item with id {item.get('id')!r}",
                                  "item_not_found")
            added = [dict(m) for m in found]
            messages += added
        else:
            raise bad_request(f"'{at}.type' {kind!r} is not supported (message, function_call, "
                              "function_call_output, custom_tool_call, custom_tool_call_output, "
                              "reasoning, item_reference)", "unsupported_input")
        if isinstance(item.get("id"), str) and added:
            by_id[item["id"]] = added
    return messages, by_id


def _merge_leading_system(messages: list[dict]) -> list[dict]:
    """Instructions and developer messages, one system message: many chat templates (Gemma,
    Llama 2, Mistral) accept a single system turn only, at the start."""
    n = 0
    while n < len(messages) and messages[n]["role"] == "system" and isinstance(messages[n]["content"], str):
        n += 1
    if n < 2:
        return messages
    merged = {"role": "system", "content": "\n\n".join(m["content"] for m in messages[:n])}
    return [merged, *messages[n:]]


# -- tools ----------------------------------------------------------------------------------------
def _function(tool: dict, where: str, parameters: Any = None, description: str | None = None) -> dict:
    name = tool.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise bad_request(f"'{where}.name' must be {TOOL_NAME_RULE}", "invalid_tools")
    fn: dict[str, Any] = {"name": name}
    if description is None:
        description = tool.get("description")
    if isinstance(description, str):
        fn["description"] = description
    fn["parameters"] = tool.get("parameters") if parameters is None else parameters
    if fn["parameters"] is None:
        fn["parameters"] = {"type": "object", "properties": {}}
    if isinstance(tool.get("strict"), bool):
        fn["strict"] = tool["strict"]
    return {"type": "function", "function": fn}


def _custom(tool: dict, where: str) -> dict:
    """A freeform tool: a function of one string, `input`; its grammar is shown, not enforced."""
    description = tool.get("description") if isinstance(tool.get("description"), str) else ""
    fmt = tool.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "grammar" and isinstance(fmt.get("definition"), str):
        description += f"\n\nThe input follows this {fmt.get('syntax', '')} grammar:\n{fmt['definition']}"
    return _function(tool, where, CUSTOM_PARAMETERS, description.strip() or None)


def _callable_tool(tool: Any, at: str, out: Converted) -> dict | None:
    """A function or custom tool as a chat function tool; None for any other type."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    if kind == "function":
        return _function(tool, at)
    if kind == "custom":
        converted = _custom(tool, at)   # checks the name first
        out.tool_kinds[tool["name"]] = "custom"
        return converted
    return None


def convert_tools(tools: Any, out: Converted) -> list[dict]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad_request("'tools' must be an array", "invalid_tools")
    chat_tools: list[dict] = []
    for i, tool in enumerate(tools):
        at = f"tools[{i}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        converted = _callable_tool(tool, at, out)
        if converted is not None:
            chat_tools.append(converted)
        elif kind == "namespace":
            inner = tool.get("tools")
            if not isinstance(inner, list):
                raise bad_request(f"'{at}.tools' must be an array", "invalid_tools")
            for j, sub in enumerate(inner):
                sub_at = f"{at}.tools[{j}]"
                converted = _callable_tool(sub, sub_at, out)
                if converted is None:
                    sub_kind = sub.get("type") if isinstance(sub, dict) else None
                    raise bad_request(f"'{sub_at}.type' {sub_kind!r} is not supported",
                                      "unsupported_tool_type")
                chat_tools.append(converted)
                if isinstance(tool.get("name"), str):
                    out.namespaces[sub["name"]] = tool["name"]
        elif kind in IGNORED_TOOL_TYPES:
            out.ignored_tools.append(f"{at} ({kind})")
        else:
            raise bad_request(f"'{at}.type' {kind!r} is not supported here (function, custom and "
                              "namespace tools; web_search is accepted and never called)",
                              "unsupported_tool_type")
    return chat_tools


def _allowed_names(tools: Any) -> set[str]:
    """The names in `tool_choice.tools` ([{"type": "function", "name": ...}, ...])."""
    if not isinstance(tools, list):
        raise bad_request("'tool_choice.tools' must be an array of tools", "invalid_tool_choice")
    check_tool_count("tool_choice.tools", tools, "responses")
    names = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise bad_request(f"'tool_choice.tools[{i}]' must be an object", "invalid_tool_choice")
        name = tool.get("name")
        if name is None and tool.get("type") not in ("function", "custom"):
            continue   # a hosted tool (web_search): never called here
        if not isinstance(name, str):
            raise bad_request(f"'tool_choice.tools[{i}].name' must be a string",
                              "invalid_tool_choice")
        names.add(name)
    return names


def convert_tool_choice(choice: Any, chat_tools: list[dict]) -> tuple[Any, list[dict]]:
    if choice is None or choice in ("auto", "none", "required"):
        return choice, chat_tools
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("function", "custom"):
        if not isinstance(choice.get("name"), str):
            raise bad_request("'tool_choice.name' must be a string", "invalid_tool_choice")
        return {"type": "function", "function": {"name": choice["name"]}}, chat_tools
    if kind == "allowed_tools":
        allowed = _allowed_names(choice.get("tools"))
        mode = choice.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise bad_request("'tool_choice.mode' must be 'auto' or 'required'", "invalid_tool_choice")
        return mode, [t for t in chat_tools if t["function"]["name"] in allowed]
    raise bad_request(f"'tool_choice' {choice!r} is not supported (auto, none, required, "
                      "{\"type\": \"function\", \"name\": ...}, allowed_tools)", "invalid_tool_choice")


# -- text.format and sampling ---------------------------------------------------------------------
def convert_text_format(text: Any) -> dict | None:
    if text is None:
        return None
    if not isinstance(text, dict):
        raise bad_request("'text' must be an object", "invalid_text")
    verbosity = text.get("verbosity")
    if verbosity is not None and verbosity not in ("low", "medium", "high"):
        raise bad_request("'text.verbosity' must be 'low', 'medium' or 'high'", "invalid_text")
    fmt = text.get("format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        if not isinstance(fmt.get("schema"), dict):
            raise bad_request("'text.format.schema' must be a JSON schema object",
                              "invalid_response_format")
        spec = {"name": fmt.get("name") or "response", "schema": fmt["schema"]}
        for key in ("strict", "description"):
            if key in fmt and fmt[key] is not None:
                spec[key] = fmt[key]
        return {"type": "json_schema", "json_schema": spec}
    raise bad_request("'text.format.type' must be 'text', 'json_object' or 'json_schema'",
                      "invalid_response_format")


def _refuse(body: dict) -> None:
    for name in body:
        if name not in KNOWN:
            raise bad_request(f"Unknown parameter: '{name}'.", "unknown_parameter")
    if body.get("background"):
        raise bad_request("'background' responses are not supported by this server",
                          "unsupported_parameter")
    if body.get("truncation") not in (None, "disabled"):
        raise bad_request("'truncation' must be 'disabled' here: a prompt is never cut to fit",
                          "unsupported_parameter")
    include = body.get("include")
    if include is not None and not (isinstance(include, list) and all(isinstance(x, str) for x in include)):
        raise bad_request("'include' must be an array of strings", "invalid_include")
    store = body.get("store")
    if store is not None and not isinstance(store, bool):
        raise bad_request("'store' must be a boolean", "invalid_store")
    # accepted without effect, but still of the type the API documents (user, metadata and the
    # ids: engine/field_limits.py)
    for name, kind, shown in HINT_TYPES:
        if body.get(name) is not None and not isinstance(body[name], kind):
            raise bad_request(f"'{name}' must be {shown}", f"invalid_{name}")


def to_chat(body: Any, store: ResponseStore | None, defer_unknown: bool = False) -> Converted:
    """`defer_unknown`: an unknown `previous_response_id` is left for a `responses: true`
    upstream to resolve (`require_resolved` refuses it for every other target)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    _refuse(body)
    if "input" not in body and not body.get("previous_response_id"):
        raise bad_request("'input' is required", "invalid_input")
    conversation: list[dict] = []
    unresolved = None
    previous = body.get("previous_response_id")
    if previous is not None:
        if not isinstance(previous, str):
            raise bad_request("'previous_response_id' must be a string", "invalid_previous_response_id")
        record = store.get(previous) if store is not None else None
        if record is not None:
            conversation = [dict(m) for m in record.messages]
        elif defer_unknown:
            unresolved = previous
        else:
            raise previous_not_found(previous)
    new, by_id = input_messages(body.get("input", []), store)
    conversation += new
    messages = list(conversation)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        messages.insert(0, {"role": "system", "content": instructions})
    elif isinstance(instructions, list):
        messages[:0] = input_messages(instructions, store, "instructions")[0]
    elif instructions is not None:
        raise bad_request("'instructions' must be a string or an array of items", "invalid_instructions")
    if not messages:
        raise bad_request("'input' must not be empty", "invalid_input")

    out = Converted(chat={}, conversation=conversation, item_messages=by_id,
                    unresolved_previous=unresolved)
    chat: dict[str, Any] = {"messages": _merge_leading_system(messages)}
    for name in ("model", "stream", "temperature", "top_p", "parallel_tool_calls", "tags", *LAYA_SAMPLING):
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("stream"):
        chat["stream_options"] = {"include_usage": True}
    limit = body.get("max_output_tokens")
    if limit is not None:
        # checked here too: the chat check would name it `max_tokens`
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise bad_request("'max_output_tokens' must be a positive integer", "invalid_max_output_tokens")
        chat["max_tokens"] = limit
    tools = convert_tools(body.get("tools"), out)
    choice, tools = convert_tool_choice(body.get("tool_choice"), tools)
    if tools:
        chat["tools"] = tools
    if choice is not None and (tools or choice != "auto"):
        chat["tool_choice"] = choice
    fmt = convert_text_format(body.get("text"))
    if fmt is not None:
        chat["response_format"] = fmt
    top = body.get("top_logprobs")
    if LOGPROBS_INCLUDE in (body.get("include") or []) or top:
        chat["logprobs"] = True
        if top is not None:
            chat["top_logprobs"] = top
    out.chat = chat
    return out
