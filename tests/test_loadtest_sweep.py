"""The capacity sweep's policy on tables of fake step results (steps, early stop, the memory
figures of a step, the recommendation), and one real two-step sweep through `laya loadtest --sweep
--json` against the engine on a tiny GGUF."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine_harness import running_engine
from laya_desktop.loadtest import sweep_policy as policy
from laya_desktop.loadtest.sweep import render_sweep

GIB, MIB = 1 << 30, 1 << 20


@pytest.mark.parametrize("limit, lengths, expected", [
    (1, None, [(1, 0)]),
    (2, None, [(1, 0), (2, 0)]),
    (8, None, [(1, 0), (2, 0), (4, 0), (8, 0)]),
    (6, None, [(1, 0), (2, 0), (4, 0), (6, 0)]),
    (2, [4000, 0, 4000], [(1, 0), (2, 0), (1, 4000), (2, 4000)]),
])
def test_steps(limit, lengths, expected):
    assert policy.steps(limit, lengths) == expected


def test_steps_refuse_a_limit_below_one():
    with pytest.raises(ValueError):
        policy.steps(0)


def S(c, ttft=100.0, errors=0, swap=0.0, guard=(), ram=4 * GIB, avail=10 * GIB, chars=0, tps=10.0):
    return policy.StepResult(concurrency=c, prompt_chars=chars, requests=8, errors=errors,
                             tokens_per_s=tps, ttft_p50_ms=ttft / 2, ttft_p95_ms=ttft,
                             peak_ram_used=ram, min_ram_available=avail, ram_total=16 * GIB,
                             swap_moved=swap, guard_events=list(guard))


@pytest.mark.parametrize("step, reason", [
    (S(4), None),
    (S(4, errors=1), "errors"),
    (S(4, swap=64 * MIB), "swap"),
    (S(4, swap=1 * MIB), None),                                    # noise, not swapping
    (S(4, guard=["emergency_unload"]), "guard"),
    (S(4, guard=["load_refused"], errors=3, swap=GIB), "guard"),   # the guard is named first
    (S(4, guard=["model_loaded"]), None),
])
def test_stop_reason(step, reason):
    assert policy.stop_reason(step) == reason


MEMORY = {"ram_high_pct": 90, "reserved_system_gb": 2}


@pytest.mark.parametrize("steps, target, expected", [
    ([S(1, 50), S(2, 80), S(4, 150), S(8, 900)], 200, 4),      # TTFT decides
    ([S(1, 50), S(2, 80), S(4, 150, errors=2)], 200, 2),       # a step with errors never qualifies
    ([S(1, 50), S(2, 80, ram=15 * GIB)], 200, 1),              # above 90 % of 16 GiB
    ([S(1, 50), S(2, 80, avail=1 * GIB)], 200, 1),             # under the 2 GiB floor
    ([S(1, 50), S(2, 80, swap=GIB)], 200, 1),
    ([S(1, 500)], 200, None),
    ([], 200, None),
])
def test_recommend(steps, target, expected):
    rec = policy.recommend(steps, target, MEMORY)
    assert rec["concurrency"] == expected
    if expected is None:
        assert rec["reason"].startswith("no step")
    else:
        assert rec["ttft_p95_ms"] <= target


def test_recommend_prefers_the_longer_prompt_at_the_same_concurrency():
    rec = policy.recommend([S(2, 80), S(2, 120, chars=4000), S(4, 900, chars=4000)], 200, MEMORY)
    assert (rec["concurrency"], rec["prompt_chars"]) == (2, 4000)


def test_step_memory_from_telemetry_and_events():
    samples = [{"seq": i, "t": 100.0 + i * 0.25, "ram_total": 16 * GIB, "ram_used": (4 + i) * GIB,
                "ram_available": (10 - i) * GIB, "swap_used": GIB + i * 8 * MIB,
                "swap_in_bps": 0, "swap_out_bps": 0,
                "models": {"tiny": {"kv_used_tokens": 100 * i, "kv_capacity_tokens": 1000}}}
               for i in range(4)]
    events = [{"kind": "model_loaded"}, {"kind": "emergency_unload", "model": "big"}]
    m = policy.step_memory(samples, events)
    assert m["peak_ram_used"] == 7 * GIB and m["min_ram_available"] == 7 * GIB
    assert m["swap_moved"] == 24 * MIB and m["peak_kv_pct"] == pytest.approx(30.0)
    assert m["guard_events"] == ["emergency_unload"] and m["ram_total"] == 16 * GIB


def test_step_memory_counts_swap_traffic_when_used_stays_put():
    samples = [{"t": 10.0 + i, "swap_used": GIB, "swap_in_bps": 8 * MIB, "swap_out_bps": 8 * MIB}
               for i in range(3)]
    assert policy.step_memory(samples, [])["swap_moved"] == 32 * MIB    # 16 MiB/s over 2 s


def test_step_memory_without_telemetry():
    m = policy.step_memory([], [])
    assert m["peak_ram_used"] is None and m["swap_moved"] == 0.0 and m["guard_events"] == []


def test_real_two_step_sweep_json(tiny_gguf, tmp_path):
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 512, "parallel": 2}],
              "routes": [{"name": "default", "target": "tiny"}], "memory": {"sample_hz": 4}}
    with running_engine(config, tmp_path) as eng:
        r = subprocess.run([sys.executable, "-m", "laya_desktop", "loadtest", "--url", eng.url, "--sweep",
                            "--max-concurrency", "2", "--step-requests", "4", "--max-tokens", "8",
                            "--ttft-target-ms", "60000", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    sweep = json.loads(r.stdout)
    steps = sweep["steps"]
    assert [(s["concurrency"], s["requests"], s["errors"]) for s in steps] == [(1, 4, 0), (2, 4, 0)]
    for s in steps:
        assert s["tokens_per_s"] > 0 and s["ttft_p95_ms"] > 0 and s["peak_ram_used"] > 0
        assert s["peak_kv_pct"] is not None and s["stop"] is None
    assert sweep["stopped"] is None and sweep["recommendation"]["concurrency"] == 2
    assert sweep["memory"]["ram_high_pct"] is not None
    assert "recommendation: 2 clients" in render_sweep(sweep)


def test_sweep_refuses_bad_options_with_a_message():
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "loadtest", "--url", "http://127.0.0.1:9",
                        "--sweep", "--max-concurrency", "0", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "max-concurrency" in json.loads(r.stdout)["error"]["message"]
