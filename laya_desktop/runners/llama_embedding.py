"""The llama.cpp backend for a GGUF marked `embedding: true`: it answers `kind: "embedding"` only.

The context computes pooled embeddings with the GGUF's pooling type (`<arch>.pooling_type`);
a GGUF that names none (a chat model used for embeddings) gets mean pooling, so that
llama_get_embeddings_seq has a vector for the sequence. Pooling needs the whole input in one
ubatch, so the batch holds a full sequence (n_ctx tokens). Inputs are read one per step, so
cancels and stats are still served between them. Vectors are L2-normalised, as OpenAI's are and
as llama-server does by default, so a dot product is the cosine similarity.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import llama_cpp as L
import numpy as np

from laya_desktop.runners import protocol as P
from laya_desktop.runners.llama_cpp_backend import N_BATCH, LlamaCppBackend

POOLING_NAMES = {L.LLAMA_POOLING_TYPE_MEAN: "mean", L.LLAMA_POOLING_TYPE_CLS: "cls",
                 L.LLAMA_POOLING_TYPE_LAST: "last"}


@dataclass
class EmbeddingRequest:
    id: str
    inputs: list[list[int]]
    vectors: list[list[float]] = field(default_factory=list)

    @property
    def prompt_tokens(self) -> int:
        return sum(len(t) for t in self.inputs)


class LlamaEmbeddingBackend(LlamaCppBackend):
    def __init__(self, spec: dict):
        self.embed_queue: collections.deque[EmbeddingRequest] = collections.deque()
        super().__init__(spec)
        self.n_embd = L.llama_model_n_embd(self.model)

    def _batch_size(self) -> int:
        return max(N_BATCH, self.n_ctx)

    def _configure_context(self, cparams) -> None:
        raw = self._meta(f"{self.architecture}.pooling_type")
        pooling = int(raw) if raw and raw.lstrip("-").isdigit() else L.LLAMA_POOLING_TYPE_NONE
        if pooling in (L.LLAMA_POOLING_TYPE_NONE, L.LLAMA_POOLING_TYPE_UNSPECIFIED):
            pooling = L.LLAMA_POOLING_TYPE_MEAN
        if pooling not in POOLING_NAMES:
            raise ValueError(f"{self.path}: pooling type {pooling} (a reranker?) gives no "
                             f"embedding vector; valid: {', '.join(POOLING_NAMES.values())}")
        self.pooling = pooling
        cparams.embeddings = True
        cparams.pooling_type = pooling

    def info(self) -> dict:
        return {**super().info(), "embedding": True, "pooling": POOLING_NAMES[self.pooling]}

    def submit(self, cmd: dict) -> list[dict]:
        req_id = str(cmd.get("id"))
        if cmd.get("kind") != "embedding":
            return [P.error(req_id, "bad_request", f"{cmd.get('kind') or 'generate'}: this model "
                            "serves embeddings only (embedding: true in models.yaml); chat and "
                            "completions need a text model")]
        inputs = cmd.get("inputs")
        if not isinstance(inputs, list) or not inputs or not all(
                isinstance(t, str) or (isinstance(t, list) and all(
                    isinstance(i, int) and not isinstance(i, bool) for i in t)) for t in inputs):
            return [P.error(req_id, "bad_request", "input must be a non-empty list of strings "
                            "or of token-id lists")]
        tokens = []
        for i, text in enumerate(inputs):
            toks = self.tokenize(text, True) if isinstance(text, str) else text
            if not toks:
                return [P.error(req_id, "bad_request", f"input[{i}] is empty")]
            bad = next((t for t in toks if not 0 <= t < self.n_vocab), None) if not isinstance(
                text, str) else None
            if bad is not None:
                return [P.error(req_id, "bad_request", f"input[{i}]: token id {bad} is not in "
                                f"this model's vocabulary of {self.n_vocab} tokens")]
            if len(toks) > self.n_ctx:
                return [{**P.error(req_id, "context_length_exceeded",
                                   f"input[{i}] has {len(toks)} tokens, more than this model's "
                                   f"context of {self.n_ctx} tokens"),
                         "n_prompt_tokens": len(toks), "n_ctx": self.n_ctx}]
            tokens.append(toks)
        self.embed_queue.append(EmbeddingRequest(req_id, tokens))
        return []

    def cancel(self, req_id: str) -> list[dict]:
        for req in self.embed_queue:
            if req.id == req_id:
                self.embed_queue.remove(req)
                return [P.done(req_id, "cancelled", req.prompt_tokens, 0)]
        return []

    def has_work(self) -> bool:
        return bool(self.embed_queue)

    def step(self) -> list[dict]:
        req = self.embed_queue[0]
        toks = req.inputs[len(req.vectors)]
        try:
            req.vectors.append(self._embed(toks))
        except RuntimeError as exc:
            self.embed_queue.popleft()
            return [P.error(req.id, "internal", str(exc))]
        self._totals["prompt_tokens"] += len(toks)
        if len(req.vectors) < len(req.inputs):
            return []
        self.embed_queue.popleft()
        self._totals["requests"] += 1
        return [P.embeddings(req.id, req.vectors, req.prompt_tokens)]

    def _embed(self, toks: list[int]) -> list[float]:
        if self.mem:   # encoder models (BERT) have no KV memory
            L.llama_memory_seq_rm(self.mem, 0, -1, -1)
        n = len(toks)
        self._b_token[:n] = toks
        self._b_pos[:n] = np.arange(n)
        self._b_logits[:n] = 1
        for i in range(n):
            self._b_seq[i][0] = 0
        self.batch.n_tokens = n
        encoder_only = L.llama_model_has_encoder(self.model) and not L.llama_model_has_decoder(self.model)
        rc = (L.llama_encode if encoder_only else L.llama_decode)(self.ctx, self.batch)
        if rc != 0:
            raise RuntimeError(self._failure(f"computing the embedding failed with code {rc}"))
        ptr = L.llama_get_embeddings_seq(self.ctx, 0)
        if not ptr:
            raise RuntimeError("llama.cpp gave no pooled embedding for the sequence")
        vec = np.ctypeslib.as_array(ptr, shape=(self.n_embd,)).astype(np.float64)
        norm = np.linalg.norm(vec)
        return (vec / norm if norm > 0 else vec).tolist()

    def stats(self) -> dict:
        return {**super().stats(), "active": int(bool(self.embed_queue)),
                "queued": max(len(self.embed_queue) - 1, 0), "kv_used_tokens": 0, "kv_used_bytes": 0}
