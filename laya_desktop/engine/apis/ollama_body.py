"""Ollama's request bodies (/api/chat, /api/generate, /api/embed, /api/embeddings) -> the shared Call.

A chat or generate body becomes an OpenAI chat body, which request_body.chat_call checks and turns
into the runner command like any chat request; `/api/generate` with `raw: true` becomes a
completion (the prompt as it is, no template). What the engine cannot honour is refused by name:
- `options` that fix how a model is loaded (num_gpu, num_thread, use_mmap…) live in models.yaml;
  `num_ctx` and `keep_alive` are checked against the model that routing chose (ollama_terms.py);
  Ollama's load and unload idioms (an empty prompt, or no messages, with or without
  `keep_alive: 0`) are answered by ollama.py without a generation;
- `think` other than false: no thinking model here; `template`, `context`, `suffix`, `truncate:
  true`, `shift: true`, `dimensions`.
`images` become image parts, which only a remote model takes (a local one refuses them by name).
"""
from __future__ import annotations

import json
import time
from typing import Any

from laya_desktop.config.sampling import KNOBS
from laya_desktop.engine.apis.ollama_terms import keep_alive_seconds, model_checks
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.request_body import chat_call, tool_calls_of

API = "ollama"
ROLES = ("system", "user", "assistant", "tool")
MAX_INPUTS = 2048
# Options that Ollama applies when it loads a model: models.yaml's fields here.
LOAD_OPTIONS = {"num_gpu": "n_gpu_layers", "main_gpu": None, "low_vram": None,
                "num_thread": "n_threads", "num_batch": None, "numa": None, "use_mmap": None,
                "use_mlock": None, "f16_kv": "kv_cache_type", "vocab_only": None,
                "logits_all": None, "embedding_only": "embedding"}
FIELD_NAMES = {"max_tokens": "options.num_predict", "stop": "options.stop", "seed": "options.seed",
               "response_format": "format", "tools": "tools", "logprobs": "logprobs",
               "top_logprobs": "top_logprobs", **{k: f"options.{k}" for k in KNOBS}}
# `tags` and `tool_choice` are Laya's own (routing tags; forcing a call, as OpenAI's field does)
CHAT_FIELDS = {"model", "messages", "tools", "format", "options", "stream", "keep_alive", "think",
               "tags", "tool_choice", "logprobs", "top_logprobs", "truncate", "shift"}
GENERATE_FIELDS = {"model", "prompt", "suffix", "system", "template", "context", "raw", "images",
                   "format", "options", "stream", "keep_alive", "think", "tags", "logprobs",
                   "top_logprobs", "truncate", "shift"}
EMBED_FIELDS = {"model", "input", "truncate", "options", "keep_alive", "dimensions", "tags"}
LEGACY_EMBED_FIELDS = {"model", "prompt", "options", "keep_alive", "tags"}
# The first bytes of base64 image data -> its media type (a data URL needs one).
IMAGE_PREFIXES = {"iVBOR": "image/png", "/9j/": "image/jpeg", "R0lGOD": "image/gif",
                  "UklGR": "image/webp"}


def _refuse(name: str, why: str) -> None:
    raise bad_request(f"'{name}' is not supported by this server: {why}", "unsupported_parameter")


def _check_fields(body: Any, known: set[str]) -> dict:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    unknown = sorted(k for k in body if k not in known)
    if unknown:
        raise bad_request(f"unknown field '{unknown[0]}'", "unknown_parameter")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("'model' must be a string", "invalid_model")
    return body


def _stream(body: dict) -> bool:
    stream = body.get("stream", True)   # Ollama streams unless told not to
    if stream is None:
        return True
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be a boolean", "invalid_stream")
    return stream


def _common(body: dict) -> None:
    think = body.get("think")
    if think not in (None, False):
        _refuse("think", "no model here has a thinking mode; send false or leave it out")
    if body.get("truncate") is True:
        _refuse("truncate", "a prompt longer than the model's n_ctx is refused "
                "(context_length_exceeded), never cut")
    if body.get("shift") is True:
        _refuse("shift", "generation that reaches n_ctx stops with done_reason 'length'")
    for name in ("truncate", "shift"):
        if body.get(name) not in (None, True, False):
            raise bad_request(f"'{name}' must be a boolean", f"invalid_{name}")


