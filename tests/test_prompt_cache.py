"""The prompt cache in real llama.cpp runner processes on tiny GGUFs: a restored state gives the
greedy tokens of a fresh read; it survives another request taking the slot and a new runner
process; a state of another model or settings, or a damaged file, is never loaded; a disk that
cannot be written stops the writing, not the serving."""
from __future__ import annotations

import pytest

from gguf_factory import write_tiny_gguf
from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend
from laya_desktop.runners.prompt_cache_file import SUFFIX, read_header, read_payload
from runner_steps import run
from test_runner_llama import Runner

SHARED = " ".join(f"tool{i}(path) reads the file at path and returns its text." for i in range(14))
EOT = 256 + 20   # <|endoftext|> of the tiny vocabulary: banned, so no answer ends early


def params(n=12):
    return {"max_tokens": n, "temperature": 0, "logit_bias": {str(EOT): -100}}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "prompt-cache"
    monkeypatch.setenv("LAYA_PROMPT_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def start():
    runners = []

    def _start(path, cache=(64, 64), **spec):
        spec = {"name": "t", "path": str(path), "n_ctx": 2048, "parallel": 1, "n_threads": 1,
                **spec}
        if cache is not None:
            spec["prompt_cache"] = {"ram_mb": cache[0], "disk_mb": cache[1]}
        runner = Runner(spec)
        runners.append(runner)
        runner.ready()
        return runner
    yield _start
    for runner in runners:
        runner.close()


def ask(runner, req_id, prompt, n=12):
    runner.generate(req_id, params(n), kind="completion", prompt=prompt)
    texts, final, _ = runner.collect([req_id], timeout=60)
    assert final[req_id]["event"] == "done", final[req_id]
    return texts[req_id], final[req_id]["usage"]


def flushed_stats(runner):
    """Stats once the runner's writer has written what it saved (a few ms on tmpfs)."""
    import time
    for _ in range(200):
        stats = runner.stats()
        if stats["prompt_cache_saves"] == 0 or stats["prompt_cache_disk_entries"] \
                or stats["prompt_cache_write_errors"] or stats["prompt_cache_disk_bytes"]:
            return stats
        time.sleep(0.02)
    return stats


def key_of(path):
    """The key a cache file says it was written with (to check the rest of it)."""
    import json
    import struct
    data = path.read_bytes()
    (n,) = struct.unpack("<I", data[8:12])
    return json.loads(data[12:12 + n])["key"]


def files(folder):
    return sorted(folder.rglob(f"*{SUFFIX}"))


def test_a_restored_prefix_gives_the_greedy_tokens_of_a_fresh_read(start, tiny_gguf, cache_dir):
    p1, p2, p3 = (SHARED + tail for tail in (" Now list the files.", " Then read a.txt.",
                                             " Finally count words."))
    plain = start(tiny_gguf, cache=None)
    expect = {p: ask(plain, f"f{i}", p)[0] for i, p in enumerate((p2, p3))}

    r = start(tiny_gguf)
    ask(r, "a", p1)
    ask(r, "other", "An unrelated chat takes the only slot. " * 20)
    text, usage = ask(r, "b", p2)   # the slot no longer holds SHARED: it comes from RAM
    assert usage["cached_from"] == "ram" and usage["cached_tokens"] >= 300
    assert text == expect[p2]
    stats = flushed_stats(r)
    assert stats["prompt_cache_hits_ram"] == 1
    assert stats["prompt_cache_tokens_restored"] == usage["cached_tokens"]
    assert r.close() == 0

    again = start(tiny_gguf)        # a new process: from disk
    assert again.stats()["prompt_cache_disk_entries"] >= 1
    text, usage = ask(again, "c", p3)
    assert usage["cached_from"] == "disk" and usage["cached_tokens"] >= 300
    assert text == expect[p3]
    text, usage = ask(again, "d", p3)   # the same prompt again: its slot serves it
    assert usage["cached_from"] == "slot" and text == expect[p3]


@pytest.mark.parametrize("change", ["model", "n_ctx", "kv_cache_type"])
def test_a_state_of_another_model_n_ctx_or_kv_type_is_refused(start, tiny_gguf, cache_dir,
                                                               tmp_path, change):
    prompt = SHARED + " Go."
    if change == "kv_cache_type":   # a q8_0 cache needs heads of 32 and more
        tiny_gguf = write_tiny_gguf(tmp_path / "wide.gguf", n_embd=128)
    first = start(tiny_gguf)
    ask(first, "a", prompt)
    assert flushed_stats(first)["prompt_cache_disk_entries"] == 1
    first.close()
    written = files(cache_dir)
    assert len(written) == 1
    other = {"model": {"path": write_tiny_gguf(tmp_path / "other.gguf", seed=1)},
             "n_ctx": {"n_ctx": 1024}, "kv_cache_type": {"kv_cache_type": "q8_0"}}[change]
    spec = {"path": tiny_gguf, **other}
    r = start(spec.pop("path"), **spec)
    stats = r.stats()
    assert stats["prompt_cache_files_rejected"] == 1 and stats["prompt_cache_disk_entries"] == 0
    assert not written[0].exists()
    _, usage = ask(r, "b", prompt)
    assert usage["cached_tokens"] == 0 and "cached_from" not in usage
    assert b"written for another model" in b"".join(r.stderr)


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_file_is_ignored_removed_and_the_prompt_read(start, tiny_gguf, cache_dir,
                                                               damage):
    prompt = SHARED + " Go."
    first = start(tiny_gguf)
    expect, _ = ask(first, "a", prompt + " More.")
    flushed_stats(first)
    first.close()
    (path,) = files(cache_dir)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-5] ^= 0xFF          # passes the header checks; fails the payload's checksum
    else:
        data = data[:len(data) // 2]
    path.write_bytes(bytes(data))
    r = start(tiny_gguf)
    text, usage = ask(r, "b", prompt + " More.")
    assert usage["cached_tokens"] == 0 and text == expect
    stats = flushed_stats(r)
    assert stats["prompt_cache_files_rejected"] == 1 and r.proc.poll() is None
    # the damaged file is gone; what is there now is the prompt saved again, whole
    for entry in files(cache_dir):
        read_payload(read_header(entry, key_of(entry)))


def test_budgets_hold_in_a_runner(start, tiny_gguf, cache_dir):
    r = start(tiny_gguf, cache=(1, 1))   # 1 MiB each; one entry here is ~200 KiB
    for i in range(9):
        ask(r, f"r{i}", f"Session {i}: " + SHARED[::-1] + f" {i}" * 300, n=2)
    stats = flushed_stats(r)
    assert stats["prompt_cache_ram_bytes"] <= 1 << 20 and stats["prompt_cache_evictions_ram"] > 0
    assert stats["prompt_cache_disk_bytes"] <= 1 << 20 and stats["prompt_cache_evictions_disk"] > 0
    assert sum(p.stat().st_size for p in files(cache_dir)) <= 1 << 20


def test_a_disk_that_cannot_be_written_stops_writing_not_serving(start, tiny_gguf, tmp_path,
                                                                 monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("LAYA_PROMPT_CACHE_DIR", str(blocker / "prompt-cache"))
    r = start(tiny_gguf)
    ask(r, "a", SHARED + " One.")
    ask(r, "other", "An unrelated chat takes the only slot. " * 20)
    _, usage = ask(r, "b", SHARED + " Two.")
    assert usage["cached_from"] == "ram"
    stats = r.stats()
    assert stats["prompt_cache_write_errors"] == 1 and stats["prompt_cache_disk_entries"] == 0
    assert b"serving goes on" in b"".join(r.stderr)


def test_no_budget_no_cache(start, tiny_gguf, cache_dir):
    r = start(tiny_gguf, cache=(0, 0))
    ask(r, "a", SHARED)
    assert "prompt_cache_saves" not in r.stats() and not cache_dir.exists()


# --- sliding-window layers (a tiny Gemma 3), in-process -----------------------------------------

def test_sliding_window_states_restore_only_where_their_window_is(tmp_path, cache_dir):
    gemma = write_tiny_gguf(tmp_path / "g.gguf", n_layer=6, sliding_window=32)
    spec = {"name": "g", "path": str(gemma), "n_ctx": 2048, "parallel": 1, "n_threads": 1}

    def complete(backend, prompt):
        events = run(backend, {"id": "x", "kind": "completion", "prompt": prompt,
                               "params": params()})["x"]
        return "".join(e["text"] for e in events if e["event"] == "token"), events[-1]["usage"]

    def fresh(prompt):
        b = LlamaCppBackend(spec)
        try:
            return complete(b, prompt)[0]
        finally:
            b.close()

    cached = {**spec, "prompt_cache": {"ram_mb": 64, "disk_mb": 64}}
    b = LlamaCppBackend(cached)
    first = b.tokenize(SHARED, False)
    complete(b, first)
    b.close()                                       # its state is on disk now
    b = LlamaCppBackend(cached)
    try:
        turn = first + b.tokenize(" and the next turn", False)
        text, usage = complete(b, turn)             # the whole saved prompt, window included
        assert usage["cached_from"] == "disk" and usage["cached_tokens"] == len(first)
        assert text == fresh(turn)
        fork = first[:len(first) // 2] + b.tokenize(" forks early", False)
        b2 = LlamaCppBackend(cached)
        try:
            text, usage = complete(b2, fork)        # the window before the fork is not saved
            assert usage["cached_tokens"] == 0 and text == fresh(fork)
        finally:
            b2.close()
    finally:
        b.close()


def test_a_quantized_kv_cache_restores_too(tmp_path, cache_dir):
    """q8_0 keys and values (with flash attention, which lays V out untransposed) come back
    from disk and give the fresh read's tokens."""
    wide = write_tiny_gguf(tmp_path / "wide.gguf", n_embd=128)
    spec = {"name": "q", "path": str(wide), "n_ctx": 2048, "parallel": 2, "n_threads": 1,
            "kv_cache_type": "q8_0"}

    def complete(backend, prompt):
        events = run(backend, {"id": "x", "kind": "completion", "prompt": prompt,
                               "params": params()})["x"]
        return "".join(e["text"] for e in events if e["event"] == "token"), events[-1]["usage"]

    plain = LlamaCppBackend(spec)
    try:
        expect = complete(plain, SHARED + " second")[0]
    finally:
        plain.close()
    cached = {**spec, "prompt_cache": {"ram_mb": 0, "disk_mb": 64}}
    b = LlamaCppBackend(cached)
    complete(b, SHARED + " first")
    b.close()
    b = LlamaCppBackend(cached)
    try:
        text, usage = complete(b, SHARED + " second")
        assert usage["cached_from"] == "disk" and usage["cached_tokens"] >= 300
        assert text == expect
    finally:
        b.close()


def test_a_restore_beside_a_running_sequence_changes_neither(start, tiny_gguf, cache_dir):
    p1, p2 = SHARED + " One.", SHARED + " Two."
    z = "Write a long story about a lighthouse keeper."
    plain = start(tiny_gguf, cache=None, parallel=2, cpu_repack=False)
    expect_p2, expect_z = ask(plain, "p2", p2)[0], ask(plain, "z", z, n=200)[0]
    r = start(tiny_gguf, parallel=2, cpu_repack=False)
    ask(r, "p1", p1)                      # slot A
    ask(r, "x", "Hello there.")           # slot B
    ask(r, "y", "Something else.")        # slot A again: no slot holds SHARED now
    r.generate("z", params(200), kind="completion", prompt=z)
    r.generate("p2", params(), kind="completion", prompt=p2)
    texts, final, _ = r.collect(["z", "p2"], timeout=60)
    assert final["p2"]["usage"]["cached_from"] == "ram"
    assert texts["p2"] == expect_p2 and texts["z"] == expect_z
