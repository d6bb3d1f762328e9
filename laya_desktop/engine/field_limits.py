"""Caps on a request's free-form fields, checked once for every API before its body is parsed.

The body limit (server.max_body_mb) bounds a request, not what the engine keeps of it: a name,
tag list or metadata map the size of the body would be kept in the route log, the request log's
"why", the Responses store and every error message that quotes it. Each field here has a cap
with its reason; going over it is a 400 naming the field, the cap and the size sent, with
OpenAI's codes (`string_above_max_length`, `array_above_max_length`,
`object_above_max_properties`). Only top-level fields: a few len() calls, no walk of the body.
Per-element checks (tool names) stay in the parsers, which walk those lists anyway.
"""
from __future__ import annotations

import re
from typing import Any

from laya_desktop.engine.errors import ApiError

# A model name or alias: registry names, `gpt-4o`, `org/repo:file.gguf`; none comes near 256.
MAX_MODEL_CHARS = 256
# Routing tags: a handful per request in practice (code, fast, private); 32 of 64 chars each
# leaves room while keeping a route-log entry small.
MAX_TAGS = 32
MAX_TAG_CHARS = 64
# OpenAI's own limits for `metadata` (Responses and chat); Anthropic's `metadata.user_id`
# (Claude Code: ~150 chars) fits them too.
MAX_METADATA_KEYS = 16
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512
# Codex's `client_metadata` is its own: 6 keys today, one a JSON document of turn facts (727
# chars in Codex 0.5x) that grows with its features; OpenAI documents no limits for it.
CLIENT_METADATA = (32, 64, 8192)
# End-user ids and cache keys: OpenAI documents 64 for safety_identifier and nothing for the
# others, which clients fill with ids and hashes (Codex: a 36-char UUID).
ID_FIELDS = {"user": 256, "safety_identifier": 64, "prompt_cache_key": 256}
# Stop strings: OpenAI takes 4, llama-server and Anthropic more. 16 costs nothing per token;
# each is held back from a stream until it cannot match, so its length is the holdback.
MAX_STOP_STRINGS = 16
MAX_STOP_CHARS = 256
# OpenAI refuses more than 128 tools. Anthropic documents no count, and Claude Code sends every
# MCP tool, those it defers (kept out of the prompt until searched for) included.
MAX_TOOLS = 128
MAX_TOOLS_BY_API = {"messages": 1024}
# Tool names as OpenAI and Anthropic take them (`^[a-zA-Z0-9_-]{1,64}$`): Claude Code's and
# Codex's tools (`Bash`, `mcp__server__tool`, `apply_patch`) all fit.
MAX_TOOL_NAME_CHARS = 64
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TOOL_NAME_RULE = "a name of 1 to 64 letters, digits, '_' or '-'"
# Anthropic's limit on messages per request; OpenAI documents none. Long agent sessions reach
# a few thousand.
MAX_MESSAGES = 100_000
# The fields that hold the messages (or input items) in each API's body.
MESSAGE_FIELDS = ("messages", "input")
METADATA_FIELDS = {"metadata": (MAX_METADATA_KEYS, MAX_METADATA_KEY_CHARS, MAX_METADATA_VALUE_CHARS),
                   "client_metadata": CLIENT_METADATA}
STOP_FIELDS = ("stop", "stop_sequences")
TAGS_HEADER = "X-Laya-Tags"


def _too_long(field: str, size: int, limit: int) -> ApiError:
    return ApiError(400, f"'{field}' is {size} characters long; the limit is {limit}",
                    "invalid_request_error", "string_above_max_length", extra={"param": field})


def _too_many(field: str, size: int, limit: int, what: str = "items") -> ApiError:
    return ApiError(400, f"'{field}' has {size} {what}; the limit is {limit}",
                    "invalid_request_error", "array_above_max_length", extra={"param": field})


def _wrong_type(field: str, expected: str) -> ApiError:
    return ApiError(400, f"'{field}' must be {expected}", "invalid_request_error",
                    "invalid_type", extra={"param": field})


def _check_string(field: str, value: Any, limit: int) -> None:
    if isinstance(value, str) and len(value) > limit:
        raise _too_long(field, len(value), limit)


