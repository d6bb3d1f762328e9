"""The routing inputs of recent requests (user text, tags, asked model, path, prompt size), kept
so that an edited rule list can be replayed against real traffic before it is applied.

Bounded twice: `server.route_log_size` entries (0 keeps none) and MAX_TEXT_CHARS of user text
each. A keyword past the cut is not seen by a replay; the entry says it was cut. Separate from the
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


class RouteInputLog:
    def __init__(self, size: int = 1000):
        self._entries: collections.deque[dict] = collections.deque(maxlen=max(0, size))
        self._seq = itertools.count(1)

    @property
    def size(self) -> int:
        return self._entries.maxlen or 0

    def resize(self, size: int) -> None:
        if size != self.size:
            self._entries = collections.deque(self._entries, maxlen=max(0, size))

    def __len__(self) -> int:
        return len(self._entries)

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
        self._entries.append(entry)

    def recent(self, limit: int | None = None) -> list[dict]:
        """The newest `limit` entries (all when None), oldest first."""
        items = list(self._entries)
        return items if limit is None else items[-limit:] if limit > 0 else []


def as_request(entry: dict) -> RouteRequest:
    return RouteRequest(path=entry["path"], model=entry["model"], tags=tuple(entry["tags"]),
                        user_text_lower=entry["user_text"].lower(),
                        prompt_chars=entry["prompt_chars"])
