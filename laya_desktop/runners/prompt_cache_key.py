"""What a saved KV state depends on: a state is restored only where every one of these is equal.

- the model file: its size and a hash of its first and last MiB (the GGUF header with every
  tensor's name, type and offset, and weight bytes at both ends). Not its path or mtime: a model
  copied or re-downloaded byte for byte keeps its cache; a re-quantized one does not.
- n_ctx (with the RoPE scaling it implies: YaRN past the trained context changes every key),
  the KV element type, flash attention (it changes the V layout), GPU offload, CPU repacking (the
  kernels that computed the keys), the sliding-window layout, and llama.cpp's state version and
  llama-cpp-python's version (the state's byte layout is llama.cpp's own and may change).
"""
from __future__ import annotations

import hashlib
import os

import llama_cpp as L

_EDGE = 1 << 20


def model_identity(path: str) -> dict:
    size = os.path.getsize(path)
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        h.update(f.read(_EDGE))
        if size > 2 * _EDGE:
            f.seek(size - _EDGE)
            h.update(f.read(_EDGE))
    return {"model_bytes": size, "model_hash": h.hexdigest()}


def cache_key(path: str, *, n_ctx: int, kv_cache_type: str, flash_attn: bool, n_gpu_layers: int,
              cpu_repack: bool, n_swa: int, rope_scaling: str | None) -> dict:
    return {**model_identity(path), "n_ctx": n_ctx, "kv_cache_type": kv_cache_type,
            "flash_attn": flash_attn, "n_gpu_layers": n_gpu_layers, "cpu_repack": cpu_repack,
            "n_swa": n_swa, "swa_full": False, "rope_scaling": rope_scaling,
            "llama_state_version": int(L.LLAMA_STATE_SEQ_VERSION),
            "llama_cpp_python": L.__version__}
