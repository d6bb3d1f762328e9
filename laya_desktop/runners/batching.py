"""Batching policy and text streaming, free of llama.cpp and MLX (tested with plain lists).

- `choose_slot` picks the free slot whose KV cache shares the longest prefix with a new prompt.
- `plan_batch` shares one decode step's token budget between running sequences and prompt chunks.
- `TextStream` turns generated token bytes (or text) into text deltas: it never splits a UTF-8
  character and holds back text that could still become a stop string; both backends use it.
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass


def common_prefix_len(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class FreeSlot:
    index: int
    cached: list[int]       # tokens whose KV the slot still holds
    last_used: float


def choose_slot(prompt: list[int], free: list[FreeSlot]) -> tuple[int, int]:
    """(slot index, tokens of `prompt` whose KV can be kept) for the best free slot.

    The longest shared prefix wins; without any, the least recently used slot, so that the caches
    of recent conversations survive longest. At least one prompt token is always left to process:
    its logits give the first generated token.
    """
    if not free:
        raise ValueError("no free slot")
    best, best_len = None, 0
    for slot in free:
        n = common_prefix_len(prompt, slot.cached)
        if n > best_len:
            best, best_len = slot, n
    if best is None:
        best = min(free, key=lambda s: (s.last_used, s.index))
    return best.index, min(best_len, max(len(prompt) - 1, 0))


def plan_batch(n_decoding: int, prefills: list[tuple[str, int]], n_batch: int,
               chunk_when_busy: int) -> list[tuple[str, int]]:
    """How many prompt tokens of each waiting prefill go into this step, oldest first.

    Every decoding sequence contributes one token. Prompts fill the rest of `n_batch`, but while
    sequences are decoding at most `chunk_when_busy` prompt tokens go in, so a long prompt
    delays the others' next token by one short chunk instead of its whole length.
    """
    budget = n_batch - n_decoding
    if n_decoding:
        budget = min(budget, chunk_when_busy)
    plan = []
    for key, remaining in prefills:
        if budget <= 0:
            break
        take = min(remaining, budget)
        if take > 0:
            plan.append((key, take))
            budget -= take
    return plan


class TextStream:
    """Incremental detokenization with stop strings for one sequence."""

    def __init__(self, stops: list[str]):
        self.stops = [s for s in stops if s]
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""
        self.stopped = False

    def push(self, data: bytes) -> str:
        """Add a token's bytes; returns the text that is safe to emit now. After a stop string
        is seen `stopped` is set and the text before it is the last thing returned."""
        return self.push_text(self._decoder.decode(data))

    def push_text(self, text: str) -> str:
        """`push` for a backend whose detokenizer already gives text (MLX)."""
        if self.stopped:
            return ""
        text = self._held + text
        cut = self._first_stop(text)
        if cut is not None:
            self.stopped = True
            self._held = ""
            return text[:cut]
        keep = self._partial_stop_len(text)
        self._held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def flush(self) -> str:
        """The held-back text at the end of generation (an incomplete UTF-8 tail is dropped)."""
        held, self._held = self._held, ""
        return "" if self.stopped else held

    def _first_stop(self, text: str) -> int | None:
        found = [i for i in (text.find(s) for s in self.stops) if i >= 0]
        return min(found) if found else None

    def _partial_stop_len(self, text: str) -> int:
        """Length of the longest end of `text` that is a proper prefix of a stop string."""
        best = 0
        for stop in self.stops:
            for k in range(min(len(stop) - 1, len(text)), best, -1):
                if text.endswith(stop[:k]):
                    best = k
                    break
        return best
