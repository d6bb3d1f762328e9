"""The MLX backend: one MLX-format model folder served with mlx-lm inside a runner process.

runner_main drives it through the Backend interface of docs/ARCHITECTURE.md. Every `step()` does
a small amount of work (one decode step for the running sequences, or one prefill chunk) so that
the runner loop reads cancels in between.

Two generation engines sit behind one small interface (insert / next / remove):
- `_BatchEngine` wraps mlx-lm's `BatchGenerator` (continuous batching, the engine mlx-lm's own
  server uses). It serves `parallel > 1` when every cache of the model can be merged into a batch.
- `_SequentialEngine` drives `generate_step` one token per call. It serves `parallel == 1`
  (the MLX default: no batch bookkeeping, and `seed` is exact) and models whose caches cannot be
  batched (quantized, chunked); there requests beyond the first wait in the queue.
With batching, `seed` seeds MLX's global generator when the request starts, so it is exact only
while that request runs alone.

Choices that match the llama.cpp backend:
- Cancel stops the sequence at once and emits nothing more for that id (no "cancelled" done).
- Stop strings are matched on the text; text that may be the start of a stop string is held
  back until it is known not to be one, and the stop string itself is never sent.
- The KV cache of the last finished sequence is kept; a new prompt that starts with its tokens
  reuses it (trimmed to the common prefix) and only the rest is prefilled (`cached_tokens`).
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
from laya_desktop.runners.batching import common_prefix_len
from laya_desktop.runners.chat_templates import normalize_messages
from laya_desktop.runners.tool_prompt import (check_tools, for_template, inline_tools,
                                              template_knows_tools)

DEFAULT_PREFILL_STEP = 512  # tokens per prefill chunk: the longest a step() may run on a prompt
TPS_WINDOW_S = 5.0


# --- text handling ----------------------------------------------------------------------------


class StopFilter:
    """Cuts generated text at the first stop string, holding back a possible partial match."""

    def __init__(self, stops: list[str]):
        self._stops = [s for s in stops if s]
        self._longest = max((len(s) for s in self._stops), default=0)
        self._pending = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """Returns (text safe to send, whether a stop string was hit)."""
        if not self._stops:
            return text, False
        pending = self._pending + text
        hits = [i for i in (pending.find(s) for s in self._stops) if i >= 0]
        if hits:
            self._pending = ""
            return pending[: min(hits)], True
        hold = 0
        for k in range(min(len(pending), self._longest - 1), 0, -1):
            tail = pending[-k:]
            if any(s.startswith(tail) for s in self._stops):
                hold = k
                break
        self._pending = pending[len(pending) - hold:]
        return pending[: len(pending) - hold], False

    def flush(self) -> str:
        out, self._pending = self._pending, ""
        return out


def unsupported_params(params: dict) -> str | None:
    """Why MLX cannot honour these params (the field named first), or None."""
    if params.get("json_schema") is not None:
        return "response_format/json_schema is not supported on MLX models"
    if params.get("logprobs") or params.get("top_logprobs"):
        return "logprobs is not supported on MLX models"
    dry = next((k for k in LLAMA_ONLY_KNOBS if k in params), None)
    if dry:
        return f"{dry} is not supported on MLX models (llama.cpp only)"
    return None


# --- model facts ----------------------------------------------------------------------------------


def kv_bytes_per_token(config: dict, dtype_bytes: int) -> int:
    """layers × KV heads × head size × 2 (K and V) × element size, from config.json."""
    cfg = {**config, **config.get("text_config", {})}
    layers = int(cfg["num_hidden_layers"])
    heads = int(cfg["num_attention_heads"])
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or cfg["hidden_size"] // heads)
    return layers * kv_heads * head_dim * 2 * dtype_bytes


def _activation_dtype_bytes(model) -> int:
    """Size of the floating dtype the model computes in (its KV cache uses the same)."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    for _, p in tree_flatten(model.parameters()):
        if p.dtype in (mx.float16, mx.bfloat16, mx.float32):
            return p.dtype.size
    return 2


def mlx_memory() -> dict:
    """MLX's allocator counters (mx.* in current MLX, mx.metal.* in older releases)."""
    import mlx.core as mx

    out = {}
    for key, name in (("mlx_active_memory", "get_active_memory"),
                      ("mlx_peak_memory", "get_peak_memory"),
                      ("mlx_cache_memory", "get_cache_memory")):
        fn = getattr(mx, name, None) or getattr(getattr(mx, "metal", None), name, None)
        try:
            out[key] = int(fn()) if fn else None
        except Exception:  # a backend without the counter: report it as unknown
            out[key] = None
    return out


