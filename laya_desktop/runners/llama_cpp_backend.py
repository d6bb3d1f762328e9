"""The llama.cpp backend: one model, `parallel` sequences decoded together (continuous batching).

Each slot owns one llama.cpp sequence id and remembers which tokens its KV cache holds. Every
step builds one llama_batch from the next token of each running sequence plus chunks of prompts
still being read (policy in batching.py), calls llama_decode once, and samples each sequence
that produced logits with its own sampler chain. Requests join and leave between steps. A
finished request leaves its KV in the slot so the next request with the same prefix (a system
prompt, the previous chat turn) reads only the rest.

A request with a JSON schema never makes the loop wait for its grammar: schema_limits refuses a
schema the grammar code could crash or stall on, grammar_worker builds the grammar sampler on a
thread (the request is `queued` once it is built), and sampling_worker samples its tokens on
another while the loop decodes the other sequences.
"""
from __future__ import annotations

import collections
import ctypes
import logging
import os
import sys
import time
from dataclasses import dataclass, field

import llama_cpp as L
import numpy as np

from laya_desktop.app_files import prompt_cache_folder
from laya_desktop.runners import protocol as P
from laya_desktop.runners.batching import FreeSlot, TextStream, choose_slot, plan_batch
from laya_desktop.runners.builtin import resolve_model_path
from laya_desktop.runners.chat_templates import normalize_messages, select_format
from laya_desktop.runners.contract import Accepted, accept
from laya_desktop.runners.llama_sampling import greedy_token, logprob_entry, make_sampler
from laya_desktop.runners.gguf_info import GgufError, read_gguf_info
from laya_desktop.runners.grammar_worker import GrammarWorker
from laya_desktop.runners.memory_estimate import KV_ELEMENT_BYTES, kv_bytes_per_token_of
from laya_desktop.runners.prompt_cache import PromptCache
from laya_desktop.runners.prompt_cache_key import cache_key
from laya_desktop.runners.prompt_cache_state import copy_in, copy_out
from laya_desktop.runners.sampling_worker import SamplingWorker
from laya_desktop.runners.repacked_weights import release_file_pages, repacked_tensors
from laya_desktop.runners.schema_limits import SchemaTooLarge, check_gbnf, check_schema
from laya_desktop.runners.sliding_window import SlidingWindows
from laya_desktop.runners.swa_layout import sliding_window_layers, window_cells
from laya_desktop.runners.thread_governor import ThreadGovernor
from laya_desktop.runners.tool_prompt import check_tools

log = logging.getLogger("laya.runner")

# ggml type of each KV cache type (its bytes per element: memory_estimate.KV_ELEMENT_BYTES).
KV_CACHE_TYPES = {"f16": L.GGML_TYPE_F16, "q8_0": L.GGML_TYPE_Q8_0, "q4_0": L.GGML_TYPE_Q4_0}
N_BATCH = 512
PREFILL_CHUNK_WHEN_BUSY = 64    # prompt tokens per step while others decode: a short pause for them
RATE_WINDOW_S = 2.0


