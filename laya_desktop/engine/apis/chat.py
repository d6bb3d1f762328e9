"""OpenAI chat completions and (legacy) completions: their bodies in, their chunks and objects out."""
from __future__ import annotations

from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import Response

from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import (Collected, Failed, Finished, KeepAlive, Output, TextDelta,
                                         ToolCall, Usage)
from laya_desktop.engine.request_body import (chat_call, choice_count, completion_call,
                                              wants_usage_in_stream)
from laya_desktop.engine.sse import DONE, sse


def openai_error_response(error: ApiError, headers: dict[str, str] | None = None) -> Response:
    return error.response(headers)


def openai_usage(usage: Usage) -> dict:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}}


KEEPALIVE = b": keepalive\n\n"   # an SSE comment: clients skip it, their timers see bytes


def failure_payload(failed: Failed) -> dict:
    return {"error": {"message": failed.message, "type": "server_error", "code": failed.code,
                      "param": None}}


def _tool_call_json(call: ToolCall, index: int | None = None) -> dict:
    entry = {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
    if index is not None:
        entry = {"index": index, **entry}
    return entry


def chat_logprobs(entries: list[dict] | None) -> dict | None:
    if entries is None:
        return None
    return {"content": [{"token": e["token"], "logprob": e["logprob"], "bytes": e.get("bytes"),
                         "top_logprobs": [{"token": t["token"], "logprob": t["logprob"],
                                           "bytes": t.get("bytes")} for t in e.get("top_logprobs", [])]}
                        for e in entries], "refusal": None}


def completion_logprobs(entries: list[dict] | None, text_start: int = 0) -> dict | None:
    """The legacy completions shape: parallel lists, top_logprobs as {token: logprob}."""
    if entries is None:
        return None
    offsets, at = [], text_start
    for e in entries:
        offsets.append(at)
        at += len(e["token"])
    return {"tokens": [e["token"] for e in entries],
            "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [{t["token"]: t["logprob"] for t in e.get("top_logprobs", [])}
                             for e in entries],
            "text_offset": offsets}


class Timed:
    """llama-server's `timings_per_token`: the timings so far on each content chunk (a local
    runner sends one token event per token, so the deltas count the tokens)."""

    def __init__(self, meta: Meta):
        self.meta, self.tokens = meta, 0

    def extra(self, out: TextDelta) -> dict:
        self.tokens += len(out.logprobs) if out.logprobs else 1
        usage = Usage(self.meta.prompt_tokens or 0, self.tokens)
        return {"timings": self.meta.timings(usage)}


def verbose_fields(call: Call, meta: Meta, text: str, finish_reason: str, usage: Usage) -> dict:
    """llama-server's `verbose`: its own answer object beside OpenAI's, as `__verbose`."""
    if not call.body.get("verbose"):
        return {}
    from laya_desktop.engine.apis.llama_native import final_fields
    return {"__verbose": final_fields(call, meta, text, finish_reason, usage)}


def _chat_choice(index: int, result: Collected) -> dict:
    message: dict[str, Any] = {"role": "assistant",
                               "content": result.text if result.text or not result.tool_calls else None}
    if result.tool_calls:
        message["tool_calls"] = [_tool_call_json(c) for c in result.tool_calls]
    return {"index": index, "message": message, "logprobs": chat_logprobs(result.logprobs),
            "finish_reason": result.finish_reason}


