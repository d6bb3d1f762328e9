"""Checking OpenAI chat and completions bodies and turning them into a `Call`.

Every API ends here: the Responses and Messages adapters first convert their bodies into a chat
body, so sampling, tools, tool_choice and response_format are checked in one place. A malformed
request gets a 400 naming the offending field, before any routing or model work.
"""
from __future__ import annotations

import json
import re
from typing import Any

from laya_desktop.config.message_text import TEXT_PART_TYPES, message_text
from laya_desktop.config.sampling import KnobError, read_knobs
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import bad_request

ROLES = {"system", "user", "assistant", "tool", "developer", "function"}
MAX_STOP_STRINGS = 16
MAX_TOP_LOGPROBS = 20
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
# Chat fields that no backend here can honour: refused by name rather than dropped.
UNSUPPORTED_CHAT_FIELDS = ("audio", "prediction", "web_search_options", "functions", "function_call")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty array", "invalid_messages")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad_request(f"'{where}' must be an object", "invalid_messages")
        role = message.get("role")
        if role not in ROLES:
            raise bad_request(f"'{where}.role' must be one of {sorted(ROLES)}, got {role!r}",
                              "invalid_messages")
        content = message.get("content")
        if content is None and role in ("assistant", "tool", "function"):
            continue
        if isinstance(content, str):
            continue
        if isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    raise bad_request(f"'{where}.content[{j}]' must be an object with a 'type'",
                                      "invalid_messages")
            continue
        raise bad_request(f"'{where}.content' must be a string or an array of parts",
                          "invalid_messages")


def _media_parts(messages: list) -> list[str]:
    """Paths of content parts that are not text (images, audio, files): only a remote takes them."""
    found = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list):
            found += [f"messages[{i}].content[{j}] ({part.get('type')})"
                      for j, part in enumerate(content) if part.get("type") not in TEXT_PART_TYPES]
    return found


def _tool_calls(calls: Any, where: str) -> list[dict]:
    if not isinstance(calls, list):
        raise bad_request(f"'{where}' must be an array", "invalid_messages")
    out = []
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise bad_request(f"'{where}[{k}].function.name' must be a string", "invalid_messages")
        arguments = fn.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append({"id": str(call.get("id") or f"call_{k}"), "type": "function",
                    "function": {"name": fn["name"], "arguments": arguments}})
    return out


def runner_messages(messages: list) -> list[dict]:
    """Chat messages as the runner's template gets them: text content, tool calls and results
    intact; `developer` is the system role under another name."""
    out = []
    for i, m in enumerate(messages):
        role = "system" if m["role"] == "developer" else m["role"]
        message: dict[str, Any] = {"role": role, "content": message_text(m.get("content"))}
        if m.get("tool_calls"):
            message["tool_calls"] = _tool_calls(m["tool_calls"], f"messages[{i}].tool_calls")
        if role == "tool":
            message["tool_call_id"] = str(m.get("tool_call_id") or "")
        if isinstance(m.get("name"), str):
            message["name"] = m["name"]
        out.append(message)
    return out


