"""The MLX backend: one MLX-format model folder served with mlx-lm inside a runner process.

This is the runner contract's side (runners/contract.py): queue, request ids, events. The
generation loop over mlx-lm is mlx_engine.py, the prompt from the tokenizer mlx_prompt.py. Every `step()` does a small amount of work (one decode step for the running
sequences, or one prefill chunk) so that the runner loop reads cancels in between. With batching,
`seed` seeds MLX's global generator when the request starts, so it is exact only while that
request runs alone.

As on llama.cpp, the KV cache of the last finished sequence is kept (mlx_engine.PromptCache); a
new prompt that starts with its tokens reuses it and only the rest is prefilled (`cached_tokens`).
"""

from __future__ import annotations

import collections
import gc
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laya_desktop.config.sampling import LLAMA_ONLY_KNOBS
from laya_desktop.runners import protocol as P
from laya_desktop.runners.batching import TextStream
from laya_desktop.runners.contract import Accepted, accept
from laya_desktop.runners.memory_estimate import mlx_kv_bytes_per_token
from laya_desktop.runners.mlx_engine import (BatchEngine, PromptCache, SequentialEngine,
                                             activation_dtype_bytes, make_sampling, mlx_memory)
from laya_desktop.runners.mlx_prompt import MlxPrompt
from laya_desktop.runners.mlx_prompt_state import MlxSavedPrompts

DEFAULT_PREFILL_STEP = 512  # tokens per prefill chunk: the longest a step() may run on a prompt
TPS_WINDOW_S = 5.0


def unsupported_params(cmd: dict) -> str | None:
    """Why MLX cannot serve this command (the field named first), or None."""
    if cmd.get("kind") == "embedding":
        return "embeddings are not supported on MLX models"
    params = cmd.get("params")
    if not isinstance(params, dict):
        return None
    if params.get("json_schema") is not None:
        return "response_format/json_schema is not supported on MLX models"
    if params.get("grammar") is not None:
        return "grammar is not supported on MLX models"
    if params.get("cache_prompt") is False:
        return "cache_prompt: false is not supported on MLX models (their prompt reuse is fixed)"
    if params.get("logprobs") or params.get("top_logprobs"):
        return "logprobs is not supported on MLX models"
    dry = next((k for k in LLAMA_ONLY_KNOBS if k in params), None)
    if dry:
        return f"{dry} is not supported on MLX models (llama.cpp only)"
    return None


@dataclass
class _Request:
    id: str
    prompt: list[int]
    max_tokens: int
    sampler: Any
    processors: list
    seed: int | None
    stream: TextStream
    params: P.SamplingParams
    detok: Any = None
    uid: int | None = None
    cached_tokens: int = 0
    cached_from: str | None = None   # "slot" | "ram" | "disk"
    completion_tokens: int = 0


