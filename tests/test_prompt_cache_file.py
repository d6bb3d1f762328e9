"""The prompt cache's file format and its RAM and disk tiers, without llama.cpp: bytes in, bytes out."""
from __future__ import annotations

import os

import numpy as np
import pytest

from laya_desktop.runners import prompt_cache as PC
from laya_desktop.runners.prompt_cache import PromptCache
from laya_desktop.runners.prompt_cache_file import (SUFFIX, CacheFileError, read_header,
                                                    read_payload, write_entry)

KEY = {"model_hash": "ab", "model_bytes": 10, "n_ctx": 2048, "kv_cache_type": "f16"}


def _tokens(n, start=0):
    return np.arange(start, start + n, dtype=np.int32)


def test_an_entry_reads_back_as_written(tmp_path):
    payload = bytearray(os.urandom(5000))
    size = write_entry(tmp_path / f"e{SUFFIX}", KEY, _tokens(300), 7, payload)
    entry = read_header(tmp_path / f"e{SUFFIX}", KEY)
    assert entry.file_bytes == size and entry.pos_min == 7
    assert entry.tokens.tolist() == list(range(300))
    assert read_payload(entry) == payload
    assert [p.name for p in tmp_path.iterdir()] == [f"e{SUFFIX}"]   # no temporary file left


@pytest.mark.parametrize("damage, reason", [
    ("truncate", "truncated"), ("flip_payload", "payload checksum"), ("flip_header", "header"),
    ("garbage", "bad magic"), ("empty", "bad magic"), ("foreign_key", "another model"),
])
def test_a_damaged_or_foreign_file_fails_its_own_load(tmp_path, damage, reason):
    path = tmp_path / f"e{SUFFIX}"
    write_entry(path, KEY, _tokens(300), 0, bytearray(os.urandom(5000)))
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:-100]
    elif damage == "flip_payload":
        data[-10] ^= 0xFF
    elif damage == "flip_header":
        data[20] ^= 0x01
    elif damage == "garbage":
        data = bytearray(b"GGUF" + os.urandom(200))
    elif damage == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))
    key = {**KEY, "n_ctx": 1024} if damage == "foreign_key" else KEY
    with pytest.raises(CacheFileError, match=reason):
        read_payload(read_header(path, key))


def test_foreign_key_names_what_differs(tmp_path):
    path = tmp_path / f"e{SUFFIX}"
    write_entry(path, KEY, _tokens(10), 0, bytearray(b"x"))
    with pytest.raises(CacheFileError) as err:
        read_header(path, {**KEY, "kv_cache_type": "q8_0"})
    assert "kv_cache_type 'f16' (here 'q8_0')" in str(err.value)


def _cache(folder, ram=1 << 20, disk=1 << 20, n_swa=0):
    return PromptCache(KEY, folder, ram, disk, n_swa)


def test_lookup_takes_the_longest_shared_prefix_and_leaves_one_token(tmp_path):
    c = _cache(tmp_path / "pc", disk=0)
    a, b = _tokens(600), np.concatenate([_tokens(400), _tokens(300, 5000)])
    c.put(a.tolist(), 0, bytearray(b"A" * 100), 0.0)
    c.put(b.tolist(), 0, bytearray(b"B" * 100), 0.0)
    prompt = np.concatenate([_tokens(500), _tokens(50, 9000)]).tolist()
    match = c.lookup(prompt, have=0)
    assert match.n_tokens == 500 and match.source == "ram"
    assert c.take(match)[0] == bytearray(b"A" * 100)
    assert c.lookup(a.tolist(), have=0).n_tokens == 599          # the last token gives logits
    assert c.lookup(prompt, have=400) is None                     # the slot's 400 are enough
    assert c.lookup(_tokens(50, 7000).tolist(), have=0) is None   # shares nothing


def test_a_longer_prompt_replaces_the_entry_it_extends(tmp_path):
    c = _cache(tmp_path / "pc", disk=0)
    c.put(_tokens(300).tolist(), 0, bytearray(100), 0.0)
    assert not c.wants(_tokens(300).tolist()) and not c.wants(_tokens(280).tolist())
    c.put(_tokens(500).tolist(), 0, bytearray(100), 0.0)
    assert c.stats()["prompt_cache_ram_entries"] == 1
    # with sliding-window layers a longer state no longer holds the window of the shorter one
    s = _cache(tmp_path / "swa", disk=0, n_swa=64)
    s.put(_tokens(300).tolist(), 236, bytearray(100), 0.0)
    s.put(_tokens(500).tolist(), 436, bytearray(100), 0.0)
    assert s.stats()["prompt_cache_ram_entries"] == 2
    fork = _tokens(280).tolist() + [9999] * 40
    assert s.lookup(fork, 0) is None                       # the window before 280 is gone from both
    assert s.lookup(_tokens(320).tolist(), 0).n_tokens == 300   # the shorter one's own end


