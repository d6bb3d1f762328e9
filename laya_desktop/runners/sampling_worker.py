"""Grammar-constrained sampling off the decode loop.

The grammar sampler tests every vocabulary token against every live grammar stack: milliseconds
a token for an ordinary schema over SmolLM2's 49k vocabulary, far more for the widest enum
schema_limits allows (bench/results/grammar_limits/latest.json). Done in the decode loop, that
time was added to every other sequence's step. Here the loop copies the request's logits row and
goes on; this thread runs the request's chain over the copy (what llama_sampler_sample does:
candidates from the logits, apply, take `selected`, accept), and the request joins the next step
with its token.
ctypes calls llama.cpp without the GIL, so the grammar and llama_decode run at the same time.

A chain in flight belongs to this thread until its result is taken: the backend frees a cancelled
request's chain only then.
"""
from __future__ import annotations

import collections
import ctypes
import queue
import threading
from typing import Callable

import llama_cpp as L
import numpy as np

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class SamplingWorker:
    def __init__(self, n_vocab: int, wake: Callable[[], None]):
        self.n_vocab = n_vocab
        self.wake = wake
        self._jobs: queue.Queue = queue.Queue()
        self._done: collections.deque = collections.deque()
        self._data = (L.llama_token_data * n_vocab)()
        self._view = np.frombuffer(self._data, dtype=_TOKEN_DATA)
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self._array = L.llama_token_data_array(data=self._data, size=n_vocab, selected=-1,
                                               sorted=False)
        self._thread = threading.Thread(target=self._run, name="grammar-sampling", daemon=True)
        self._thread.start()

    def submit(self, request, chain, row: np.ndarray) -> None:
        """Sample `request`'s next token with `chain` from `row` (a copy: the next decode
        overwrites llama.cpp's logits)."""
        self._jobs.put((request, chain, row))

    def has_ready(self) -> bool:
        return bool(self._done)

    def take(self) -> list[tuple[object, int, np.ndarray]]:
        """Sampled tokens: (request, token, the logits row it was sampled from)."""
        out = []
        while self._done:
            out.append(self._done.popleft())
        return out

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            request, chain, row = job
            self._done.append((request, self._sample(chain, row), row))
            self.wake()

    def _sample(self, chain, row: np.ndarray) -> int:
        view, arr = self._view, self._array
        view["id"] = self._ids
        view["logit"] = row
        view["p"] = 0.0
        arr.size, arr.selected, arr.sorted = self.n_vocab, -1, False
        L.llama_sampler_apply(chain, ctypes.byref(arr))
        token = int(arr.data[arr.selected].id) if 0 <= arr.selected < arr.size else int(row.argmax())
        L.llama_sampler_accept(chain, token)
        return token
