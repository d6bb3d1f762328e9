"""What an MLX model folder holds, read without loading it: config.json and the safetensors headers.

A folder passes when it has a config.json object and at least one readable *.safetensors file,
which is what mlx-lm needs besides the tokenizer. The model dialog runs it in a worker and shows
the reasons in the user's language (gui/mlx_folder_text.py), so each keeps its English template.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from laya_desktop.runners.builtin import resolve_model_path

MAX_HEADER_BYTES = 100 << 20   # the safetensors format's own limit
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tiktoken.model", "vocab.json")
NO_TOKENIZER = "no tokenizer file (tokenizer.json or tokenizer.model): mlx-lm may fail to load it"


class NotAnMlxModel(ValueError):
    """Why a folder is not an MLX model: `template` filled with `fields`, then `hint`."""

    def __init__(self, template: str, hint: str = "", **fields) -> None:
        self.template, self.hint, self.fields = template, hint, fields
        text = template.format(**fields) if fields else template
        super().__init__(f"{text} {hint}" if hint else text)


@dataclass
class MlxFolderInfo:
    path: str
    architecture: str
    parameters: int
    weights_bytes: int          # the *.safetensors files on disk
    weight_files: int
    quantization: str           # "4-bit, group 64", or the dtype most weights have
    context_length: int | None
    warnings: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def read_mlx_folder(path: str) -> MlxFolderInfo:
    if not path.strip():
        raise NotAnMlxModel("choose the model folder first")
    try:
        folder = resolve_model_path(path)
    except (OSError, ValueError) as exc:
        raise NotAnMlxModel(str(exc)) from exc
    if not folder.is_dir():
        hint = "(add a .gguf file as a GGUF model)" if folder.suffix.lower() == ".gguf" else ""
        raise NotAnMlxModel("{path} is a file; an MLX model is a folder with config.json and "
                            "*.safetensors", hint, path=folder)
    config = _read_config(folder)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        hint = "(it holds .gguf files: add them as GGUF models)" if any(folder.glob("*.gguf")) else ""
        raise NotAnMlxModel("no *.safetensors weights in {path}", hint, path=folder)
    quant = config.get("quantization") or config.get("quantization_config") or {}
    bits = quant.get("bits") if isinstance(quant, dict) else None
    headers = [_header(f) for f in files]
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    architectures = config.get("architectures") or []
    warnings = [] if any((folder / name).is_file() for name in TOKENIZER_FILES) else [NO_TOKENIZER]
    return MlxFolderInfo(
        path=str(folder),
        architecture=str(architectures[0] if architectures else config.get("model_type", "?")),
        parameters=sum(_parameters(h, bits) for h in headers),
        weights_bytes=sum(f.stat().st_size for f in files),
        weight_files=len(files),
        quantization=(f"{bits}-bit, group {quant.get('group_size', '?')}" if bits
                      else _main_dtype(headers)),
        context_length=text.get("max_position_embeddings"),
        warnings=warnings)


def _read_config(folder: Path) -> dict:
    file = folder / "config.json"
    if not file.is_file():
        raise NotAnMlxModel("no config.json in {path}", path=folder)
    try:
        config = json.loads(file.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise NotAnMlxModel("config.json cannot be read: {error}", error=exc) from exc
    if not isinstance(config, dict):
        raise NotAnMlxModel("config.json does not hold a JSON object")
    return config


def _header(file: Path) -> dict:
    """The tensor table at the start of a safetensors file: name -> {dtype, shape, data_offsets}."""
    try:
        with file.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 0 < size <= MAX_HEADER_BYTES:
                raise ValueError(f"header size {size}")
            header = json.loads(fh.read(size))
    except (OSError, ValueError) as exc:
        raise NotAnMlxModel(f"{file.name} is not a safetensors file ({exc})") from exc
    if not isinstance(header, dict):
        raise NotAnMlxModel(f"{file.name} is not a safetensors file")
    return {k: v for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)}


def _parameters(header: dict, bits: int | None) -> int:
    """Quantized MLX layers pack 32 // bits weights in each uint32 and add per-group `scales` and
    `biases`, which are not parameters of the model."""
    total = 0
    for name, tensor in header.items():
        numel = math.prod(tensor.get("shape") or [])
        if bits and tensor.get("dtype") == "U32":
            numel = numel * 32 // bits
        elif bits and name.endswith((".scales", ".biases")) and \
                header.get(name.rsplit(".", 1)[0] + ".weight", {}).get("dtype") == "U32":
            continue
        total += numel
    return total


def _main_dtype(headers: list[dict]) -> str:
    counts: Counter[str] = Counter()
    for header in headers:
        for tensor in header.values():
            counts[str(tensor.get("dtype", "?"))] += math.prod(tensor.get("shape") or [])
    return counts.most_common(1)[0][0].lower() if counts else "?"
