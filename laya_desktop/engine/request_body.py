"""Checking OpenAI chat and completions bodies and turning them into a `Call`.

Every API ends here: the Responses and Messages adapters first convert their bodies into a chat
body, so sampling, tools, tool_choice and response_format are checked in one place. A malformed
request gets a 400 naming the offending field, before any routing or model work.
"""
from __future__ import annotations

import json
from typing import Any

from laya_desktop.config.message_text import TEXT_PART_TYPES, message_text
from laya_desktop.config.sampling import KNOBS, KnobError, read_knobs
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import bad_request
from laya_desktop.engine.field_limits import (MAX_STOP_STRINGS, TOOL_NAME, TOOL_NAME_RULE,
                                              check_tool_count)

ROLES = ("system", "user", "assistant", "tool", "developer", "function")
MAX_TOP_LOGPROBS = 20
# Chat fields that no backend here can honour: refused by name rather than dropped.
UNSUPPORTED_CHAT_FIELDS = ("audio", "prediction", "web_search_options", "functions", "function_call")
MAX_N = 8   # choices per request; each is a sequence on the model, so its `parallel` caps it too
# Hints that change nothing in a local model's answer: accepted, as the Responses adapter takes
# `reasoning`; a remote OpenAI upstream gets them as sent.
NO_EFFECT_FIELDS = frozenset(("user", "metadata", "store", "service_tier", "prompt_cache_key",
                              "prompt_cache_retention", "safety_identifier", "reasoning_effort",
                              "verbosity", "tags", "stream_options"))
SHARED_FIELDS = frozenset(("model", "stream", "max_tokens", "stop", "seed", "logit_bias", "n",
                           "logprobs", "top_logprobs", "json_schema", "grammar", "cache_prompt",
                           "id_slot", "timings_per_token", "verbose", *KNOBS)) | NO_EFFECT_FIELDS
CHAT_FIELDS = SHARED_FIELDS | {"messages", "max_completion_tokens", "tools", "tool_choice",
                               "parallel_tool_calls", "response_format", *UNSUPPORTED_CHAT_FIELDS}
