"""The Responses API's memory: stored responses, so `previous_response_id` and `item_reference`
can continue a conversation, and `GET /v1/responses/{id}` can read one back.

Bounded by count and by bytes, least recently used out first. Each record holds the chat messages
of the whole conversation so far (input and output); a continuation shares the earlier records'
message objects, so a long chain costs a list of references per turn, not a copy of its text.
The byte budget still charges each record for its whole conversation: a record keeps its
predecessors' text alive once they are dropped, so charging only its own turn would let a chain
of big turns grow past the budget. A record's size is an estimate (its request's length, and the
lengths of the texts it holds), never a walk of its objects.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

MAX_RESPONSES = 1000
# What the store may hold (a server.response_store_mb field would set it); a record over it is
# not kept, and `previous_response_id` naming it gets the usual 404.
MAX_BYTES = 128 * 1024 * 1024
# A parsed JSON body takes a few times its length as Python objects (Codex's and Claude Code's
# bodies about BODY_FACTOR; a body of many tiny objects far more); the response echoes much of
# its request.
BODY_FACTOR = 2
RECORD_OVERHEAD = 2048


def str_bytes(text: str) -> int:
    """About what a str takes: 1 byte per char when ASCII, up to 4 otherwise (PEP 393)."""
    return len(text) if text.isascii() else 4 * len(text)


def _strings_bytes(value: dict) -> int:
    """The strings of a content part or tool call, one level of nesting down (a part's
    `image_url.url`, a call's `function.arguments`)."""
    total = 100
    for item in value.values():
        if isinstance(item, str):
            total += str_bytes(item)
        elif isinstance(item, dict):
            total += sum(str_bytes(v) for v in item.values() if isinstance(v, str))
    return total


def messages_bytes(messages: list[dict]) -> int:
    total = 0
    for m in messages:
        content = m.get("content")
        total += 200 + (str_bytes(content) if isinstance(content, str) else 0)
        for part in content if isinstance(content, list) else ():
            total += _strings_bytes(part) if isinstance(part, dict) else 0
        for call in m.get("tool_calls") or ():
            total += _strings_bytes(call) if isinstance(call, dict) else 0
    return total


@dataclass
class StoredResponse:
    id: str
    messages: list[dict]                 # chat messages: the conversation through this response
    response: dict                       # the response object as the client got it
    items: dict[str, list[dict]] = field(default_factory=dict)   # item id -> its chat messages
    body_bytes: int = 0                  # the length of the request it answered

    def estimated_bytes(self) -> int:
        # output items' text is in `messages` too (the answer): counted once
        return (RECORD_OVERHEAD + BODY_FACTOR * self.body_bytes + messages_bytes(self.messages)
                + 300 * len(self.items))


class ResponseStore:
    def __init__(self, max_responses: int = MAX_RESPONSES, max_bytes: int = MAX_BYTES):
        self.max_responses = max_responses
        self.max_bytes = max_bytes
        self.bytes = 0
        self._responses: OrderedDict[str, StoredResponse] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._item_owner: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._responses)

    def put(self, record: StoredResponse) -> bool:
        """Keep `record` (dropping the least recently used to make room); False when it alone is
        over the budget and was not kept."""
        size = record.estimated_bytes()
        if size > self.max_bytes:
            return False
        self.delete(record.id)
        self._responses[record.id] = record
        self._sizes[record.id] = size
        self.bytes += size
        for item_id in record.items:
            self._item_owner[item_id] = record.id
        while len(self._responses) > self.max_responses or self.bytes > self.max_bytes:
            self.delete(next(iter(self._responses)))
        return True

    def get(self, response_id: str) -> StoredResponse | None:
        record = self._responses.get(response_id)
        if record is not None:
            self._responses.move_to_end(response_id)
        return record

    def item(self, item_id: str) -> list[dict] | None:
        owner = self._item_owner.get(item_id)
        record = self._responses.get(owner) if owner else None
        return record.items.get(item_id) if record else None

    def delete(self, response_id: str) -> bool:
        record = self._responses.pop(response_id, None)
        if record is None:
            return False
        self.bytes -= self._sizes.pop(response_id)
        for item_id in record.items:
            if self._item_owner.get(item_id) == response_id:
                del self._item_owner[item_id]
        return True
