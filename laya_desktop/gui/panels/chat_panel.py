"""Chat panel: a streamed, multi-turn chat with the engine, stoppable, with route and speed per reply."""
from __future__ import annotations

import html
import time

from PySide6.QtCore import QCoreApplication, Signal
from PySide6.QtGui import QGuiApplication, QTextCursor
from PySide6.QtWidgets import (
    QComboBox, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QSpinBox,
    QTextBrowser, QVBoxLayout, QWidget,
)

from laya_desktop.gui.engine_client import ChatStream, EngineClient
from laya_desktop.gui.workers import WorkerPool

def footer(stats) -> str:
    parts = [QCoreApplication.translate("ChatPanel", "rule {rule}").format(rule=stats.route or "—"),
             QCoreApplication.translate("ChatPanel", "model {model}").format(model=stats.model or "—")]
    parts.append(f"TTFT {stats.ttft_ms:.0f} ms" if stats.ttft_ms is not None else "TTFT —")
    tps = stats.tokens_per_s
    parts.append(f"{tps:.1f} tok/s" if tps is not None else "tok/s —")
    if stats.stopped:
        parts.append(QCoreApplication.translate("ChatPanel", "stopped"))
    elif stats.finish_reason:
        parts.append(QCoreApplication.translate("ChatPanel", "finish {reason}").format(
            reason=stats.finish_reason))
    return " · ".join(parts)


