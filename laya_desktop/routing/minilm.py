"""all-MiniLM-L6-v2 sentence embeddings in numpy: a 6-layer BERT read from its fp32 safetensors.

Why numpy: the model is small (22 M parameters, 384 wide), so one request is a dozen matrix
products per layer that OpenBLAS runs near the core's peak, from the two extracted files alone.
It is the reference the other encoders are checked against and the last fallback; the default
runs the same network under onnxruntime in int8 (minilm_onnx), then llama.cpp (minilm_llama). The
tokenizer is the model's own `tokenizer.json` under `tokenizers`, with its fixed 128 padding
turned off (padding makes short prompts cost as much as long ones and pulls unrelated pairs
together) and truncation done here, keeping the end of the text: in a chat the latest turn counts.

One text is encoded at a time with no attention mask (there is no padding to hide) and BLAS is
asked to use the calling thread only, so the engine stays a light, single-core neighbour.
"""
from __future__ import annotations

import ctypes
import json
import math
import mmap
import threading
from pathlib import Path

import numpy as np

from laya_desktop.routing.minilm_files import ModelFiles

HIDDEN = 384
HEADS = 12
LAYERS = 6
MAX_TOKENS = 128  # what the model was trained on; longer texts keep their last 127 pieces
_EPS = 1e-12
_SCALE = 1.0 / math.sqrt(HIDDEN // HEADS)
_DTYPES = {"F32": np.float32, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors as read-only views of one memory map (no copy, no torch, no safetensors package)."""
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        tensors[name] = np.frombuffer(data, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize,
                                      offset=base + start).reshape(info["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """In place on `x` (always a temporary here): each pass allocates nothing new."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= 1.0 / x.shape[-1]
    var += _EPS
    np.sqrt(var, out=var)
    x /= var
    x *= weight
    x += bias
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """The tanh form, within 1e-3 of erf-GELU (numpy has no erf), written as x * sigmoid(2u)
    (= x * (1 + tanh u) / 2): one exp instead of a tanh, the cheaper of the two."""
    t = x * x
    t *= -2 * 0.7978845608 * 0.044715
    t -= 2 * 0.7978845608
    t *= x  # -2u
    with np.errstate(over="ignore"):  # very negative x: exp -> inf, x / inf -> -0, as GELU is
        np.exp(t, out=t)
    t += 1.0
    np.divide(x, t, out=t)
    return t


class _Layer:
    def __init__(self, t: dict[str, np.ndarray], i: int):
        p = f"encoder.layer.{i}."
        a = p + "attention."
        # query, key and value as one (384, 1152) product; weights stored (in, out), contiguous
        self.qkv_w = np.ascontiguousarray(np.concatenate(
            [t[a + f"self.{n}.weight"] for n in ("query", "key", "value")]).T)
        self.qkv_b = np.concatenate([t[a + f"self.{n}.bias"] for n in ("query", "key", "value")])
        self.out_w = np.ascontiguousarray(t[a + "output.dense.weight"].T)
        self.out_b = np.array(t[a + "output.dense.bias"])
        self.ln1 = (np.array(t[a + "output.LayerNorm.weight"]), np.array(t[a + "output.LayerNorm.bias"]))
        self.up_w = np.ascontiguousarray(t[p + "intermediate.dense.weight"].T)
        self.up_b = np.array(t[p + "intermediate.dense.bias"])
        self.down_w = np.ascontiguousarray(t[p + "output.dense.weight"].T)
        self.down_b = np.array(t[p + "output.dense.bias"])
        self.ln2 = (np.array(t[p + "output.LayerNorm.weight"]), np.array(t[p + "output.LayerNorm.bias"]))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        head = HIDDEN // HEADS
        qkv = x @ self.qkv_w  # (n, 1152)
        qkv += self.qkv_b
        qkv = qkv.reshape(n, 3, HEADS, head).transpose(1, 2, 0, 3)  # (3, heads, n, head)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(0, 2, 1) * _SCALE  # a Python float: a numpy float64 would promote
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        attended = context @ self.out_w
        attended += self.out_b
        attended += x
        x = _layer_norm(attended, *self.ln1)
        up = x @ self.up_w
        up += self.up_b
        down = _gelu(up) @ self.down_w
        down += self.down_b
        down += x
        return _layer_norm(down, *self.ln2)


def _one_blas_thread():
    """OpenBLAS's per-thread setting (0.3.27+), so other threads of the process keep theirs."""
    for lib in _openblas_libs():
        fn = getattr(lib, "openblas_set_num_threads_local", None)
        if fn is not None:
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
            return fn
    return None


def _openblas_libs():
    try:
        config = np.show_config(mode="dicts")
        lib_dir = config["Build Dependencies"]["blas"].get("lib directory", "")
    except Exception:  # older numpy: no dict mode
        lib_dir = ""
    candidates = [Path(np.__file__).parent.parent / "numpy.libs"]
    if lib_dir:
        candidates.append(Path(lib_dir))
    for folder in candidates:
        for so in sorted(folder.glob("*openblas*.so*")) if folder.is_dir() else []:
            try:
                yield ctypes.CDLL(str(so))  # already loaded by numpy: this only finds it
            except OSError:
                continue


class MiniLMTokens:
    """The model's own WordPiece tokenizer, padding and truncation off; [CLS] text [SEP]."""

    def __init__(self, tokenizer_json: Path):
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._cls = self._tokenizer.token_to_id("[CLS]")
        self._sep = self._tokenizer.token_to_id("[SEP]")

    def __call__(self, text: str) -> list[int]:
        pieces = self._tokenizer.encode(text, add_special_tokens=False).ids
        return [self._cls, *pieces[-(MAX_TOKENS - 2):], self._sep]

    def decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids)


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-9)).astype(np.float32)


class MiniLM:
    """encode(text) -> unit vector (384,) float32: mean pooling over tokens, as sentence-transformers."""

    runtime = "numpy fp32"

    def __init__(self, files: ModelFiles):
        self.token_ids = MiniLMTokens(files.tokenizer)
        t = read_safetensors(files.weights)
        self._words = t["embeddings.word_embeddings.weight"]  # stays mapped: rows are gathered
        self._positions = np.array(t["embeddings.position_embeddings.weight"][:MAX_TOKENS])
        self._positions += t["embeddings.token_type_embeddings.weight"][0]
        self._ln = (np.array(t["embeddings.LayerNorm.weight"]), np.array(t["embeddings.LayerNorm.bias"]))
        self._layers = [_Layer(t, i) for i in range(LAYERS)]
        self._set_threads = _one_blas_thread()
        self._pinned = threading.local()
        self.encoded = 0  # texts run through the network (cache misses), for tests and benches

    def encode(self, text: str) -> np.ndarray:
        if self._set_threads is not None and not getattr(self._pinned, "done", False):
            self._set_threads(1)
            self._pinned.done = True
        ids = self.token_ids(text)
        x = self._words[ids] + self._positions[:len(ids)]
        x = _layer_norm(x, *self._ln)
        for layer in self._layers:
            x = layer(x)
        self.encoded += 1
        return unit(x.mean(axis=0))
