"""GBNF text by schema: an LRU keyed by the sha256 of the schema's canonical JSON.

The text is what is kept, not the parsed grammar sampler: llama_sampler_clone copies the grammar's
stacks and re-points them rule by rule, which for wide alternations costs more than parsing the
text again (bench/grammar_limits.py: enum of 1,000, clone 9.5 ms against init 1.8 ms; 20,000,
3.5 s against 0.46 s; small grammars, 0.05 ms against 0.1 ms either way).
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