def check_tools(tools: Any, where: str = "tools") -> list[dict]:
    """OpenAI function tools, checked; the same shape comes back with `parameters` filled in."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad_request(f"'{where}' must be an array", "invalid_tools")
    out, seen = [], set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise bad_request(f"'{where}[{i}].type' {kind!r} is not supported (only 'function' tools)",
                              "unsupported_tool_type")
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not TOOL_NAME.match(fn["name"]):
            raise bad_request(f"'{where}[{i}].function.name' must be a name of letters, digits, "
                              "'_', '-', '.' or ':'", "invalid_tools")
        if fn["name"] in seen:
            raise bad_request(f"'{where}[{i}].function.name' {fn['name']!r} is given twice", "invalid_tools")
        seen.add(fn["name"])
        parameters = fn.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict):
            raise bad_request(f"'{where}[{i}].function.parameters' must be a JSON schema object",
                              "invalid_tools")
        entry = {"name": fn["name"], "parameters": parameters}
        if isinstance(fn.get("description"), str):
            entry["description"] = fn["description"]
        out.append({"type": "function", "function": entry})
    return out


def check_tool_choice(choice: Any, tools: list[dict], where: str = "tool_choice"):
    if choice is None:
        return "auto"
    if choice in ("auto", "none", "required"):
        if choice == "required" and not tools:
            raise bad_request(f"'{where}' is 'required' but no tools are given", "invalid_tool_choice")
        return choice
    name = None
    if isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else choice.get("name")
    if not isinstance(name, str):
        raise bad_request(f"'{where}' must be 'auto', 'none', 'required' or "
                          "{\"type\": \"function\", \"function\": {\"name\": ...}}", "invalid_tool_choice")
    if name not in {t["function"]["name"] for t in tools}:
        raise bad_request(f"'{where}' names the function {name!r}, which is not in 'tools'",
                          "invalid_tool_choice")
    return {"type": "function", "function": {"name": name}}


def forced_call_schema(tools: list[dict], choice) -> dict | None:
    """The JSON schema a forced tool call must follow ({"name", "arguments"}), or None."""
    if choice == "required":
        chosen = tools
    elif isinstance(choice, dict):
        chosen = [t for t in tools if t["function"]["name"] == choice["function"]["name"]]
    else:
        return None
    options = [{"type": "object",
                "properties": {"name": {"const": t["function"]["name"]},
                               "arguments": t["function"]["parameters"]},
                "required": ["name", "arguments"]} for t in chosen]
    return options[0] if len(options) == 1 else {"anyOf": options}


def response_format_schema(fmt: Any, where: str = "response_format") -> dict | None:
    """The JSON schema that `response_format` asks the output to follow, or None for text."""
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = fmt.get("json_schema", fmt)  # Responses puts the schema beside the type
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise bad_request(f"'{where}.json_schema.schema' must be a JSON schema object",
                              "invalid_response_format")
        return schema
    raise bad_request(f"'{where}.type' must be 'text', 'json_object' or 'json_schema'",
                      "invalid_response_format")


def _logprob_params(body: dict, params: dict) -> None:
    logprobs, top = body.get("logprobs"), body.get("top_logprobs")
    if logprobs is None and top is None:
        return
    if logprobs is not None and not isinstance(logprobs, bool):
        raise bad_request("'logprobs' must be a boolean", "invalid_logprobs")
    if top is not None and (not _is_int(top) or not 0 <= top <= MAX_TOP_LOGPROBS):
        raise bad_request(f"'top_logprobs' must be an integer from 0 to {MAX_TOP_LOGPROBS}",
                          "invalid_top_logprobs")
    if top and not logprobs:
        raise bad_request("'top_logprobs' needs 'logprobs': true", "invalid_top_logprobs")
    if logprobs:
        params["logprobs"] = True
        params["top_logprobs"] = top or 0


def _sampling_params(body: dict) -> dict:
    params: dict[str, Any] = {}
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None:
        if not _is_int(max_tokens) or max_tokens < 1:
            raise bad_request("'max_tokens' must be a positive integer", "invalid_max_tokens")
        params["max_tokens"] = max_tokens
    try:
        params.update(read_knobs(body))
    except KnobError as exc:
        raise bad_request(f"'{exc.name}' {exc.problem}", f"invalid_{exc.name}") from None
    seed = body.get("seed")
    if seed is not None:
        if not _is_int(seed):
            raise bad_request("'seed' must be an integer", "invalid_seed")
        params["seed"] = seed
    stop = body.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if (not isinstance(stop, list) or len(stop) > MAX_STOP_STRINGS
                or not all(isinstance(s, str) and s for s in stop)):
            raise bad_request(f"'stop' must be a string or an array of at most {MAX_STOP_STRINGS} "
                              "non-empty strings", "invalid_stop")
        params["stop"] = stop
    logit_bias = body.get("logit_bias")
    if logit_bias is not None:
        if not isinstance(logit_bias, dict) or not all(_is_number(v) for v in logit_bias.values()):
            raise bad_request("'logit_bias' must map token ids to numbers", "invalid_logit_bias")
        try:
            params["logit_bias"] = {int(k): float(v) for k, v in logit_bias.items()}
        except ValueError:
            raise bad_request("'logit_bias' keys must be token ids", "invalid_logit_bias") from None
    n = body.get("n")
    if n is not None and n != 1:
        raise bad_request("only n=1 is supported", "unsupported_n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be a boolean", "invalid_stream")
    return params


def _check_common(body: Any) -> None:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("'model' must be a string", "invalid_model")


def _refuse_unsupported(body: dict, names: tuple[str, ...], field_names: dict | None) -> None:
    for name in names:
        if body.get(name) is not None:
            shown = (field_names or {}).get(name, name)
            raise bad_request(f"'{shown}' is not supported by this server", "unsupported_parameter")


def chat_call(chat: Any, *, api: str = "chat", path: str = "/v1/chat/completions",
              body: dict | None = None, field_names: dict | None = None,
              options: dict | None = None) -> Call:
    """A chat-completions body (as sent, or converted from another API) -> the shared Call."""
    _check_common(chat)
    _check_messages(chat.get("messages"))
    _refuse_unsupported(chat, UNSUPPORTED_CHAT_FIELDS, field_names)
    params = _sampling_params(chat)
    _logprob_params(chat, params)
    tools = check_tools(chat.get("tools"), (field_names or {}).get("tools", "tools"))
    choice = check_tool_choice(chat.get("tool_choice"), tools,
                               (field_names or {}).get("tool_choice", "tool_choice"))
    parallel = chat.get("parallel_tool_calls", True)
    if not isinstance(parallel, bool):
        raise bad_request("'parallel_tool_calls' must be a boolean", "invalid_parallel_tool_calls")
    schema = forced_call_schema(tools, choice) if tools else None
    if schema is None:
        schema = response_format_schema(chat.get("response_format"),
                                        (field_names or {}).get("response_format", "response_format"))
    if schema is not None:
        params["json_schema"] = schema
    command: dict[str, Any] = {"kind": "chat", "messages": runner_messages(chat["messages"]),
                               "params": params}
    if tools and choice != "none":
        command["tools"] = tools
    return Call(api=api, path=path, body=chat if body is None else body, chat=chat, command=command,
                stream=bool(chat.get("stream")), tools=tools, tool_choice=choice,
                parallel_tool_calls=parallel, remote_only=_media_parts(chat["messages"]),
                field_names=field_names or {}, options=options or {})


def completion_call(body: Any, path: str = "/v1/completions") -> Call:
    _check_common(body)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise bad_request("'prompt' must be a string (batched prompts are not supported)",
                          "invalid_prompt")
    for name, allowed in (("echo", (None, False)), ("suffix", (None, "")), ("best_of", (None, 1))):
        if body.get(name) not in allowed:
            raise bad_request(f"'{name}' is not supported by this server", "unsupported_parameter")
    params = _sampling_params(body)
    logprobs = body.get("logprobs")
    if logprobs is not None:
        if not _is_int(logprobs) or not 0 <= logprobs <= 5:
            raise bad_request("'logprobs' must be an integer from 0 to 5", "invalid_logprobs")
        params["logprobs"], params["top_logprobs"] = True, logprobs
    command = {"kind": "completion", "prompt": prompt, "params": params}
    return Call(api="completions", path=path, body=body, chat=body, command=command,
                stream=bool(body.get("stream")))


def wants_usage_in_stream(body: dict) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))
