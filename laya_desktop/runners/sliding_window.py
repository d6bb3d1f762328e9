"""Prefix reuse for models with sliding-window attention layers (Gemma 2 and 3, Cohere 2).

The runner gives those layers a cache of their window only (llama.cpp's iSWA cache with
`swa_full` off, as llama-server runs them): n_swa cells per sequence plus a micro-batch instead of
n_ctx. A long prompt then reads n_swa keys per sliding-window layer instead of all the earlier
ones (faster than with full-size caches: bench/results/long_prompt/latest.json), and
those layers' KV shrinks to a constant.

The price is that a slot's cache no longer holds every position of its sliding-window layers: the
cells more than a window behind the sequence's end are overwritten. A new request may keep a
cached prefix only while the window before the prefix's end is still there (llama-server's test).
When it is not, because the previous answer ran on past the shared prefix by more than the
cache's slack, the prefix is rebuilt from a checkpoint (llama-server's context checkpoints): the
sliding-window cells of the slot's sequence, saved when its last prompt had been read. Restored,
they serve any prefix that ends inside that prompt with a window still before it: an agent's next
turn, which repeats the previous prompt, whatever the previous answer's length, and a fork within
the last few hundred tokens of it (an edited last message, a regenerated answer). A fork further
back is read again. One checkpoint a slot, taken after the prompt's last step, so that reading a
prompt is never split for it (llama-server stops 4 tokens before the end; here that would give
those tokens a different matmul kernel, and greedy output would depend on the batch).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import llama_cpp as L

SWA_ONLY = L.LLAMA_STATE_SEQ_FLAGS_SWA_ONLY


@dataclass
class Checkpoint:
    n_tokens: int              # the slot's first n_tokens tokens: the prompt it was taken after
    pos_min: int               # the earliest position its window cells hold
    data: ctypes.Array
    size: int


class SlidingWindows:
    """The checkpoints of one context's slots and the test for a cached prefix."""

    def __init__(self, ctx, mem, n_swa: int):
        self.ctx, self.mem, self.n_swa = ctx, mem, n_swa
        self._checkpoints: dict[int, Checkpoint] = {}

    def save(self, seq_id: int, n_tokens: int) -> None:
        """The slot's prompt, its first n_tokens, is in the cache: keep its window."""
        self._checkpoints.pop(seq_id, None)
        size = L.llama_state_seq_get_size_ext(self.ctx, seq_id, SWA_ONLY)
        data = (ctypes.c_uint8 * size)()
        written = L.llama_state_seq_get_data_ext(self.ctx, data, size, seq_id, SWA_ONLY)
        if written:
            pos_min = L.llama_memory_seq_pos_min(self.mem, seq_id)
            self._checkpoints[seq_id] = Checkpoint(n_tokens, pos_min, data, written)

    def _holds_window_before(self, pos_min: int, keep: int) -> bool:
        return 0 <= pos_min <= max(0, keep - self.n_swa)

    def usable_prefix(self, seq_id: int, keep: int) -> int:
        """How many of the `keep` shared tokens the slot can really reuse: all of them while its
        cache still holds the window before the keep-th; else, from its checkpoint restored, as
        many as lie in the checkpoint's prompt with the window before them; else none. The caller
        then drops the cache past the result."""
        if self._holds_window_before(L.llama_memory_seq_pos_min(self.mem, seq_id), keep):
            return keep
        checkpoint = self._checkpoints.get(seq_id)
        if checkpoint is None:
            return 0
        keep = min(keep, checkpoint.n_tokens)
        if not self._holds_window_before(checkpoint.pos_min, keep):
            return 0
        if L.llama_state_seq_set_data_ext(self.ctx, checkpoint.data, checkpoint.size, seq_id,
                                          SWA_ONLY) != checkpoint.size:
            return 0
        return keep

    def truncated(self, seq_id: int, n_tokens: int) -> None:
        """The slot now holds only its first n_tokens: a checkpoint past them is stale."""
        checkpoint = self._checkpoints.get(seq_id)
        if checkpoint is not None and checkpoint.n_tokens > n_tokens:
            del self._checkpoints[seq_id]

    def used_cells(self, seq_id: int) -> int:
        """Cells the slot's sequence holds in the sliding-window layers' cache."""
        lo = L.llama_memory_seq_pos_min(self.mem, seq_id)
        hi = L.llama_memory_seq_pos_max(self.mem, seq_id)
        return hi - lo + 1 if 0 <= lo <= hi else 0
