"""Tool calls parsed out of model text, per template family, streamed and at the end."""
from __future__ import annotations

import json

import pytest

from laya_desktop.engine.tool_calls import ToolCallParser, parse_tool_calls

NAMES = {"get_weather", "read_file"}


def _feed_all(parser: ToolCallParser, pieces: list[str]) -> tuple[str, str, list]:
    streamed = "".join(parser.feed(p) for p in pieces)
    rest, calls = parser.finish()
    return streamed, rest, calls


def _chunks(text: str, size: int = 3) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
    '<function=get_weather>{"city": "Paris"}</function>',
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '```json\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}\n```',
    '  {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
])
def test_each_family_yields_one_call(text):
    streamed, rest, calls = _feed_all(ToolCallParser(sorted(NAMES)), _chunks(text))
    assert streamed == "" and rest == ""
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert calls[0].id.startswith("call_")


def test_text_before_a_marker_streams_and_the_call_is_held():
    text = 'Let me check. <tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>'
    parser = ToolCallParser(sorted(NAMES))
    streamed = "".join(parser.feed(p) for p in _chunks(text, 2))
    assert streamed == "Let me check. "
    rest, calls = parser.finish()
    assert rest == "" and [c.name for c in calls] == ["read_file"]


def test_plain_text_passes_through_whole():
    text = "The weather in Paris is mild; <tool is not a marker, and {braces} mid-text are text."
    streamed, rest, calls = _feed_all(ToolCallParser(sorted(NAMES)), _chunks(text, 4))
    assert streamed + rest == text and calls == []


def test_unknown_tool_or_broken_json_comes_back_as_text():
    for text in ('<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
                 '{"name": "get_weather", "arguments": {"city": '):
        streamed, rest, calls = _feed_all(ToolCallParser(sorted(NAMES)), _chunks(text))
        assert calls == [] and streamed + rest == text


def test_several_calls_and_parallel_off():
    text = ('<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call>\n'
            '<tool_call>{"name": "read_file", "arguments": {"path": "b"}}</tool_call>')
    _, _, calls = _feed_all(ToolCallParser(sorted(NAMES)), [text])
    assert [c.name for c in calls] == ["get_weather", "read_file"]
    assert len({c.id for c in calls}) == 2
    _, _, calls = _feed_all(ToolCallParser(sorted(NAMES), parallel=False), [text])
    assert [c.name for c in calls] == ["get_weather"]


def test_forced_call_holds_from_the_first_character():
    parser = ToolCallParser(["get_weather"], forced=True)
    assert parser.feed('{"name": "get_weather", ') == ""
    assert parser.feed('"arguments": {"city": "Oslo"}}') == ""
    rest, calls = parser.finish()
    assert rest == "" and json.loads(calls[0].arguments) == {"city": "Oslo"}


def test_parse_tool_calls_keeps_text_around_hermes_blocks():
    calls, rest = parse_tool_calls('<tool_call>{"name": "read_file", "arguments": {}}</tool_call> done',
                                   NAMES)
    assert [c.name for c in calls] == ["read_file"] and rest == "done"
