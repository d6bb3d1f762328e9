"""What the model dialog shows before a model is added: the GGUF estimate's parts, MLX folders."""
from __future__ import annotations

import json
import struct

import pytest

from laya_desktop.gui.model_inspect import describe_gguf, estimate_lines, inspect_gguf, inspect_mlx
from laya_desktop.runners.mlx_folder import NotAnMlxModel, read_mlx_folder

MIB = 1 << 20


def test_estimate_lists_the_parts_of_the_total_and_the_reservation_apart():
    est = {"weights_bytes": 250 * MIB, "kv_bytes": 72 * MIB, "kv_bytes_per_token": 18432,
           "kv_tokens": 4096, "compute_bytes": 40 * MIB, "overhead_bytes": 110 * MIB,
           "total_bytes": 472 * MIB, "vram_bytes": 0, "runtime_bytes": 50 * MIB,
           "compute_reserved_bytes": 512 * MIB, "notes": []}
    lines = estimate_lines(est)
    assert lines[0] == "Memory estimate: 472.0 MiB of RAM in total ="
    addends = lines[1:5]
    assert addends == ["  weights 250.0 MiB",
                       "+ KV cache 72.0 MiB (4,096 tokens × 18 KiB per token)",
                       "+ compute 40.0 MiB (the resident part)",
                       "+ overhead 110.0 MiB (the runner process: 50.0 MiB of it)"]
    assert lines[5] == ("Compute buffer reserved (virtual, mostly untouched): 512.0 MiB, "
                        "not in the total")
    assert len(lines) == 6                                   # no VRAM line without offloading
    text = "\n".join(lines)
    assert "runtime" not in text and "compute_reserved" not in text
    est["vram_bytes"] = 300 * MIB
    assert estimate_lines(est)[-1].startswith("VRAM: 300.0 MiB")


def test_gguf_preview_of_a_real_file(gui_tiny_gguf):
    info, est = inspect_gguf(str(gui_tiny_gguf), 1024, 2, "f16")
    text = describe_gguf(info, est)
    assert "Architecture: llama" in text and "Context length: 2048" in text
    assert "Parameters: 109.8 K" in text
    per_token = est["kv_bytes_per_token"]
    assert f"× {per_token} B per token" in text
    parts = [est[k] for k in ("weights_bytes", "kv_bytes", "compute_bytes", "overhead_bytes")]
    assert sum(parts) == est["total_bytes"]                   # what the addends claim
    assert "reserved (virtual, mostly untouched)" in text


@pytest.fixture(scope="module")
def tiny_mlx(tmp_path_factory):
    pytest.importorskip("mlx_lm")
    from mlx_factory import write_tiny_mlx_model
    return write_tiny_mlx_model(tmp_path_factory.mktemp("mlx") / "Tiny.MLX-4k")


def test_mlx_folder_preview(tiny_mlx):
    info, est = inspect_mlx(str(tiny_mlx), 512, 2)
    config = json.loads((tiny_mlx / "config.json").read_text())
    assert info["architecture"] == "LlamaForCausalLM"
    assert info["context_length"] == 4096 and info["quantization"] == "f32"
    assert info["weights_bytes"] == (tiny_mlx / "model.safetensors").stat().st_size
    embed = config["vocab_size"] * config["hidden_size"]
    assert 2 * embed < info["parameters"] < info["weights_bytes"] / 4  # f32: 4 bytes a parameter
    assert est["kv_tokens"] == 1024
    assert est["kv_bytes_per_token"] == 2 * 2 * 16 * 2 * 4    # layers × kv heads × head dim × K,V × f32
    assert est["weights_bytes"] + est["kv_bytes"] + est["overhead_bytes"] == est["total_bytes"]


def _write_safetensors(path, tensors: dict) -> None:
    header, offset = {}, 0
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def test_quantized_parameters_are_unpacked(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "qwen2", "quantization": {"group_size": 64, "bits": 4}}))
    (tmp_path / "tokenizer.json").write_text("{}")
    _write_safetensors(tmp_path / "model.safetensors", {
        "proj.weight": ("U32", [128, 8], 4096),          # 128 x 64 weights, 8 per uint32
        "proj.scales": ("F16", [128, 1], 256),
        "proj.biases": ("F16", [128, 1], 256),
        "norm.weight": ("F16", [64], 128)})
    info = read_mlx_folder(str(tmp_path))
    assert info.parameters == 128 * 64 + 64
    assert info.quantization == "4-bit, group 64" and info.architecture == "qwen2"
    assert info.warnings == []


@pytest.mark.parametrize("make,reason", [
    (lambda d: None, "no config.json"),
    (lambda d: (d / "config.json").write_text("{}"), "no *.safetensors"),
    (lambda d: ((d / "config.json").write_text("{}"), (d / "m.gguf").write_bytes(b"GGUF")),
     "add them as GGUF models"),
    (lambda d: (d / "config.json").write_text("[1, 2]"), "JSON object"),
    (lambda d: ((d / "config.json").write_text("{}"), (d / "x.safetensors").write_bytes(b"junk")),
     "x.safetensors is not a safetensors file"),
])
def test_folders_that_are_not_mlx_models(tmp_path, make, reason):
    make(tmp_path)
    with pytest.raises(NotAnMlxModel, match=reason.replace("*", r"\*")):
        read_mlx_folder(str(tmp_path))


def test_paths_that_are_not_folders(tmp_path, gui_tiny_gguf):
    with pytest.raises(NotAnMlxModel, match="add a .gguf file as a GGUF model"):
        read_mlx_folder(str(gui_tiny_gguf))
    with pytest.raises(NotAnMlxModel, match="not found"):
        read_mlx_folder(str(tmp_path / "missing"))
    with pytest.raises(NotAnMlxModel, match="choose the model folder"):
        read_mlx_folder("  ")
