"""Chat panel: a streamed, multi-turn chat with the engine, stoppable, with route and speed per reply.

Replies are drawn as Markdown with copyable code boxes (`chat/transcript_view.py`); the last reply
can be asked again and the last question edited; conversations are saved and reopened as JSON
(`chat/conversation.py`) and each finished one is kept in the app's conversations folder.
"""
from __future__ import annotations

import copy
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton,
    QVBoxLayout, QWidget,
)

from laya_desktop.gui.chat.conversation import (
    Conversation, Message, autosave_path, conversations_dir, load_conversation, save_conversation,
)
from laya_desktop.gui.chat.repetition import repeated_line, repetition, without_repeats
from laya_desktop.gui.chat.sampling import SamplingControls
from laya_desktop.gui.chat.transcript_view import TranscriptView
from laya_desktop.gui.engine_client import ChatStream, EngineClient
from laya_desktop.gui.workers import WorkerPool

REDRAW_MS = 50   # a streamed reply is redrawn at most this often, not once per token...
REDRAW_SHARE = 4  # ...and waits at least this many times its last redraw's cost (a long code box)
MAX_REDRAW_MS = 500


def footer(stats, repeated: str | None = None) -> str:
    parts = [QCoreApplication.translate("ChatPanel", "rule {rule}").format(rule=stats.route or "—"),
             QCoreApplication.translate("ChatPanel", "model {model}").format(model=stats.model or "—")]
    parts.append(f"TTFT {stats.ttft_ms:.0f} ms" if stats.ttft_ms is not None else "TTFT —")
    tps = stats.tokens_per_s
    parts.append(f"{tps:.1f} tok/s" if tps is not None else "tok/s —")
    if repeated is not None:
        parts.append(QCoreApplication.translate("ChatPanel", "stopped: it kept repeating itself"))
    elif stats.stopped:
        parts.append(QCoreApplication.translate("ChatPanel", "stopped"))
    elif stats.finish_reason == "length":
        parts.append(QCoreApplication.translate("ChatPanel", "cut off: max tokens reached"))
    elif stats.finish_reason:
        parts.append(QCoreApplication.translate("ChatPanel", "finish {reason}").format(
            reason=stats.finish_reason))
    return " · ".join(parts)


