"""The conversation drawn as rich text: Markdown prose, code boxes with a Copy link, tool calls.

One QTextBrowser holds the whole conversation. While a reply streams only that reply's part of the
document is replaced (`redraw_last`), so a long conversation costs nothing per token. A Copy link is
`copy:<message>:<block>`, an index into `blocks_of(...)` of that message, read when clicked.
"""
from __future__ import annotations

import html
import re

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import (QGuiApplication, QPalette, QTextBlockFormat, QTextCharFormat, QTextCursor,
                           QTextDocument)
from PySide6.QtWidgets import QTextBrowser, QWidget

from laya_desktop.gui.chat.blocks import Block, blocks_of
from laya_desktop.gui.chat.conversation import Message

_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S)


def markdown_html(text: str) -> str:
    """Qt's own Markdown reader (GitHub dialect), as an HTML fragment to insert."""
    doc = QTextDocument()
    doc.setMarkdown(text, QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
    found = _BODY.search(doc.toHtml())
    return found.group(1) if found else html.escape(text)


class TranscriptView(QTextBrowser):
    copied = Signal(str)    # the code a Copy link put on the clipboard

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._on_anchor)
        self._messages: list[Message] = []
        self._last_start = 0        # where the last message begins in the document

    # --- drawing -------------------------------------------------------------------------------
    def show_messages(self, messages: list[Message]) -> None:
        """Draw every message anew: after opening, editing or starting a conversation."""
        self._messages = messages
        self.clear()
        cursor = QTextCursor(self.document())
        for i in range(len(messages)):
            if i:
                cursor.movePosition(QTextCursor.MoveOperation.End)
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            self._last_start = cursor.position()
            cursor.insertHtml(self.message_html(i))
        self._scroll_to_end()

    def redraw_last(self) -> None:
        """Replace only the last message's part of the document (a streamed reply)."""
        if not self._messages:
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(self._last_start, self.document().characterCount() - 1))
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        cursor.setBlockFormat(QTextBlockFormat())   # no heading or code format left behind
        cursor.setCharFormat(QTextCharFormat())
        cursor.insertHtml(self.message_html(len(self._messages) - 1))
        if at_end:
            self._scroll_to_end()

    def append_message(self) -> None:
        """The conversation gained a message at its end: draw it below the others."""
        if len(self._messages) <= 1:
            self.show_messages(self._messages)
            return
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        self._last_start = cursor.position()
        cursor.insertHtml(self.message_html(len(self._messages) - 1))
        self._scroll_to_end()

    def message_html(self, index: int) -> str:
        m = self._messages[index]
        who = self.tr("You") if m.role == "user" else self.tr("Assistant")
        color = "#1f4f9a" if m.role == "user" else "#1f7a1f"
        parts = [f"<p><b style='color:{color}'>{who}</b></p>"]
        if m.role == "user":    # what the user typed is shown as typed, not as Markdown
            parts.append("<p>" + html.escape(m.text).replace("\n", "<br>") + "</p>")
        else:
            blocks = blocks_of(m.text, m.tool_calls)
            parts += [self._block_html(index, k, b) for k, b in enumerate(blocks)]
            if not blocks:
                parts.append("<p><i>…</i></p>")
        if m.footer:
            parts.append(f"<p style='color:#777;font-size:small'>{html.escape(m.footer)}</p>")
        return "".join(parts)

    def _block_html(self, index: int, k: int, block: Block) -> str:
        if block.kind == "prose":
            return markdown_html(block.text)
        label = self.tr("Tool call: {name}").format(name=html.escape(block.title)) if block.title \
            else html.escape(block.lang)
        background = self.palette().color(QPalette.ColorRole.AlternateBase).name()
        code, copy = html.escape(block.text), self.tr("Copy")
        return (f"<table width='100%' cellspacing='0' cellpadding='6' bgcolor='{background}'>"
                f"<tr><td><span style='color:#777'>{label}</span>&nbsp;&nbsp;"
                f"<a href='copy:{index}:{k}'>{copy}</a></td></tr>"
                f"<tr><td><pre>{code}</pre></td></tr></table>")

    def _scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    # --- copy links ----------------------------------------------------------------------------
    def code_of(self, link: str) -> str | None:
        """The code a `copy:<message>:<block>` link stands for, read from the message now."""
        try:
            scheme, index, k = link.split(":")
            m = self._messages[int(index)]
            block = blocks_of(m.text, m.tool_calls)[int(k)]
        except (ValueError, IndexError):
            return None
        return block.text if scheme == "copy" and block.kind == "code" else None

    def _on_anchor(self, url: QUrl) -> None:
        code = self.code_of(url.toString())
        if code is not None:
            QGuiApplication.clipboard().setText(code)
            self.copied.emit(code)