# --- generation engines ---------------------------------------------------------------------------
# next() returns [(uid, token, finish_reason | None, (cache, tokens) | None)]: one entry per running
# sequence that produced a token; a finished sequence hands back its KV cache and the tokens in it.


class _SequentialEngine:
    """One sequence at a time: own prefill chunks, then mlx-lm's generate_step one token a call."""

    def __init__(self, model, eos_ids: set[int], prefill_step: int):
        from mlx_lm.utils import maybe_set_recommended_wired_limit

        maybe_set_recommended_wired_limit()  # Metal: keep the weights wired; no-op elsewhere
        self._model = model
        self._eos = eos_ids
        self._prefill = prefill_step
        self._seq: dict | None = None
        self._next_uid = 0

    def can_insert(self) -> bool:
        return self._seq is None

    def insert(self, prompt, cache, cached_tokens, sampler, processors, max_tokens) -> int:
        from mlx_lm.models.cache import make_prompt_cache

        uid, self._next_uid = self._next_uid, self._next_uid + 1
        self._seq = {"uid": uid, "cache": cache or make_prompt_cache(self._model),
                     "tokens": list(cached_tokens), "rest": list(prompt), "gen": None, "n": 0,
                     "max": max_tokens, "sampler": sampler, "processors": processors}
        return uid

    def next(self) -> list:
        import mlx.core as mx
        from mlx_lm.generate import generate_step

        s = self._seq
        if s is None:
            return []
        if s["gen"] is None:
            if len(s["rest"]) > self._prefill + 1:
                chunk, s["rest"] = s["rest"][: self._prefill], s["rest"][self._prefill:]
                self._model(mx.array(chunk)[None], cache=s["cache"])
                mx.eval([c.state for c in s["cache"]])
                s["tokens"] += chunk
                return []
            s["gen"] = generate_step(mx.array(s["rest"]), self._model, max_tokens=-1,
                                     sampler=s["sampler"], logits_processors=s["processors"],
                                     prompt_cache=s["cache"], prefill_step_size=self._prefill)
            s["tokens"] += s["rest"]
            s["rest"] = []
        token, _ = next(s["gen"])
        # generate_step has already fed `token` to the model when it yields it: it is in the cache.
        s["tokens"].append(token)
        s["n"] += 1
        finish = "stop" if token in self._eos else ("length" if s["n"] >= s["max"] else None)
        if finish is None:
            return [(s["uid"], token, None, None)]
        return [(s["uid"], token, finish, self._drop())]

    def remove(self, uid: int, keep_cache: bool):
        if self._seq is None or self._seq["uid"] != uid:
            return None
        saved = self._drop()
        return saved if keep_cache else None

    def _drop(self):
        s, self._seq = self._seq, None
        if s["gen"] is not None:
            s["gen"].close()
        # Mid-prefill too, `tokens` lists exactly what the cache holds.
        return s["cache"], s["tokens"]

    def close(self) -> None:
        if self._seq is not None:
            self._drop()


class _BatchEngine:
    """mlx-lm's BatchGenerator: continuous batching of up to `parallel` sequences."""

    def __init__(self, model, eos_ids: set[int], parallel: int, prefill_step: int):
        from mlx_lm.generate import BatchGenerator

        self._parallel = parallel
        self._running: set[int] = set()
        self._gen = BatchGenerator(model, stop_tokens=[[e] for e in sorted(eos_ids)],
                                   completion_batch_size=parallel, prefill_batch_size=parallel,
                                   prefill_step_size=prefill_step)

    def can_insert(self) -> bool:
        return len(self._running) < self._parallel

    def insert(self, prompt, cache, cached_tokens, sampler, processors, max_tokens) -> int:
        (uid,) = self._gen.insert([list(prompt)], max_tokens=[max_tokens], caches=[cache],
                                  all_tokens=[list(cached_tokens)], samplers=[sampler],
                                  logits_processors=[processors])
        self._running.add(uid)
        return uid

    def next(self) -> list:
        _, responses = self._gen.next()
        out = []
        for r in responses:
            saved = None
            if r.finish_reason is not None:
                self._running.discard(r.uid)
                saved = (r.prompt_cache, list(r.all_tokens))
            out.append((r.uid, r.token, r.finish_reason, saved))
        return out

    def remove(self, uid: int, keep_cache: bool):
        self._running.discard(uid)
        caches = self._gen.remove([uid], return_prompt_caches=keep_cache)
        if keep_cache and uid in caches:
            cache, tokens = caches[uid]
            return list(cache), list(tokens)
        return None

    def close(self) -> None:
        self._gen.close()


