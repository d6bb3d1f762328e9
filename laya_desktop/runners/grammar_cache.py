"""GBNF text by schema: an LRU keyed by the sha256 of the schema's canonical JSON.

The text is what is kept, not the parsed grammar sampler: llama_sampler_clone copies the grammar's
stacks and re-points them rule by rule, which for wide alternations costs more than parsing the
text again (`clone_s` against `init_s` by size in bench/results/grammar_limits/latest.json; for
small grammars either way costs little).
"""
from __future__ import annotations

import collections
import hashlib
import json

CACHED_GRAMMARS = 64


def schema_key(schema) -> str:
    """The same for equal schemas whatever their key order or spacing."""
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class GrammarCache:
    """Key -> GBNF text or the error its schema gave (refused once, refused at once next time)."""

    def __init__(self, size: int = CACHED_GRAMMARS):
        self.size = size
        self._items: collections.OrderedDict[str, tuple[str | None, tuple[str, str] | None]] = (
            collections.OrderedDict())
        self.hits = self.misses = 0

    def get(self, key: str):
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        self.hits += 1
        self._items.move_to_end(key)
        return item

    def put(self, key: str, gbnf: str | None, error: tuple[str, str] | None = None) -> None:
        self._items[key] = (gbnf, error)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
