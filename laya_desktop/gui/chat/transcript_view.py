"""The conversation drawn as rich text: Markdown prose, code boxes with a Copy link, tool calls.

One QTextBrowser holds the whole conversation. A message is drawn as pieces (its header, each
paragraph, each code box, its footer), each in its own blocks; while a reply streams, only the
pieces from the first one that changed are replaced (`redraw_last`), so the cost per redraw is
that of the paragraph or code box being written, not of the reply or the conversation. A Copy
link is `copy:<message>:<block>`, an index into `blocks_of(...)` of that message, read when clicked.
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
# A blank line before a line at the margin ends a paragraph; an indented one continues it (a list
# item's second paragraph), so it stays in the same piece and keeps its Markdown meaning.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n(?=\S)")


def markdown_html(text: str) -> tuple[str, QTextBlockFormat | None]:
    """Qt's own Markdown reader (GitHub dialect): an HTML fragment to insert, and the format of
    its first block (a heading's level), which inserting loses; None when that block is a list's."""
    doc = QTextDocument()
    doc.setMarkdown(text, QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
    found = _BODY.search(doc.toHtml())
    first = doc.begin()
    return (found.group(1) if found else html.escape(text),
            first.blockFormat() if first.textList() is None else None)


def _remove_to_end(cursor: QTextCursor, start: int, until: int | None = None) -> None:
    """Remove from `start` to `until` (the end). The block at `start` keeps its format: Qt gives
    a block merged by a removal the format of the last block removed (a heading, after a table)."""
    doc = cursor.document()
    kept = doc.findBlock(start).blockFormat()
    cursor.setPosition(start)
    if until is None:
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
    else:
        cursor.setPosition(until, QTextCursor.MoveMode.KeepAnchor)
    cursor.removeSelectedText()
    merged = doc.findBlock(start)
    if merged.blockFormat() != kept:
        QTextCursor(merged).setBlockFormat(kept)


def paragraphs(text: str) -> list[str]:
    return [p for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


class TranscriptView(QTextBrowser):
    copied = Signal(str)    # the code a Copy link put on the clipboard

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._on_anchor)
        self._messages: list[Message] = []
        self._last_pieces: list[tuple] = []   # the last message's pieces as drawn...
        self._last_starts: list[int] = []     # ...and where each begins in the document

    # --- drawing -------------------------------------------------------------------------------
    def show_messages(self, messages: list[Message]) -> None:
        """Draw every message anew: after opening, editing or starting a conversation."""
        self._messages = messages
        self.clear()
        cursor = QTextCursor(self.document())
        for i in range(len(messages) - 1):   # in one go each: only the last one is redrawn
            if i:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            cursor.insertHtml("".join(self._piece_html(i, piece)[0] for piece in self.pieces(i)))
        self._last_pieces, self._last_starts = [], []
        if messages:
            self._insert_pieces(cursor, len(messages) - 1, self.pieces(len(messages) - 1))
        self._scroll_to_end()

    def append_message(self) -> None:
        """The conversation gained a message at its end: draw it below the others."""
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        self._last_pieces, self._last_starts = [], []
        self._insert_pieces(cursor, len(self._messages) - 1, self.pieces(len(self._messages) - 1))
        self._scroll_to_end()

    def redraw_last(self) -> None:
        """Redraw the last message (a streamed reply) from its first changed piece on."""
        if not self._messages:
            return
        index = len(self._messages) - 1
        new = self.pieces(index)
        same = 0
        while same < min(len(new), len(self._last_pieces)) and new[same] == self._last_pieces[same]:
            same += 1
        if same == len(new) == len(self._last_pieces):
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        if same < len(self._last_starts):
            _remove_to_end(cursor, self._last_starts[same])
        else:
            cursor.movePosition(QTextCursor.MoveOperation.End)
        del self._last_pieces[same:], self._last_starts[same:]
        self._insert_pieces(cursor, index, new[same:])
        if at_end:
            self._scroll_to_end()

    def _insert_pieces(self, cursor: QTextCursor, index: int, pieces: list[tuple]) -> None:
        doc = self.document()
        for piece in pieces:
            start = cursor.position()
            self._last_starts.append(start)
            self._last_pieces.append(piece)
            if start > 0:   # each piece in blocks of its own, with no format left over
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            begin = cursor.position()
            markup, first_format = self._piece_html(index, piece)
            cursor.insertHtml(markup)
            # Inserted HTML merges its first block into the empty one it lands in and drops that
            # block's format (a heading would come out as plain text), or, when it starts with a
            # list or a table, leaves the empty block standing above it. Mend either.
            first = doc.findBlock(begin)
            if not first.text() and first.next().isValid() and begin > start:
                _remove_to_end(QTextCursor(doc), start, until=begin)
                cursor.movePosition(QTextCursor.MoveOperation.End)
            elif first_format is not None and first.textList() is None:
                QTextCursor(first).setBlockFormat(first_format)

    def pieces(self, index: int) -> list[tuple]:
        """What message `index` is drawn as, in order; equal pieces are drawn the same."""
        m = self._messages[index]
        out: list[tuple] = [("head", m.role)]
        if m.role == "user":
            out.append(("typed", m.text))
        else:
            blocks = blocks_of(m.text, m.tool_calls)
            for k, block in enumerate(blocks):
                if block.kind == "prose":
                    out += [("prose", p) for p in paragraphs(block.text)]
                else:
                    out.append(("code", k, block))
            if not blocks:
                out.append(("pending",))
        if m.footer:
            out.append(("footer", m.footer))
        return out

    def _piece_html(self, index: int, piece: tuple) -> tuple[str, QTextBlockFormat | None]:
        if piece[0] == "prose":
            return markdown_html(piece[1])
        return self._plain_piece_html(index, piece), None

    def _plain_piece_html(self, index: int, piece: tuple) -> str:
        kind = piece[0]
        if kind == "head":
            who = self.tr("You") if piece[1] == "user" else self.tr("Assistant")
            color = "#1f4f9a" if piece[1] == "user" else "#1f7a1f"
            return f"<p style='margin-top:12px'><b style='color:{color}'>{who}</b></p>"
        if kind == "typed":      # what the user typed is shown as typed, not as Markdown
            return "<p>" + html.escape(piece[1]).replace("\n", "<br>") + "</p>"
        if kind == "code":
            return self._code_box_html(index, piece[1], piece[2])
        if kind == "footer":
            return (f"<p style='margin-top:6px;color:#777;font-size:small'>"
                    f"{html.escape(piece[1])}</p>")
        return "<p><i>…</i></p>"

    def _code_box_html(self, index: int, k: int, block: Block) -> str:
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
