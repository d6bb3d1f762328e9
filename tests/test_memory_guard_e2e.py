"""Telemetry, /metrics and the memory guard against a real engine and real runners."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine_harness import running_engine

# make test-slow: real runners squeezed for memory; the policy runs in-process in
# test_memory_policy and test_scheduler_policy
pytestmark = pytest.mark.slow

GIB = 1 << 30

SQUEEZER = r"""
import sys, time, psutil
reserve, target = int(sys.argv[1]), int(sys.argv[2])
crossed = None
chunks = []
while psutil.virtual_memory().available > target:
    chunks.append(b"\x01" * (32 << 20))   # written, so really resident
    if crossed is None and psutil.virtual_memory().available < reserve:
        crossed = time.time()              # the moment the guard's limit is crossed
print(crossed or time.time(), flush=True)
sys.stdin.read()                           # hold until the test closes stdin
"""


def settled_available(tolerance: int = 16 << 20, timeout: float = 10.0) -> int:
    """Available RAM once it stops moving (an earlier test's processes may still be exiting), so
    that limits computed from it mean what the test intends."""
    deadline = time.monotonic() + timeout
    last = psutil.virtual_memory().available
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = psutil.virtual_memory().available
        if abs(now - last) < tolerance:
            return now
        last = now
    return last


def two_models(gguf, **memory) -> dict:
    models = [{"name": n, "backend": "llama_cpp", "path": str(gguf), "n_ctx": 256, "parallel": 1,
               "idle_ttl_s": 0} for n in ("older", "newer")]
    models.append({"name": "pinned", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 256,
                   "parallel": 1, "keep_in_memory": True})
    return {"models": models, "routes": [{"name": "default", "target": "newer"}],
            "memory": {"sample_hz": 4, **memory}}


def _events(c, since=0):
    return c.get(f"/admin/events?since={since}").json()["events"]


def test_telemetry_samples_and_metrics(tiny_gguf, tmp_path):
    with running_engine(two_models(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/older/load").raise_for_status()
        c.post("/v1/chat/completions", json={"model": "older", "max_tokens": 4,
                                             "messages": [{"role": "user", "content": "hi"}]})
        deadline = time.monotonic() + 10
        while True:   # a sample taken after the request, with the runner's figures in it
            first = c.get("/admin/telemetry?since=0").json()
            older = first["samples"][-1]["models"]["older"] if first["samples"] else {}
            if first["seq"] >= 2 and older.get("state") == "ready" and older.get("rss") \
                    and (older.get("kv_used_tokens") or 0) > 0:
                break
            assert time.monotonic() < deadline, first["samples"][-1:]
            time.sleep(0.05)
        sample = first["samples"][-1]
        for key in ("seq", "t", "ram_total", "ram_used", "ram_available", "swap_total", "swap_used",
                    "swap_in_bps", "swap_out_bps", "cpu_pct", "gpus", "models"):
            assert key in sample, key
        older = sample["models"]["older"]
        assert older["state"] == "ready" and older["pid"] and older["rss"] > 0
        assert older["kv_capacity_tokens"] == 256 and older["kv_used_tokens"] > 0
        assert older["kv_bytes"] > 0
        assert sample["models"]["newer"]["state"] == "unloaded"
        later = c.get(f"/admin/telemetry?since={first['seq']}").json()
        assert all(s["seq"] > first["seq"] for s in later["samples"])
        families = {f.name: f for f in text_string_to_metric_families(c.get("/metrics").text)}
        assert "laya_ram_available_bytes" in families
        kv = {s.labels["model"]: s.value for s in families["laya_model_kv_used_tokens"].samples}
        assert kv["older"] > 0
        requests = families["laya_requests"].samples
        assert any(s.labels["model"] == "older" and s.labels["status"] == "200" for s in requests)


def test_admission_refuses_a_model_that_cannot_fit(tiny_gguf, tmp_path):
    available_gib = psutil.virtual_memory().available / GIB
    config = two_models(tiny_gguf, reserved_system_gb=round(available_gib + 4, 1))
    config["routes"] = [{"name": "default", "target": "older", "fallback": ["newer"]}]
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        r = c.post("/v1/chat/completions", json={"max_tokens": 2,
                                                 "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 503
        error = r.json()["error"]
        assert error["code"] == "load_refused"
        assert "needs" in error["message"] and "available" in error["message"]
        assert [a["model"] for a in error["attempts"]] == ["older", "newer"]
        refused = [e for e in _events(c) if e["kind"] == "load_refused"]
        assert {e["model"] for e in refused} == {"older", "newer"}
        assert not eng.runner_pids()


@pytest.mark.timeout(120)
def test_squeeze_unloads_least_recently_used_then_recovers(tiny_gguf, tmp_path):
    available = settled_available()
    reserve_gib = round((available - 1.5 * GIB) / GIB, 2)  # the squeeze only needs ~1.5 GiB
    config = two_models(tiny_gguf, reserved_system_gb=reserve_gib)
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        chat = {"max_tokens": 2, "messages": [{"role": "user", "content": "x"}]}
        for name in ("older", "pinned", "newer"):
            assert c.post("/v1/chat/completions", json={**chat, "model": name}).status_code == 200
            time.sleep(0.05)
        pids = {m["name"]: m["pid"] for m in c.get("/admin/models").json()["models"]}
        seq = c.get("/admin/events").json()["seq"]

        target = int(reserve_gib * GIB) - 256 * (1 << 20)
        squeezer = subprocess.Popen([sys.executable, "-c", SQUEEZER, str(int(reserve_gib * GIB)),
                                     str(target)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            squeezed_at = float(squeezer.stdout.readline())
            deadline = time.monotonic() + 10
            while not [e for e in _events(c, seq) if e["kind"] == "emergency_unload"]:
                assert time.monotonic() < deadline, "no emergency unload"
                time.sleep(0.05)
            first = [e for e in _events(c, seq) if e["kind"] == "emergency_unload"][0]
            assert first["model"] == "older"          # least recently used goes first
            assert first["freed_bytes"] > 0 and "reserve" in first["reason"]
            # Two sample periods (0.5 s at 4 Hz) to decide, plus up to 0.5 s for the runner's
            # exit, on an idle machine; a busy 2-core one with the squeezer running may take
            # longer, so the bound only says the guard reacted to this squeeze, not a later one.
            assert first["t"] - squeezed_at < 5
            assert not psutil.pid_exists(pids["older"]) or \
                psutil.Process(pids["older"]).status() == psutil.STATUS_ZOMBIE
            # the squeeze goes on: the next one goes too, the pinned one never
            deadline = time.monotonic() + 10
            while "newer" not in {e["model"] for e in _events(c, seq) if e["kind"] == "emergency_unload"}:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            r = c.post("/v1/chat/completions", json={**chat, "model": "older"}, timeout=30)
            assert r.status_code == 503 and r.json()["error"]["code"] == "load_refused"
        finally:
            squeezer.stdin.close()
            squeezer.wait(timeout=30)
        state = {m["name"]: m for m in c.get("/admin/models").json()["models"]}
        assert state["pinned"]["state"] == "ready" and state["pinned"]["pid"] == pids["pinned"]
        deadline = time.monotonic() + 15
        while True:  # once the pressure is gone the model loads again
            r = c.post("/v1/chat/completions", json={**chat, "model": "older"}, timeout=30)
            if r.status_code == 200:
                break
            assert time.monotonic() < deadline, r.text
            time.sleep(0.3)


def test_idle_ttl_unloads_and_pinned_stays(tiny_gguf, tmp_path):
    config = two_models(tiny_gguf)
    config["models"][0]["idle_ttl_s"] = 1
    config["models"][2]["idle_ttl_s"] = 1  # pinned: the TTL does not apply
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        for name in ("older", "pinned"):
            c.post(f"/admin/models/{name}/load").raise_for_status()
        deadline = time.monotonic() + 10
        while not (unloads := [e for e in _events(c) if e["kind"] == "idle_unload"]):
            assert time.monotonic() < deadline, "no idle unload"
            time.sleep(0.1)
        # the pinned model, idle as long, gets two more TTLs by the engine's own clock
        deadline = time.monotonic() + 10
        while c.get("/admin/telemetry").json()["samples"][-1]["t"] < unloads[0]["t"] + 2:
            assert time.monotonic() < deadline, "telemetry stopped"
            time.sleep(0.1)
        unloaded = {e["model"] for e in _events(c) if e["kind"] == "idle_unload"}
        assert unloaded == {"older"}
        state = {m["name"]: m["state"] for m in c.get("/admin/models").json()["models"]}
        assert state == {"older": "unloaded", "newer": "unloaded", "pinned": "ready"}


@pytest.mark.timeout(120)
def test_busy_model_unloaded_last_with_clean_503(tiny_gguf, tmp_path):
    available = settled_available()
    reserve_gib = round((available - 1.5 * GIB) / GIB, 2)
    config = {"models": [{"name": "busy", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 32768, "parallel": 2, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "busy"}],
              "memory": {"sample_hz": 4, "reserved_system_gb": reserve_gib}}
    long_chat = {"max_tokens": 30000, "messages": [{"role": "user", "content": "go"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        from concurrent.futures import ThreadPoolExecutor
        with c.stream("POST", "/v1/chat/completions", json={**long_chat, "stream": True}) as r, \
                ThreadPoolExecutor(1) as pool:
            lines = r.iter_lines()
            next(lines)
            plain = pool.submit(lambda: eng.client().post("/v1/chat/completions", json=long_chat))
            deadline = time.monotonic() + 10
            while c.get("/admin/models").json()["models"][0]["active"] != 2:
                assert time.monotonic() < deadline, "the second request never started"
                time.sleep(0.05)
            squeezer = subprocess.Popen([sys.executable, "-c", SQUEEZER, str(int(reserve_gib * GIB)),
                                         str(int(reserve_gib * GIB) - 256 * (1 << 20))],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                squeezer.stdout.readline()
                started = time.monotonic()
                rest = list(lines)
                assert time.monotonic() - started < 5
                errors = [line for line in rest if line.startswith('data: {"error"')]
                assert errors and '"model_unloaded"' in errors[0]
                answer = plain.result(timeout=10)
                assert answer.status_code == 503 and answer.headers["retry-after"]
                assert answer.json()["error"]["code"] == "model_unloaded"
            finally:
                squeezer.stdin.close()
                squeezer.wait(timeout=30)
        kinds = [(e["kind"], e.get("busy")) for e in _events(c) if e["kind"] == "emergency_unload"]
        assert kinds[0] == ("emergency_unload", True)


@pytest.mark.slow
def test_estimate_matches_runner_memory_on_gemma(gemma_path, tmp_path):
    from laya_desktop.runners.memory_estimate import estimate_memory
    from laya_desktop.runners.gguf_info import read_gguf_info
    n_ctx, parallel = 2048, 4
    config = {"models": [{"name": "gemma", "backend": "llama_cpp", "path": str(gemma_path),
                          "n_ctx": n_ctx, "parallel": parallel, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "gemma"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        c.post("/v1/completions", json={"prompt": "Warm-up: the sky is", "max_tokens": 8})
        time.sleep(0.6)
        rss = c.get("/admin/telemetry").json()["samples"][-1]["models"]["gemma"]["rss"]
    estimate = estimate_memory(read_gguf_info(gemma_path), n_ctx, parallel, "f16").total_bytes
    assert abs(estimate - rss) / rss < 0.25, (estimate, rss)


@pytest.mark.slow
def test_admission_unloads_idle_lru_model_to_make_room(gemma_path, tmp_path):
    from laya_desktop.config.validate import validate_config
    from laya_desktop.runners.memory_estimate import estimate_model_bytes
    model = {"backend": "llama_cpp", "path": str(gemma_path), "n_ctx": 1024, "parallel": 1,
             "idle_ttl_s": 0}
    config = {"models": [{"name": "first", **model}, {"name": "second", **model}],
              "routes": [{"name": "default", "target": "first"}]}
    parsed, errors = validate_config(config)
    assert not errors
    need, _ = estimate_model_bytes(parsed.models[0])
    # room for one model and a half: the second fits only once the first is gone
    config["memory"] = {"reserved_system_gb": round((settled_available() - 1.5 * need) / GIB, 3)}
    chat = {"max_tokens": 2, "messages": [{"role": "user", "content": "x"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        assert c.post("/v1/chat/completions", json={**chat, "model": "first"}).status_code == 200
        first_pid = c.get("/admin/models").json()["models"][0]["pid"]
        seq = c.get("/admin/events").json()["seq"]
        r = c.post("/v1/chat/completions", json={**chat, "model": "second"})
        assert r.status_code == 200, r.text
        events = [(e["kind"], e.get("model")) for e in _events(c, seq)]
        assert ("model_unloaded", "first") in events, (events, config["memory"], need)
        assert events.index(("model_unloaded", "first")) < events.index(("model_loaded", "second"))
        unloaded = [e for e in _events(c, seq) if e["kind"] == "model_unloaded"][0]
        assert unloaded["reason"] == "making room for second"
        assert unloaded["guard_action"] == "evict"
        guard = [s for f in text_string_to_metric_families(c.get("/metrics").text)
                 for s in f.samples if s.name == "laya_guard_actions_total"]
        assert [(s.labels, s.value) for s in guard] == [({"action": "evict", "model": "first"}, 1)]
        assert first_pid not in eng.runner_pids()
        state = {m["name"]: m["state"] for m in c.get("/admin/models").json()["models"]}
        assert state == {"first": "unloaded", "second": "ready"}
