"""The routing inputs of recent requests (user text, tags, asked model, path, prompt size), kept
so that an edited rule list can be replayed against real traffic before it is applied.

Bounded three times: `server.route_log_size` entries (0 keeps none), MAX_TEXT_CHARS of user text
each, and MAX_BYTES for all entries together, the least recent dropped first (an entry's size is
estimated from the lengths of its strings, not measured). A keyword past the cut is not seen by
a replay; the entry says it was cut. Separate from the
request log on purpose: that one is served to anyone with the admin key for monitoring and keeps
no prompt text.
"""
from __future__ import annotations

import collections
import itertools
import time

from laya_desktop.routing.request import (USER_TEXT_SEPARATOR, RouteRequest, asked_model,
                                          merge_tags, text_parts)

MAX_TEXT_CHARS = 32_768
# 1,000 entries of 32k chars of non-Latin text would be 128 MiB; this keeps the log's share of
# the engine's memory small whatever the traffic (a server.route_log_mb field would set it).
MAX_BYTES = 32 * 1024 * 1024
ENTRY_OVERHEAD = 600    # the dict, its floats and ints, the tag tuple, rounded up from a real entry


def str_bytes(text: str) -> int:
    """About what a str takes: 1 byte per char when ASCII, up to 4 otherwise (PEP 393).
    `isascii()` reads a flag: O(1)."""
    return len(text) if text.isascii() else 4 * len(text)


def entry_bytes(entry: dict) -> int:
    tags = entry["tags"]
    return (ENTRY_OVERHEAD + str_bytes(entry["user_text"]) + str_bytes(entry["path"])
            + str_bytes(entry["model"] or "") + sum(map(str_bytes, tags)) + 60 * len(tags))


class RouteInputLog:
    def __init__(self, size: int = 1000, max_bytes: int = MAX_BYTES):
        self._entries: collections.deque[tuple[int, dict]] = collections.deque()
        self._size = max(0, size)
        self.max_bytes = max_bytes
        self.bytes = 0          # the estimate for the entries kept
        self._seq = itertools.count(1)

    @property
    def size(self) -> int:
        return self._size

    def resize(self, size: int) -> None:
        self._size = max(0, size)
        self._trim()

    def __len__(self) -> int:
        return len(self._entries)

    def _trim(self) -> None:
        while self._entries and (len(self._entries) > self._size or self.bytes > self.max_bytes):
            self.bytes -= self._entries.popleft()[0]

    def record(self, path: str, body: dict, header_tags: str | None) -> None:
        if not self.size:
            return
        user_parts, chars = text_parts(body)
        text = USER_TEXT_SEPARATOR.join(user_parts)
        entry = {"seq": next(self._seq), "t": time.time(), "path": path,
                 "model": asked_model(body), "tags": list(merge_tags(body, header_tags)),
                 "user_text": text[:MAX_TEXT_CHARS], "prompt_chars": chars}
        if len(text) > MAX_TEXT_CHARS:
            entry["truncated"] = True
        cost = entry_bytes(entry)
        self._entries.append((cost, entry))
        self.bytes += cost
        self._trim()

    def recent(self, limit: int | None = None) -> list[dict]:
        """The newest `limit` entries (all when None), oldest first."""
        items = [entry for _, entry in self._entries]
        return items if limit is None else items[-limit:] if limit > 0 else []


def as_request(entry: dict) -> RouteRequest:
    return RouteRequest(path=entry["path"], model=entry["model"], tags=tuple(entry["tags"]),
                        user_text_lower=entry["user_text"].lower(),
                        prompt_chars=entry["prompt_chars"])
