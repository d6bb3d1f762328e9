"""A remote chat-completions answer (SSE chunks or one JSON object) -> the shared outputs."""
from __future__ import annotations

import asyncio
import json

import httpx

from laya_desktop.engine.outputs import Failed, Finished, TextDelta, ToolCall, Usage
from laya_desktop.engine.remote_openai import chat_outputs


def sse_body(*chunks, done: bool = True) -> bytes:
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "c1", "object": "chat.completion.chunk", "choices": choices, **extra}


def outputs(response: httpx.Response, stream: bool) -> list:
    async def gather():
        return [out async for out in chat_outputs(response, stream)]
    return asyncio.run(gather())


def sse_response(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def test_streamed_text_and_usage_after_finish():
    body = sse_body(chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}),
                    chunk({"content": "lo"}), chunk({}, "stop"),
                    chunk(None, usage={"prompt_tokens": 4, "completion_tokens": 2,
                                       "prompt_tokens_details": {"cached_tokens": 1}}))
    assert outputs(sse_response(body), True) == [
        TextDelta("Hel"), TextDelta("lo"), Finished("stop", Usage(4, 2, 1))]


def test_streamed_tool_calls_gathered_per_index():
    body = sse_body(
        chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "now", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
        chunk({}, "tool_calls"))
    assert outputs(sse_response(body), True) == [
        ToolCall("call_a", "get_weather", "{\"city\":\"Oslo\"}"), ToolCall("call_b", "now", "{}"),
        Finished("tool_calls", Usage())]


def test_streamed_logprobs_are_kept():
    lp = {"content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105],
                       "top_logprobs": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105]}]}]}
    body = sse_body({"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": lp,
                                  "finish_reason": None}]}, chunk({}, "length"))
    got = outputs(sse_response(body), True)
    assert got[0].text == "Hi" and got[0].logprobs[0]["top_logprobs"][0]["logprob"] == -0.1
    assert got[-1] == Finished("length", Usage())


def test_stream_ending_early_or_with_an_error_fails():
    cut = outputs(sse_response(sse_body(chunk({"content": "a"}), done=False)), True)
    assert cut[0] == TextDelta("a") and isinstance(cut[-1], Failed) and cut[-1].status == 502
    errored = outputs(sse_response(sse_body(chunk({"content": "a"}),
                                            {"error": {"message": "overloaded"}})), True)
    assert isinstance(errored[-1], Failed) and "overloaded" in errored[-1].message


def test_stream_that_breaks_off_fails():
    class Breaking(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield sse_body(chunk({"content": "a"}), done=False)
            raise httpx.ReadError("connection reset")

    response = httpx.Response(200, stream=Breaking(), headers={"content-type": "text/event-stream"})
    got = outputs(response, True)
    assert got[0] == TextDelta("a") and isinstance(got[-1], Failed) and got[-1].code == "remote_error"


def test_whole_json_answer():
    payload = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
               "message": {"role": "assistant", "content": "Checking.", "tool_calls": [
                   {"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]}}],
               "usage": {"prompt_tokens": 9, "completion_tokens": 5}}
    response = httpx.Response(200, json=payload)
    assert outputs(response, False) == [
        TextDelta("Checking."), ToolCall("call_1", "get_weather", "{\"city\":\"Oslo\"}"),
        Finished("tool_calls", Usage(9, 5, 0))]
    # an upstream that answers a streamed request whole
    assert outputs(httpx.Response(200, json=payload), True)[-1] == Finished("tool_calls", Usage(9, 5, 0))


def test_json_error_or_garbage_fails():
    assert isinstance(outputs(httpx.Response(200, json={"error": {"message": "no"}}), False)[0], Failed)
    assert isinstance(outputs(httpx.Response(200, content=b"<html>"), False)[0], Failed)
