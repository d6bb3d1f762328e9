"""A local runner's events -> the shared outputs, with tool calls parsed out of the text."""
from __future__ import annotations

from typing import AsyncIterator

from laya_desktop.engine.calls import Call
from laya_desktop.engine.outputs import Embedded, Failed, Finished, Output, TextDelta, Usage, status_for_code
from laya_desktop.engine.tool_calls import ToolCallParser


def usage_of(event: dict) -> Usage:
    usage = event.get("usage") or {}
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                 int(usage.get("cached_tokens") or 0), usage.get("cached_from"))


async def local_outputs(events: AsyncIterator[dict], call: Call) -> AsyncIterator[Output]:
    parser = None
    if call.parses_tools:
        forced = call.tool_choice not in ("auto", "none")
        parser = ToolCallParser(call.tool_names, parallel=call.parallel_tool_calls, forced=forced)
    async for event in events:
        kind = event.get("event")
        if kind == "token":
            text, logprobs = event.get("text", ""), event.get("logprobs")
            if parser is not None:
                text = parser.feed(text)
            if text or logprobs:
                yield TextDelta(text, logprobs)
        elif kind == "done":
            finish = event.get("finish_reason", "stop")
            if parser is not None:
                rest, calls = parser.finish()
                if rest:
                    yield TextDelta(rest)
                for tool_call in calls:
                    yield tool_call
                if calls:
                    finish = "tool_calls"
            yield Finished(finish, usage_of(event))
        elif kind == "embeddings":
            yield Embedded(event.get("data") or [], usage_of(event))
        elif kind == "error":
            code = event.get("code") or "internal"
            yield Failed(code, event.get("message") or "generation failed", status_for_code(code))
