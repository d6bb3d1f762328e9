"""Promises of the engine that had no test of their own, each against a real engine and runner:
the fallback after a failed load, the ram_high_pct trigger and `guard: false`, a non-streamed
request whose client leaves, quantized KV caches, and docs/demo-models.yaml passing `laya check`."""
from __future__ import annotations

import copy
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from engine_harness import running_engine

ROOT = Path(__file__).resolve().parents[1]
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def tiny(name: str, gguf, **extra) -> dict:
    return {"name": name, "backend": "llama_cpp", "path": str(gguf), "n_ctx": 256, "parallel": 1,
            "idle_ttl_s": 0, **extra}


def events(c, since: int = 0, kind: str | None = None) -> list[dict]:
    found = c.get(f"/admin/events?since={since}").json()["events"]
    return [e for e in found if kind is None or e["kind"] == kind]


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return result


def put_memory(c, **memory) -> None:
    config = copy.deepcopy(c.get("/admin/config").json())
    config.setdefault("memory", {}).update(memory)
    r = c.put("/admin/config", json=config)
    assert r.status_code == 200, r.text


def test_fallback_after_a_failed_load(tiny_gguf, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 56)   # a header, no model
    config = {"models": [tiny("broken", broken), tiny("tiny", tiny_gguf)],
              "routes": [{"name": "default", "target": "broken", "fallback": ["tiny"]}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        r = c.post("/v1/chat/completions", json=CHAT)
        assert r.status_code == 200, r.text
        assert r.headers["x-laya-model"] == "tiny" and r.headers["x-laya-fallback-from"] == "broken"
        assert r.json()["usage"]["completion_tokens"] == 4
        failed = events(c, kind="load_failed")
        assert [e["model"] for e in failed] == ["broken"] and failed[0]["reason"]
        direct = c.post("/v1/chat/completions", json={**CHAT, "model": "broken"})  # no fallback
        assert direct.status_code == 503 and direct.headers["retry-after"], direct.text
        state = {m["name"]: m["state"] for m in c.get("/admin/models").json()["models"]}
        assert state["tiny"] == "ready" and state["broken"] != "ready"


def test_ram_high_pct_unloads_and_guard_false_does_not(tiny_gguf, tmp_path):
    config = {"models": [tiny("tiny", tiny_gguf)], "routes": [{"name": "d", "target": "tiny"}],
              "memory": {"sample_hz": 4}}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
        pid = c.get("/admin/models").json()["models"][0]["pid"]
        seq = c.get("/admin/events").json()["seq"]
        put_memory(c, guard=False, ram_high_pct=1)          # RAM use is over 1 %, the guard is off
        samples = c.get("/admin/telemetry").json()["seq"]
        # eight samples (2 s at 4 Hz) taken with the limit crossed: each one a chance to act
        wait_for(lambda: c.get("/admin/telemetry").json()["seq"] >= samples + 8, 30,
                 "telemetry stopped")
        assert not events(c, seq, "emergency_unload")
        assert c.get("/admin/models").json()["models"][0]["pid"] == pid
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200

        put_memory(c, guard=True)                            # the same limit, guard on: it acts
        unload = wait_for(lambda: events(c, seq, "emergency_unload"), 20, "no emergency unload")[0]
        assert unload["model"] == "tiny" and "RAM use" in unload["reason"] \
            and "over 1%" in unload["reason"], unload
        wait_for(lambda: pid not in eng.runner_pids(), 10, "the runner outlived its unload")
        put_memory(c, ram_high_pct=90)
        wait_for(lambda: c.post("/v1/chat/completions", json=CHAT).status_code == 200, 30,
                 "no load once the limit was restored")


def test_non_streamed_request_whose_client_leaves_frees_its_slot(tiny_gguf, tmp_path):
    # 30,000 tokens take a minute or more here: a slot still busy after 5 s was not cancelled
    config = {"models": [tiny("tiny", tiny_gguf, n_ctx=32768)],
              "routes": [{"name": "d", "target": "tiny"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
        seq = c.get("/admin/requests").json()["seq"]
        with ThreadPoolExecutor(1) as pool:
            leaving = pool.submit(httpx.post, eng.url + "/v1/chat/completions",
                                  timeout=httpx.Timeout(2.0, connect=5),
                                  json={**CHAT, "max_tokens": 30000})
            wait_for(lambda: c.get("/admin/models").json()["models"][0]["active"] == 1, 10,
                     "the long request never started")
            with pytest.raises(httpx.ReadTimeout):
                leaving.result(timeout=30)                   # the client gives up and closes
        wait_for(lambda: c.get("/admin/models").json()["models"][0]["active"] == 0, 5,
                 "the runner still generates for a client that left")
        started = time.monotonic()                           # parallel 1: only a free slot answers
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
        assert time.monotonic() - started < 5
        logged = c.get(f"/admin/requests?since={seq}").json()["requests"]
        assert [r["status"] for r in logged] == [499, 200]


@pytest.fixture(scope="module")
def gguf_head_32(tmp_path_factory):
    """Quantized K rows hold blocks of 32 elements: the head size must be a multiple of 32."""
    from gguf_factory import write_tiny_gguf
    return write_tiny_gguf(tmp_path_factory.mktemp("head32") / "tiny32.gguf", n_embd=128)


@pytest.mark.parametrize("kv, ratio", [("q8_0", 34 / 64), ("q4_0", 18 / 64)])
def test_quantized_kv_cache_in_a_real_runner(gguf_head_32, tmp_path, kv, ratio):
    config = {"models": [tiny("f16", gguf_head_32), tiny("quant", gguf_head_32, kv_cache_type=kv)],
              "routes": [{"name": "d", "target": "quant"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        answers = {}
        for name in ("f16", "quant"):
            r = c.post("/v1/chat/completions", json={**CHAT, "model": name, "max_tokens": 12})
            assert r.status_code == 200, r.text
            answers[name] = r.json()
            assert answers[name]["usage"]["completion_tokens"] == 12
            assert answers[name]["choices"][0]["message"]["content"]
        with c.stream("POST", "/v1/chat/completions",
                      json={**CHAT, "model": "quant", "stream": True}) as s:
            lines = [line for line in s.iter_lines() if line]
        assert lines[-1] == "data: [DONE]" and not [l for l in lines if '"error"' in l]
        rows = {m["name"]: m for m in c.get("/admin/models").json()["models"]}
        assert rows["quant"]["kv_bytes_per_token"] == pytest.approx(
            rows["f16"]["kv_bytes_per_token"] * ratio)
        sample = wait_for(lambda: c.get("/admin/telemetry").json()["samples"][-1]["models"]["quant"]
                          .get("kv_capacity_bytes"), 10, "no KV figures for the quantized runner")
        assert sample == pytest.approx(rows["quant"]["kv_bytes_per_token"] * 256)


def test_demo_models_yaml_passes_laya_check():
    run = subprocess.run([sys.executable, "-m", "laya_desktop", "check", "--config",
                          str(ROOT / "docs" / "demo-models.yaml")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "demo-models.yaml: ok" in run.stdout + run.stderr
    assert "error" not in (run.stdout + run.stderr).lower()
