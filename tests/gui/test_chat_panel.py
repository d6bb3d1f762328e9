"""The chat panel against a real engine process whose model is a loopback OpenAI upstream: what
the upstream streams is drawn (Markdown, code boxes, tool calls, JSON), and what the chat sends
(repeat penalty, temperature, regenerate, edit) arrives in the body the engine forwards."""
from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QTextCursor

from chat_upstream import ChatUpstream, chunk, text_reply, tool_call_reply
from engine_harness import running_engine
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.panels.chat_panel import ChatPanel
from laya_desktop.gui.workers import WorkerPool

MARKDOWN = "# Reversing\n\nUse a **slice**:\n\n```python\ndef rev(xs):\n    return xs[::-1]\n```\n\nDone."


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    upstream = ChatUpstream()
    config = {"server": {"host": "127.0.0.1"},
              "models": [{"name": "cloud", "backend": "openai", "base_url": upstream.base_url}],
              "routes": [{"name": "default", "target": "cloud"}]}
    try:
        with running_engine(config, tmp_path_factory.mktemp("chat-engine")) as eng:
            yield eng, upstream
    finally:
        upstream.close()


@pytest.fixture
def chat(engine, qtbot, tmp_path):
    eng, upstream = engine
    upstream.bodies.clear()
    upstream.pace_s = 0.0
    pool = WorkerPool()
    client = EngineClient(eng.url)
    panel = ChatPanel(pool, client, keep_folder=tmp_path / "kept")
    qtbot.addWidget(panel)
    panel.resize(800, 700)
    panel.show()
    yield panel, upstream
    panel.shutdown()
    assert pool.shutdown(5000)
    client.close()


def ask(qtbot, panel, text: str) -> dict:
    with qtbot.waitSignal(panel.reply_finished, timeout=20000) as blocker:
        assert panel.send(text)
    assert blocker.args[0]["error"] is None, blocker.args[0]
    return blocker.args[0]


def anchor_position(view, href: str) -> int:
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().anchorHref() == href:
                return fragment.position()
            it += 1
        block = block.next()
    raise AssertionError(f"no link {href}")


def test_markdown_reply_renders_heading_and_code_box_with_copy_link(chat, qtbot):
    panel, upstream = chat
    upstream.queue(text_reply(MARKDOWN))
    ask(qtbot, panel, "How do I reverse a list?")
    doc = panel.view.document()
    blocks = [doc.findBlockByNumber(i) for i in range(doc.blockCount())]
    heading = [b for b in blocks if b.blockFormat().headingLevel() == 1]
    assert [b.text() for b in heading] == ["Reversing"]
    bold = [b for b in blocks if "slice" in b.text()][0]
    assert any(f.fragment().charFormat().fontWeight() >= 600 and f.fragment().text() == "slice"
               for f in _fragments(bold))
    code = [b for b in blocks if b.text() == "def rev(xs):"][0]
    assert code.charFormat().fontFixedPitch() or "mono" in code.charFormat().fontFamilies()[0].lower()
    assert "```" not in panel.view.toPlainText() and "# Reversing" not in panel.view.toPlainText()

    QGuiApplication.clipboard().clear()
    cursor = QTextCursor(doc)
    cursor.setPosition(anchor_position(panel.view, "copy:1:1") + 1)
    at = panel.view.cursorRect(cursor).center()
    with qtbot.waitSignal(panel.view.copied, timeout=3000):
        qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(at.x(), at.y()))
    assert QGuiApplication.clipboard().text() == "def rev(xs):\n    return xs[::-1]"


def _fragments(block):
    it = block.begin()
    while not it.atEnd():
        yield it
        it += 1


def test_tool_call_and_json_replies_are_shown_readably(chat, qtbot):
    panel, upstream = chat
    upstream.queue(tool_call_reply("get_weather", '{"city":"Oslo","unit":"C"}'),
                   text_reply('{"answer":42,"items":[1,2]}'))
    result = ask(qtbot, panel, "Weather in Oslo?")
    assert result["tool_calls"] == [{"id": "call_1", "name": "get_weather",
                                     "arguments": '{"city":"Oslo","unit":"C"}'}]
    text = panel.view.toPlainText()
    assert "Tool call: get_weather" in text and '  "city": "Oslo",\n  "unit": "C"' in text
    assert "finish tool_calls" in text
    ask(qtbot, panel, "As JSON please")
    assert '{\n  "answer": 42,\n  "items": [\n    1,\n    2\n  ]\n}' in panel.view.toPlainText()
    # the tool-call reply went back to the model as its JSON text
    sent = upstream.bodies[-1]["messages"]
    assert sent[1]["role"] == "assistant" and "get_weather" in sent[1]["content"]


def test_repeat_penalty_temperature_and_max_tokens_reach_the_engine(chat, qtbot):
    panel, upstream = chat
    ask(qtbot, panel, "Hi")
    first = upstream.bodies[-1]
    assert first["repeat_penalty"] == 1.1 and "temperature" not in first   # the chat's default
    panel.sampling.repeat_penalty.setValue(1.0)
    panel.sampling.temperature.setValue(0.3)
    panel.max_tokens.setValue(77)
    ask(qtbot, panel, "Again")
    second = upstream.bodies[-1]
    assert (second["repeat_penalty"], second["temperature"], second["max_tokens"]) == (1.0, 0.3, 77)
    assert second["messages"][-1] == {"role": "user", "content": "Again"}


