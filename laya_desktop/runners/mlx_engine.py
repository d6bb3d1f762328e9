"""The MLX generation engines behind the MLX backend (mlx_backend.py, the runner contract's side).

Two engines sit behind one small interface (can_insert / insert / next / remove / close):
- `BatchEngine` wraps mlx-lm's `BatchGenerator` (continuous batching, the engine mlx-lm's own
  server uses). It serves `parallel > 1` when every cache of the model can be merged into a batch.
- `SequentialEngine` drives `generate_step` one token per call. It serves `parallel == 1`
  (the MLX default: no batch bookkeeping, and `seed` is exact) and models whose caches cannot be
  batched (quantized, chunked); there requests beyond the first wait in the backend's queue.

next() returns [(uid, token, finish_reason | None, (cache, tokens) | None)]: one entry per running
sequence that produced a token; a finished sequence hands back its KV cache and the tokens in it,
which `PromptCache` keeps for the next prompt. `make_sampling` turns checked params into mlx-lm's
sampler and logits processors.
"""

from __future__ import annotations

from laya_desktop.runners.batching import common_prefix_len
from laya_desktop.runners.protocol import SamplingParams


def activation_dtype_bytes(model) -> int:
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



class SequentialEngine:
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


class BatchEngine:
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


def make_sampling(p: SamplingParams, n_ctx: int):
    """mlx-lm's sampler and logits processors for checked params (a look-back of -1: n_ctx)."""
    from mlx_lm.sample_utils import make_logits_processors, make_sampler

    sampler = make_sampler(temp=p.temperature, top_p=p.top_p, min_p=p.min_p, top_k=p.top_k)
    look_back = n_ctx if p.repeat_last_n < 0 else p.repeat_last_n
    processors = make_logits_processors(
        logit_bias=dict(p.logit_bias) or None,
        repetition_penalty=p.repeat_penalty if p.repeat_penalty not in (0.0, 1.0) else None,
        repetition_context_size=look_back,
        presence_penalty=p.presence_penalty or None, presence_context_size=look_back,
        frequency_penalty=p.frequency_penalty or None, frequency_context_size=look_back,
    )
    return sampler, processors


class PromptCache:
    """The KV cache of the last finished sequence, kept for a later prompt that starts with its
    tokens (a system prompt, the previous chat turn): only the rest is prefilled."""

    def __init__(self):
        self._saved = None  # (cache, tokens)

    @property
    def tokens(self) -> int:
        return len(self._saved[1]) if self._saved else 0

    def shared(self, prompt: list[int]) -> int:
        """Tokens of `prompt` that `take` would give back, at most."""
        if self._saved is None:
            return 0
        return max(0, min(common_prefix_len(self._saved[1], prompt), len(prompt) - 1))

    def keep(self, saved) -> None:
        if saved is not None:
            self._saved = saved

    def clear(self) -> None:
        self._saved = None

    def take(self, prompt: list[int]):
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
