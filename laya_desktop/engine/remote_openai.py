"""A remote chat-completions answer -> the shared outputs, so any API can be served by a
chat-only OpenAI-compatible upstream (a Responses or Messages request, translated).

Text is passed on as it arrives; tool-call deltas are gathered per `index` and handed on as
complete `ToolCall`s once the choice finishes, because every writer needs whole arguments to
know an item's end. `Finished` waits for the end of the stream: the usage chunk of
`stream_options.include_usage` comes after the one with `finish_reason`.
"""
from __future__ import annotations

import json
import uuid
from typing import AsyncIterator

import httpx

from laya_desktop.engine.outputs import Failed, Finished, Output, TextDelta, ToolCall, Usage

FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls",
                  "function_call": "tool_calls"}


def _usage(usage: dict | None) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details") or {}
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                 int(details.get("cached_tokens") or 0))


def _logprobs(choice: dict) -> list[dict] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    return [{"token": e.get("token", ""), "logprob": e.get("logprob", 0.0), "bytes": e.get("bytes"),
             "top_logprobs": [{"token": t.get("token", ""), "logprob": t.get("logprob", 0.0),
                               "bytes": t.get("bytes")} for t in e.get("top_logprobs") or []]}
            for e in content]


def _failed(payload: dict) -> Failed:
    error = payload.get("error")
    message = error.get("message") if isinstance(error, dict) else str(error)
    return Failed("remote_error", f"the remote model failed: {message}", 502)


class _ToolCalls:
    """Tool-call deltas, gathered per index into whole calls."""

    def __init__(self):
        self._calls: dict[int, dict] = {}

    def add(self, deltas: list) -> None:
        for position, delta in enumerate(deltas):
            if not isinstance(delta, dict):
                continue
            index = delta.get("index", position)
            entry = self._calls.setdefault(index, {"id": None, "name": "", "arguments": []})
            if delta.get("id"):
                entry["id"] = delta["id"]
            fn = delta.get("function") or {}
            if fn.get("name"):
                entry["name"] += fn["name"]
            arguments = fn.get("arguments")
            if isinstance(arguments, str):
                entry["arguments"].append(arguments)
            elif arguments is not None:
                entry["arguments"].append(json.dumps(arguments, ensure_ascii=False))

    def __bool__(self) -> bool:
        return bool(self._calls)

    def drain(self) -> list[ToolCall]:
        calls = [ToolCall(e["id"] or "call_" + uuid.uuid4().hex[:24], e["name"],
                          "".join(e["arguments"]) or "{}")
                 for _, e in sorted(self._calls.items())]
        self._calls.clear()
        return calls


def _finish(reason: str | None, had_calls: bool) -> str:
    if reason is None:
        return "tool_calls" if had_calls else "stop"
    return FINISH_REASONS.get(reason, "stop")


async def _from_json(response: httpx.Response) -> AsyncIterator[Output]:
    try:
        payload = json.loads(await response.aread())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        yield Failed("remote_error", f"the remote model's answer is not JSON: {exc}", 502)
        return
    if not isinstance(payload, dict) or "error" in payload or not payload.get("choices"):
        yield _failed(payload if isinstance(payload, dict) else {"error": payload})
        return
    choice = payload["choices"][0]
    message = choice.get("message") or {}
    text = message.get("content") or message.get("refusal") or ""
    if text:
        yield TextDelta(text, _logprobs(choice))
    calls = _ToolCalls()
    calls.add(message.get("tool_calls") or [])
    for call in calls.drain():
        yield call
    yield Finished(_finish(choice.get("finish_reason"), bool(message.get("tool_calls"))),
                   _usage(payload.get("usage")))


async def _from_sse(response: httpx.Response) -> AsyncIterator[Output]:
    calls = _ToolCalls()
    finish: str | None = None
    had_calls = False
    usage = Usage()
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            continue
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            yield _failed(chunk)
            return
        if chunk.get("usage"):
            usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content") or delta.get("refusal")
            logprobs = _logprobs(choice)
            if text or logprobs:
                yield TextDelta(text or "", logprobs)
            if delta.get("tool_calls"):
                had_calls = True
                calls.add(delta["tool_calls"])
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
                for call in calls.drain():
                    yield call
    else:
        if finish is None:
            yield Failed("remote_error", "the remote model's stream ended before it finished", 502)
            return
    for call in calls.drain():
        yield call
    yield Finished(_finish(finish, had_calls), usage)


async def chat_outputs(response: httpx.Response, stream: bool) -> AsyncIterator[Output]:
    """The outputs of an OpenAI chat-completions answer, streamed (SSE) or whole (JSON). A
    connection that breaks off ends them with `Failed` (remote_error, 502)."""
    # some upstreams answer a streamed request whole
    sse = stream and "json" not in response.headers.get("content-type", "")
    source = _from_sse(response) if sse else _from_json(response)
    try:
        async for out in source:
            yield out
    except httpx.HTTPError as exc:
        yield Failed("remote_error", f"the remote model broke off: {exc!r}", 502)