def _options(body: dict, chat: dict, options: dict) -> None:
    """`options` -> the chat body's sampling fields; num_ctx into `options` (ollama_terms.py)."""
    given = body.get("options")
    if given is None:
        return
    if not isinstance(given, dict):
        raise bad_request("'options' must be an object", "invalid_options")
    for name, value in given.items():
        if value is None:
            continue
        if name in LOAD_OPTIONS:
            field = LOAD_OPTIONS[name]
            where = f"the model's '{field}' in models.yaml" if field else "models.yaml"
            _refuse(f"options.{name}", f"it fixes how the model is loaded: see {where}")
        if name == "num_ctx":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad_request("'options.num_ctx' must be a positive integer", "invalid_num_ctx")
            options["num_ctx"] = value
        elif name == "num_predict":
            if isinstance(value, bool) or not isinstance(value, int) or value == 0 or value < -2:
                raise bad_request("'options.num_predict' must be a positive integer, or -1 "
                                  "(no limit) or -2 (fill the context)", "invalid_num_predict")
            if value > 0:   # -1 and -2: up to the model's n_ctx, which is the engine's default
                chat["max_tokens"] = value
        elif name in KNOBS:
            problem = KNOBS[name].problem(value)
            if problem:
                raise bad_request(f"'options.{name}' {problem}", f"invalid_{name}")
            chat[name] = value
        elif name == "seed":
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad_request("'options.seed' must be an integer", "invalid_seed")
            chat["seed"] = value
        elif name == "stop":
            chat["stop"] = [value] if isinstance(value, str) else value   # chat_call checks them
        else:
            _refuse(f"options.{name}", "this engine has no such sampling option")


def _format(body: dict, chat: dict) -> None:
    fmt = body.get("format")
    if fmt is None or fmt == "":
        return
    if fmt == "json":
        chat["response_format"] = {"type": "json_object"}
    elif isinstance(fmt, dict):
        chat["response_format"] = {"type": "json_schema", "json_schema": {"schema": fmt}}
    else:
        raise bad_request("'format' must be \"json\" or a JSON schema object", "invalid_format")


def _image_parts(images: Any, where: str) -> list[dict]:
    if images is None:
        return []
    if not isinstance(images, list) or not all(isinstance(i, str) and i for i in images):
        raise bad_request(f"'{where}' must be an array of base64 strings", "invalid_images")
    parts = []
    for k, data in enumerate(images):
        media = next((m for p, m in IMAGE_PREFIXES.items() if data.startswith(p)), None)
        if media is None:
            raise bad_request(f"'{where}[{k}]' is not a base64 PNG, JPEG, GIF or WebP image",
                              "invalid_images")
        parts.append({"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}})
    return parts


def _tool_calls(calls: Any, where: str, turn: int) -> list[dict]:
    """Ollama's tool calls ({"function": {"name", "arguments": {…}}}) in OpenAI's shape; its
    arguments are an object (some clients send OpenAI's JSON text), nothing else."""
    for k, call in enumerate(calls if isinstance(calls, list) else []):
        fn = call.get("function") if isinstance(call, dict) else None
        arguments = fn.get("arguments", {}) if isinstance(fn, dict) else {}
        if not isinstance(arguments, (str, dict)):
            raise bad_request(f"'{where}[{k}].function.arguments' must be an object",
                              "invalid_messages")
    return tool_calls_of(calls, where, id_prefix=f"call_{turn}_")


def chat_messages(messages: Any) -> tuple[list[dict], list[str]]:
    """Ollama's messages -> OpenAI chat messages, and the paths of their images.

    A tool result names its call by `tool_call_id`, or else by `tool_name` (Ollama's own clients
    send only that): it answers the earliest call of that name not yet answered. An assistant's
    `thinking` stays out of the prompt, as Ollama's own templates leave it."""
    if not isinstance(messages, list):
        raise bad_request("'messages' must be an array", "invalid_messages")
    out, images, pending = [], [], []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise bad_request(f"'{where}' must be an object", "invalid_messages")
        role = m.get("role")
        role = role.lower() if isinstance(role, str) else role   # Ollama lowercases it too
        if role not in ROLES:
            raise bad_request(f"'{where}.role' must be one of {list(ROLES)}, got {m.get('role')!r}",
                              "invalid_messages")
        content = m.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise bad_request(f"'{where}.content' must be a string", "invalid_messages")
        if m.get("thinking") is not None and not isinstance(m.get("thinking"), str):
            raise bad_request(f"'{where}.thinking' must be a string", "invalid_messages")
        message: dict[str, Any] = {"role": role, "content": content}
        parts = _image_parts(m.get("images"), f"{where}.images")
        if parts:
            images.append(f"{where}.images")
            message["content"] = ([{"type": "text", "text": content}] if content else []) + parts
        if m.get("tool_calls") is not None and role == "assistant":
            message["tool_calls"] = _tool_calls(m["tool_calls"], f"{where}.tool_calls", i)
            pending = [(c["id"], c["function"]["name"]) for c in message["tool_calls"]]
        if role == "tool":
            name, call_id = m.get("tool_name"), m.get("tool_call_id")
            if name is not None and not isinstance(name, str):
                raise bad_request(f"'{where}.tool_name' must be a string", "invalid_messages")
            if not isinstance(call_id, str) or not call_id:
                match = next((p for p in pending if p[1] == name), pending[0] if pending else None)
                call_id = match[0] if match else f"call_{i}"
            pending = [p for p in pending if p[0] != call_id]
            message["tool_call_id"] = call_id
            if name:
                message["name"] = name
        out.append(message)
    return out, images


def _finish(call: Call, body: dict, stream: bool, options: dict, images: list[str]) -> Call:
    call.stream = stream
    call.options["model_checks"] = model_checks(options.get("num_ctx"), body.get("keep_alive"))
    if images:
        call.remote_only = images
    call.options["started_ns"] = time.monotonic_ns()
    return call


def _logprobs(body: dict, chat: dict) -> None:
    for name in ("logprobs", "top_logprobs"):
        if body.get(name) is not None:
            chat[name] = body[name]
    if chat.get("top_logprobs") and "logprobs" not in chat:
        chat["logprobs"] = True   # Ollama takes top_logprobs alone


def chat_request(body: Any, path: str = "/api/chat") -> Call:
    body = _check_fields(body, CHAT_FIELDS)
    _common(body)
    stream = _stream(body)
    messages, images = chat_messages(body.get("messages"))
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages, "tags": body.get("tags")}
    for name in ("tools", "tool_choice"):
        if body.get(name) is not None:
            chat[name] = body[name]
    options: dict = {}
    _options(body, chat, options)
    _format(body, chat)
    _logprobs(body, chat)
    call = chat_call(chat, api=API, path=path, body=body, field_names=FIELD_NAMES)
    return _finish(call, body, stream, options, images)


def generate_request(body: Any, path: str = "/api/generate") -> Call:
    body = _check_fields(body, GENERATE_FIELDS)
    _common(body)
    stream = _stream(body)
    for name, why in (("template", "the model's own chat template is used (models.yaml "
                       "chat_format)"), ("suffix", "no fill-in-the-middle"),
                      ("context", "send the conversation to /api/chat instead")):
        if body.get(name) not in (None, "", []):
            _refuse(name, why)
    prompt, system, raw = body.get("prompt", ""), body.get("system"), body.get("raw", False)
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        raise bad_request("'prompt' must be a string", "invalid_prompt")
    if system is not None and not isinstance(system, str):
        raise bad_request("'system' must be a string", "invalid_system")
    if raw not in (None, True, False):
        raise bad_request("'raw' must be a boolean", "invalid_raw")
    if raw and system:
        _refuse("system", "a raw prompt has no template to put it in")
    user: dict[str, Any] = {"role": "user", "content": prompt}
    parts = _image_parts(body.get("images"), "images")
    if parts:
        user["content"] = ([{"type": "text", "text": prompt}] if prompt else []) + parts
    messages = ([{"role": "system", "content": system}] if system else []) + [user]
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages, "tags": body.get("tags")}
    options: dict = {}
    _options(body, chat, options)
    _format(body, chat)
    _logprobs(body, chat)
    call = chat_call(chat, api=API, path=path, body=body, field_names=FIELD_NAMES)
    if raw:
        if parts:
            _refuse("images", "a raw prompt has no template to put them in")
        # The same checks, the prompt as it is: the rules see it as a completion's prompt.
        call.command = {"kind": "completion", "prompt": prompt, "params": call.command["params"]}
        call.chat = {k: v for k, v in chat.items() if k != "messages"} | {"prompt": prompt}
    return _finish(call, body, stream, options, ["images"] if parts else [])