class ChatApi:
    name = "chat"
    object_name = "chat.completion"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        return chat_call(body)

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return openai_error_response(error, headers)

    def stream_failure(self, failed: Failed) -> bytes:
        return sse(failure_payload(failed)) + DONE

    async def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]:
        cid = "chatcmpl-" + meta.hex_id
        wants_logprobs = bool(call.command["params"].get("logprobs"))
        n, finished = choice_count(call.body), 0
        started: set[int] = set()
        n_calls = [0] * n
        per_token = Timed(meta) if call.body.get("timings_per_token") else None

        def chunk(delta: dict, index: int = 0, finish: str | None = None,
                  logprobs: dict | None = None, **extra) -> bytes:
            choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
            return sse({"id": cid, "object": "chat.completion.chunk", "created": meta.created,
                        "model": meta.model, "choices": [choice], **extra})

        def opening(out: Output) -> bytes:
            # The role comes first, with the content "" OpenAI sends for text; an answer that
            # opens with a tool call gets null there, as OpenAI sends it. So it waits for the
            # choice's first output (keep-alive comments flow meanwhile).
            started.add(out.choice)
            return chunk({"role": "assistant",
                          "content": None if isinstance(out, ToolCall) else ""}, out.choice)

        async for out in outputs:
            if isinstance(out, (TextDelta, ToolCall, Finished)) and out.choice not in started:
                yield opening(out)
            if isinstance(out, TextDelta):
                if out.text or (wants_logprobs and out.logprobs):
                    yield chunk({"content": out.text}, out.choice,
                                logprobs=chat_logprobs(out.logprobs) if wants_logprobs else None,
                                **(per_token.extra(out) if per_token else {}))
            elif isinstance(out, ToolCall):
                yield chunk({"tool_calls": [_tool_call_json(out, n_calls[out.choice])]}, out.choice)
                n_calls[out.choice] += 1
            elif isinstance(out, KeepAlive):
                yield KEEPALIVE
            elif isinstance(out, Finished):
                finished += 1
                yield chunk({}, out.choice, out.finish_reason,
                            **({"timings": meta.timings(out.usage),
                                **verbose_fields(call, meta, "", out.finish_reason, out.usage)}
                               if finished == n else {}))
                if finished == n and wants_usage_in_stream(call.body):
                    yield sse({"id": cid, "object": "chat.completion.chunk", "created": meta.created,
                               "model": meta.model, "choices": [], "usage": openai_usage(out.usage)})
            elif isinstance(out, Failed):
                yield sse(failure_payload(out))
        yield DONE

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        return {"id": "chatcmpl-" + meta.hex_id, "object": "chat.completion", "created": meta.created,
                "model": meta.model, "choices": [_chat_choice(i, c) for i, c in enumerate(result.choices)],
                "usage": openai_usage(result.usage), "timings": meta.timings(result.usage),
                **verbose_fields(call, meta, result.text, result.finish_reason, result.usage)}


class CompletionsApi:
    name = "completions"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        return completion_call(body)

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return openai_error_response(error, headers)

    def stream_failure(self, failed: Failed) -> bytes:
        return sse(failure_payload(failed)) + DONE

    async def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]:
        cid = "cmpl-" + meta.hex_id
        wants_logprobs = bool(call.command["params"].get("logprobs"))
        n, finished = choice_count(call.body), 0
        at = [0] * n
        per_token = Timed(meta) if call.body.get("timings_per_token") else None

        def chunk(text: str, index: int = 0, finish: str | None = None,
                  logprobs: dict | None = None, **extra) -> bytes:
            choice = {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish}
            return sse({"id": cid, "object": "text_completion", "created": meta.created,
                        "model": meta.model, "choices": [choice], **extra})

        async for out in outputs:
            if isinstance(out, TextDelta):
                if out.text or (wants_logprobs and out.logprobs):
                    yield chunk(out.text, out.choice, logprobs=completion_logprobs(
                        out.logprobs, at[out.choice]) if wants_logprobs else None,
                        **(per_token.extra(out) if per_token else {}))
                    at[out.choice] += len(out.text)
            elif isinstance(out, KeepAlive):
                yield KEEPALIVE
            elif isinstance(out, Finished):
                finished += 1
                yield chunk("", out.choice, out.finish_reason,
                            **({"timings": meta.timings(out.usage),
                                **verbose_fields(call, meta, "", out.finish_reason, out.usage)}
                               if finished == n else {}))
                if finished == n and wants_usage_in_stream(call.body):
                    yield sse({"id": cid, "object": "text_completion", "created": meta.created,
                               "model": meta.model, "choices": [], "usage": openai_usage(out.usage)})
            elif isinstance(out, Failed):
                yield sse(failure_payload(out))
        yield DONE

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        choices = [{"index": i, "text": c.text, "logprobs": completion_logprobs(c.logprobs),
                    "finish_reason": c.finish_reason} for i, c in enumerate(result.choices)]
        return {"id": "cmpl-" + meta.hex_id, "object": "text_completion", "created": meta.created,
                "model": meta.model, "choices": choices, "usage": openai_usage(result.usage),
                "timings": meta.timings(result.usage),
                **verbose_fields(call, meta, result.text, result.finish_reason, result.usage)}


CHAT = ChatApi()
COMPLETIONS = CompletionsApi()
