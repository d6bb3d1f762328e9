"""Write a tiny random-weight Llama in MLX format (config.json, safetensors, tokenizer files).

It loads in well under a second with `mlx_lm.load` and generates real tokens, offline.
The output head is shaped so that greedy decoding produces printable ASCII and never the
end-of-sequence token (tests that want an EOS ask for it with `logit_bias`): the rows of
tokens whose bytes are not printable ASCII, and the EOS row, are zero, while the other rows
are scaled up, so they win by a wide margin under sampling too.
"""

from __future__ import annotations

import json
from pathlib import Path

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Laya Desktop serves local models through one OpenAI endpoint.",
    "Hello world! How are you today? I am fine, thank you.",
    "Memory guards unload the least recently used model first.",
    "Tokens stream back one at a time, like water from a tap.",
    "user assistant system: a chat between friends about the weather.",
]

BOS, EOS, PAD = "<s>", "</s>", "<pad>"

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}</s>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _write_tokenizer(folder: Path, chat_template: str) -> tuple[int, int, int, list[int]]:
    """Train a byte-level BPE on a few sentences; returns (vocab, bos_id, eos_id, ascii_ids)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[PAD, BOS, EOS, "<|user|>", "<|assistant|>", "<|system|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer)
    tok.save(str(folder / "tokenizer.json"))

    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "unk_token": None,
        "add_bos_token": False,
        "model_max_length": 4096,
        "clean_up_tokenization_spaces": False,
        "chat_template": chat_template,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}, indent=2)
    )

    vocab = tok.get_vocab_size()
    special = {tok.token_to_id(t)
               for t in [PAD, BOS, EOS, "<|user|>", "<|assistant|>", "<|system|>"]}
    ascii_ids = []
    for i in range(vocab):
        if i in special:
            continue
        text = tok.decode([i])
        if text and all(32 <= ord(c) < 127 for c in text):
            ascii_ids.append(i)
    return vocab, tok.token_to_id(BOS), tok.token_to_id(EOS), ascii_ids


def write_tiny_mlx_model(folder, seed: int = 0, chat_template: str = CHAT_TEMPLATE) -> Path:
    """Write the model into `folder` (created if needed) and return its path."""
    import mlx.core as mx
    from mlx_lm.models import llama
    from mlx_lm.utils import save_config, save_model

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab, bos_id, eos_id, ascii_ids = _write_tokenizer(folder, chat_template)

    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "rms_norm_eps": 1e-5,
        "vocab_size": vocab,
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
    }
    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    keep = mx.zeros((vocab, 1))
    keep[mx.array(ascii_ids)] = 1.0
    model.lm_head.weight = model.lm_head.weight * keep * 40.0
    mx.eval(model.parameters())
    save_model(folder, model)
    save_config(dict(config), folder / "config.json")
    return folder


if __name__ == "__main__":  # handy for poking at the model by hand
    import sys

    print(write_tiny_mlx_model(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tiny-mlx"))