class ChatPanel(QWidget):
    reply_finished = Signal(dict)   # {"text", "stats", "error"}
    reply_started = Signal()
    token_received = Signal(str)

    def __init__(self, pool: WorkerPool, client: EngineClient, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pool, self.client = pool, client
        self.history: list[dict] = []          # OpenAI messages, without the system prompt
        self.transcript: list[tuple[str, str, str]] = []   # (role, text, footer)
        self._stream: ChatStream | None = None
        self._worker = None
        self._reply = ""

        self.model = QComboBox()
        self.model.addItem(self.auto_label(), None)
        self.tags = QLineEdit()
        self.tags.setPlaceholderText(self.tr("tags, e.g. code"))
        self.system = QLineEdit()
        self.system.setPlaceholderText(self.tr("system prompt (optional)"))
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 32768)
        self.max_tokens.setValue(256)
        top = QHBoxLayout()
        for label, w in ((self.tr("Model"), self.model), (self.tr("Tags"), self.tags),
                         (self.tr("Max tokens"), self.max_tokens)):
            top.addWidget(QLabel(label))
            top.addWidget(w, 1 if w is not self.max_tokens else 0)

        self.view = QTextBrowser()
        self.view.setOpenExternalLinks(False)
        self.input = QPlainTextEdit()
        self.input.setPlaceholderText(self.tr("Message (Ctrl+Enter to send)"))
        self.input.setMaximumHeight(90)
        self.send_btn = QPushButton(self.tr("Send"))
        self.send_btn.clicked.connect(lambda: self.send(self.input.toPlainText()))
        self.stop_btn = QPushButton(self.tr("Stop"))
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop)
        new_btn = QPushButton(self.tr("New chat"))
        new_btn.clicked.connect(self.new_chat)
        copy_btn = QPushButton(self.tr("Copy"))
        copy_btn.setToolTip(self.tr("copy the conversation as text"))
        copy_btn.clicked.connect(self.copy)
        buttons = QHBoxLayout()
        for b in (self.send_btn, self.stop_btn, new_btn, copy_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.status = QLabel("")

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.system)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.input)
        layout.addLayout(buttons)
        layout.addWidget(self.status)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt name
        from PySide6.QtCore import Qt
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and \
                event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.send(self.input.toPlainText())
            return
        super().keyPressEvent(event)

    def auto_label(self) -> str:
        return self.tr("auto — route by rules")

    def set_models(self, names: list[str]) -> None:
        current = self.model.currentData()
        self.model.clear()
        self.model.addItem(self.auto_label(), None)
        for name in names:
            self.model.addItem(name, name)
        index = self.model.findData(current) if current else 0
        self.model.setCurrentIndex(max(index, 0))

    @property
    def busy(self) -> bool:
        return self._stream is not None

    # --- sending and streaming -----------------------------------------------------------------
    def send(self, text: str) -> bool:
        text = text.strip()
        if not text or self.busy:
            return False
        self.input.clear()
        self.history.append({"role": "user", "content": text})
        self.transcript.append(("user", text, ""))
        messages = list(self.history)
        if self.system.text().strip():
            messages.insert(0, {"role": "system", "content": self.system.text().strip()})
        body = {"model": self.model.currentData() or "auto", "messages": messages,
                "max_tokens": self.max_tokens.value(),
                "stream_options": {"include_usage": True}}   # tokens/s from tokens, not chunks
        tags = [t.strip() for t in self.tags.text().split(",") if t.strip()]
        if tags:
            body["tags"] = tags
        self._reply = ""
        self.transcript.append(("assistant", "", "…"))
        self._stream = stream = ChatStream()
        self.send_btn.setEnabled(False)
        self.stop_btn.setEnabled(True)
        self.status.setText(self.tr("waiting for the first token…"))
        self._render()
        self._worker = self.pool.stream(self.client.chat_stream, body, stream,
                                        yielded=self._on_token, returned=lambda _r: self._done(None),
                                        errored=self._done, on_quit=stream.cancel)
        self.reply_started.emit()
        return True

    def stop(self) -> None:
        """Close the stream and end the reply now; the worker's late signals are ignored."""
        if self._worker is not None:
            self._worker.quit()
            self._done(None)

    def _on_token(self, text: str) -> None:
        if self._stream is None:
            return
        self._reply += text
        self.transcript[-1] = ("assistant", self._reply, "…")
        self.token_received.emit(text)
        self._render()

    def _done(self, error: Exception | None) -> None:
        stream, self._stream, self._worker = self._stream, None, None
        if stream is None:
            return
        stats = stream.stats
        if stream.cancelled:
            stats.stopped = True
            stats.ended = stats.ended or time.perf_counter()
        foot = footer(stats) if error is None else self.tr("error: {error}").format(error=error)
        if self.transcript and self.transcript[-1][0] == "assistant":  # not cleared by New chat
            self.transcript[-1] = ("assistant", self._reply, foot)
            if self._reply:
                self.history.append({"role": "assistant", "content": self._reply})
            elif self.history:
                self.history.pop()  # no answer: the question is not part of the conversation
        self.send_btn.setEnabled(True)
        self.stop_btn.setEnabled(False)
        self.status.setText(self.tr("stopped") if stats.stopped else ("" if error is None else str(error)))
        self._render()
        self.reply_finished.emit({"text": self._reply, "stats": stats, "error": error})

    # --- view ----------------------------------------------------------------------------------
    def _render(self) -> None:
        parts = []
        for role, text, foot in self.transcript:
            who = self.tr("You") if role == "user" else self.tr("Assistant")
            color = "#1f4f9a" if role == "user" else "#1f7a1f"
            body = html.escape(text).replace("\n", "<br>") or "<i>…</i>"
            parts.append(f"<p><b style='color:{color}'>{who}</b><br>{body}</p>")
            if foot:
                parts.append(f"<p style='color:#777;font-size:small'>{html.escape(foot)}</p>")
        self.view.setHtml("".join(parts))
        self.view.moveCursor(QTextCursor.MoveOperation.End)

    def new_chat(self) -> None:
        self.stop()
        self.history.clear()
        self.transcript.clear()
        self._render()

    def as_text(self) -> str:
        you, assistant = self.tr("You"), self.tr("Assistant")
        return "\n\n".join(f"{you if r == 'user' else assistant}: {t}" + (f"\n[{f}]" if f else "")
                           for r, t, f in self.transcript)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.as_text())

    def shutdown(self) -> None:
        self.stop()