def default_n_threads() -> int:
    """The most threads a model decodes with. ggml's OpenMP workers wait for each other at every
    op; the thread governor (thread_governor.py) decodes with fewer while fewer are faster, so a
    core taken by another process costs little (bench/results/threads/latest.json: two threads,
    governed, against one, quiet and with a core busy). On 2 CPUs it is still one thread:
    spinning threads on both cores would take them from the GUI, the engine and the user's
    agent, which the governor does not time. Above that, about one thread per physical core
    (half the logical CPUs), up to 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return 1 if cpus <= 2 else max(2, min(cpus // 2, 8))


def _refuse(cmd: dict) -> str | None:
    if cmd.get("kind") == "embedding":
        return ("embeddings: this model is a text model; an embedding model needs embedding: true "
                "in models.yaml")
    return None


class _LlamaLog:
    """llama.cpp's log: warnings and errors go to stderr (the runner's log); the last errors
    are kept to explain a failed load."""

    def __init__(self):
        self.errors: collections.deque[str] = collections.deque(maxlen=8)
        self._last_level = 0
        self._callback = L.llama_log_callback(self._log)   # referenced for the process lifetime
        L.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _log(self, level: int, text: bytes, _user) -> None:
        level = self._last_level if level == 5 else level   # 5: continues the previous line
        self._last_level = level
        if level >= 3:   # WARN, ERROR
            message = text.decode("utf-8", "replace")
            sys.stderr.write(message)
            if level == 4 and message.strip():
                self.errors.append(message.strip())


@dataclass
class Request:
    id: str
    prompt: list[int]
    params: P.SamplingParams
    stream: TextStream
    max_tokens: int
    sampler: ctypes.c_void_p | None = None
    slot: "Slot | None" = None
    n_done: int = 0                 # prompt tokens whose KV is in the slot
    cached_tokens: int = 0
    cached_from: str | None = None  # "slot" | "ram" | "disk": where cached_tokens' KV came from
    completion_tokens: int = 0
    next_token: int | None = None   # sampled, to be decoded in the next step
    sampling: bool = False          # its grammar chain is on the sampling worker
    released: bool = False


@dataclass
class Slot:
    seq_id: int
    tokens: list[int] = field(default_factory=list)   # what this sequence's KV holds
    request: Request | None = None
    last_used: float = 0.0


class LlamaCppBackend:
    def __init__(self, spec: dict):
        self._log = _LlamaLog()
        self.name = spec.get("name") or "model"
        if not spec.get("path"):
            raise ValueError("the spec names no model path")
        self.path = str(resolve_model_path(str(spec["path"])))
        self.n_ctx = int(spec.get("n_ctx") or 4096)
        self.parallel = int(spec.get("parallel") or 4)
        kv_type = spec.get("kv_cache_type") or "f16"
        if kv_type not in KV_CACHE_TYPES:
            raise ValueError(f"unknown kv_cache_type {kv_type!r} (valid: {', '.join(KV_CACHE_TYPES)})")
        if self.n_ctx < 16 or self.parallel < 1:
            raise ValueError("n_ctx must be at least 16 and parallel at least 1")
        self.kv_cache_type = kv_type
        self.n_threads = int(spec.get("n_threads") or default_n_threads())
        # the most threads; fewer while fewer decode faster (another process holding a core)
        self.governor = (ThreadGovernor(self.n_threads)
                         if self.n_threads > 1 and spec.get("adaptive_threads", True) else None)
        self._switches_seen = 0
        self.model = self.ctx = None
        self.batch = None
        # TEST-ONLY fault injection (tests/test_kv_full.py): the KV cache behaves as if it held
        # this many cells. The real one (n_ctx x parallel, each sequence capped at n_ctx) cannot
        # be filled through the API, so the kv_full path is otherwise unreachable in a real engine.
        fault = os.environ.get("LAYA_FAULT_KV_FULL_AFTER")
        self._kv_fault_cells = int(fault) if fault else None

        L.llama_backend_init()
        mparams = L.llama_model_default_params()
        mparams.n_gpu_layers = int(spec.get("n_gpu_layers") or 0)
        # ggml's repacked CPU kernels (llama-server's default) decode a few percent faster, but
        # make a row's result depend on how many rows share its matmul: a greedy answer can
        # change with the load. cpu_repack: false keeps it batch-invariant.
        self.cpu_repack = bool(spec.get("cpu_repack", True))
        mparams.use_extra_bufts = self.cpu_repack
        self.model = L.llama_model_load_from_file(self.path.encode(), mparams)
        if not self.model:
            raise RuntimeError(self._failure(f"cannot load {self.path}"))
        self.repacked_pages_released = self._release_repacked_originals() if self.cpu_repack else 0
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self.architecture = self._meta("general.architecture") or "unknown"

        ggml_type = KV_CACHE_TYPES[kv_type]
        cparams = L.llama_context_default_params()
        cparams.n_ctx = self.n_ctx * self.parallel
        cparams.n_seq_max = self.parallel
        self.n_batch = self._batch_size()
        cparams.n_batch = cparams.n_ubatch = self.n_batch
        cparams.n_threads = cparams.n_threads_batch = self._threads_now = self.n_threads
        cparams.type_k = cparams.type_v = ggml_type
        if kv_type != "f16":   # llama.cpp needs flash attention for a quantized V cache
            cparams.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
        # One KV stream for all sequences: a step's tokens go through llama_decode as a single
        # ubatch (separate streams split mixed batches into several), and each sequence's
        # n_ctx limit is enforced here instead.
        cparams.kv_unified = True
        # Sliding-window layers get a cache of their window only (SlidingWindows keeps prefix
        # reuse right with it): a long prompt reads n_swa keys on those layers, not all of them.
        self.n_swa = max(L.llama_model_n_swa(self.model), 0)
        cparams.swa_full = False
        cparams.no_perf = True
        self.rope_scaling = self._extend_context(cparams)
        self._configure_context(cparams)
        self.ctx = L.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            raise RuntimeError(self._failure(f"cannot create a context for {self.path} "
                                             f"(n_ctx {cparams.n_ctx}, kv_cache_type {kv_type})"))
        self.n_ctx = min(self.n_ctx, L.llama_n_ctx_seq(self.ctx))
        self.mem = L.llama_get_memory(self.ctx)
        self.windows = SlidingWindows(self.ctx, self.mem, self.n_swa) if self.n_swa else None
        self.prompt_cache = self._open_prompt_cache(spec, cparams)
        self.batch = L.llama_batch_init(self.n_batch, 0, 1)
        self._b_token = np.ctypeslib.as_array(self.batch.token, shape=(self.n_batch,))
        self._b_pos = np.ctypeslib.as_array(self.batch.pos, shape=(self.n_batch,))
        self._b_logits = np.ctypeslib.as_array(self.batch.logits, shape=(self.n_batch,))
        np.ctypeslib.as_array(self.batch.n_seq_id, shape=(self.n_batch,))[:] = 1
        self._b_seq = [self.batch.seq_id[i] for i in range(self.n_batch)]
        self._piece_buf = ctypes.create_string_buffer(256)
        # per token id, (is end of generation, piece): two ctypes calls less per generated token,
        # each slow on the CPU a decode step has just flushed
        self._token_facts: dict[int, tuple[bool, bytes]] = {}
        self._logit_rows: dict[int, np.ndarray] = {}   # logits row address -> a numpy view of it

        bos, eos = L.llama_vocab_bos(self.vocab), L.llama_vocab_eos(self.vocab)
        template = L.llama_model_chat_template(self.model, None)
        tool_use = L.llama_model_chat_template(self.model, b"tool_use")
        self._chat = select_format(
            spec.get("chat_format"), template.decode("utf-8", "replace") if template else None,
            self.architecture, self._token_text(bos), self._token_text(eos),
            tool_use.decode("utf-8", "replace") if tool_use else None)
        self.chat_format = self._chat.name
        self.kv_bytes_per_token = self._kv_bytes_per_token()
        self._window_share = self._sliding_window_share()

        self.slots = [Slot(seq_id=i) for i in range(self.parallel)]
        self.waiting: collections.deque[Request] = collections.deque()
        # requests whose grammar the worker is building; they join `waiting` once it is built
        self.compiling: dict[str, Request] = {}
        self._grammars: GrammarWorker | None = None   # started by the first schema
        self._sampling: SamplingWorker | None = None
        self._wake = None
        self._rate: collections.deque[tuple[float, int, float]] = collections.deque()
        self._totals = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0}
        self._cached_from: collections.Counter = collections.Counter()   # requests by source

    def _release_repacked_originals(self) -> int:
        """Give back the mapped pages of the weights llama.cpp copied into its repacked buffer
        (runners/repacked_weights.py), so that the runner's memory counts them once."""
        try:
            tensors = repacked_tensors(read_gguf_info(self.path))
        except (GgufError, OSError):
            return 0
        released = release_file_pages(self.path, tensors)
        if released:
            log.info("gave back %.1f MiB of mapped weights that llama.cpp repacked",
                     released / (1 << 20))
        return released

    def _batch_size(self) -> int:
        return max(N_BATCH, self.parallel)

    def _open_prompt_cache(self, spec: dict, cparams) -> PromptCache | None:
        budgets = spec.get("prompt_cache") or {}
        ram_mb, disk_mb = int(budgets.get("ram_mb") or 0), int(budgets.get("disk_mb") or 0)
        if spec.get("embedding") or not (ram_mb or disk_mb):
            return None
        key = cache_key(self.path, n_ctx=self.n_ctx, kv_cache_type=self.kv_cache_type,
                        flash_attn=int(cparams.flash_attn_type),
                        n_gpu_layers=int(spec.get("n_gpu_layers") or 0), cpu_repack=self.cpu_repack,
                        n_swa=self.n_swa, rope_scaling=self.rope_scaling)
        folder = prompt_cache_folder(self.name)
        return PromptCache(key, folder, ram_mb << 20, disk_mb << 20, self.n_swa)

    def _configure_context(self, cparams) -> None:
        """Hook for a subclass (the embedding backend) to change the context's parameters."""

    # --- model facts -----------------------------------------------------------------------------

    def _extend_context(self, cparams) -> str | None:
        """YaRN when n_ctx passes the trained context and the GGUF sets no scaling of its own.
        Past it plain RoPE positions leave the range the model learned and its output
        degenerates (SmolLM2, trained on 8k, wrote '###' lines at 12k); YaRN maps them back."""
        n_ctx_train = L.llama_model_n_ctx_train(self.model)
        if not 0 < n_ctx_train < self.n_ctx or self._meta(f"{self.architecture}.rope.scaling.type"):
            return None
        cparams.rope_scaling_type = L.LLAMA_ROPE_SCALING_TYPE_YARN
        cparams.yarn_orig_ctx = n_ctx_train
        cparams.rope_freq_scale = n_ctx_train / self.n_ctx
        return "yarn"

    def _failure(self, message: str) -> str:
        detail = " | ".join(self._log.errors)
        return f"{message}: {detail}" if detail else message

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1024)
        n = L.llama_model_meta_val_str(self.model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def _token_text(self, tok: int) -> str:
        if tok < 0:
            return ""
        text = L.llama_vocab_get_text(self.vocab, tok)
        return text.decode("utf-8", "replace") if text else ""

    def _kv_bytes_per_token(self) -> int:
        """memory_estimate's formula over the loaded model's sizes."""
        arch = self.architecture
        n_head = max(L.llama_model_n_head(self.model), 1)
        head_default = L.llama_model_n_embd(self.model) // n_head
        k = int(self._meta(f"{arch}.attention.key_length") or head_default)
        v = int(self._meta(f"{arch}.attention.value_length") or head_default)
        heads_kv = [L.llama_model_n_head_kv(self.model)] * L.llama_model_n_layer(self.model)
        return kv_bytes_per_token_of(heads_kv, k, v, KV_ELEMENT_BYTES[self.kv_cache_type])

    def _sliding_window_share(self) -> float:
        """The part of a token's KV bytes that lies in sliding-window layers."""
        if not self.n_swa:
            return 0.0
        n_layer = max(L.llama_model_n_layer(self.model), 1)
        pattern = self._meta(f"{self.architecture}.attention.sliding_window_pattern")
        layers = sliding_window_layers(self.architecture, n_layer, self.n_swa,
                                       int(pattern) if pattern and pattern.isdigit() else None)
        return len(layers) / n_layer

    def _kv_bytes(self, cells: int, cells_in_window: int) -> int:
        """KV bytes of `cells` cells in the global layers and `cells_in_window` in the
        sliding-window ones."""
        share = self._window_share
        return int(self.kv_bytes_per_token * ((1 - share) * cells + share * cells_in_window))

    def info(self) -> dict:
        return {"name": self.name, "path": self.path, "backend": "llama_cpp",
                "architecture": self.architecture, "n_ctx": self.n_ctx, "parallel": self.parallel,
                "n_ctx_train": L.llama_model_n_ctx_train(self.model), "n_vocab": self.n_vocab,
                "rope_scaling": self.rope_scaling,
                "kv_cache_type": self.kv_cache_type, "kv_bytes_per_token": self.kv_bytes_per_token,
                "kv_capacity_tokens": self.n_ctx * self.parallel, "chat_format": self.chat_format,
                "n_threads": self.n_threads, "n_batch": self.n_batch,
                "model_size_bytes": L.llama_model_size(self.model),
                "n_params": L.llama_model_n_params(self.model),
                "tool_template": self._chat.tool_template, "embedding": False,
                "n_embd": L.llama_model_n_embd(self.model)}

    # --- text <-> tokens -------------------------------------------------------------------------

    def tokenize(self, text: str, add_special: bool) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 16
        buf = (L.llama_token * cap)()
        n = L.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, True)
        if n < 0:
            cap = -n
            buf = (L.llama_token * cap)()
            n = L.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, True)
        return list(buf[:n])

    def piece(self, tok: int) -> bytes:
        buf = self._piece_buf
        n = L.llama_token_to_piece(self.vocab, tok, buf, len(buf), 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = L.llama_token_to_piece(self.vocab, tok, buf, len(buf), 0, False)
        return buf.raw[:n]

    # --- requests --------------------------------------------------------------------------------

    def submit(self, cmd: dict) -> list[dict]:
        accepted = accept(cmd, live_ids=self._live_ids(), n_ctx=self.n_ctx,
                          build_prompt=self._prompt, refuse=_refuse)
        if not isinstance(accepted, Accepted):
            return accepted
        req_id, prompt, params = accepted.id, accepted.prompt, accepted.params
        bad = [t for t in params.logit_bias if not 0 <= t < self.n_vocab]
        if bad:
            return [P.error(req_id, "bad_request", f"logit_bias: no token id {bad[0]}")]
        req = Request(req_id, prompt, params, TextStream(accepted.stops),
                      params.max_tokens or self.n_ctx)
        if params.constrained:
            return self._compile(req)
        req.sampler = make_sampler(params, self.vocab, self.n_vocab, self.n_ctx)
        self.waiting.append(req)
        return [P.queued(req_id, len(prompt))]

    def set_wake(self, wake) -> None:
        """runner_main's way to be woken when a grammar is built while it waits for commands."""
        self._wake = wake

    def _compile(self, req: Request) -> list[dict]:
        """Queue the request's grammar on the worker; `queued` (or the error) follows once it
        is built, so a schema the grammar code refuses is still refused before any token."""
        try:
            if req.params.grammar is not None:
                check_gbnf(req.params.grammar)
            else:
                check_schema(req.params.json_schema)
        except SchemaTooLarge as exc:
            field = "grammar" if req.params.grammar is not None else "response_format"
            return [P.error(req.id, exc.code, f"{field}: {exc}")]
        if self._grammars is None:
            self._grammars = GrammarWorker(self.vocab, self._woken)
            self._sampling = SamplingWorker(self.n_vocab, self._woken)
        self.compiling[req.id] = req
        self._grammars.submit(req.id, req.params.grammar if req.params.grammar is not None
                              else req.params.json_schema)
        return []

    def _woken(self) -> None:
        if self._wake is not None:
            self._wake()

    def _built(self) -> list[dict]:
        """Requests whose grammar is built join the queue; refused ones end."""
        events = []
        for req_id, grammar, error in self._grammars.take() if self._grammars else ():
            req = self.compiling.pop(req_id, None)
            if req is None:   # cancelled while its grammar was being built
                if grammar:
                    L.llama_sampler_free(grammar)
                continue
            if error is not None:
                events.append(P.error(req_id, *error))
                continue
            req.sampler = make_sampler(req.params, self.vocab, self.n_vocab, self.n_ctx, grammar)
            self.waiting.append(req)
            events.append(P.queued(req_id, len(req.prompt)))
        return events

    def _live_ids(self) -> set[str]:
        return ({r.id for r in self.waiting} | {s.request.id for s in self.slots if s.request}
                | set(self.compiling))

    def _prompt(self, cmd: dict) -> tuple[list[int], list[str]]:
        if cmd.get("kind") == "chat":
            chat = self._chat.render(normalize_messages(cmd.get("messages")),
                                     check_tools(cmd.get("tools")))
            prompt, stops = self.tokenize(chat.text, chat.add_special), chat.stop
        else:
            text = cmd.get("prompt")
            if isinstance(text, list) and len(text) == 1 and isinstance(text[0], str):
                text = text[0]
            if isinstance(text, list) and text and all(isinstance(t, int) for t in text):
                if not all(0 <= t < self.n_vocab for t in text):
                    raise P.BadRequest("prompt holds a token id outside the vocabulary")
                prompt, stops = list(text), []
            elif isinstance(text, str):
                prompt, stops = self.tokenize(text, True), []
            else:
                raise P.BadRequest("prompt must be a string")
        return prompt, stops

    def cancel(self, req_id: str) -> list[dict]:
        if req_id in self.compiling:
            return [self._done_event(self.compiling.pop(req_id), "cancelled")]
        for req in self.waiting:
            if req.id == req_id:
                self.waiting.remove(req)
                self._release(req)
                return [self._done_event(req, "cancelled")]
        for slot in self.slots:
            if slot.request is not None and slot.request.id == req_id:
                return [self._finish(slot.request, "cancelled")]
        return []

    def has_work(self) -> bool:
        """Whether a step would do something; a sequence whose token is on the sampling worker
        waits for it without spinning the loop (the worker wakes it)."""
        if self.waiting or any(s.request is not None and not s.request.sampling
                               for s in self.slots):
            return True
        return self._grammars is not None and (self._grammars.has_ready()
                                               or self._sampling.has_ready())

    # --- one step --------------------------------------------------------------------------------

    def step(self) -> list[dict]:
        """Admit waiting requests, decode one batch, sample every sequence that produced logits."""
        built = self._built() + self._sampled_off_loop() if self._grammars is not None else []
        self._admit()
        decoding, chunks = self._schedule()
        if not decoding and not chunks:
            return built
        outputs = self._fill_batch(decoding, chunks)
        batch = None if chunks else len(decoding)   # only decode-only steps are compared
        threads = self._set_threads(batch)
        t0 = time.perf_counter()
        rc = self._injected_kv_full() or L.llama_decode(self.ctx, self.batch)
        if rc != 0:
            return self._decode_failed(rc, decoding + [r for r, _ in chunks])
        if self.governor is not None:
            self.governor.observe(threads, batch, time.perf_counter() - t0)
        for r in decoding:
            r.slot.tokens.append(r.next_token)
            r.next_token = None
        for r, take in chunks:
            r.slot.tokens.extend(r.prompt[r.n_done:r.n_done + take])
            r.n_done += take
            if r.n_done == len(r.prompt):
                if self.windows is not None:
                    self.windows.save(r.slot.seq_id, r.n_done)
                if self.prompt_cache is not None:
                    self._save_prompt(r)
        events = built
        for r, idx in outputs:
            if r.params.constrained:   # the grammar's time is not the batch's
                r.sampling = True
                self._sampling.submit(r, r.sampler, self._logit_row(idx).copy())
                continue
            events.extend(self._sampled(r, self._sample(r, idx), idx))
        self._record_rate(len(decoding), time.perf_counter() - t0)
        return events

    def _sampled_off_loop(self) -> list[dict]:
        events = []
        for r, tok, row in self._sampling.take():
            r.sampling = False
            if r.released:   # cancelled meanwhile: the chain was the worker's until now
                L.llama_sampler_free(r.sampler)
                r.sampler = None
                continue
            events.extend(self._sampled(r, tok, None, row))
        return events

    def _sample(self, r: Request, idx: int) -> int:
        if r.sampler is None:   # plain greedy (make_sampler)
            return greedy_token(self._logit_row(idx))
        return L.llama_sampler_sample(r.sampler, self.ctx, idx)

    def _logit_row(self, idx: int) -> np.ndarray:
        """Output `idx`'s logits as a numpy view, made once per row address (a new view costs
        a ctypes array type). A view is only used again for an address llama.cpp returns again,
        which then holds that row, so a reallocated logits buffer needs no invalidation."""
        ptr = L.llama_get_logits_ith(self.ctx, idx)
        address = ctypes.cast(ptr, ctypes.c_void_p).value
        row = self._logit_rows.get(address)
        if row is None:
            if len(self._logit_rows) >= 4 * self.n_batch:   # addresses of old buffers
                self._logit_rows.clear()
            row = self._logit_rows[address] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        return row

    def _facts(self, tok: int) -> tuple[bool, bytes]:
        facts = self._token_facts.get(tok)
        if facts is None:
            facts = self._token_facts[tok] = (bool(L.llama_vocab_is_eog(self.vocab, tok)),
                                              self.piece(tok))
        return facts

    def _set_threads(self, batch: int | None) -> int:
        if self.governor is None:
            return self.n_threads
        threads = self.governor.threads_for(batch)
        if self.governor.switches != self._switches_seen:
            self._switches_seen = self.governor.switches
            log.info("decoding with %d of %d threads now (%s)", self.governor.threads,
                     self.n_threads, self.governor.last_switch)
        if threads != self._threads_now:
            L.llama_set_n_threads(self.ctx, threads, threads)
            self._threads_now = threads
        return threads

    def _injected_kv_full(self) -> int:
        """1 (llama_decode's "no KV slot" code, before it computes anything) when the test-only
        LAYA_FAULT_KV_FULL_AFTER cells would be exceeded by this batch; 0 otherwise."""
        if self._kv_fault_cells is None:
            return 0
        used = sum(len(s.tokens) for s in self.slots)
        return 1 if used + self.batch.n_tokens > self._kv_fault_cells else 0

    def _schedule(self) -> tuple[list[Request], list[tuple[Request, int]]]:
        """(sequences decoding their next token, [(request, prompt tokens to read now)])."""
        running = [s.request for s in self.slots if s.request is not None]
        decoding = [r for r in running if r.next_token is not None]
        prefilling = sorted((r for r in running if r.n_done < len(r.prompt)),
                            key=lambda r: r.slot.last_used)   # admission order
        plan = dict(plan_batch(len(decoding), [(r.id, len(r.prompt) - r.n_done) for r in prefilling],
                               self.n_batch, PREFILL_CHUNK_WHEN_BUSY))
        return decoding, [(r, plan[r.id]) for r in prefilling if plan.get(r.id)]

    def _fill_batch(self, decoding: list[Request], chunks: list[tuple[Request, int]]):
        """Write the step's tokens into the llama_batch; returns [(request, its logits row)]."""
        outputs = []
        n = 0
        for r in decoding:
            self._b_token[n], self._b_pos[n], self._b_logits[n] = r.next_token, len(r.slot.tokens), 1
            self._b_seq[n][0] = r.slot.seq_id
            outputs.append((r, n))
            n += 1
        for r, take in chunks:
            self._b_token[n:n + take] = r.prompt[r.n_done:r.n_done + take]
            self._b_pos[n:n + take] = np.arange(r.n_done, r.n_done + take)
            self._b_logits[n:n + take] = 0
            for i in range(n, n + take):
                self._b_seq[i][0] = r.slot.seq_id
            n += take
            if r.n_done + take == len(r.prompt):   # the prompt's last token gives the first logits
                self._b_logits[n - 1] = 1
                outputs.append((r, n - 1))
        self.batch.n_tokens = n
        return outputs

    def _admit(self) -> None:
        while self.waiting:
            free = [FreeSlot(i, s.tokens, s.last_used) for i, s in enumerate(self.slots)
                    if s.request is None]
            if not free:
                return
            req = self.waiting.popleft()
            index, keep = choose_slot(req.prompt, free)
            if not req.params.cache_prompt:
                keep = 0
            slot = self.slots[index]
            source = "slot"
            if self.prompt_cache is not None and req.params.cache_prompt:
                restored = self._restore(slot, req.prompt, keep)
                if restored is not None:
                    keep, source = restored
            if keep < len(slot.tokens):
                if self.windows is not None:
                    keep = self.windows.usable_prefix(slot.seq_id, keep)
                if not L.llama_memory_seq_rm(self.mem, slot.seq_id, keep, -1):
                    L.llama_memory_seq_rm(self.mem, slot.seq_id, -1, -1)
                    keep = 0
            self._truncate(slot, keep)
            req.slot, req.n_done, req.cached_tokens = slot, keep, keep
            req.cached_from = source if keep else None
            slot.request, slot.last_used = req, time.monotonic()

    def _restore(self, slot: Slot, prompt: list[int], keep: int) -> tuple[int, str] | None:
        """Load into the slot the saved state sharing the longest prefix with `prompt`, when it
        beats the slot's own `keep` tokens: (the slot's shared tokens now, source), or None
        when nothing was loaded. The caller truncates the slot to the shared prefix."""
        match = self.prompt_cache.lookup(prompt, keep)
        if match is None:
            return None
        t0 = time.perf_counter()
        got = self.prompt_cache.take(match)
        if got is None:
            return None
        data, tokens = got
        self._truncate(slot, 0)
        if not copy_in(self.ctx, self.mem, slot.seq_id, data):
            log.warning("prompt cache: llama.cpp refused a saved state of %d tokens; reading "
                        "the prompt instead", tokens.size)
            return 0, "slot"
        slot.tokens = tokens.tolist()
        keep = match.n_tokens
        if self.windows is not None:
            keep = self.windows.usable_prefix(slot.seq_id, keep)
        self.prompt_cache.restored(match, keep, time.perf_counter() - t0)
        return keep, match.source

    def _save_prompt(self, r: Request) -> None:
        """Keep the state of the prompt just read in the prompt cache. Only the copy out of the
        KV cache runs here, in the loop (llama.cpp's context is not for two threads); the
        checksum and the file are the cache's writer thread's."""
        if not self.prompt_cache.wants(r.prompt):
            return
        t0 = time.perf_counter()
        data = copy_out(self.ctx, r.slot.seq_id)
        if data is not None:
            pos_min = L.llama_memory_seq_pos_min(self.mem, r.slot.seq_id)
            self.prompt_cache.put(r.prompt, pos_min, data, time.perf_counter() - t0)

    def _truncate(self, slot: Slot, n_tokens: int) -> None:
        """The slot's cache now holds its first n_tokens tokens only."""
        del slot.tokens[n_tokens:]
        if self.windows is not None:
            self.windows.truncated(slot.seq_id, n_tokens)

    def _sampled(self, r: Request, tok: int, idx: int | None, row=None) -> list[dict]:
        """Events for a sampled token. An end-of-generation token is neither text nor a
        completion token (as on MLX); with logprobs every other token gets a token event, its
        text empty while held back, so each completion token has its logprobs entry."""
        is_eog, piece = self._facts(tok)
        if is_eog:
            return self._text(r, r.stream.flush(), None) + [self._finish(r, "stop")]
        r.completion_tokens += 1
        entry = None
        if r.params.logprobs:
            logits = row if row is not None else L.llama_get_logits_ith(self.ctx, idx)
            entry = logprob_entry(logits, self.n_vocab, tok, r.params.top_logprobs, self.piece)
        text = r.stream.push(piece)
        if r.stream.stopped:
            return self._text(r, text, entry) + [self._finish(r, "stop")]
        if r.completion_tokens >= r.max_tokens or len(r.prompt) + r.completion_tokens >= self.n_ctx:
            return self._text(r, text + r.stream.flush(), entry) + [self._finish(r, "length")]
        r.next_token = tok
        return self._text(r, text, entry)

    @staticmethod
    def _text(r: Request, text: str, entry: dict | None) -> list[dict]:
        if entry is not None:
            return [P.token(r.id, text, [entry])]
        return [P.token(r.id, text)] if text else []

    def _finish(self, r: Request, reason: str) -> dict:
        self._release(r)
        return self._done_event(r, reason)

    def _release(self, r: Request) -> None:
        """Free the request's slot; its KV stays there for prefix reuse by a later request."""
        r.released = True
        if r.slot is not None:
            r.slot.request, r.slot.last_used = None, time.monotonic()
        if r.sampler is not None and not r.sampling:
            L.llama_sampler_free(r.sampler)
            r.sampler = None

    def _done_event(self, r: Request, reason: str) -> dict:
        t = self._totals
        t["requests"] += 1
        t["prompt_tokens"] += len(r.prompt)
        t["cached_tokens"] += r.cached_tokens
        t["completion_tokens"] += r.completion_tokens
        if r.cached_from is not None:
            self._cached_from[r.cached_from] += 1
        return P.done(r.id, reason, len(r.prompt), r.completion_tokens, r.cached_tokens,
                      r.cached_from)

    def _decode_failed(self, rc: int, requests: list[Request]) -> list[dict]:
        code = "kv_full" if rc == 1 else "internal"
        message = ("no room left in the KV cache" if rc == 1
                   else self._failure(f"llama_decode failed with code {rc}"))
        events = []
        for r in requests:
            L.llama_memory_seq_rm(self.mem, r.slot.seq_id, -1, -1)
            self._truncate(r.slot, 0)
            self._release(r)
            events.append(P.error(r.id, code, message))
        return events

    # --- stats -----------------------------------------------------------------------------------

    def _record_rate(self, n_tokens: int, seconds: float) -> None:
        now = time.monotonic()
        self._rate.append((now, n_tokens, seconds))
        while self._rate and self._rate[0][0] < now - RATE_WINDOW_S:
            self._rate.popleft()

    def tokens_per_s(self) -> float:
        now = time.monotonic()
        recent = [(n, dt) for t, n, dt in self._rate if t >= now - RATE_WINDOW_S]
        busy = sum(dt for _, dt in recent)
        return round(sum(n for n, _ in recent) / busy, 2) if busy > 0 else 0.0

    def stats(self) -> dict:
        used = sum(len(s.tokens) for s in self.slots)
        cells = self.n_ctx * self.parallel
        used_window, window = used, cells
        if self.windows is not None:
            used_window = sum(self.windows.used_cells(s.seq_id) for s in self.slots if s.tokens)
            window = window_cells(self.n_swa, self.parallel, self.n_batch, cells)
        return {"kv_used_tokens": used, "kv_capacity_tokens": cells,
                "kv_bytes_per_token": self.kv_bytes_per_token,
                "kv_used_bytes": self._kv_bytes(used, used_window),
                "kv_capacity_bytes": self._kv_bytes(cells, window),
                "active": sum(s.request is not None for s in self.slots),
                "queued": len(self.waiting) + len(self.compiling),
                "parallel": self.parallel, "tokens_per_s": self.tokens_per_s(),
                "n_threads_now": self._threads_now,
                # the governor's switches and its steps by thread count: how much of a run it
                # decoded with fewer threads than configured (benches report it per cell)
                "thread_switches": self.governor.switches if self.governor else 0,
                "steps_by_threads": (dict(self.governor.steps_by_threads) if self.governor
                                     else {}),
                "requests_total": self._totals["requests"],
                "prompt_tokens_total": self._totals["prompt_tokens"],
                "cached_tokens_total": self._totals["cached_tokens"],
                "completion_tokens_total": self._totals["completion_tokens"],
                **(self._grammars.stats() if self._grammars else
                   {"grammar_cache_hits": 0, "grammar_cache_misses": 0}),
                **self._prompt_cache_stats()}

    def clear_prompt_cache(self) -> int:
        """Every saved prompt state of this model dropped, in RAM and on disk; the bytes freed.
        What the slots hold stays: it is the running requests' own."""
        return self.prompt_cache.clear() if getattr(self, "prompt_cache", None) is not None else 0

    def _prompt_cache_stats(self) -> dict:
        if self.prompt_cache is None:
            return {}
        return {"prompt_cache_hits_slot": self._cached_from["slot"], **self.prompt_cache.stats()}

    def close(self) -> None:
        if getattr(self, "prompt_cache", None) is not None:
            self.prompt_cache.close()   # pending writes finish: the next runner reads them
            self.prompt_cache = None
        if getattr(self, "_grammars", None) is not None:
            self._grammars.close()
            self._sampling.close()
            for r, _, _ in self._sampling.take():
                r.sampling = False
                if r.released and r.sampler is not None:
                    L.llama_sampler_free(r.sampler)
                    r.sampler = None
            self._grammars = None
        for slot in self.slots if hasattr(self, "slots") else []:
            if slot.request is not None:
                self._release(slot.request)
        for req in getattr(self, "waiting", ()):
            self._release(req)
        if self.batch is not None:
            L.llama_batch_free(self.batch)
            self.batch = None
        if self.ctx:
            L.llama_free(self.ctx)
            self.ctx = None
        if self.model:
            L.llama_model_free(self.model)
            self.model = None
