"""A streamed chat completion's server-sent events, read as they arrive: text deltas and tool-call
deltas, and the figures the chat shows under a reply. Qt-free."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from laya_desktop.gui.engine_errors import EngineError


@dataclass
class StreamStats:
    """What the chat shows under a reply."""
    route: str | None = None
    model: str | None = None
    route_us: str | None = None
    started: float = 0.0
    first_token: float | None = None
    ended: float | None = None
    chunks: int = 0
    completion_tokens: int | None = None
    finish_reason: str | None = None
    stopped: bool = False

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_token is None else (self.first_token - self.started) * 1000

    @property
    def tokens_per_s(self) -> float | None:
        tokens = self.completion_tokens if self.completion_tokens is not None else self.chunks
        if self.first_token is None or self.ended is None or tokens < 2:
            return None
        span = self.ended - self.first_token
        return (tokens - 1) / span if span > 0 else None


@dataclass
class ChatEvents:
    """Feed it the body as it comes; each `feed` returns the new items: a text delta (str), or
    after a tool-call delta a copy of the calls so far. `done` once `[DONE]` came."""
    stats: StreamStats
    tool_calls: list[dict] = field(default_factory=list)   # {"id", "name", "arguments"} per index
    done: bool = False
    _pending: bytes = b""

    def feed(self, data: bytes) -> list[str | list[dict]]:
        """Raises EngineError for an error event."""
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()
        items: list[str | list[dict]] = []
        for raw in lines:
            if self.done:
                break
            self._line(raw.decode("utf-8").rstrip("\r"), items)
        return items

    def _line(self, line: str, items: list) -> None:
        if not line.startswith("data:"):
            return
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return
        chunk = json.loads(data)
        if "error" in chunk:
            err = chunk["error"]
            raise EngineError(err.get("message", str(err)), kind=err.get("type"))
        stats = self.stats
        usage = chunk.get("usage")
        if usage and usage.get("completion_tokens") is not None:
            stats.completion_tokens = usage["completion_tokens"]
        for choice in chunk.get("choices", []):
            if choice.get("finish_reason"):
                stats.finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            calls = delta.get("tool_calls")
            if (text or calls) and stats.first_token is None:
                stats.first_token = time.perf_counter()
            if text:
                stats.chunks += 1
                items.append(text)
            if isinstance(calls, list) and calls:
                _gather_tool_calls(self.tool_calls, calls)
                items.append([dict(c) for c in self.tool_calls])


def _gather_tool_calls(gathered: list[dict], deltas: list) -> None:
    """OpenAI streams a call's id and name first, then its arguments in pieces, keyed by index."""
    for position, delta in enumerate(deltas):
        if not isinstance(delta, dict):
            continue
        index = delta.get("index", position)
        if not isinstance(index, int) or not 0 <= index < 128:
            continue
        while len(gathered) <= index:
            gathered.append({"id": "", "name": "", "arguments": ""})
        entry = gathered[index]
        fn = delta.get("function") or {}
        entry["id"] = delta.get("id") or entry["id"]
        entry["name"] += fn.get("name") or ""
        arguments = fn.get("arguments")
        entry["arguments"] += arguments if isinstance(arguments, str) else \
            (json.dumps(arguments, ensure_ascii=False) if arguments is not None else "")