COMPLETION_FIELDS = SHARED_FIELDS | {"prompt", "echo", "suffix", "best_of", "response_format"}
# llama-server's own request fields that Laya does not take, each with the reason it gives.
LLAMA_SERVER_REFUSED = {
    "n_probs": "use 'logprobs' and 'top_logprobs'",
    "samplers": "the sampler order is fixed (penalties, DRY, top-k, top-p, min-p, temperature)",
    "typical_p": "locally typical sampling is not implemented",
    "mirostat": "mirostat sampling is not implemented",
    "mirostat_tau": "mirostat sampling is not implemented",
    "mirostat_eta": "mirostat sampling is not implemented",
    "ignore_eos": "generation always stops at the end-of-generation token",
    "return_progress": "prompt progress is not reported",
    "continue_final_message": "not supported",
    "n_keep": "context shifting is not implemented",
    "n_indent": "not implemented",
    "t_max_predict_ms": "not implemented; use 'max_tokens'",
    "post_sampling_probs": "use 'logprobs' and 'top_logprobs'",
    "return_tokens": "not implemented",
    "dynatemp_range": "dynamic temperature is not implemented",
    "dynatemp_exponent": "dynamic temperature is not implemented",
    "xtc_probability": "XTC sampling is not implemented",
    "xtc_threshold": "XTC sampling is not implemented",
    "top_n_sigma": "top-n-sigma sampling is not implemented",
    "dry_sequence_breakers": "DRY's sequence breakers are llama.cpp's defaults",
    "penalize_nl": "not implemented",
    "lora": "LoRA adapters are not supported",
    "chat_template_kwargs": "not implemented",
    "reasoning_format": "not implemented",
    "image_data": "send images as content parts (to a remote model)",
}


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
            raise bad_request(f"'{where}.role' must be one of {list(ROLES)}, got {role!r}",
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


def tool_calls_of(calls: Any, where: str, id_prefix: str = "call_") -> list[dict]:
    """An assistant turn's tool calls in OpenAI's shape (arguments as JSON text); a call without
    an id gets `id_prefix` and its position."""
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
        out.append({"id": str(call.get("id") or f"{id_prefix}{k}"), "type": "function",
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
            message["tool_calls"] = tool_calls_of(m["tool_calls"], f"messages[{i}].tool_calls")
        if role == "tool":
            message["tool_call_id"] = str(m.get("tool_call_id") or "")
        if isinstance(m.get("name"), str):
            message["name"] = m["name"]
        out.append(message)
    return out


def check_tools(tools: Any, where: str = "tools", api: str = "chat") -> list[dict]:
    """OpenAI function tools, checked; the same shape comes back with `parameters` filled in."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad_request(f"'{where}' must be an array", "invalid_tools")
    check_tool_count(where, tools, api)   # again after a conversion: Responses namespaces expand
    out, seen = [], set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise bad_request(f"'{where}[{i}].type' {kind!r} is not supported (only 'function' tools)",
                              "unsupported_tool_type")
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not TOOL_NAME.match(fn["name"]):
            raise bad_request(f"'{where}[{i}].function.name' must be {TOOL_NAME_RULE}",
                              "invalid_tools")
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
        schema = fmt.get("schema")   # llama-server's: a schema beside json_object
        if schema is not None and not isinstance(schema, dict):
            raise bad_request(f"'{where}.schema' must be a JSON schema object",
                              "invalid_response_format")
        return schema or {"type": "object"}
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
    if n is not None and (not _is_int(n) or not 1 <= n <= MAX_N):
        raise bad_request(f"'n' must be an integer from 1 to {MAX_N}", "invalid_n")
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


def refuse_unknown(body: dict, known: frozenset) -> None:
    """A field this API does not know, or a llama-server field it does not take: 400 by name.
    A set difference, so a request with only known fields pays next to nothing."""
    extra = body.keys() - known
    if not extra:
        return
    name = sorted(extra)[0]
    if name in LLAMA_SERVER_REFUSED:
        raise bad_request(f"'{name}' is not supported by this server: {LLAMA_SERVER_REFUSED[name]}",
                          "unsupported_parameter")
    raise bad_request(f"unknown field '{name}'", "unknown_parameter")


def _llama_server_options(body: dict) -> None:
    """llama-server's slot, cache and output flags: their types (their effects are elsewhere)."""
    if not isinstance(body.get("cache_prompt", True), bool):
        raise bad_request("'cache_prompt' must be a boolean", "invalid_cache_prompt")
    # id_slot asks for a slot to reuse its KV; Laya's runner finds the slot holding the longest
    # prefix itself, so any slot id means the same answer: taken, not acted on.
    slot = body.get("id_slot")
    if slot is not None and (not _is_int(slot) or slot < -1):
        raise bad_request("'id_slot' must be an integer from -1", "invalid_id_slot")
    for flag in ("timings_per_token", "verbose"):
        if not isinstance(body.get(flag, False), bool):
            raise bad_request(f"'{flag}' must be a boolean", f"invalid_{flag}")


def choice_count(body: dict) -> int:
    return body.get("n") or 1


def _top_level_schema(body: dict, where: str) -> dict | None:
    schema = body.get("json_schema")
    if schema is not None and not isinstance(schema, dict):
        raise bad_request(f"'{where}' must be a JSON schema object", "invalid_response_format")
    return schema


def constrain(params: dict, body: dict, schema: dict | None, schema_field: str) -> None:
    """The output's constraint: a JSON schema, or llama-server's raw GBNF `grammar` (not both).
    The grammar's size is checked with the schemas' (dispatch.check_local), its syntax by
    llama.cpp on the runner's grammar worker."""
    grammar = body.get("grammar")
    if grammar is not None:
        if not isinstance(grammar, str) or not grammar.strip():
            raise bad_request("'grammar' must be a non-empty string of GBNF", "invalid_grammar")
        if schema is not None:
            raise bad_request(f"'grammar' and '{schema_field}' cannot be given together: each "
                              "constrains the whole output", "invalid_grammar")
        params["grammar"] = grammar
    elif schema is not None:
        params["json_schema"] = schema


def fresh_prompt(params: dict, body: dict) -> None:
    """llama-server's `cache_prompt: false`: the whole prompt is read again, no slot's or saved
    prefix reused (the answer is the same up to the float differences of another batch split)."""
    if body.get("cache_prompt") is False:
        params["cache_prompt"] = False


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
    if api == "chat":   # the other APIs checked their own fields before converting
        refuse_unknown(chat, CHAT_FIELDS)
        _llama_server_options(chat)
    _check_messages(chat.get("messages"))
    _refuse_unsupported(chat, UNSUPPORTED_CHAT_FIELDS, field_names)
    params = _sampling_params(chat)
    _logprob_params(chat, params)
    tools = check_tools(chat.get("tools"), (field_names or {}).get("tools", "tools"), api)
    choice = check_tool_choice(chat.get("tool_choice"), tools,
                               (field_names or {}).get("tool_choice", "tool_choice"))
    parallel = chat.get("parallel_tool_calls", True)
    if not isinstance(parallel, bool):
        raise bad_request("'parallel_tool_calls' must be a boolean", "invalid_parallel_tool_calls")
    schema = forced_call_schema(tools, choice) if tools else None
    if schema is None:
        schema = response_format_schema(chat.get("response_format"),
                                        (field_names or {}).get("response_format", "response_format"))
    schema_field = (field_names or {}).get("response_format", "response_format")
    if schema is None and api == "chat":
        schema = _top_level_schema(chat, "json_schema")
        schema_field = "json_schema"
    if schema is not None and tools and choice not in ("auto", "none"):
        schema_field = (field_names or {}).get("tool_choice", "tool_choice")
    constrain(params, chat if api == "chat" else {}, schema, schema_field)
    if api == "chat":
        fresh_prompt(params, chat)
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
    refuse_unknown(body, COMPLETION_FIELDS)
    _llama_server_options(body)
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
    schema, schema_field = response_format_schema(body.get("response_format")), "response_format"
    if schema is None:
        schema, schema_field = _top_level_schema(body, "json_schema"), "json_schema"
    constrain(params, body, schema, schema_field)
    fresh_prompt(params, body)
    command = {"kind": "completion", "prompt": prompt, "params": params}
    return Call(api="completions", path=path, body=body, chat=body, command=command,
                stream=bool(body.get("stream")))


def wants_usage_in_stream(body: dict) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))