class ChatPanel(QWidget):
    reply_finished = Signal(dict)   # {"text", "stats", "error", "tool_calls"}
    reply_started = Signal()
    token_received = Signal(str)
    conversation_opened = Signal(bool, str)   # ok, the path or the error
    saved = Signal(bool, str)                 # ok, the path or the error

    def __init__(self, pool: WorkerPool, client: EngineClient, parent: QWidget | None = None,
                 keep_folder: Path | None = None) -> None:
        super().__init__(parent)
        self.pool, self.client = pool, client
        self.keep_folder = keep_folder    # where finished conversations are kept; None: the default
        self.conversation = Conversation()
        self._stream: ChatStream | None = None
        self._reply: Message | None = None
        self._repeated: str | None = None
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(REDRAW_MS)
        self._redraw.timeout.connect(self._redraw_reply)

        self.model = QComboBox()
        self.model.addItem(self.auto_label(), None)
        self.tags = QLineEdit()
        self.tags.setPlaceholderText(self.tr("tags, e.g. code"))
        self.system = QLineEdit()
        self.system.setPlaceholderText(self.tr("system prompt (optional)"))
        self.sampling = SamplingControls()
        self.max_tokens = self.sampling.max_tokens
        top = QHBoxLayout()
        for label, w in ((self.tr("Model"), self.model), (self.tr("Tags"), self.tags)):
            top.addWidget(QLabel(label))
            top.addWidget(w, 1)
        second = QHBoxLayout()
        second.addWidget(self.system, 1)
        second.addWidget(self.sampling)

        self.view = TranscriptView()
        self.view.copied.connect(lambda _code: self.status.setText(self.tr("code copied")))
        self.input = QPlainTextEdit()
        self.input.setPlaceholderText(self.tr("Message (Ctrl+Enter to send)"))
        self.input.setMaximumHeight(90)
        self.send_btn = QPushButton(self.tr("Send"))
        self.send_btn.clicked.connect(lambda: self.send(self.input.toPlainText()))
        self.stop_btn = QPushButton(self.tr("Stop"))
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop)
        self.regenerate_btn = QPushButton(self.tr("Regenerate"))
        self.regenerate_btn.setToolTip(self.tr("ask for the last reply again"))
        self.regenerate_btn.clicked.connect(self.regenerate)
        self.edit_btn = QPushButton(self.tr("Edit last"))
        self.edit_btn.setToolTip(self.tr("put the last message back in the box to change and resend"))
        self.edit_btn.clicked.connect(self.edit_last)
        new_btn = QPushButton(self.tr("New chat"))
        new_btn.clicked.connect(self.new_chat)
        open_btn = QPushButton(self.tr("Open…"))
        open_btn.clicked.connect(self.choose_file_to_open)
        save_btn = QPushButton(self.tr("Save…"))
        save_btn.clicked.connect(self.choose_file_to_save)
        copy_btn = QPushButton(self.tr("Copy"))
        copy_btn.setToolTip(self.tr("copy the conversation as text"))
        copy_btn.clicked.connect(self.copy)
        buttons = QHBoxLayout()
        for b in (self.send_btn, self.stop_btn, self.regenerate_btn, self.edit_btn, new_btn,
                  open_btn, save_btn, copy_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.status = QLabel("")

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(second)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.input)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        self.view.show_messages(self.conversation.messages)
        self._update_buttons()

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt name
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

    @property
    def history(self) -> list[dict]:
        """The OpenAI messages the next request carries, without the system prompt."""
        return self.conversation.api_messages()

    # --- sending and streaming -----------------------------------------------------------------
    def send(self, text: str) -> bool:
        text = text.strip()
        if not text or self.busy:
            return False
        self.input.clear()
        self.conversation.messages.append(Message("user", text))
        self.view.append_message()
        return self._ask()

    def regenerate(self) -> bool:
        """Drop the last reply and ask the same question again."""
        if self.busy or not self.conversation.messages:
            return False
        self.conversation.drop_reply()
        if not self.conversation.messages or self.conversation.messages[-1].role != "user":
            return False
        self.conversation.messages[-1].failed = False
        self.view.show_messages(self.conversation.messages)
        return self._ask()

    def edit_last(self) -> bool:
        """Take the last question (and its reply) out of the conversation, into the input box."""
        if self.busy:
            return False
        text = self.conversation.take_last_question()
        if text is None:
            return False
        self.view.show_messages(self.conversation.messages)
        self.input.setPlainText(text)
        self.input.setFocus()
        self._update_buttons()
        return True

    def request_body(self) -> dict:
        system = self.system.text().strip()
        body = {"model": self.model.currentData() or "auto",
                "messages": self.conversation.api_messages(system),
                **self.sampling.request_fields(),
                "stream_options": {"include_usage": True}}   # tokens/s from tokens, not chunks
        tags = self._tags()
        if tags:
            body["tags"] = tags
        return body

    def _tags(self) -> list[str]:
        return [t.strip() for t in self.tags.text().split(",") if t.strip()]

    def _ask(self) -> bool:
        body = self.request_body()
        self._reply = Message("assistant", "", "…")
        self._redraw.setInterval(REDRAW_MS)
        self._repeated = None
        self.conversation.messages.append(self._reply)
        self.view.append_message()
        self._stream = stream = self.client.chat(body)
        stream.item.connect(lambda item: self._on_item(item, stream))
        stream.ended.connect(lambda error: self._done(error, stream))
        self._update_buttons()
        self.status.setText(self.tr("waiting for the first token…"))
        self.reply_started.emit()
        return True

    def stop(self) -> None:
        """Abort the stream and end the reply now."""
        stream = self._stream
        if stream is not None:
            stream.cancel()
            self._done(None, stream)

    def _on_item(self, item, stream: ChatStream) -> None:
        if stream is not self._stream or self._reply is None:
            return  # a stopped stream's late items: a new reply may be streaming already
        if isinstance(item, str):
            self._reply.text += item
            self.token_received.emit(item)
            # a line loop may arrive faster than the redraw; its check is cheap enough per line
            if "\n" in item and self.sampling.stop_loops.isChecked():
                self._repeated = repeated_line(self._reply.text[-4096:])
                if self._repeated is not None:
                    self.stop()
                    return
        else:
            self._reply.tool_calls = item
        if not self._redraw.isActive():
            self._redraw.start()

    def _redraw_reply(self) -> None:
        if self._reply is None or not self.conversation.messages \
                or self.conversation.messages[-1] is not self._reply:
            return
        if self.sampling.stop_loops.isChecked():   # checked as often as drawn, not per token
            self._repeated = repetition(self._reply.text)
            if self._repeated is not None:
                self.stop()
                return
        started = time.perf_counter()
        self.view.redraw_last()
        cost_ms = (time.perf_counter() - started) * 1000
        self._redraw.setInterval(int(min(MAX_REDRAW_MS, max(REDRAW_MS, REDRAW_SHARE * cost_ms))))

    def _done(self, error: Exception | None, stream: ChatStream | None) -> None:
        if stream is None or stream is not self._stream:
            return  # the late end of a stream that was stopped
        self._stream = None
        reply, self._reply = self._reply, None
        if reply is None:
            return
        self._redraw.stop()
        stats = stream.stats
        if stream.cancelled:
            stats.stopped = True
            stats.ended = stats.ended or time.perf_counter()
        if self._repeated is not None:
            reply.text = without_repeats(reply.text, self._repeated)
        reply.footer = footer(stats, self._repeated) if error is None \
            else self.tr("error: {error}").format(error=error)
        current = bool(self.conversation.messages) and self.conversation.messages[-1] is reply
        if current:   # not replaced by New chat or Open…
            if not reply.text and not reply.tool_calls:
                # no answer: neither it nor its question goes back to the model
                reply.failed = True
                if len(self.conversation.messages) >= 2:
                    self.conversation.messages[-2].failed = True
            self.view.redraw_last()
            self._keep()
        self._update_buttons()
        if self._repeated is not None:
            self.status.setText(self.tr("stopped: the reply kept repeating “{text}”").format(
                text=" ".join(self._repeated.split())[:60]))
        else:
            self.status.setText(self.tr("stopped") if stats.stopped
                                else ("" if error is None else str(error)))
        self.reply_finished.emit({"text": reply.text, "stats": stats, "error": error,
                                  "tool_calls": list(reply.tool_calls)})

    def _update_buttons(self) -> None:
        busy, messages = self.busy, self.conversation.messages
        self.send_btn.setEnabled(not busy)
        self.stop_btn.setEnabled(busy)
        self.regenerate_btn.setEnabled(not busy and any(m.role == "user" for m in messages[-2:]))
        self.edit_btn.setEnabled(not busy and any(m.role == "user" for m in messages))

    # --- conversations -------------------------------------------------------------------------
    def settings(self) -> dict:
        return {"model": self.model.currentData(), "system": self.system.text().strip(),
                "tags": self._tags(), **self.sampling.request_fields(),
                "stop_loops": self.sampling.stop_loops.isChecked()}

    def _snapshot(self) -> Conversation:
        snapshot = copy.deepcopy(self.conversation)
        snapshot.settings = self.settings()
        return snapshot

    def _keep(self) -> None:
        """Write the conversation to the conversations folder, off the GUI thread."""
        snapshot = self._snapshot()
        self.pool.submit(save_conversation, snapshot, autosave_path(snapshot, self.keep_folder))

    def save_to(self, path: str) -> None:
        self.pool.submit(save_conversation, self._snapshot(), path,
                         returned=lambda p: self.saved.emit(True, str(p)),
                         errored=lambda e: self._report(self.saved, e))

    def open_file(self, path: str) -> None:
        self.pool.submit(load_conversation, path,
                         returned=lambda c: self.show_conversation(c, path),
                         errored=lambda e: self._report(self.conversation_opened, e))

    def _report(self, signal, error: Exception) -> None:
        self.status.setText(str(error))
        signal.emit(False, str(error))

    def show_conversation(self, conversation: Conversation, path: str = "") -> None:
        self.stop()
        self.conversation = conversation
        saved = conversation.settings
        index = self.model.findData(saved.get("model")) if saved.get("model") else 0
        self.model.setCurrentIndex(max(index, 0))
        self.system.setText(str(saved.get("system") or ""))
        tags = saved.get("tags")
        self.tags.setText(", ".join(str(t) for t in tags) if isinstance(tags, list) else "")
        self.sampling.restore(saved)
        self.view.show_messages(conversation.messages)
        self._update_buttons()
        self.status.setText(self.tr("opened {path}").format(path=path) if path else "")
        self.conversation_opened.emit(True, path)

    def choose_file_to_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open conversation"),
                                              str(self.keep_folder or conversations_dir()),
                                              self.tr("Laya chats (*.json)"))
        if path:
            self.open_file(path)

    def choose_file_to_save(self) -> None:
        start = self.keep_folder or conversations_dir()
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save conversation"),
                                              str(autosave_path(self.conversation, start)),
                                              self.tr("Laya chats (*.json)"))
        if path:
            self.save_to(path)

    # --- view ----------------------------------------------------------------------------------
    def new_chat(self) -> None:
        self.stop()
        self.conversation = Conversation()
        self.view.show_messages(self.conversation.messages)
        self._update_buttons()

    def as_text(self) -> str:
        you, assistant = self.tr("You"), self.tr("Assistant")
        return "\n\n".join(f"{you if m.role == 'user' else assistant}: {m.text}"
                           + "".join(f"\n{c.get('name')}({c.get('arguments')})" for c in m.tool_calls)
                           + (f"\n[{m.footer}]" if m.footer else "")
                           for m in self.conversation.messages)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.as_text())

    def shutdown(self) -> None:
        self.stop()
