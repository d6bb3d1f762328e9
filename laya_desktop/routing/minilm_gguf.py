"""all-MiniLM-L6-v2's safetensors as a llama.cpp BERT GGUF, written with the `gguf` package.

llama.cpp's own converter (convert_hf_to_gguf.py) needs torch and a llama.cpp checkout; the
model is small and plain, so its tensors are renamed here and written directly. The matrices are
stored as F16 (exact to 1e-5 in cosine against the fp32 numpy encoder) or Q8_0 (0.9995); the
embeddings, biases and norms stay F32. The vocabulary is written as llama.cpp's converter writes
a BERT vocabulary, so the file loads, but the encoder feeds token ids from the model's own
tokenizer (minilm.MiniLMTokens): the numpy and llama.cpp encoders see the same ids.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import gguf
import numpy as np

from laya_desktop.routing.minilm import HEADS, HIDDEN, LAYERS, read_safetensors

TYPES = {"F16": gguf.GGMLQuantizationType.F16, "Q8_0": gguf.GGMLQuantizationType.Q8_0}
_FILE_TYPES = {"F16": gguf.LlamaFileType.MOSTLY_F16, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}
# (our name under blk.N, the safetensors name under encoder.layer.N) for each weight and bias
_LAYER = {"attn_q": "attention.self.query", "attn_k": "attention.self.key",
          "attn_v": "attention.self.value", "attn_output": "attention.output.dense",
          "ffn_up": "intermediate.dense", "ffn_down": "output.dense"}
_LAYER_NORMS = {"attn_output_norm": "attention.output.LayerNorm", "layer_output_norm": "output.LayerNorm"}


def _vocab(tokenizer_json: Path) -> tuple[list[str], list[int], dict[str, int]]:
    vocab = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]["vocab"]
    tokens = [""] * len(vocab)
    for piece, index in vocab.items():
        tokens[index] = piece

    def special(piece: str) -> bool:
        return piece.startswith("[") and piece.endswith("]")

    def phantom_space(piece: str) -> str:  # llama.cpp's WPM vocabulary: word starts carry U+2581
        if special(piece):
            return piece
        return piece[2:] if piece.startswith("##") else "\u2581" + piece

    types = [int(gguf.TokenType.CONTROL if special(p) else gguf.TokenType.NORMAL) for p in tokens]
    return [phantom_space(p) for p in tokens], types, vocab


def write_gguf(weights: Path, tokenizer_json: Path, out: Path, kind: str = "F16") -> Path:
    """Write the GGUF to `out` through a temporary name, so no reader sees half a file."""
    qtype = TYPES[kind]
    t = read_safetensors(weights)
    tokens, types, vocab = _vocab(tokenizer_json)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    writer = gguf.GGUFWriter(str(tmp), "bert")
    writer.add_name("all-MiniLM-L6-v2")
    writer.add_context_length(int(t["embeddings.position_embeddings.weight"].shape[0]))
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(int(t["encoder.layer.0.intermediate.dense.weight"].shape[0]))
    writer.add_block_count(LAYERS)
    writer.add_head_count(HEADS)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(_FILE_TYPES[kind])
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_type_count(int(t["embeddings.token_type_embeddings.weight"].shape[0]))
    writer.add_bos_token_id(vocab["[CLS]"])
    writer.add_eos_token_id(vocab["[SEP]"])
    writer.add_sep_token_id(vocab["[SEP]"])
    writer.add_pad_token_id(vocab["[PAD]"])
    writer.add_unk_token_id(vocab["[UNK]"])
    writer.add_mask_token_id(vocab["[MASK]"])

    def f32(name: str, array: np.ndarray) -> None:
        writer.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))

    def matrix(name: str, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array, dtype=np.float32)
        if kind == "F16":
            writer.add_tensor(name, array.astype(np.float16))
        else:
            writer.add_tensor(name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)

    f32("token_embd.weight", t["embeddings.word_embeddings.weight"])
    f32("token_types.weight", t["embeddings.token_type_embeddings.weight"])
    f32("position_embd.weight", t["embeddings.position_embeddings.weight"])
    f32("token_embd_norm.weight", t["embeddings.LayerNorm.weight"])
    f32("token_embd_norm.bias", t["embeddings.LayerNorm.bias"])
    for i in range(LAYERS):
        ours, theirs = f"blk.{i}.", f"encoder.layer.{i}."
        for name, source in _LAYER.items():
            matrix(ours + name + ".weight", t[theirs + source + ".weight"])
            f32(ours + name + ".bias", t[theirs + source + ".bias"])
        for name, source in _LAYER_NORMS.items():
            f32(ours + name + ".weight", t[theirs + source + ".weight"])
            f32(ours + name + ".bias", t[theirs + source + ".bias"])
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