def test_a_prompt_that_adds_little_to_an_entry_is_not_saved_again(tmp_path):
    c = _cache(tmp_path / "pc", disk=0)
    c.put(_tokens(600).tolist(), 0, bytearray(100), 0.0)
    assert not c.wants(_tokens(580).tolist() + _tokens(100, 9000).tolist())   # a new session
    assert c.wants(_tokens(580).tolist() + _tokens(200, 9000).tolist())


def test_ram_budget_holds_and_evicts_least_recently_used(tmp_path):
    c = _cache(tmp_path / "pc", ram=1000, disk=0)
    for i in range(5):
        c.put(_tokens(300, i * 1000).tolist(), 0, bytearray(300), 0.0)
        assert c.ram_bytes() <= 1000
    stats = c.stats()
    assert stats["prompt_cache_ram_entries"] == 3 and stats["prompt_cache_evictions_ram"] == 2
    assert c.lookup(_tokens(300, 4000).tolist() + [1], 0) is not None
    assert c.lookup(_tokens(300, 0).tolist() + [1], 0) is None


def test_disk_budget_holds_and_a_new_cache_finds_the_files(tmp_path):
    folder = tmp_path / "pc"
    c = _cache(folder, ram=0, disk=20_000)
    for i in range(6):
        c.put(_tokens(300, i * 1000).tolist(), 0, bytearray(os.urandom(5000)), 0.0)
        c.flush()
        assert sum(p.stat().st_size for p in folder.iterdir()) <= 20_000
    assert c.stats()["prompt_cache_evictions_disk"] >= 3
    c.close()
    again = _cache(folder, ram=0, disk=20_000)
    newest = _tokens(300, 5000).tolist() + [1]
    match = again.lookup(newest, 0)
    assert match.source == "disk" and len(again.take(match)[0]) == 5000
    assert again.lookup(_tokens(300, 0).tolist() + [1], 0) is None   # evicted first
    again.close()


def test_damaged_files_are_removed_at_scan_and_at_load(tmp_path):
    folder = tmp_path / "pc"
    c = _cache(folder, ram=0)
    for i in range(3):
        c.put(_tokens(300, i * 1000).tolist(), 0, bytearray(os.urandom(5000)), 0.0)
    c.flush()
    c.close()
    files = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime)
    with open(files[0], "r+b") as f:          # truncated: found when the folder is listed
        f.truncate(files[0].stat().st_size - 1)
    data = bytearray(files[1].read_bytes())   # payload flipped: found when it is loaded
    data[-1] ^= 0xFF
    files[1].write_bytes(bytes(data))
    (folder / f"junk{SUFFIX}").write_bytes(b"not a cache file")
    again = _cache(folder, ram=0)
    assert again.stats()["prompt_cache_files_rejected"] == 2
    assert not files[0].exists() and not (folder / f"junk{SUFFIX}").exists()
    tokens = read_header(files[1], KEY).tokens.tolist() + [1]
    match = again.lookup(tokens, 0)
    assert match is not None and again.take(match) is None
    assert not files[1].exists() and again.stats()["prompt_cache_files_rejected"] == 3
    again.close()


def test_a_write_cut_short_leaves_a_temporary_file_the_next_scan_removes(tmp_path):
    folder = tmp_path / "pc"
    folder.mkdir()
    old, fresh = folder / ".abc.lpkv.123.tmp", folder / ".def.lpkv.456.tmp"
    old.write_bytes(b"half a file")
    fresh.write_bytes(b"being written by a runner now")
    os.utime(old, (0, 0))
    _cache(folder).close()
    assert not old.exists() and fresh.exists()


def test_a_disk_that_fails_writes_pauses_writing_not_the_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder cannot be made under a file")
    c = _cache(blocker / "pc")
    c.put(_tokens(300).tolist(), 0, bytearray(1000), 0.0)
    c.flush()
    assert c.stats()["prompt_cache_write_errors"] == 1
    c.put(_tokens(300, 1000).tolist(), 0, bytearray(1000), 0.0)   # paused: not even tried
    c.flush()
    assert c.stats()["prompt_cache_write_errors"] == 1
    assert c.lookup(_tokens(300).tolist() + [1], 0).source == "ram"   # RAM still serves
    c.close()
    z = _cache(tmp_path / "zero", disk=0)
    z.put(_tokens(300).tolist(), 0, bytearray(1000), 0.0)
    z.close()
    assert not (tmp_path / "zero").exists()


def test_short_prompts_are_not_saved():
    c = PromptCache(KEY, None, 1 << 20, 0)
    assert not c.wants(_tokens(PC.MIN_PROMPT_TOKENS - 1).tolist())
    assert c.wants(_tokens(PC.MIN_PROMPT_TOKENS).tolist())


