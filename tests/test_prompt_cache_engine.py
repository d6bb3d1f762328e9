"""The prompt cache through a real engine: a prompt read once is restored after the model was
unloaded and after the engine restarted (a second engine on the same cache folder); the request
log says where the cached tokens came from and /metrics counts them."""
from __future__ import annotations

import time

from engine_harness import running_engine
from test_prompt_cache import EOT, SHARED


def config(gguf):
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 2048,
                        "parallel": 1, "idle_ttl_s": 0, "n_threads": 1,
                        "prompt_cache": {"ram_mb": 64, "disk_mb": 64}}],
            "routes": [{"name": "default", "target": "tiny"}]}


def complete(c, prompt) -> dict:
    body = {"model": "tiny", "prompt": prompt, "max_tokens": 8, "temperature": 0,
            "logit_bias": {str(EOT): -100}}
    r = c.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def last_request(c) -> dict:
    for _ in range(100):   # the log entry is written as the response ends
        entries = c.get("/admin/requests").json()["requests"]
        if entries and entries[-1].get("cached_tokens") is not None:
            return entries[-1]
        time.sleep(0.02)
    raise AssertionError("no request log entry")


def written(folder) -> bool:
    return any(folder.rglob("*.lpkv"))


def test_the_cache_outlives_an_unload_and_an_engine_restart(tiny_gguf, tmp_path):
    folder = tmp_path / "prompt-cache"
    env = {"LAYA_PROMPT_CACHE_DIR": str(folder)}
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    with running_engine(config(tiny_gguf), tmp_path / "one", env) as engine, engine.client() as c:
        first = complete(c, SHARED + " One.")
        assert last_request(c)["cached_from"] is None
        deadline = time.monotonic() + 10
        while not written(folder) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.post("/admin/models/tiny/unload").json()["unloaded"] is True
        complete(c, SHARED + " Two.")
        entry = last_request(c)
        assert entry["cached_from"] == "disk" and entry["cached_tokens"] >= 300
        metrics = c.get("/metrics").text
        assert 'laya_prompt_cache_hits_total{model="tiny",source="disk"} 1.0' in metrics
        assert first["choices"][0]["text"]
    with running_engine(config(tiny_gguf), tmp_path / "two", env) as engine, engine.client() as c:
        complete(c, SHARED + " Three.")
        entry = last_request(c)
        assert entry["cached_from"] == "disk" and entry["cached_tokens"] >= 300
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:   # the runner's stats reach /metrics with a sample
            metrics = c.get("/metrics").text
            if 'laya_prompt_cache_bytes{model="tiny",tier="disk"}' in metrics:
                break
            time.sleep(0.1)
        assert 'laya_prompt_cache_bytes{model="tiny",tier="ram"}' in metrics
        assert 'laya_prompt_cache_bytes{model="tiny",tier="disk"}' in metrics


def cache_entry(c) -> dict:
    (entry,) = [m for m in c.get("/admin/models").json()["models"] if m["name"] == "tiny"]
    return entry["prompt_cache"]


def wait_for(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_the_user_sees_and_clears_a_models_cache(tiny_gguf, tmp_path):
    """/admin/models shows the cache's bytes (the runner's figures while loaded, the folder's
    when not); DELETE /admin/models/NAME/prompt-cache empties both tiers, loaded or not."""
    folder = tmp_path / "prompt-cache"
    cfg = config(tiny_gguf)
    cfg["models"].append({"name": "far", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"})
    with running_engine(cfg, tmp_path, {"LAYA_PROMPT_CACHE_DIR": str(folder)}) as engine, \
            engine.client() as c:
        complete(c, SHARED + " One.")
        wait_for(lambda: written(folder))
        # the runner's own figures arrive with the next telemetry sample
        loaded = wait_for(lambda: (e := cache_entry(c))["ram_bytes"] > 0 and e["disk_bytes"] > 0 and e)
        assert loaded["entries"] >= 2   # one state, in RAM and on disk

        cleared = c.delete("/admin/models/tiny/prompt-cache").json()
        assert cleared["runner_cleared"] is True and cleared["disk_bytes_freed"] > 0
        assert not written(folder)
        wait_for(lambda: cache_entry(c) == {"ram_bytes": 0, "disk_bytes": 0, "entries": 0})
        complete(c, SHARED + " Two.")
        # nothing saved is left to restore; the slot still holds its own last prompt
        assert last_request(c)["cached_from"] in (None, "slot")

        wait_for(lambda: written(folder))
        assert c.post("/admin/models/tiny/unload").json()["unloaded"] is True
        unloaded = cache_entry(c)
        assert unloaded["ram_bytes"] == 0 and unloaded["disk_bytes"] > 0   # read from the folder
        cleared = c.delete("/admin/models/tiny/prompt-cache").json()
        assert cleared == {"model": "tiny", "disk_bytes_freed": unloaded["disk_bytes"],
                           "runner_cleared": False}
        assert cache_entry(c)["disk_bytes"] == 0 and not written(folder)

        remote = c.delete("/admin/models/far/prompt-cache")
        assert remote.status_code == 400 and "remote" in remote.json()["error"]["message"]
        assert c.delete("/admin/models/nope/prompt-cache").status_code == 404
        assert [m["prompt_cache"] for m in c.get("/admin/models").json()["models"]
                if m["name"] == "far"] == [None]
