"""The Responses API's memory: stored responses, so `previous_response_id` and `item_reference`
can continue a conversation, and `GET /v1/responses/{id}` can read one back.

Bounded by count, least recently used out first. Each record holds the chat messages of the whole
conversation so far (input and output); a continuation shares the earlier records' message
objects, so a long chain costs a list of references per turn, not a copy of its text.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

MAX_RESPONSES = 1000


@dataclass
class StoredResponse:
    id: str
    messages: list[dict]                 # chat messages: the conversation through this response
    response: dict                       # the response object as the client got it
    items: dict[str, list[dict]] = field(default_factory=dict)   # item id -> its chat messages


class ResponseStore:
    def __init__(self, max_responses: int = MAX_RESPONSES):
        self.max_responses = max_responses
        self._responses: OrderedDict[str, StoredResponse] = OrderedDict()
        self._item_owner: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._responses)

    def put(self, record: StoredResponse) -> None:
        self._responses[record.id] = record
        self._responses.move_to_end(record.id)
        for item_id in record.items:
            self._item_owner[item_id] = record.id
        while len(self._responses) > self.max_responses:
            _, dropped = self._responses.popitem(last=False)
            for item_id in dropped.items:
                if self._item_owner.get(item_id) == dropped.id:
                    del self._item_owner[item_id]

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
        for item_id in record.items:
            if self._item_owner.get(item_id) == response_id:
                del self._item_owner[item_id]
        return True
