"""models.yaml's cpu_repack (ggml's repacked CPU kernels, on by default as in llama-server) reaches
the weights' load, and the runner gives back the mapped pages of the weights llama.cpp repacked."""
from __future__ import annotations

import os
import struct
import sys

import pytest

from gguf_factory import write_tiny_gguf
import laya_desktop.runners.llama_cpp_backend as backend_module
from laya_desktop.config.validate import validate_config
from laya_desktop.engine.runner_handle import runner_spec
from laya_desktop.runners.gguf_info import read_gguf_info
from laya_desktop.runners.repacked_weights import (_file_mappings, _page_ranges, repack_rows,
                                                   repacked_tensors)
from runner_steps import run, text_of


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("repack") / "tiny.gguf", n_layer=2, n_embd=64)


@pytest.fixture(scope="module")
def q4_gguf(tmp_path_factory):
    """Layers of Q4_0 matrices of 1-5 MB each, as a real model's (larger than the page cache's
    folios, so that pages given back stay given back once neighbouring weights are read)."""
    return write_tiny_gguf(tmp_path_factory.mktemp("repack") / "q4.gguf", n_layer=2, n_embd=2048,
                           n_head=16, n_head_kv=4, weight_type="Q4_0")


def test_cpu_repack_is_on_by_default_and_reaches_llama_cpps_model_params(gguf, monkeypatch):
    """It travels in the runner's spec, and the spec sets llama.cpp's use_extra_bufts."""
    config, errors = validate_config({"models": [
        {"name": "d", "backend": "llama_cpp", "path": str(gguf)},
        {"name": "p", "backend": "llama_cpp", "path": str(gguf), "cpu_repack": False}],
        "routes": [{"name": "all", "target": "p"}]})
    assert errors == []
    default, plain = (runner_spec(m, str(gguf)) for m in config.models)
    assert default["cpu_repack"] is True and plain["cpu_repack"] is False
    seen = []
    load = backend_module.L.llama_model_load_from_file

    def recording_load(path, params):
        seen.append(params.use_extra_bufts)
        return load(path, params)

    monkeypatch.setattr(backend_module.L, "llama_model_load_from_file", recording_load)
    for spec in (default, plain, {"path": str(gguf)}):
        backend = backend_module.LlamaCppBackend({**spec, "n_ctx": 64, "parallel": 1, "n_threads": 1})
        backend.close()
    assert seen == [True, False, True]


def test_the_repacked_weights_are_the_ones_ggml_repacks(q4_gguf):
    info = read_gguf_info(q4_gguf)
    rows = {"Q4_0": 8}   # x86-64 with AVX2
    names = {t.name for t in repacked_tensors(info, rows)}
    assert names == {f"blk.{i}.{m}.weight" for i in range(2) for m in
                     ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
    assert repacked_tensors(info, {}) == []
    assert repacked_tensors(info, {"Q4_0": 3}) == []     # rows not a multiple of the interleave


def test_page_ranges_cover_whole_pages_of_adjacent_weights_only(q4_gguf):
    tensors = repacked_tensors(read_gguf_info(q4_gguf), {"Q4_0": 8})
    page = 4096
    ranges = _page_ranges(tensors, page)
    for first, last in ranges:
        assert first % page == 0 and last % page == 0 and last > first
        inside = [t for t in tensors if t.offset < last and t.offset + t.nbytes > first]
        assert inside and first >= min(t.offset for t in inside)
        assert last <= max(t.offset + t.nbytes for t in inside)
    # the F32 norms between layers split the runs: no range covers a byte of them
    norms = [t for t in read_gguf_info(q4_gguf).tensors if t.type == "F32"]
    for first, last in ranges:
        assert not any(t.offset < last and t.offset + t.nbytes > first for t in norms)


def _mapped(ranges: list[tuple[int, int]], path: str) -> list[tuple[int, int]]:
    """The addresses at which this process maps `ranges` (file offsets) of `path`."""
    out = []
    for start, end, file_offset in _file_mappings(path):
        for first, last in ranges:
            lo, hi = max(first, file_offset), min(last, file_offset + end - start)
            if hi > lo:
                out.append((start + lo - file_offset, start + hi - file_offset))
    return out


def _present_pages(addresses: list[tuple[int, int]]) -> tuple[int, int]:
    """(pages present in this process's page tables, pages) over `addresses`."""
    page = os.sysconf("SC_PAGE_SIZE")
    present = total = 0
    with open("/proc/self/pagemap", "rb") as pagemap:
        for lo, hi in addresses:
            pagemap.seek(lo // page * 8)
            entries = pagemap.read((hi - lo) // page * 8)
            total += len(entries) // 8
            present += sum(struct.unpack_from("<Q", entries, i)[0] >> 63 for i in range(0, len(entries), 8))
    return present, total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/pagemap")
@pytest.mark.skipif("Q4_0" not in repack_rows(), reason="this CPU has no repacked Q4_0 kernel")
def test_the_runner_gives_back_the_pages_llama_cpp_copied_and_never_reads_them(q4_gguf, monkeypatch):
    tensors = repacked_tensors(read_gguf_info(q4_gguf))
    cmd = {"kind": "completion", "prompt": "the cat sat on the mat and",
           "params": {"max_tokens": 12, "temperature": 0}}
    spec = {"path": str(q4_gguf), "n_ctx": 128, "parallel": 1, "n_threads": 1}

    backend = backend_module.LlamaCppBackend(spec)
    try:
        # llama.cpp has unmapped the file's ends that no mapped weight uses; the rest of the
        # repacked weights' pages are given back
        addresses = _mapped(_page_ranges(tensors, os.sysconf("SC_PAGE_SIZE")), str(q4_gguf))
        assert backend.repacked_pages_released == sum(hi - lo for lo, hi in addresses) > 8 << 20
        assert _present_pages(addresses)[0] == 0
        text = text_of(run(backend, cmd)["r0"])
        present, total = _present_pages(addresses)
        # decoding read the repacked copies, not these pages: at most the edges next to the
        # weights it does read came back with their page cache folios
        assert text and present <= 0.1 * total, (present, total)
    finally:
        backend.close()

    monkeypatch.setattr(backend_module, "release_file_pages", lambda path, tensors: 0)
    kept = backend_module.LlamaCppBackend(spec)
    try:
        assert kept.repacked_pages_released == 0
        assert text_of(run(kept, cmd)["r0"]) == text
    finally:
        kept.close()


def test_without_cpu_repack_nothing_is_given_back(q4_gguf):
    backend = backend_module.LlamaCppBackend({"path": str(q4_gguf), "n_ctx": 64, "parallel": 1,
                                              "n_threads": 1, "cpu_repack": False})
    try:
        assert backend.repacked_pages_released == 0
    finally:
        backend.close()