def embed_request(body: Any, path: str = "/api/embed", legacy: bool = False) -> Call:
    body = _check_fields(body, LEGACY_EMBED_FIELDS if legacy else EMBED_FIELDS)
    if body.get("truncate") is True:
        _refuse("truncate", "an input longer than the model's n_ctx is refused, never cut")
    if body.get("dimensions") is not None:
        _refuse("dimensions", "the model's own size is returned")
    if body.get("options"):
        name = next(iter(body["options"])) if isinstance(body["options"], dict) else None
        if name is None:
            raise bad_request("'options' must be an object", "invalid_options")
        _refuse(f"options.{name}", "an embedding takes no options")
    raw = body.get("prompt") if legacy else body.get("input")
    where = "prompt" if legacy else "input"
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs or len(inputs) > MAX_INPUTS:
        raise bad_request(f"'{where}' must be a string or an array of 1 to {MAX_INPUTS} strings",
                          "invalid_input")
    for i, item in enumerate(inputs):
        if not isinstance(item, str) or not item:
            raise bad_request(f"'{where}[{i}]' must be a non-empty string", "invalid_input")
    routed = {"model": body.get("model"), "prompt": inputs, "tags": body.get("tags")}
    call = Call(api=API, path=path, body=body, chat=routed,
                command={"kind": "embedding", "inputs": inputs, "params": {}})
    return _finish(call, body, False, {}, [])


def is_load_idiom(body: Any, kind: str) -> bool:
    """Ollama's "load the model" / "unload the model" requests: a model and nothing to answer
    (no prompt, no messages), with or without keep_alive."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return False
    if kind == "chat":
        return body.get("messages") in (None, [])
    return body.get("prompt") in (None, "") and not body.get("images")


def unload_asked(body: dict) -> bool:
    try:
        return keep_alive_seconds(body.get("keep_alive")) == 0
    except ApiError:
        return False


