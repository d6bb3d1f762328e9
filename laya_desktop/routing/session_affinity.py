"""Session affinity: the requests of one conversation go to the target that served it, so its
prompt cache (the replica's KV of the conversation so far) is found again.

The session key is the client's own where it sends one, else a hash of the conversation's stable
prefix: its system and developer messages, the names of its tools and its first user message,
which stay the same turn after turn while the rest grows. Such a key is followed only from the
second turn on (the request holds an answer already): the same first message sent afresh is a new
conversation, which the strategy places like any other. A table, bounded and with a TTL, maps
(rule, key) to the target; the rule's strategy chooses a session's first target, and chooses
again when the remembered one is down or at its limit (the conversation then moves with it).

Pure policy and dict walking, no I/O: the engine calls it on every routed request.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from typing import Callable, Mapping

SESSION_HEADER = "x-laya-session"
MAX_SESSIONS = 4096
SHORT_HASH_CHARS = 8
_RESPONSE_ID = re.compile(rb'"id"\s*:\s*"(resp_[A-Za-z0-9_-]{1,200})"')


def session_key(body: Mapping, chat: Mapping, headers: Mapping,
                unresolved_previous: str | None = None) -> tuple[str, str, bool] | None:
    """(key, where it came from, whether to follow it now), or None when the request has
    nothing to key a session by. A client's key is always followed; a prefix hash from the
    conversation's second turn on.

    `unresolved_previous`: a Responses previous_response_id this engine does not hold (an
    upstream stores the chain), the one key that links such a turn to the one before."""
    header = headers.get(SESSION_HEADER)
    if header:
        return "h:" + header, "header", True
    cache_key = body.get("prompt_cache_key")
    if isinstance(cache_key, str) and cache_key:
        return "k:" + cache_key, "prompt_cache_key", True
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if isinstance(user_id, str) and user_id:
        return "u:" + user_id, "metadata.user_id", True
    if unresolved_previous:
        return response_key(unresolved_previous), "previous_response_id", True
    prefix = stable_prefix(chat)
    if prefix is None:
        return None
    # Python's own string hash: a few times faster than a digest over an agent's long system
    # prompt, and the table it keys lives no longer than this process (nor does its seed)
    return f"p:{hash(prefix) & 0xFFFFFFFFFFFFFFFF:016x}", "prefix", _answered(chat)


def _answered(chat: Mapping) -> bool:
    """The conversation holds an answer already (an assistant or tool turn): a later turn."""
    return any(isinstance(m, dict) and m.get("role") in ("assistant", "tool")
               for m in chat.get("messages") or ())


def response_key(response_id: str) -> str:
    return "r:" + response_id


def stable_prefix(chat: Mapping) -> tuple | None:
    """The part of a conversation that its later turns repeat; None without a user message (a
    completions prompt, an embedding: no conversation to follow)."""
    messages = chat.get("messages")
    if not isinstance(messages, list):
        return None
    parts: list[str] = []
    first_user = None
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in ("system", "developer"):
            parts.append(_text(message.get("content")))
        elif role == "user":
            first_user = _text(message.get("content"))
            break
    if first_user is None:
        return None
    system = chat.get("system")   # an Anthropic-shaped body keeps it outside the messages
    if system is not None:
        parts.append(_text(system))
    tools = chat.get("tools")
    if isinstance(tools, list):
        parts.append(",".join(_tool_name(t) for t in tools))
    parts.append(first_user)
    return tuple(parts)


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)


def _tool_name(tool) -> str:
    if not isinstance(tool, dict):
        return ""
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else ""


def short_hash(key: str) -> str:
    """What the request log shows of a key: enough to tell sessions apart, not the key."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"),
                           digest_size=SHORT_HASH_CHARS // 2).hexdigest()


def response_id_in(answer_tail: bytes) -> str | None:
    """The Responses API id (resp_…) in a relayed answer's body or last stream events."""
    found = _RESPONSE_ID.findall(answer_tail)
    return found[-1].decode("ascii") if found else None


class AffinityTable:
    """(rule, session key) -> target, least recently used out first, each entry living
    `ttl_s` past its last use."""

    def __init__(self, size: int = MAX_SESSIONS, clock: Callable[[], float] = time.monotonic):
        self.size, self.clock = size, clock
        self._entries: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, rule: str, key: str) -> str | None:
        entry = self._entries.get((rule, key))
        if entry is None:
            return None
        if entry[1] <= self.clock():
            del self._entries[(rule, key)]
            return None
        return entry[0]

    def put(self, rule: str, key: str, model: str, ttl_s: float) -> None:
        entries = self._entries
        entries[(rule, key)] = (model, self.clock() + ttl_s)
        entries.move_to_end((rule, key))
        while len(entries) > self.size:
            entries.popitem(last=False)


def with_affinity(order: list[str], remembered: str | None, usable: Callable[[str], bool],
                  has_room: Callable[[str], bool]) -> tuple[list[str], bool]:
    """The order with the remembered target first when it may take the request: among the
    candidates, up, and under its limit. (order, whether affinity chose the first)."""
    if remembered is None or remembered not in order:
        return order, False
    if not (usable(remembered) and has_room(remembered)):
        return order, False
    if order[0] == remembered:
        return order, True
    return [remembered, *(m for m in order if m != remembered)], True