def _check_tag_list(field: str, tags: list) -> None:
    if len(tags) > MAX_TAGS:
        raise _too_many(field, len(tags), MAX_TAGS, "tags")
    for i, tag in enumerate(tags):
        if isinstance(tag, str) and len(tag) > MAX_TAG_CHARS:
            raise _too_long(f"{field}[{i}]", len(tag), MAX_TAG_CHARS)


def check_tags(raw: Any, header: str | None) -> None:
    """`tags` (an array of strings, or one comma-separated string) and the X-Laya-Tags header."""
    if raw is not None:
        if isinstance(raw, str):
            if len(raw) > MAX_TAGS * (MAX_TAG_CHARS + 1):
                raise _too_long("tags", len(raw), MAX_TAGS * (MAX_TAG_CHARS + 1))
            _check_tag_list("tags", raw.split(","))
        elif isinstance(raw, list):
            if not all(isinstance(tag, str) for tag in raw[:MAX_TAGS + 1]):
                raise _wrong_type("tags", "an array of strings or a comma-separated string")
            _check_tag_list("tags", raw)
        else:
            raise _wrong_type("tags", "an array of strings or a comma-separated string")
    if header:
        if len(header) > MAX_TAGS * (MAX_TAG_CHARS + 1):
            raise _too_long(TAGS_HEADER, len(header), MAX_TAGS * (MAX_TAG_CHARS + 1))
        _check_tag_list(TAGS_HEADER, header.split(","))


def check_metadata(field: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise _wrong_type(field, "an object")
    max_keys, max_key, max_value = METADATA_FIELDS[field]
    if len(value) > max_keys:
        raise ApiError(400, f"'{field}' has {len(value)} keys; the limit is {max_keys}",
                       "invalid_request_error", "object_above_max_properties",
                       extra={"param": field})
    for key, item in value.items():
        if len(key) > max_key:
            raise ApiError(400, f"a key of '{field}' is {len(key)} characters long; the limit "
                           f"is {max_key}", "invalid_request_error", "string_above_max_length",
                           extra={"param": field})
        if isinstance(item, str):
            _check_string(f"{field}.{key}", item, max_value)
        elif isinstance(item, (dict, list)):
            # OpenAI takes strings only; a nested value would be a way around the caps
            raise _wrong_type(f"{field}.{key}", "a string, number, boolean or null")


def check_stop(field: str, stop: Any) -> None:
    if isinstance(stop, str):
        _check_string(field, stop, MAX_STOP_CHARS)
    elif isinstance(stop, list):
        if len(stop) > MAX_STOP_STRINGS:
            raise _too_many(field, len(stop), MAX_STOP_STRINGS, "stop strings")
        for i, item in enumerate(stop):
            _check_string(f"{field}[{i}]", item, MAX_STOP_CHARS)


def tool_limit(api: str) -> int:
    return MAX_TOOLS_BY_API.get(api, MAX_TOOLS)


def check_tool_count(field: str, tools: Any, api: str) -> None:
    limit = tool_limit(api)
    if isinstance(tools, list) and len(tools) > limit:
        raise _too_many(field, len(tools), limit, "tools")


def check_request(body: Any, header_tags: str | None, api: str) -> None:
    """The caps above on a parsed body (any API) and its X-Laya-Tags header; a 400 naming the
    first field over its cap. Wrong types of other fields are left to the API's parser."""
    check_tags(body.get("tags") if isinstance(body, dict) else None, header_tags)
    if not isinstance(body, dict):
        return
    _check_string("model", body.get("model"), MAX_MODEL_CHARS)
    for field, limit in ID_FIELDS.items():
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            raise _wrong_type(field, "a string")
        _check_string(field, value, limit)
    for field in METADATA_FIELDS:
        if field in body:
            check_metadata(field, body[field])
    for field in STOP_FIELDS:
        check_stop(field, body.get(field))
    check_tool_count("tools", body.get("tools"), api)
    for field in MESSAGE_FIELDS:
        items = body.get(field)
        if isinstance(items, list) and len(items) > MAX_MESSAGES:
            raise _too_many(field, len(items), MAX_MESSAGES, "items")