def test_regenerate_and_edit_resend(chat, qtbot):
    panel, upstream = chat
    upstream.queue(text_reply("first answer"), text_reply("second answer"),
                   text_reply("edited answer"))
    ask(qtbot, panel, "The question")
    with qtbot.waitSignal(panel.reply_finished, timeout=20000):
        assert panel.regenerate()
    assert upstream.bodies[-1]["messages"] == [{"role": "user", "content": "The question"}]
    assert [m.text for m in panel.conversation.messages] == ["The question", "second answer"]
    assert "first answer" not in panel.view.toPlainText()

    assert panel.edit_last()
    assert panel.input.toPlainText() == "The question" and panel.conversation.messages == []
    panel.input.setPlainText("The better question")
    with qtbot.waitSignal(panel.reply_finished, timeout=20000):
        panel.send_btn.click()
    assert upstream.bodies[-1]["messages"] == [{"role": "user", "content": "The better question"}]
    assert [m.text for m in panel.conversation.messages] == ["The better question", "edited answer"]


def test_cut_off_and_looping_replies_say_so(chat, qtbot):
    panel, upstream = chat
    upstream.queue(text_reply("It was a dark and", finish="length"),
                   text_reply("The sea is blue.\n" * 30))
    ask(qtbot, panel, "Story?")
    assert panel.conversation.messages[-1].footer.endswith("cut off: max tokens reached")
    result = ask(qtbot, panel, "More")
    assert result["stats"].stopped
    assert result["text"].count("The sea is blue.") < 30
    assert panel.conversation.messages[-1].text == "The sea is blue."     # kept once
    assert panel.history[-1] == {"role": "assistant", "content": "The sea is blue."}
    assert "kept repeating itself" in panel.conversation.messages[-1].footer
    assert "kept repeating “The sea is blue.”" in panel.status.text()

    echo = "Tell me about the sea. 告诉我 service "        # a base model echoing the prompt
    upstream.pace_s = 0.01          # the check runs as often as the reply is drawn (50 ms)
    upstream.queue([chunk({"content": echo}) for _ in range(40)] + [chunk({}, "length")])
    result = ask(qtbot, panel, "Tell me about the sea.")   # at once: the stopped stream's late end
    assert result["stats"].stopped and result["text"].count("告诉我") == 1

    panel.sampling.stop_loops.setChecked(False)            # the user's choice: let it run
    upstream.queue([chunk({"content": echo}) for _ in range(40)] + [chunk({}, "length")])
    result = ask(qtbot, panel, "Again")
    assert not result["stats"].stopped and result["text"] == echo * 40
    assert panel.conversation.messages[-1].footer.endswith("cut off: max tokens reached")


def test_save_then_reopen_round_trips_and_finished_chats_are_kept(chat, qtbot, tmp_path):
    panel, upstream = chat
    upstream.queue(text_reply(MARKDOWN))
    panel.system.setText("Be brief.")
    panel.sampling.repeat_penalty.setValue(1.25)
    ask(qtbot, panel, "Reverse a list")
    path = tmp_path / "mine.json"
    with qtbot.waitSignal(panel.saved, timeout=5000) as blocker:
        panel.save_to(str(path))
    assert blocker.args == [True, str(path)]
    before = [(m.role, m.text, m.footer) for m in panel.conversation.messages]
    qtbot.waitUntil(lambda: len(list((tmp_path / "kept").glob("chat-*.json"))) == 1, timeout=5000)

    panel.new_chat()
    panel.sampling.repeat_penalty.setValue(1.1)
    panel.system.clear()
    assert panel.view.toPlainText().strip() == ""
    with qtbot.waitSignal(panel.conversation_opened, timeout=5000) as blocker:
        panel.open_file(str(path))
    assert blocker.args[0] is True
    assert [(m.role, m.text, m.footer) for m in panel.conversation.messages] == before
    assert panel.system.text() == "Be brief." and panel.sampling.repeat_penalty.value() == 1.25
    assert "Reversing" in panel.view.toPlainText() and "```" not in panel.view.toPlainText()
    ask(qtbot, panel, "Thanks")                    # the reopened chat goes on
    sent = upstream.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [sent[0]["content"], sent[1]["content"], sent[2]["content"], sent[3]["content"]] == [
        "Be brief.", "Reverse a list", MARKDOWN, "Thanks"]

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "other"}))
    with qtbot.waitSignal(panel.conversation_opened, timeout=5000) as blocker:
        panel.open_file(str(bad))
    assert blocker.args[0] is False and "not a Laya chat file" in panel.status.text()
    assert len(panel.conversation.messages) == 4   # the open chat is untouched


def test_streaming_redraws_only_the_reply_and_not_per_token(chat, qtbot):
    panel, upstream = chat
    ask(qtbot, panel, "First")
    first_block = panel.view.document().findBlockByNumber(1)
    first_block.setUserState(4242)         # gone if earlier messages were drawn again
    redraws = []
    original = panel.view.redraw_last
    panel.view.redraw_last = lambda: (redraws.append(1), original())
    many = [chunk({"content": f"w{i} "}) for i in range(300)] + [chunk({}, "stop")]
    upstream.queue(many)
    tokens = []
    panel.token_received.connect(tokens.append)
    ask(qtbot, panel, "Second")
    assert len(tokens) == 300
    assert len(redraws) < len(tokens) / 3, (len(redraws), len(tokens))
    assert panel.view.document().findBlockByNumber(1).userState() == 4242
    assert "w299" in panel.view.toPlainText()
