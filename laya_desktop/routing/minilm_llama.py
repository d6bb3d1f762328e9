"""all-MiniLM-L6-v2 under llama.cpp (its GGUF from minilm_gguf), in the engine process, one thread.

Why beside the numpy encoder: for the short texts a routing decision embeds, ggml's fixed cost
per text is lower than numpy's (a Python call per operation, OpenBLAS packing the weights for a
handful of rows), so the same network in F16 takes less CPU time at the labelled set's
median prompt and about the same at 64 tokens (bench/results/semantic/latest.json, both side by
side). The token ids come from the model's own tokenizer (minilm.MiniLMTokens), as for numpy.

A llama.cpp context is not safe for two threads at once; texts are encoded under a lock (the
engine embeds off its event loop, possibly from several worker threads).
"""
from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path

import numpy as np

from laya_desktop.routing.minilm import HIDDEN, MAX_TOKENS, MiniLMTokens, unit

log = logging.getLogger("laya.semantic")
_callbacks: list = []  # llama.cpp keeps a pointer to its log callback: it must outlive the process


def _route_llama_log(L) -> None:
    if _callbacks:
        return

    def to_logging(level: int, text: bytes, _user) -> None:
        if level == 4:  # ERROR; llama.cpp's info lines would flood the engine log on each load
            log.error("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

    _callbacks.append(L.llama_log_callback(to_logging))
    L.llama_log_set(_callbacks[0], ctypes.c_void_p(0))


class MiniLMLlama:
    """encode(text) -> unit vector (384,) float32, mean-pooled by llama.cpp."""

    def __init__(self, gguf_path: Path, tokenizer_json: Path):
        import llama_cpp as L

        self._L = L
        _route_llama_log(L)
        L.llama_backend_init()
        self.token_ids = MiniLMTokens(tokenizer_json)
        mparams = L.llama_model_default_params()
        mparams.n_gpu_layers = 0   # a few ms of CPU: not worth a GPU's memory or its start-up
        self._model = L.llama_model_load_from_file(str(gguf_path).encode(), mparams)
        if not self._model:
            raise RuntimeError(f"llama.cpp cannot load {gguf_path}")
        cparams = L.llama_context_default_params()
        cparams.n_ctx = cparams.n_batch = cparams.n_ubatch = MAX_TOKENS
        cparams.n_seq_max = 1
        cparams.n_threads = cparams.n_threads_batch = 1
        cparams.embeddings = True
        cparams.pooling_type = L.LLAMA_POOLING_TYPE_MEAN
        self._ctx = L.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            L.llama_model_free(self._model)
            raise RuntimeError(f"llama.cpp cannot make a context for {gguf_path}")
        self._batch = L.llama_batch_init(MAX_TOKENS, 0, 1)
        self._lock = threading.Lock()
        self.runtime = f"llama.cpp {Path(gguf_path).stem.rsplit('-', 1)[-1]}"
        self.encoded = 0

    def encode(self, text: str) -> np.ndarray:
        ids = self.token_ids(text)
        with self._lock:
            batch = self._batch
            for i, token in enumerate(ids):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, i, 1
                batch.seq_id[i][0], batch.logits[i] = 0, 1
            batch.n_tokens = len(ids)
            rc = self._L.llama_encode(self._ctx, batch)
            if rc != 0:
                raise RuntimeError(f"llama_encode failed with code {rc}")
            pooled = np.ctypeslib.as_array(self._L.llama_get_embeddings_seq(self._ctx, 0),
                                           shape=(HIDDEN,)).copy()
            self.encoded += 1
        return unit(pooled)

    def close(self) -> None:
        with self._lock:
            if self._ctx:
                self._L.llama_batch_free(self._batch)
                self._L.llama_free(self._ctx)
                self._L.llama_model_free(self._model)
                self._ctx = self._model = None
