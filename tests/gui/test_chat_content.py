"""The chat's plain parts: reply blocks, the repetition check, conversations and their files."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from laya_desktop.gui.chat.blocks import Block, blocks_of, pretty_json, split_fences
from laya_desktop.gui.chat.conversation import (
    Conversation, ConversationFileError, Message, autosave_path, conversations_dir,
    load_conversation, save_conversation,
)
from laya_desktop.gui.chat.repetition import (repeated_line, repeated_stretch, repetition,
                                               without_repeats)


def test_fences_split_prose_from_code():
    text = "Intro **bold**\n\n```python\ndef f():\n    return 1\n```\nAfter\n~~~\nraw ```\n~~~"
    assert split_fences(text) == [
        Block("prose", "Intro **bold**"), Block("code", "def f():\n    return 1", "python"),
        Block("prose", "After"), Block("code", "raw ```")]


def test_a_fence_still_open_is_code_to_the_end():
    assert split_fences("Here:\n```js\nlet a = 1;\nlet b") == [
        Block("prose", "Here:"), Block("code", "let a = 1;\nlet b", "js")]
    # a longer fence is closed only by one at least as long
    assert split_fences("````\n```\ninner\n```\n````") == [Block("code", "```\ninner\n```")]


def test_json_reply_and_tool_calls_become_code_blocks():
    assert pretty_json('{"a":1,"b":[1,2]}') == '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}'
    assert pretty_json('{"a": 1') is None and pretty_json("plain") is None
    calls = [{"id": "c1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
             {"id": "c2", "name": "now", "arguments": '{"tz": "Eu'}]   # still streaming
    assert blocks_of("Checking.", calls) == [
        Block("prose", "Checking."),
        Block("code", '{\n  "city": "Oslo"\n}', "json", title="get_weather"),
        Block("code", '{"tz": "Eu', "json", title="now")]
    assert blocks_of("[1, 2]") == [Block("code", "[\n  1,\n  2\n]", "json")]


@pytest.mark.parametrize("text, expected", [
    ("The sea is big.\n" * 8, "The sea is big."),
    ("The sea is big.\n" * 7, None),                       # not yet eight
    ("The sea is big.\n" * 7 + "The sea is big.", None),   # the eighth is not finished
    ("a\n\nThe sea.\n\n" * 8, None),                       # other lines in between
    ("The sea.\n\n" * 8, "The sea."),                      # blank lines do not count
    ("}\n" * 20, None),                                    # short lines repeat in real code
])
def test_a_line_repeated_eight_times_is_a_loop(text, expected):
    assert repeated_line(text) == expected


def test_a_phrase_echoed_on_one_line_is_a_loop():
    echo = "How do I reverse a list in Python? Show code.告诉我 修理service "   # gemma-270m, seen
    cut = echo * 5 + "How do"                                              # cut mid-copy
    assert repeated_stretch(cut) == cut[-len(echo):]
    assert repeated_stretch(echo * 4 + "How do") is None                   # four is not yet a loop
    assert repetition(echo * 5) == echo
    assert repeated_stretch("[" + "0, " * 30 + "0]") is None               # thirty zeros are data
    table = "".join(f"| {i} | {i * i} |\n" for i in range(40))
    assert repetition(table) is None
    assert repetition(Path(__file__).read_text()) is None                  # real text is not a loop
    assert repetition("x" * 50_000 + "The end.") is None                   # only the tail is read


def test_a_loop_is_kept_once():
    looped = "Intro.\n" + "The sea is blue.\n" * 9 + "The s"
    assert without_repeats(looped, repetition(looped)) == "Intro.\nThe sea is blue."
    echo = "Say it. 告诉我 service "
    cut = "Q: " + echo * 6 + "Say"
    assert without_repeats(cut, repetition(cut)).count("告诉我") == 1
    assert without_repeats("no loop here", "") == "no loop here"


def _conversation() -> Conversation:
    return Conversation([
        Message("user", "Hi"), Message("assistant", "Hello! **Welcome**", "rule default · model m"),
        Message("user", "lost question", failed=True), Message("assistant", "", "error: x", failed=True),
        Message("user", "Weather?"),
        Message("assistant", "", "finish tool_calls",
                [{"id": "c1", "name": "get_weather", "arguments": '{"city":"Oslo"}'}]),
    ], {"model": "m", "system": "Be brief.", "tags": ["code"], "repeat_penalty": 1.1}, 1700000000.0)


def test_messages_for_the_engine_skip_failures_and_keep_tool_calls_as_text():
    assert _conversation().api_messages("Be brief.") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! **Welcome**"},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": '[{"name": "get_weather", "arguments": "{\\"city\\":\\"Oslo\\"}"}]'}]


def test_drop_reply_and_take_last_question():
    c = _conversation()
    assert c.drop_reply().tool_calls[0]["name"] == "get_weather"
    assert c.drop_reply() is None                   # ends in a question now
    assert c.take_last_question() == "Weather?"
    assert [m.text for m in c.messages][-1] == ""   # the failed pair is still shown
    assert Conversation().take_last_question() is None


def test_save_then_open_round_trips(tmp_path):
    original = _conversation()
    path = save_conversation(original, tmp_path / "sub" / "chat.json")
    assert json.loads(path.read_text())["format"] == "laya-chat"
    assert load_conversation(path) == original
    assert list(tmp_path.rglob("*.tmp")) == []


@pytest.mark.parametrize("content, says", [
    ("not json", "is not JSON"),
    ('{"messages": []}', 'no "format": "laya-chat"'),
    ('{"format": "laya-chat", "version": 9, "messages": []}', "version 9"),
    ('{"format": "laya-chat", "version": 1, "messages": {}}', "messages: expected a list"),
    ('{"format": "laya-chat", "version": 1, "messages": [{"role": "tool", "content": ""}]}',
     "messages[0].role"),
    ('{"format": "laya-chat", "version": 1, "messages": [{"role": "user", "content": 3}]}',
     "messages[0].content"),
    ('{"format": "laya-chat", "version": 1, "messages": [], "settings": []}', "settings"),
])
def test_a_bad_file_says_what_is_wrong(tmp_path, content, says):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConversationFileError, match=re.escape(says)):
        load_conversation(path)
    with pytest.raises(ConversationFileError, match="cannot read"):
        load_conversation(tmp_path / "missing.json")


def test_conversations_are_kept_under_the_state_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr("sys.platform", "linux")
    assert conversations_dir() == tmp_path / "laya" / "conversations"
    path = autosave_path(Conversation(started=1700000000.0))
    assert path.parent == tmp_path / "laya" / "conversations" and path.name.startswith("chat-2023-11-1")
