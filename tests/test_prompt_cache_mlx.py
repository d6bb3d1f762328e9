"""The prompt cache on MLX (a tiny random Llama in MLX format, in-process): a finished sequence's
cache comes back from RAM after another chat and from disk in a new backend, trimmed to the
shared prefix, with the greedy tokens of a fresh read; a file of another model is refused."""
from __future__ import annotations

import pytest

from mlx_factory import write_tiny_mlx_model
from runner_steps import run, text_of

pytest.importorskip("mlx_lm")
from laya_desktop.runners.mlx_backend import MlxBackend  # noqa: E402

SHARED = " ".join(f"The tool number {i} reads a file and returns its text." for i in range(12))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_tiny_mlx_model(tmp_path_factory.mktemp("tiny-mlx"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYA_PROMPT_CACHE_DIR", str(tmp_path / "prompt-cache"))
    return tmp_path / "prompt-cache"


def backend(model_dir, cache=(64, 64), name="m", parallel=1):
    spec = {"name": name, "path": str(model_dir), "n_ctx": 2048, "parallel": parallel}
    if cache:
        spec["prompt_cache"] = {"ram_mb": cache[0], "disk_mb": cache[1]}
    return MlxBackend(spec)


def complete(b, text, n=10):
    events = run(b, {"op": "generate", "kind": "completion", "prompt": text,
                     "params": {"temperature": 0, "max_tokens": n}})["r0"]
    assert events[-1]["event"] == "done", events[-3:]
    return text_of(events), events[-1]["usage"]


def fresh(model_dir, text):
    b = backend(model_dir, cache=None)
    try:
        return complete(b, text)[0]
    finally:
        b.close()


def test_a_saved_mlx_prompt_comes_back_from_ram_and_disk_with_the_fresh_tokens(model_dir,
                                                                               cache_dir):
    one, two, three = (SHARED + tail for tail in (" One?", " Two?", " Three?"))
    b = backend(model_dir)
    try:
        complete(b, one)
        complete(b, "Something else entirely. " * 12)   # the last-sequence cache holds this now
        text, usage = complete(b, two)
        assert usage["cached_from"] == "ram" and usage["cached_tokens"] >= 200
        assert text == fresh(model_dir, two)
        b._saved.store.flush()
        assert b.stats()["prompt_cache_disk_entries"] >= 1
    finally:
        b.close()
    b = backend(model_dir)
    try:
        text, usage = complete(b, three)
        assert usage["cached_from"] == "disk" and usage["cached_tokens"] >= 200
        assert text == fresh(model_dir, three)
    finally:
        b.close()


def test_a_saved_mlx_prompt_of_another_model_is_refused(model_dir, cache_dir, tmp_path):
    b = backend(model_dir)
    complete(b, SHARED + " One?")
    b.close()
    other = write_tiny_mlx_model(tmp_path / "other", seed=1)
    b = backend(other)
    try:
        assert b.stats()["prompt_cache_files_rejected"] >= 1
        _, usage = complete(b, SHARED + " Two?")
        assert usage["cached_tokens"] == 0
    finally:
        b.close()


def test_batched_mlx_sequences_save_and_restore_too(model_dir, cache_dir):
    b = backend(model_dir, parallel=2)
    try:
        assert b.info()["batching"]
        complete(b, SHARED + " One?")
    finally:
        b.close()
    b = backend(model_dir, parallel=2)
    try:
        text, usage = complete(b, SHARED + " Two?")
        assert usage["cached_from"] == "disk" and usage["cached_tokens"] >= 200
        plain = backend(model_dir, cache=None, parallel=2)
        try:
            assert text == complete(plain, SHARED + " Two?")[0]
        finally:
            plain.close()
    finally:
        b.close()
