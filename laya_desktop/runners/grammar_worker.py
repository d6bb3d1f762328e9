"""Grammar samplers built off the decode loop: a request's JSON schema becomes GBNF text
(llama_sampling.schema_grammar, cached by schema in a GrammarCache) and then a llama.cpp grammar
sampler (llama_sampler_init_grammar, which ctypes calls without the GIL), on one worker thread.
A request waiting for its grammar holds no slot and costs the other requests' steps nothing.

A raw GBNF grammar (llama-server's `grammar`) takes the same path without the conversion: its
bounds were checked (schema_limits.check_gbnf), and llama.cpp's parser runs here, off the loop.

The backend submits (id, schema or GBNF text) and takes finished builds with `take()` from its main loop;
`wake` is called after each build so that an idle runner loop looks at once.
"""
from __future__ import annotations

import collections
import queue
import threading
from typing import Callable

import llama_cpp as L

from laya_desktop.runners import protocol as P
from laya_desktop.runners.grammar_cache import GrammarCache, schema_key
from laya_desktop.runners.llama_sampling import schema_grammar
from laya_desktop.runners.schema_limits import SchemaTooLarge, check_gbnf, check_grammar

# The worker's stack is the main thread's default, which is what bench/grammar_limits.py
# measured the crash points with; schema_limits keeps grammars far below them.
GRAMMAR_STACK_BYTES = 8 << 20


class GrammarWorker:
    def __init__(self, vocab, wake: Callable[[], None] | None = None):
        self.vocab = vocab
        self.wake = wake or (lambda: None)
        self.cache = GrammarCache()
        self._jobs: queue.Queue = queue.Queue()
        self._done: collections.deque = collections.deque()
        old = threading.stack_size(GRAMMAR_STACK_BYTES)
        try:
            self._thread = threading.Thread(target=self._run, name="grammar", daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(old)

    def submit(self, req_id: str, spec: dict | str) -> None:
        """`spec`: a JSON schema, or GBNF text."""
        self._jobs.put((req_id, spec))

    def has_ready(self) -> bool:
        return bool(self._done)

    def take(self) -> list[tuple[str, object, tuple[str, str] | None]]:
        """Finished builds: (id, sampler or None, (error code, message) or None)."""
        out = []
        while self._done:
            out.append(self._done.popleft())
        return out

    def stats(self) -> dict:
        return {"grammar_cache_hits": self.cache.hits, "grammar_cache_misses": self.cache.misses}

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=5)
        for _, sampler, _ in self.take():
            if sampler:
                L.llama_sampler_free(sampler)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            req_id, schema = job
            self._done.append((req_id, *self._build(schema)))
            self.wake()

    def _build(self, schema: dict):
        key = schema_key(schema)
        cached = self.cache.get(key)
        if cached is None:
            cached = self._convert(schema)
            self.cache.put(key, *cached)
        gbnf, error = cached
        if error is not None:
            return None, error
        sampler = L.llama_sampler_init_grammar(self.vocab, gbnf.encode(), b"root")
        if not sampler:
            error = ("bad_request", "grammar: llama.cpp could not parse the GBNF grammar (or it "
                                    "has no 'root' rule, or a left recursion)"
                     if isinstance(schema, str) else "response_format: llama.cpp could not parse "
                     "the grammar built from the JSON schema")
            self.cache.put(key, None, error)
            return None, error
        return sampler, None

    @staticmethod
    def _convert(schema: dict | str) -> tuple[str | None, tuple[str, str] | None]:
        if isinstance(schema, str):
            try:
                check_gbnf(schema)
            except SchemaTooLarge as exc:
                return None, (exc.code, f"grammar: {exc}")
            return schema, None
        try:
            gbnf = schema_grammar(schema)
            check_grammar(gbnf)
        except SchemaTooLarge as exc:
            return None, (exc.code, f"response_format: {exc}")
        except P.BadRequest as exc:
            return None, ("bad_request", str(exc))
        return gbnf, None
