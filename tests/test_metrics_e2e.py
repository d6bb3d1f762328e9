"""/metrics and the request log's "why" against a real engine: requests to two rules, a fallback,
a client error and a load the memory guard refuses, each moving exactly its own series."""
from __future__ import annotations

import time

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine_harness import running_engine
from laya_desktop.telemetry.model_sample import ModelSample, ModelState

GIB = 1 << 30


def config(gguf) -> dict:
    local = {"backend": "llama_cpp", "path": str(gguf), "n_ctx": 512, "parallel": 1, "idle_ttl_s": 0}
    return {
        "models": [{"name": "tiny", **local}, {"name": "big", **local},
                   # nothing listens on port 9: every request to it fails over
                   {"name": "dead", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
        "routes": [{"name": "code", "match": {"tags": ["code"]}, "target": "tiny"},
                   {"name": "flaky", "match": {"tags": ["flaky"]}, "target": "dead",
                    "fallback": ["tiny"]},
                   {"name": "default", "target": "tiny"}],
    }


def scrape(c) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} of one /metrics answer."""
    r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.text) for s in family.samples}


def moved(before: dict, after: dict, name: str, **labels) -> float:
    key = (name, tuple(sorted((k, str(v)) for k, v in labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def chat(c, text: str, max_tokens: int = 3, **extra):
    return c.post("/v1/chat/completions", json={
        "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}], **extra})


@pytest.mark.timeout(120)

def _latest_loaded_sample(client, model: str, within_s: float = 15.0) -> dict:
    """The newest telemetry sample of `model` once one shows it loaded: the sampler runs at
    sample_hz, so on a busy machine the newest sample may still be from during the load."""
    deadline = time.monotonic() + within_s
    while True:
        entry = client.get("/admin/telemetry").json()["samples"][-1]["models"][model]
        if ModelState(entry["state"]).loaded or time.monotonic() > deadline:
            return entry
        time.sleep(0.1)

def test_metrics_and_request_log_after_real_requests(tiny_gguf, tmp_path):
    with running_engine(config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        before = scrape(c)
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        answers = [chat(c, "def f(): pass", tags=["code"]), chat(c, "more code", tags=["code"]),
                   chat(c, "hello there", max_tokens=2), chat(c, "anyone?", tags=["flaky"])]
        for r in answers:
            assert r.status_code == 200, r.text
            for key in usage:
                usage[key] += r.json()["usage"][key]
        assert answers[3].headers["x-laya-fallback-from"] == "dead"
        bad = c.post("/v1/chat/completions", json={"messages": "not a list"})
        assert bad.status_code == 400
        after = scrape(c)

        def requests(rule, model, status, api="chat"):
            return moved(before, after, "laya_requests_total", api=api, rule=rule, model=model,
                         status=status)
        assert requests("code", "tiny", 200) == 2
        assert requests("default", "tiny", 200) == 1
        assert requests("flaky", "tiny", 200) == 1
        assert requests("", "", 400) == 1
        assert moved(before, after, "laya_request_fallbacks_total", rule="flaky", target="dead",
                     model="tiny") == 1
        assert moved(before, after, "laya_prompt_tokens_total", model="tiny") == usage["prompt_tokens"]
        assert moved(before, after, "laya_completion_tokens_total",
                     model="tiny") == usage["completion_tokens"] > 0
        assert moved(before, after, "laya_time_to_first_token_seconds_count", model="tiny") == 4
        assert moved(before, after, "laya_request_duration_seconds_count", api="chat",
                     model="tiny") == 4
        assert moved(before, after, "laya_request_duration_seconds_bucket", api="chat",
                     model="tiny", le="+Inf") == 4
        ttft_sum = moved(before, after, "laya_time_to_first_token_seconds_sum", model="tiny")
        duration_sum = moved(before, after, "laya_request_duration_seconds_sum", api="chat",
                             model="tiny")
        assert 0 < ttft_sum <= duration_sum
        assert moved(before, after, "laya_events_total", kind="model_loaded") == 1
        assert after[("laya_model_loaded", (("model", "tiny"),))] == 1
        # the sample's record on the wire, as the GUI and the guard read it, and the admin row
        entry = _latest_loaded_sample(c, "tiny")
        # prompt_cache: once the runner has sent its cache's figures (not in its first samples)
        assert set(entry) - {"prompt_cache"} == {
            "state", "pid", "rss", "private", "shared", "vram", "kv_used_tokens",
            "kv_capacity_tokens", "kv_bytes", "kv_capacity_bytes", "active", "queued",
            "tokens_per_s"}
        record = ModelSample.from_json(entry)
        assert record.loaded and record.rss > 0 and record.kv_capacity_tokens > 0
        assert after[("laya_model_rss_bytes", (("model", "tiny"),))] > 0
        row = next(m for m in c.get("/admin/models").json()["models"] if m["name"] == "tiny")
        assert row["pid"] == record.pid and row["private"] > 0

        log = c.get("/admin/requests").json()["requests"]
        by_rule = {e["rule"]: e for e in log}
        assert by_rule["code"]["why"] == {"matched": ["tag of [code] in request tags [code]"],
                                          "passed_over": [], "candidates": ["tiny"]}
        default = by_rule["default"]["why"]
        assert [p["rule"] for p in default["passed_over"]] == ["code", "flaky"]
        assert default["passed_over"][0]["reasons"] == ["no tag of [code] in request tags []"]
        assert default["matched"] == ["no conditions (catch-all)"]
        flaky = by_rule["flaky"]
        assert flaky["fallback_from"] == "dead" and flaky["why"]["candidates"] == ["dead", "tiny"]
        assert [t["model"] for t in flaky["why"]["tried"]] == ["dead"]
        assert flaky["why"]["tried"][0]["code"]

        only_code = c.get("/admin/requests", params={"rule": "code"}).json()
        assert [e["rule"] for e in only_code["requests"]] == ["code", "code"]
        assert only_code["seq"] == log[-1]["seq"]
        assert [e["status"] for e in c.get("/admin/requests?status=400").json()["requests"]] == [400]
        for bad in ("ok", "²", "-1"):
            refused = c.get("/admin/requests", params={"status": bad})
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_status"

        # The memory guard refuses a load once the reserve is above what this machine has.
        cfg = c.get("/admin/config").json()
        reserve = round(psutil.virtual_memory().available / GIB + 4, 1)
        cfg["memory"] = {**cfg.get("memory", {}), "reserved_system_gb": reserve}
        assert c.put("/admin/config", json=cfg).status_code == 200
        guard_before = scrape(c)
        r = chat(c, "x", model="big")
        assert r.status_code == 503 and r.json()["error"]["code"] == "load_refused"
        guard_after = scrape(c)
        assert moved(guard_before, guard_after, "laya_guard_actions_total", action="refuse_load",
                     model="big") == 1
        assert moved(guard_before, guard_after, "laya_events_total", kind="load_refused") == 1
        assert moved(guard_before, guard_after, "laya_requests_total", api="chat", rule="direct",
                     model="", status=503) == 1
        direct = c.get("/admin/requests?status=503").json()["requests"][-1]
        assert direct["why"]["matched"] == [
            "model 'big' is registered: served directly, rules not consulted"]
        assert direct["why"]["tried"] == [{"model": "big", "code": "load_refused"}]
