"""`laya loadtest` against a real engine: the tiny GGUF for shape, the built-in Gemma for the budget."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import yaml

from engine_harness import running_engine


def _loadtest(url: str, *extra: str) -> tuple[dict, float]:
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "loadtest", "--url", url, "--json",
                        *extra], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), time.monotonic() - started


def test_loadtest_json_against_engine(tiny_gguf, tmp_path):
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 256, "parallel": 2}],
              "routes": [{"name": "tagged", "match": {"tags": ["lt"]}, "target": "tiny"},
                         {"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path) as eng:
        report, _ = _loadtest(eng.url + "/v1", "--concurrency", "3", "--requests", "12",
                              "--max-tokens", "8", "--tag", "lt")
        with eng.client() as c:
            logged = c.get("/admin/requests").json()["requests"]
    assert report["requests"] == 12 and report["errors"] == 0
    assert report["status_counts"] == {"200": 12}
    assert report["routes"] == {"tagged": 12}
    for key in ("p50", "p95", "p99"):
        assert report["latency_ms"][key] > 0 and report["ttft_ms"][key] > 0
    assert report["tokens_per_s"] > 0
    assert len(logged) == 12 and {e["rule"] for e in logged} == {"tagged"}


@pytest.mark.slow
def test_loadtest_builtin_gemma_within_budget(tmp_path):
    config = yaml.safe_load(open("models.yaml"))
    with running_engine(config, tmp_path) as eng:
        report, seconds = _loadtest(eng.url, "--concurrency", "4", "--requests", "40",
                                    "--max-tokens", "16")
    assert report["requests"] == 40 and report["errors"] == 0
    assert seconds < 50, f"loadtest took {seconds:.1f} s"


def test_loadtest_rate_mode_jsonl_and_route_distribution(tiny_gguf, tmp_path):
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 256, "parallel": 2}],
              "routes": [{"name": "tagged", "match": {"tags": ["code"]}, "target": "tiny"},
                         {"name": "default", "target": "tiny"}]}
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "def f(x):", "tags": ["code"]}\n{"prompt": "Say hi."}\n')
    with running_engine(config, tmp_path) as eng:
        report, _ = _loadtest(eng.url, "--rate", "8", "--duration", "1.5", "--max-tokens", "8",
                              "--prompts", str(prompts))
    assert report["mode"] == "rate" and report["rate"] == 8.0 and report["duration_s"] == 1.5
    assert report["requests"] >= 4 and report["errors"] == 0
    tagged, default = report["routes"]["tagged"], report["routes"]["default"]
    assert abs(tagged - default) <= 1            # the two prompts alternate
    assert report["route_models"] == {"default → tiny": default, "tagged → tiny": tagged}
    assert report["itl_ms"]["p50"] is not None and report["fallbacks"] == {}
