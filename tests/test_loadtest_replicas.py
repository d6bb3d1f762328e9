"""A rule spread over replicas in the load tester: each answering model's share and latency, in
the summary, the table, the sweep's steps (beside the local models' memory) and `laya loadtest`.

The aggregation is pure and checked on tables; the end-to-end part runs a real engine whose rule
spreads over two runners of the tiny GGUF, and checks the figures against the engine's own
request log."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from engine_harness import running_engine
from laya_desktop.loadtest.generator import run_loadtest_sync
from laya_desktop.loadtest.report import RequestResult, aggregate, per_model, render_table
from laya_desktop.loadtest.sweep import peak_model_memory, render_sweep


def R(i, model, latency, status=200, ttft=None, error=None):
    return RequestResult(index=i, status=status, latency_ms=latency, ttft_ms=ttft, model=model,
                         route="spread", error=error, completion_tokens=4)


def test_per_model_share_and_latency_are_each_replicas_own():
    results = ([R(i, "fast", 100.0 + i, ttft=10.0) for i in range(9)]
               + [R(9, "slow", 900.0, ttft=300.0),
                  R(10, "slow", 5.0, status=503, error="503: upstream busy"),
                  R(11, None, 1.0, status=0, error="ConnectError")])
    per = per_model(results)
    assert list(per) == ["fast", "slow"]            # a request nobody answered is no model's
    assert per["fast"]["requests"] == 9 and per["slow"]["requests"] == 2
    assert per["fast"]["share_pct"] == pytest.approx(81.8) and per["slow"]["share_pct"] == pytest.approx(18.2)
    assert per["slow"]["ok"] == 1 and per["slow"]["errors"] == 1
    # latency over each model's successful requests only: the 5 ms refusal is not speed
    assert per["slow"]["latency_ms"]["p50"] == 900.0 and per["slow"]["ttft_ms"]["p95"] == 300.0
    assert per["fast"]["latency_ms"]["p50"] == 104.0 and per["fast"]["latency_ms"]["max"] == 108.0
    assert aggregate(results, 1.0)["per_model"] == per


def test_table_shows_replicas_only_when_more_than_one_answered():
    two = aggregate([R(0, "a", 100.0), R(1, "b", 300.0), R(2, "b", 500.0)], 1.0)
    text = render_table(two)
    header = next(line for line in text.splitlines() if line.startswith("model "))
    assert "share" in header and "p95 ms" in header
    row_b = next(line for line in text.splitlines() if line.startswith("b "))
    assert "66.7%" in row_b and "490.0" in row_b          # p95 of 300 and 500
    one = aggregate([R(0, "a", 100.0)], 1.0)
    assert not any(line.startswith("model ") for line in render_table(one).splitlines())


def test_peak_model_memory_keeps_local_runners_only():
    samples = [{"models": {"local": {"private": 100, "shared": 50}, "remote": {}}},
               {"models": {"local": {"private": 300, "shared": 50}}}]
    assert peak_model_memory(samples) == {"local": 350}


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    models = [{"name": name, "backend": "llama_cpp", "path": str(tiny_gguf), "n_ctx": 512,
               "parallel": 1, "idle_ttl_s": 0} for name in ("tiny-a", "tiny-b")]
    config = {"models": models, "memory": {"sample_hz": 4},
              "routes": [{"name": "spread", "targets": ["tiny-a", "tiny-b"],
                          "strategy": "least_loaded"}]}
    with running_engine(config, tmp_path_factory.mktemp("replicas")) as eng:
        with eng.client() as c:
            for name in ("tiny-a", "tiny-b"):
                assert c.post(f"/admin/models/{name}/load").status_code == 200
        yield eng


def test_load_test_shares_match_the_engines_request_log(engine):
    with engine.client() as c:
        seq = c.get("/admin/requests").json()["seq"]
        report = run_loadtest_sync(engine.url, concurrency=2, requests=12, max_tokens=4)
        logged = c.get("/admin/requests", params={"since": seq}).json()["requests"]
    per = report.summary()["per_model"]
    assert set(per) == {"tiny-a", "tiny-b"}
    assert {m: p["requests"] for m, p in per.items()} == dict(Counter(e["model"] for e in logged))
    assert sum(p["requests"] for p in per.values()) == 12
    assert sum(p["share_pct"] for p in per.values()) == pytest.approx(100.0, abs=0.2)
    assert all(p["errors"] == 0 and p["latency_ms"]["p95"] > 0 and p["ttft_ms"]["p50"] > 0
               for p in per.values())


def test_cli_table_and_sweep_show_each_replica_beside_its_memory(engine):
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "loadtest", "--url", engine.url,
                        "--concurrency", "2", "--requests", "8", "--max-tokens", "4"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("tiny-")]
    assert len(rows) == 2 and all("%" in line for line in rows), r.stdout

    r = subprocess.run([sys.executable, "-m", "laya_desktop", "loadtest", "--url", engine.url,
                        "--sweep", "--max-concurrency", "2", "--step-requests", "6",
                        "--max-tokens", "4", "--ttft-target-ms", "60000", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    sweep = json.loads(r.stdout)
    last = sweep["steps"][-1]
    assert last["concurrency"] == 2 and set(last["per_model"]) == {"tiny-a", "tiny-b"}
    assert sum(m["requests"] for m in last["per_model"].values()) == 6
    # each local replica's runner memory over the step, from the engine's telemetry
    assert all(m["peak_memory_bytes"] > 1 << 20 for m in last["per_model"].values()), last
    step_lines = [line for line in render_sweep(sweep).splitlines() if "tiny-a" in line]
    assert step_lines and all("tiny-b" in line and "GiB" in line for line in step_lines)
