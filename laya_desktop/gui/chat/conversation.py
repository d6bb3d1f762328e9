"""A chat conversation as plain data: its messages, what goes to the engine, and its JSON file.

Qt-free. The panel shows a `Conversation`; saving and reopening are `save_conversation` and
`load_conversation`, tested directly (the file dialogs around them are thin). Finished conversations
are also kept in `conversations_dir()`, one file each, so that Open… finds them later.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "laya-chat"
VERSION = 1
ROLES = ("user", "assistant")


class ConversationFileError(ValueError):
    """A file that is not a conversation this version can read; the message says what is wrong."""


@dataclass
class Message:
    role: str                       # "user" or "assistant"
    text: str
    footer: str = ""                # what was shown under a reply: rule, model, speed, finish
    tool_calls: list[dict] = field(default_factory=list)   # {"id", "name", "arguments"}
    failed: bool = False            # an error or an empty stop: shown, never sent back

    def to_json(self) -> dict:
        out: dict[str, Any] = {"role": self.role, "content": self.text}
        if self.footer:
            out["footer"] = self.footer
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        if self.failed:
            out["failed"] = True
        return out


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    settings: dict = field(default_factory=dict)    # model, system, tags, sampling
    started: float = field(default_factory=time.time)

    def api_messages(self, system: str = "") -> list[dict]:
        """The OpenAI messages for the next request. A reply made only of tool calls goes back as
        their JSON text: the chat runs no tools, so there are no tool results to pair them with."""
        out = [{"role": "system", "content": system}] if system else []
        for m in self.messages:
            if m.failed:
                continue
            content = m.text
            if m.role == "assistant" and not content and m.tool_calls:
                content = json.dumps([{"name": c.get("name"), "arguments": c.get("arguments")}
                                      for c in m.tool_calls], ensure_ascii=False)
            out.append({"role": m.role, "content": content})
        return out

    def drop_reply(self) -> Message | None:
        """Remove the last reply (to ask again); None when the conversation does not end in one."""
        if self.messages and self.messages[-1].role == "assistant":
            return self.messages.pop()
        return None

    def take_last_question(self) -> str | None:
        """Remove the last user message and the reply after it; its text, for editing."""
        self.drop_reply()
        if self.messages and self.messages[-1].role == "user":
            return self.messages.pop().text
        return None

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "started": self.started,
                "settings": self.settings, "messages": [m.to_json() for m in self.messages]}


def conversation_from_json(data: Any) -> Conversation:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConversationFileError(f"not a Laya chat file (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise ConversationFileError(f"version {data.get('version')!r}: this app reads version {VERSION}")
    raw = data.get("messages")
    if not isinstance(raw, list):
        raise ConversationFileError("messages: expected a list")
    messages = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise ConversationFileError(f"messages[{i}].role: expected one of {', '.join(ROLES)}")
        if not isinstance(m.get("content"), str):
            raise ConversationFileError(f"messages[{i}].content: expected text")
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise ConversationFileError(f"messages[{i}].tool_calls: expected a list of objects")
        messages.append(Message(m["role"], m["content"], str(m.get("footer") or ""),
                                [dict(c) for c in calls], bool(m.get("failed"))))
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise ConversationFileError("settings: expected an object")
    started = data.get("started")
    return Conversation(messages, settings,
                        float(started) if isinstance(started, (int, float)) else time.time())


def save_conversation(conversation: Conversation, path: str | os.PathLike) -> Path:
    """Write the conversation as JSON, atomically: a crash mid-write leaves the old file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # one temporary name per writer: two saves of the same conversation may overlap
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(conversation.to_json(), indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_conversation(path: str | os.PathLike) -> Conversation:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversationFileError(f"cannot read {path}: {exc}") from None
    except ValueError as exc:
        raise ConversationFileError(f"{path} is not JSON: {exc}") from None
    return conversation_from_json(data)


def conversations_dir() -> Path:
    """Where finished conversations are kept. On Linux under $XDG_STATE_HOME, which the XDG spec
    gives to history that should outlive a restart (the logs live there too)."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Laya" / "Conversations"
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "Laya" / "Conversations"
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "state"
    return base / "laya" / "conversations"


def autosave_path(conversation: Conversation, folder: Path | None = None) -> Path:
    stamp = time.strftime("%Y-%m-%d_%H%M%S", time.localtime(conversation.started))
    return (folder or conversations_dir()) / f"chat-{stamp}.json"
