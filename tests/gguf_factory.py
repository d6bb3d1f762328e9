"""Tiny random-weight GGUF models for tests.

`write_tiny_gguf` writes a llama-architecture model with a GPT-2 style byte-level BPE tokenizer
(256 byte tokens, a few merges, control tokens), so llama.cpp loads it in milliseconds, tokenizes
any text and generates real (random) tokens. The output rows of the control tokens are zero, so a
greedy decode rarely ends early on EOS.
"""
from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Merges over GPT-2's byte-to-unicode alphabet ("Ġ" is the space byte).
_MERGES = ["Ġ t", "h e", "Ġt he", "i n", "a n", "e r", "o n", "Ġ a", "r e", "a t", "e n", "o r",
           "Ġ s", "Ġ o", "Ġ w", "i s", "Ġ c", "e s", "a r", "Ġ f"]


def _bytes_to_unicode() -> list[str]:
    """GPT-2's reversible byte -> printable character table, in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars = {}
    extra = 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def _vocab() -> tuple[list[str], list[int]]:
    tokens = _bytes_to_unicode()
    for merge in _MERGES:
        tokens.append(merge.replace(" ", ""))
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for special in SPECIAL_TOKENS:
        tokens.append(special)
        types.append(gguf.TokenType.CONTROL)
    return tokens, [int(t) for t in types]


def write_tiny_gguf(path, *, n_vocab: int | None = None, n_layer: int = 2, n_embd: int = 64,
                    n_head: int = 4, n_head_kv: int = 2, n_ctx_train: int = 2048, seed: int = 0,
                    chat_template: str | list[dict] | None = None,
                    pooling_type: int | None = None, sliding_window: int | None = None,
                    weight_type: str = "F32") -> Path:
    """Write the model to `path`. `n_vocab` pads the vocabulary with unused tokens when larger than
    the built-in one (256 bytes + merges + specials). `chat_template` is one template or named
    ones ([{"name": "default" | "tool_use", "template": ...}]); `pooling_type` (a
    gguf.PoolingType) is the embedding pooling the GGUF declares. With `sliding_window` the model
    is a Gemma 3 instead (llama.cpp's layout: five sliding-window layers, then a global one).
    `weight_type` (a gguf.GGMLQuantizationType name that gguf.quants can write, such as Q4_0)
    quantizes the layers' matrices; embeddings, output and norms stay F32."""
    path = Path(path)
    tokens, types = _vocab()
    if n_vocab is not None:
        if n_vocab < len(tokens):
            raise ValueError(f"n_vocab must be at least {len(tokens)}")
        for i in range(n_vocab - len(tokens)):
            tokens.append(f"<|unused_{i}|>")
            types.append(int(gguf.TokenType.UNUSED))
    vocab_size = len(tokens)
    special_ids = [i for i, t in enumerate(types) if t != gguf.TokenType.NORMAL]
    eos_id = tokens.index("<|endoftext|>")
    head_dim = n_embd // n_head
    n_ff = n_embd * 2
    rng = np.random.default_rng(seed)

    def weight(*shape: int, scale: float = 0.5) -> np.ndarray:
        return (rng.standard_normal(shape) * scale / np.sqrt(shape[-1])).astype(np.float32)

    qtype = gguf.GGMLQuantizationType[weight_type]

    def add_matrix(name: str, *shape: int) -> None:
        data = weight(*shape)
        if qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(name, data)
        else:
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    gemma = sliding_window is not None
    writer = gguf.GGUFWriter(str(path), "gemma3" if gemma else "llama")
    writer.add_name("tiny-random-gemma3" if gemma else "tiny-random-llama")
    if gemma:
        writer.add_sliding_window(sliding_window)
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_context_length(n_ctx_train)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(_MERGES)
    writer.add_bos_token_id(eos_id)
    writer.add_eos_token_id(eos_id)
    writer.add_add_bos_token(True)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    if pooling_type is not None:
        writer.add_pooling_type(gguf.PoolingType(pooling_type))

    embd = weight(vocab_size, n_embd, scale=1.0)
    output = weight(vocab_size, n_embd, scale=8.0)
    output[special_ids] = 0.0
    writer.add_tensor("token_embd.weight", embd)
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    writer.add_tensor("output.weight", output)
    for i in range(n_layer):
        blk = f"blk.{i}"
        writer.add_tensor(f"{blk}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        add_matrix(f"{blk}.attn_q.weight", n_head * head_dim, n_embd)
        add_matrix(f"{blk}.attn_k.weight", n_head_kv * head_dim, n_embd)
        add_matrix(f"{blk}.attn_v.weight", n_head_kv * head_dim, n_embd)
        add_matrix(f"{blk}.attn_output.weight", n_embd, n_head * head_dim)
        writer.add_tensor(f"{blk}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        add_matrix(f"{blk}.ffn_gate.weight", n_ff, n_embd)
        add_matrix(f"{blk}.ffn_up.weight", n_ff, n_embd)
        add_matrix(f"{blk}.ffn_down.weight", n_embd, n_ff)
        if gemma:
            for norm, size in (("attn_q_norm", head_dim), ("attn_k_norm", head_dim),
                               ("post_attention_norm", n_embd), ("post_ffw_norm", n_embd)):
                writer.add_tensor(f"{blk}.{norm}.weight", np.ones(size, dtype=np.float32))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_corrupt_gguf(path) -> Path:
    """A file that starts like a GGUF and then breaks off."""
    path = Path(path)
    path.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\x05\x00\x00\x00" + b"\xff" * 13)
    return path


def write_nested_gguf(path, depth: int = 20_000, **tiny) -> Path:
    """The tiny model with one more metadata value: an array of arrays `depth` levels deep
    (a hostile header; llama.cpp itself takes no nested arrays). The pair goes first, padded to
    the file's 32-byte alignment, so the tensor data stays where its offsets say."""
    path = Path(path)
    write_tiny_gguf(path, **tiny)
    data = path.read_bytes()
    assert data[:4] == b"GGUF"
    value = struct.pack("<IQ", 9, 1) * (depth - 1) + struct.pack("<IQI", 4, 1, 7)
    key = b"laya.test.nested"
    size = 8 + len(key) + 4 + len(value)
    key += b"_" * (-size % 32)
    pair = struct.pack("<Q", len(key)) + key + struct.pack("<I", 9) + value
    assert len(pair) % 32 == 0
    n_kv = struct.unpack_from("<Q", data, 16)[0]
    path.write_bytes(data[:16] + struct.pack("<Q", n_kv + 1) + pair + data[24:])
    return path
