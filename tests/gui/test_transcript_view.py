"""The transcript view on its own: a reply drawn piece by piece as it streams ends up exactly as
drawn at once, earlier pieces are left alone, and Markdown keeps its shape across pieces."""
from __future__ import annotations

from laya_desktop.gui.chat.conversation import Message
from laya_desktop.gui.chat.transcript_view import TranscriptView, paragraphs

REPLY = ("# Reversing\n\nUse a **slice**:\n\n- `xs[::-1]` copies\n- `xs.reverse()` works in place\n\n"
         "1. first\n\n2. second\n\n    still the second item\n\n> a quote\n\n"
         "```python\ndef rev(xs):\n    return xs[::-1]\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n## Done\nEnd.")


def blocks(view):
    out, block = [], view.document().begin()
    while block.isValid():
        out.append((block.text(), block.blockFormat().headingLevel(),
                    block.textList().format().start() if block.textList() else None))
        block = block.next()
    return out


def test_paragraphs_keep_indented_continuations():
    assert paragraphs("a\n\nb\n\n    b, more\n\n\n c\n\nd") == ["a", "b\n\n    b, more\n\n\n c", "d"]


def test_streamed_reply_ends_as_drawn_at_once_and_leaves_earlier_pieces_alone(qtbot):
    streamed, whole = TranscriptView(), TranscriptView()
    qtbot.addWidget(streamed)
    qtbot.addWidget(whole)
    messages = [Message("user", "How?"), Message("assistant", "")]
    streamed.show_messages(messages)
    changes, heading_end = [], None
    streamed.document().contentsChange.connect(lambda pos, removed, added: changes.append(pos))
    for end in range(0, len(REPLY) + 5, 5):
        messages[-1].text = REPLY[:end]
        streamed.redraw_last()
        if heading_end is None and "Use a" in streamed.toPlainText():   # the heading is whole
            heading = [b for b in _iter(streamed) if b.text() == "Reversing"][0]
            heading_end = heading.position() + heading.length() - 1
            changes.clear()
    messages[-1].footer = "rule default · model m"
    streamed.redraw_last()
    assert len(changes) > 50 and min(changes) >= heading_end   # never drawn again after that

    whole.show_messages([Message("user", "How?"), Message("assistant", REPLY, messages[-1].footer)])
    assert blocks(streamed) == blocks(whole)
    shape = blocks(whole)
    assert ("Reversing", 1, None) in shape and ("Done", 2, None) in shape
    assert ("xs.reverse() works in place", 0, 1) in shape and ("second", 0, 2) in shape
    assert streamed.code_of("copy:1:1") == "def rev(xs):\n    return xs[::-1]"


def _iter(view):
    block = view.document().begin()
    while block.isValid():
        yield block
        block = block.next()