# --- models.yaml -----------------------------------------------------------------------------------

def _config(**prompt_cache_entry):
    from laya_desktop.config.validate import validate_config
    model = {"name": "m", "backend": "llama_cpp", "path": "builtin:smollm2-135m-instruct",
             **prompt_cache_entry}
    return validate_config({"models": [model], "routes": [{"name": "r", "target": "m"}]})


def test_prompt_cache_defaults_and_partial_budgets_reach_the_runner_spec():
    from laya_desktop.engine.runner_handle import runner_spec
    config, errors = _config()
    assert not errors
    assert runner_spec(config.models[0], "x.gguf")["prompt_cache"] == {"ram_mb": 1024,
                                                                       "disk_mb": 4096}
    config, errors = _config(prompt_cache={"disk_mb": 0})
    assert not errors and config.models[0].prompt_cache.ram_mb == 1024
    assert config.models[0].prompt_cache.disk_mb == 0
    config, errors = _config(backend="mlx", path="/models/qwen-mlx", prompt_cache={"ram_mb": 0})
    assert not errors and config.models[0].prompt_cache.ram_mb == 0


@pytest.mark.parametrize("entry, path, message", [
    ({"prompt_cache": {"ram_mb": -1}}, "models[0].prompt_cache.ram_mb", "must be between 0"),
    ({"prompt_cache": {"ram_mb": "1G"}}, "models[0].prompt_cache.ram_mb", "expected an integer"),
    ({"prompt_cache": {"disk": 5}}, "models[0].prompt_cache.disk", "unknown key 'disk' (valid: ram_mb, disk_mb)"),
    ({"prompt_cache": None}, "models[0].prompt_cache", "expected a mapping"),
    ({"prompt_cache": 1024}, "models[0].prompt_cache", "expected a mapping"),
    ({"backend": "openai", "base_url": "https://x/v1", "prompt_cache": {}},
     "models[0].prompt_cache", "'prompt_cache' does not apply to backend 'openai'"),
])
def test_bad_prompt_cache_entries_are_refused_with_their_path(entry, path, message):
    config, errors = _config(**entry)
    assert config is None
    assert any(e.path == path and message in e.message for e in errors), errors


# --- /metrics ----------------------------------------------------------------------------------

def test_metrics_count_hits_by_source_and_show_each_tier():
    from laya_desktop.telemetry.model_sample import ModelSample, ModelState
    from laya_desktop.telemetry.prometheus import EngineMetrics
    stats = {"prompt_cache_ram_bytes": 100, "prompt_cache_disk_bytes": 300,
             "prompt_cache_ram_entries": 1, "prompt_cache_disk_entries": 2,
             "prompt_cache_evictions_ram": 4, "prompt_cache_evictions_disk": 0,
             "prompt_cache_write_errors": 1}
    metrics = EngineMetrics(lambda: (None, {"m": ModelSample(ModelState.READY, prompt_cache=stats),
                                            "plain": ModelSample(ModelState.READY)}))
    for source, cached in (("disk", 900), ("ram", 500), ("slot", 40), (None, 0)):
        metrics.observe_request({"api": "chat", "model": "m", "status": 200, "prompt_tokens": 1000,
                                 "cached_tokens": cached, "cached_from": source})
    text = metrics.render().decode()
    for line in ('laya_prompt_cache_hits_total{model="m",source="disk"} 1.0',
                 'laya_prompt_cache_restored_tokens_total{model="m",source="ram"} 500.0',
                 'laya_prompt_cache_restored_tokens_total{model="m",source="slot"} 40.0',
                 'laya_prompt_cache_bytes{model="m",tier="disk"} 300.0',
                 'laya_prompt_cache_entries{model="m",tier="ram"} 1.0',
                 'laya_prompt_cache_evictions_total{model="m",tier="ram"} 4.0',
                 'laya_prompt_cache_write_errors_total{model="m"} 1.0'):
        assert line in text, line
    assert 'model="plain",tier' not in text


def test_a_file_the_new_entry_extends_goes_only_once_the_new_one_is_written(tmp_path):
    folder = tmp_path / "pc"
    c = _cache(folder, ram=0)
    c.put(_tokens(300).tolist(), 0, bytearray(1000), 0.0)
    c.flush()
    (first,) = folder.iterdir()
    c._paused_until = float("inf")          # as after a failed write
    c.put(_tokens(600).tolist(), 0, bytearray(1000), 0.0)
    c.flush()
    assert first.exists()                   # the new one never reached the disk: keep the old
    c._paused_until = 0.0
    c.put(_tokens(900).tolist(), 0, bytearray(1000), 0.0)
    c.flush()
    assert [read_header(p, KEY).tokens.size for p in folder.iterdir()] == [900]
    c.close()