class MlxBackend:
    def __init__(self, spec: dict):
        path = Path(spec["path"]).expanduser()
        # mlx-lm treats a path that does not exist as a Hugging Face repo id and downloads it:
        # a runner must never do that.
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"not an MLX model folder (no config.json): {path}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import mlx.core as mx
        from mlx_lm.models.cache import make_prompt_cache
        from mlx_lm.utils import load

        self._mx = mx
        self._model, self._tokenizer, self._config = load(str(path), return_config=True)
        self._n_ctx = int(spec.get("n_ctx") or 4096)
        self._parallel = max(1, int(spec.get("parallel") or 1))
        prefill = int(spec.get("prefill_step_size") or DEFAULT_PREFILL_STEP)
        self._eos = set(self._tokenizer.eos_token_ids)
        self._kv_bpt = mlx_kv_bytes_per_token(self._config, activation_dtype_bytes(self._model))
        batchable = all(hasattr(c, "merge") for c in make_prompt_cache(self._model))
        self._batching = self._parallel > 1 and batchable and spec.get("batching", True)
        if self._batching:
            self._new_engine = lambda: BatchEngine(self._model, self._eos, self._parallel, prefill)
        else:
            self._new_engine = lambda: SequentialEngine(self._model, self._eos, prefill)
        self._engine = self._new_engine()
        self._prompts = MlxPrompt(self._tokenizer)
        self._queue: collections.deque[_Request] = collections.deque()
        self._running: dict[int, _Request] = {}  # engine uid -> request
        self._ids: dict[str, _Request] = {}
        self._prompt_cache = PromptCache()
        # beyond the last sequence's cache: saved prompts in RAM and on disk (prompt_cache.py)
        self._saved = MlxSavedPrompts.open(spec, str(path), self._n_ctx)
        self._generated: collections.deque[tuple[float, int]] = collections.deque()

    # --- interface ---

    def info(self) -> dict:
        return {
            "n_ctx": self._n_ctx,
            "parallel": self._parallel,
            "kv_bytes_per_token": self._kv_bpt,
            "kv_capacity_tokens": self._n_ctx * self._parallel,
            "chat_format": "tokenizer" if self._tokenizer.has_chat_template else "plain",
            "architecture": self._config.get("model_type", "unknown"),
            "batching": self._batching,
            "device": str(self._mx.default_device()),
            "tool_template": self._prompts.native_tools,
            "embedding": False,
            "n_embd": int({**self._config, **self._config.get("text_config", {})}.get("hidden_size", 0)),
        }

    def submit(self, cmd: dict) -> list[dict]:
        accepted = accept(cmd, live_ids=self._ids, n_ctx=self._n_ctx,
                          build_prompt=self._prompt, refuse=unsupported_params)
        if not isinstance(accepted, Accepted):
            return accepted
        req = self._make_request(accepted)
        self._ids[req.id] = req
        self._queue.append(req)
        return [P.queued(req.id, len(req.prompt))]

    def cancel(self, req_id: str) -> list[dict]:
        req = self._ids.pop(req_id, None)
        if req is None:
            return []
        if req.uid is None:
            self._queue.remove(req)
        else:
            self._running.pop(req.uid, None)
            self._engine.remove(req.uid, keep_cache=False)
        return [self._done(req, "cancelled")]

    def has_work(self) -> bool:
        return bool(self._queue or self._running)

    def step(self) -> list[dict]:
        events = self._admit()
        if not self._running:
            return events
        try:
            results = self._engine.next()
        except Exception as exc:  # an MLX failure ends the requests in flight, not the runner
            return events + self._fail_running(f"mlx error: {exc}")
        now = time.monotonic()
        self._generated.append((now, len(results)))
        for uid, token, finish, saved in results:
            req = self._running.get(uid)
            if req is not None:
                events += self._on_token(req, token, finish, saved)
        return events

    def stats(self) -> dict:
        kv_used = sum(len(r.prompt) + r.completion_tokens for r in self._running.values())
        return {
            "kv_used_tokens": kv_used,
            "kv_capacity_tokens": self._n_ctx * self._parallel,
            "kv_bytes_per_token": self._kv_bpt,
            "prompt_cache_tokens": self._prompt_cache.tokens,
            "active": len(self._running),
            "queued": len(self._queue),
            "tokens_per_s": self._tokens_per_s(),
            **mlx_memory(),
            **(self._saved.stats() if self._saved is not None else {}),
        }

    def clear_prompt_cache(self) -> int:
        """The saved prompts dropped, in RAM and on disk (the last sequence's cache stays)."""
        return self._saved.store.clear() if self._saved is not None else 0

    def close(self) -> None:
        if self._saved is not None:
            self._saved.close()
            self._saved = None
        self._queue.clear()
        self._running.clear()
        self._ids.clear()
        self._prompt_cache.clear()
        self._engine.close()
        self._engine = None
        self._model = None
        gc.collect()
        self._mx.clear_cache()

    # --- work ---

    def _prompt(self, cmd: dict) -> tuple[list[int], list[str]]:
        return self._prompts.tokens(cmd), []   # the tokenizer's template ends turns with EOS

    def _make_request(self, accepted: Accepted) -> _Request:
        p, prompt = accepted.params, accepted.prompt
        room = self._n_ctx - len(prompt)
        max_tokens = room if p.max_tokens is None else min(p.max_tokens, room)
        sampler, processors = make_sampling(p, self._n_ctx)
        return _Request(id=accepted.id, prompt=prompt, max_tokens=max(0, max_tokens),
                        sampler=sampler, processors=processors, seed=p.seed,
                        stream=TextStream(accepted.stops), params=p)

    def _admit(self) -> list[dict]:
        """Start queued requests while the engine has room."""
        events = []
        while self._queue and self._engine.can_insert():
            req = self._queue.popleft()
            if req.max_tokens == 0:  # the prompt fills n_ctx, or max_tokens 0 was asked for
                events.append(self._done(req, "length"))
                continue
            restored = (self._saved.restore(req.prompt, self._prompt_cache.shared(req.prompt))
                        if self._saved is not None else None)
            if restored is not None:
                cache, cached, req.cached_from = restored
            else:
                cache, cached = self._prompt_cache.take(req.prompt)
                req.cached_from = "slot" if cached else None
            req.cached_tokens = cached
            req.detok = self._tokenizer.detokenizer
            if req.seed is not None:
                self._mx.random.seed(req.seed)
            req.uid = self._engine.insert(req.prompt[cached:], cache, req.prompt[:cached],
                                          req.sampler, req.processors, req.max_tokens)
            self._running[req.uid] = req
        return events

    def _on_token(self, req: _Request, token: int, finish: str | None, saved) -> list[dict]:
        events = []
        stream = req.stream
        if finish != "stop":  # an end-of-sequence token is not text
            req.completion_tokens += 1
            req.detok.add_token(token)
            events += _text(req, stream.push_text(req.detok.last_segment))
        if stream.stopped:
            saved = saved or self._engine.remove(req.uid, keep_cache=True)
            finish = "stop"
        elif finish is not None:
            req.detok.finalize()
            text = stream.push_text(req.detok.last_segment)
            events += _text(req, text if stream.stopped else text + stream.flush())
        else:
            return events
        self._running.pop(req.uid, None)
        if saved is not None and self._saved is not None:
            self._saved.save(*saved)
        self._prompt_cache.keep(saved)
        events.append(self._done(req, finish))
        return events

    def _done(self, req: _Request, finish: str) -> dict:
        self._ids.pop(req.id, None)
        return P.done(req.id, finish, len(req.prompt), req.completion_tokens, req.cached_tokens,
                      req.cached_from if req.cached_tokens else None)

    def _fail_running(self, message: str) -> list[dict]:
        """End the requests in flight with an error and start over with a fresh engine."""
        events = []
        for req in self._running.values():
            self._ids.pop(req.id, None)
            events.append(P.error(req.id, "internal", message))
        self._running.clear()
        self._prompt_cache.clear()
        try:
            self._engine.close()
        except Exception:  # the engine is already broken; its state goes with it
            pass
        self._engine = self._new_engine()
        return events

    def _tokens_per_s(self) -> float:
        now = time.monotonic()
        while self._generated and now - self._generated[0][0] > TPS_WINDOW_S:
            self._generated.popleft()
        if not self._generated:
            return 0.0
        n = sum(c for _, c in self._generated)
        span = max(now - self._generated[0][0], 0.25)
        return round(n / span, 2)


def _text(req: _Request, text: str) -> list[dict]:
    return [P.token(req.id, text)] if text else []