# --- the backend ----------------------------------------------------------------------------------


@dataclass
class _Request:
    id: str
    prompt: list[int]
    max_tokens: int
    sampler: Any
    processors: list
    seed: int | None
    stop: StopFilter
    detok: Any = None
    uid: int | None = None
    cached_tokens: int = 0
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
        self._kv_bpt = kv_bytes_per_token(self._config, _activation_dtype_bytes(self._model))
        batchable = all(hasattr(c, "merge") for c in make_prompt_cache(self._model))
        self._batching = self._parallel > 1 and batchable and spec.get("batching", True)
        if self._batching:
            self._new_engine = lambda: _BatchEngine(self._model, self._eos, self._parallel, prefill)
        else:
            self._new_engine = lambda: _SequentialEngine(self._model, self._eos, prefill)
        self._engine = self._new_engine()
        template = getattr(self._tokenizer, "chat_template", None)
        # Named templates ({"default": ..., "tool_use": ...}): transformers picks tool_use itself.
        templates = template.values() if isinstance(template, dict) else [template]
        self._native_tools = any(isinstance(t, str) and template_knows_tools(t) for t in templates)
        self._queue: collections.deque[_Request] = collections.deque()
        self._running: dict[int, _Request] = {}  # engine uid -> request
        self._ids: dict[str, _Request] = {}
        self._saved = None  # (cache, tokens) of the last finished sequence
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
            "tool_template": self._native_tools,
            "embedding": False,
            "n_embd": int({**self._config, **self._config.get("text_config", {})}.get("hidden_size", 0)),
        }

    def submit(self, cmd: dict) -> list[dict]:
        req_id = cmd.get("id")
        if not isinstance(req_id, str) or req_id in self._ids:
            return [_error(req_id, "bad_request", "generate needs a new string id")]
        if cmd.get("kind") == "embedding":
            return [_error(req_id, "bad_request", "embeddings are not supported on MLX models")]
        params = cmd.get("params") or {}
        refused = unsupported_params(params) if isinstance(params, dict) else None
        if refused:
            return [_error(req_id, "bad_request", refused)]
        try:
            prompt = self._tokenize(cmd)
        except Exception as exc:  # a template or tokenizer error is the request's fault
            return [_error(req_id, "bad_request", f"cannot build the prompt: {exc}")]
        if not prompt:
            return [_error(req_id, "bad_request", "the prompt is empty")]
        if cmd.get("count_only"):
            return [{"event": "done", "id": req_id, "finish_reason": "count",
                     "usage": {"prompt_tokens": len(prompt), "completion_tokens": 0,
                               "cached_tokens": 0}}]
        if len(prompt) > self._n_ctx:
            return [_error(req_id, "context_length_exceeded",
                           f"the prompt has {len(prompt)} tokens, more than n_ctx {self._n_ctx}")]
        try:
            req = self._make_request(req_id, prompt, params)
        except (TypeError, ValueError) as exc:
            return [_error(req_id, "bad_request", f"bad sampling parameters: {exc}")]
        self._ids[req_id] = req
        self._queue.append(req)
        return [P.queued(req_id, len(prompt))]

    def cancel(self, req_id: str) -> list[dict]:
        req = self._ids.pop(req_id, None)
        if req is None:
            return []
        if req.uid is None:
            self._queue.remove(req)
        else:
            self._running.pop(req.uid, None)
            self._engine.remove(req.uid, keep_cache=False)
        return []

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
            "prompt_cache_tokens": len(self._saved[1]) if self._saved else 0,
            "active": len(self._running),
            "queued": len(self._queue),
            "tokens_per_s": self._tokens_per_s(),
            **mlx_memory(),
        }

    def close(self) -> None:
        self._queue.clear()
        self._running.clear()
        self._ids.clear()
        self._saved = None
        self._engine.close()
        self._engine = None
        self._model = None
        gc.collect()
        self._mx.clear_cache()

    # --- work ---

    def _tokenize(self, cmd: dict) -> list[int]:
        tok = self._tokenizer
        if cmd.get("kind") == "chat":
            messages = normalize_messages(cmd.get("messages"))
            tools = check_tools(cmd.get("tools"))
            if self._native_tools:
                return list(tok.apply_chat_template(for_template(messages), tools=tools,
                                                    add_generation_prompt=True))
            messages = inline_tools(messages, tools, tool_role=False)
            if tok.has_chat_template:
                return list(tok.apply_chat_template(messages, add_generation_prompt=True))
            text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"
            return list(tok.encode(text))
        if cmd.get("kind") == "completion":
            prompt = cmd.get("prompt")
            if not isinstance(prompt, str):
                raise ValueError("completion needs a string prompt")
            return list(tok.encode(prompt))
        raise ValueError(f"unknown kind {cmd.get('kind')!r} (valid: chat, completion)")

    def _make_request(self, req_id: str, prompt: list[int], params: dict) -> _Request:
        from mlx_lm.sample_utils import make_logits_processors, make_sampler

        p = P.parse_params(params)   # the same defaults and checks as llama.cpp's runner
        room = self._n_ctx - len(prompt)
        max_tokens = room if p.max_tokens is None else min(p.max_tokens, room)
        sampler = make_sampler(temp=p.temperature, top_p=p.top_p, min_p=p.min_p, top_k=p.top_k)
        look_back = self._n_ctx if p.repeat_last_n < 0 else p.repeat_last_n
        processors = make_logits_processors(
            logit_bias=dict(p.logit_bias) or None,
            repetition_penalty=p.repeat_penalty if p.repeat_penalty not in (0.0, 1.0) else None,
            repetition_context_size=look_back,
            presence_penalty=p.presence_penalty or None, presence_context_size=look_back,
            frequency_penalty=p.frequency_penalty or None, frequency_context_size=look_back,
        )
        return _Request(id=req_id, prompt=prompt, max_tokens=max(0, max_tokens), sampler=sampler,
                        processors=processors, seed=p.seed, stop=StopFilter(p.stop))

    def _admit(self) -> list[dict]:
        """Start queued requests while the engine has room."""
        events = []
        while self._queue and self._engine.can_insert():
            req = self._queue.popleft()
            if req.max_tokens == 0:  # the prompt fills n_ctx, or max_tokens 0 was asked for
                events.append(self._done(req, "length"))
                continue
            cache, cached = self._take_prompt_cache(req.prompt)
            req.cached_tokens = cached
            req.detok = self._tokenizer.detokenizer
            if req.seed is not None:
                self._mx.random.seed(req.seed)
            req.uid = self._engine.insert(req.prompt[cached:], cache, req.prompt[:cached],
                                          req.sampler, req.processors, req.max_tokens)
            self._running[req.uid] = req
        return events

    def _take_prompt_cache(self, prompt: list[int]):
        """The saved cache trimmed to its common prefix with `prompt`, or (None, 0)."""
        from mlx_lm.models.cache import can_trim_prompt_cache, trim_prompt_cache

        if self._saved is None:
            return None, 0
        cache, tokens = self._saved
        # At least one prompt token must go through the model to get the first logits.
        common = min(common_prefix_len(tokens, prompt), len(prompt) - 1)
        if common <= 0 or (common < len(tokens) and not can_trim_prompt_cache(cache)):
            return None, 0
        self._saved = None
        trim_prompt_cache(cache, len(tokens) - common)
        return cache, common

    def _on_token(self, req: _Request, token: int, finish: str | None, saved) -> list[dict]:
        events = []
        hit = False
        if finish != "stop":  # an end-of-sequence token is not text
            req.completion_tokens += 1
            req.detok.add_token(token)
            text, hit = req.stop.feed(req.detok.last_segment)
            if text:
                events.append({"event": "token", "id": req.id, "text": text})
        if hit:
            saved = saved or self._engine.remove(req.uid, keep_cache=True)
            finish = "stop"
        elif finish is not None:
            req.detok.finalize()
            text, hit = req.stop.feed(req.detok.last_segment)
            text += "" if hit else req.stop.flush()
            if text:
                events.append({"event": "token", "id": req.id, "text": text})
        else:
            return events
        self._running.pop(req.uid, None)
        if saved is not None:
            self._saved = saved
        events.append(self._done(req, finish))
        return events

    def _done(self, req: _Request, finish: str) -> dict:
        self._ids.pop(req.id, None)
        return {"event": "done", "id": req.id, "finish_reason": finish,
                "usage": {"prompt_tokens": len(req.prompt),
                          "completion_tokens": req.completion_tokens,
                          "cached_tokens": req.cached_tokens}}

    def _fail_running(self, message: str) -> list[dict]:
        """End the requests in flight with an error and start over with a fresh engine."""
        events = []
        for req in self._running.values():
            self._ids.pop(req.id, None)
            events.append(_error(req.id, "internal", message))
        self._running.clear()
        self._saved = None
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


def _error(req_id, code: str, message: str) -> dict:
    return {"event": "error", "id": req_id, "code": code, "message": message}
