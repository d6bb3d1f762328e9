"""Checking OpenAI request bodies and turning them into runner commands.

A malformed request gets a 400 naming the offending field, before any routing or model work.
"""
from __future__ import annotations

from typing import Any

from laya_desktop.engine.errors import bad_request

ROLES = {"system", "user", "assistant", "tool", "developer", "function"}
MAX_STOP_STRINGS = 16


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


def message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""


def _sampling_params(body: dict) -> dict:
    params: dict[str, Any] = {}
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None:
        if not _is_int(max_tokens) or max_tokens < 1:
            raise bad_request("'max_tokens' must be a positive integer", "invalid_max_tokens")
        params["max_tokens"] = max_tokens
    ranges = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0), "min_p": (0.0, 1.0),
              "frequency_penalty": (-2.0, 2.0), "presence_penalty": (-2.0, 2.0),
              "repeat_penalty": (0.0, 10.0)}
    for name, (lo, hi) in ranges.items():
        value = body.get(name)
        if value is None:
            continue
        if not _is_number(value) or not lo <= value <= hi:
            raise bad_request(f"'{name}' must be a number between {lo} and {hi}", f"invalid_{name}")
        params[name] = float(value)
    for name in ("top_k", "seed"):
        value = body.get(name)
        if value is None:
            continue
        if not _is_int(value):
            raise bad_request(f"'{name}' must be an integer", f"invalid_{name}")
        params[name] = value
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


def chat_command(body: Any) -> dict:
    _check_common(body)
    _check_messages(body.get("messages"))
    messages = [{"role": m["role"], "content": message_text(m.get("content"))}
                for m in body["messages"]]
    return {"kind": "chat", "messages": messages, "params": _sampling_params(body)}


def completion_command(body: Any) -> dict:
    _check_common(body)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise bad_request("'prompt' must be a string (batched prompts are not supported)",
                          "invalid_prompt")
    return {"kind": "completion", "prompt": prompt, "params": _sampling_params(body)}


def wants_usage_in_stream(body: dict) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))
