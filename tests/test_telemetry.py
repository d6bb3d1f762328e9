"""Ring buffers, event and request logs, the system sampler, GPU sampler and Prometheus text."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections import namedtuple

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from laya_desktop.telemetry.events import REQUEST_FIELDS, EventKind, EventLog, RequestLog
from laya_desktop.telemetry.gpu import GpuSampler
from laya_desktop.telemetry.model_sample import ModelSample, ModelState
from laya_desktop.telemetry.prometheus import EngineMetrics
from laya_desktop.telemetry.ring import DEFAULT_CAPACITY, SeqRing
from laya_desktop.telemetry.system_sampler import SystemSampler, process_memory


# -- SeqRing -------------------------------------------------------------------------------------

def test_ring_default_capacity_holds_an_hour_at_4_hz():
    assert DEFAULT_CAPACITY >= 4 * 3600


def test_ring_numbers_from_one_and_returns_newer_items():
    ring = SeqRing(8)
    assert ring.last_seq == 0 and ring.since(0) == [] and ring.latest() is None
    seqs = [ring.append({"v": i}) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert ring.last_seq == 5
    assert [x["v"] for x in ring.since(0)] == [0, 1, 2, 3, 4]
    assert [x["seq"] for x in ring.since(3)] == [4, 5]
    assert ring.since(5) == [] and ring.since(99) == []
    assert ring.snapshot(4) == (5, [ring.latest()])


@pytest.mark.parametrize("capacity, n, since, expected", [
    (4, 10, 0, [7, 8, 9, 10]),      # wrapped: only the newest `capacity` remain
    (4, 10, 8, [9, 10]),
    (4, 10, 6, [7, 8, 9, 10]),
    (4, 4, 0, [1, 2, 3, 4]),        # exactly full
    (4, 5, 1, [2, 3, 4, 5]),        # slot boundary crossing
    (1, 3, 0, [3]),
    (5, 3, -7, [1, 2, 3]),
])
def test_ring_wraps(capacity, n, since, expected):
    ring = SeqRing(capacity)
    for i in range(n):
        ring.append({"i": i})
    assert [x["seq"] for x in ring.since(since)] == expected
    assert len(ring) == min(n, capacity)


def test_ring_rejects_zero_capacity():
    with pytest.raises(ValueError):
        SeqRing(0)


def test_ring_is_thread_safe():
    ring = SeqRing(100_000)

    def writer():
        for i in range(5000):
            ring.append({"i": i})

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    seen = []
    while any(t.is_alive() for t in threads):
        last, items = ring.snapshot(0)
        assert [x["seq"] for x in items] == list(range(1, last + 1))
        seen.append(last)
    for t in threads:
        t.join()
    assert ring.last_seq == 20_000
    assert [x["seq"] for x in ring.since(0)] == list(range(1, 20_001))


# -- EventLog / RequestLog -------------------------------------------------------------------------

def test_event_log_records_and_numbers():
    log = EventLog()
    got = []
    log.add_listener(got.append)
    e1 = log.record("model_loaded", model="gemma", pid=123)
    e2 = log.record("emergency_unload", model="gemma", reason="RAM", freed_bytes=400 << 20)
    assert e1["seq"] == 1 and e2["seq"] == 2
    assert e1["kind"] == "model_loaded" and e1["pid"] == 123 and "reason" not in e1
    assert e2["freed_bytes"] == 400 << 20 and e2["reason"] == "RAM"
    assert isinstance(e1["t"], float)
    assert got == [e1, e2]
    seq, items = log.since(1)
    assert seq == 2 and items == [e2]
    assert log.totals == {"model_loaded": 1, "emergency_unload": 1}
    json.dumps(items)  # JSON-ready
    assert {"model_loading", "idle_unload", "load_refused", "runner_crashed", "config_applied"} <= set(EventKind)


def test_event_listener_failure_does_not_break_recording(caplog):
    log = EventLog()

    def broken(_event):
        raise RuntimeError("boom")

    log.add_listener(broken)
    with caplog.at_level(logging.ERROR):
        log.record("model_loading", model="x")
    assert log.last_seq == 1
    log.remove_listener(broken)
    log.record("model_loaded", model="x")
    assert log.last_seq == 2


def test_request_log_writes_one_json_line(caplog):
    log = RequestLog()
    with caplog.at_level(logging.INFO, logger="laya.requests"):
        item = log.record(rule="default", model="gemma", status=200, prompt_tokens=12,
                          completion_tokens=16, ttft_ms=41.5, duration_ms=300.2,
                          path="/v1/chat/completions", extra_field="kept")
    assert item["seq"] == 1
    assert set(REQUEST_FIELDS) <= set(item)
    assert item["fallback_from"] is None and item["cached_tokens"] is None
    records = [r for r in caplog.records if r.name == "laya.requests"]
    assert len(records) == 1
    line = json.loads(records[0].getMessage())
    assert line["rule"] == "default" and line["status"] == 200 and line["extra_field"] == "kept"
    assert line["seq"] == 1 and "\n" not in records[0].getMessage()
    assert log.since(0) == (1, [item])


# -- system sampler ------------------------------------------------------------------------------------

def test_sample_has_every_field():
    sampler = SystemSampler()
    try:
        s = sampler.sample()
    finally:
        sampler.close()
    for key in ("ram_total", "ram_used", "ram_available", "swap_total", "swap_used"):
        assert isinstance(s[key], int) and s[key] >= 0, key
    assert 0 < s["ram_available"] <= s["ram_total"]
    assert s["swap_in_bps"] == 0 and s["swap_out_bps"] == 0  # first sample: no rate yet
    assert 0 <= s["cpu_pct"] <= 100
    assert isinstance(s["gpus"], list)
    json.dumps(s)


def test_swap_rates_from_counter_deltas(monkeypatch):
    Swap = namedtuple("Swap", "total used free percent sin sout")
    counters = iter([(0, 0), (4096 * 10, 4096 * 20), (4096 * 5, 4096 * 30)])  # last: counter reset
    monkeypatch.setattr(psutil, "swap_memory",
                        lambda: Swap(1 << 30, 0, 1 << 30, 0.0, *next(counters)))
    clock = iter([100.0, 102.0, 103.0])
    sampler = SystemSampler(clock=lambda: next(clock))
    try:
        assert sampler.sample()["swap_in_bps"] == 0
        s2 = sampler.sample()
        s3 = sampler.sample()
    finally:
        sampler.close()
    assert s2["swap_in_bps"] == pytest.approx(4096 * 10 / 2)
    assert s2["swap_out_bps"] == pytest.approx(4096 * 20 / 2)
    assert s3["swap_in_bps"] == 0  # went backwards: 0, never negative
    assert s3["swap_out_bps"] == pytest.approx(4096 * 10)


def test_gpu_sampler_never_raises():
    gpu = GpuSampler()
    try:
        gpus = gpu.sample()
        assert isinstance(gpu.status_message, str) and gpu.status_message
        if not gpu.available:
            assert gpus == []
        for g in gpus:
            assert {"index", "name", "used", "total", "processes"} <= set(g)
            assert 0 <= g["used"] <= g["total"]
            assert all(isinstance(pid, int) for pid in g["processes"])
    finally:
        gpu.close()
    assert gpu.sample() == []  # closed: unavailable, still no exception


def test_process_memory_of_a_real_process():
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys; b = bytearray(64 << 20); sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        # wait until the 64 MiB buffer is resident
        for _ in range(200):
            mem = process_memory(child.pid)
            if mem and mem["private"] > 64 << 20:
                break
            threading.Event().wait(0.02)
        assert mem["rss"] >= mem["private"] > 64 << 20
        if sys.platform.startswith("linux"):
            assert mem["shared"] > 0 and mem["rss"] == mem["private"] + mem["shared"]
    finally:
        child.communicate(b"")
    assert process_memory(child.pid) is None  # reaped: gone


def test_process_memory_of_self():
    mem = process_memory(os.getpid())
    assert mem["rss"] > 0 and 0 < mem["private"] <= mem["rss"]


# -- Prometheus --------------------------------------------------------------------------------------

SAMPLE = {"ram_total": 16 << 30, "ram_used": 6 << 30, "ram_available": 9 << 30, "swap_total": 0,
          "swap_used": 1 << 20, "swap_in_bps": 0.0, "swap_out_bps": 12.5, "cpu_pct": 37.5,
          "gpus": [{"index": 0, "name": "H200", "used": 5 << 30, "total": 140 << 30, "processes": {}}]}
MODELS = {  # what the engine's live_models() gives: the sampled records, state and counts as now
    "gemma-270m": ModelSample.from_json(
        {"state": "busy", "pid": 4242, "rss": 490 << 20, "private": 400 << 20, "shared": 90 << 20,
         "vram": None, "kv_used_tokens": 120, "kv_capacity_tokens": 16384, "kv_bytes": 120 * 18432,
         "kv_capacity_bytes": 16384 * 18432, "active": 2, "queued": 1, "tokens_per_s": 55.5}),
    'we"ird\\name\n': ModelSample(ModelState.UNLOADED),
}
REQUESTS = [
    *[{"api": "chat", "rule": "code", "model": "gemma-270m", "status": 200, "prompt_tokens": 10,
       "cached_tokens": 4, "completion_tokens": 3, "ttft_ms": 40.0, "duration_ms": 300.0}] * 40,
    *[{"api": "messages", "rule": "default", "model": "gemma-270m", "fallback_from": "big",
       "status": 503, "duration_ms": 5.0}] * 2,
    {"api": "chat", "rule": None, "model": None, "status": 404, "duration_ms": 1.0},
]
EVENTS = [{"kind": "model_loaded", "model": "gemma-270m"},
          {"kind": "emergency_unload", "model": "gemma-270m"},
          {"kind": "model_unloaded", "model": "big", "guard_action": "evict"}]


def _families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def _metrics(sample, models, requests=(), events=()) -> str:
    metrics = EngineMetrics(live=lambda: (sample, models))
    for entry in requests:
        metrics.observe_request(entry)
    for event in events:
        metrics.observe_event(event)
    return metrics.render().decode()


def _by(family, sample_name, *labels):
    return {tuple(s.labels[k] for k in labels): s.value for s in family.samples
            if s.name == sample_name}


def test_metrics_parse_and_carry_values():
    text = _metrics(SAMPLE, MODELS, REQUESTS, EVENTS)
    fams = _families(text)
    assert fams["laya_ram_available_bytes"].samples[0].value == 9 << 30
    assert fams["laya_cpu_usage_ratio"].samples[0].value == 0.375
    assert fams["laya_gpu_memory_used_bytes"].samples[0].labels == {"gpu": "0"}
    loaded = {s.labels["model"]: s.value for s in fams["laya_model_loaded"].samples}
    assert loaded == {"gemma-270m": 1.0, 'we"ird\\name\n': 0.0}  # escaping round-trips
    assert fams["laya_model_kv_capacity_tokens"].samples[0].value == 16384
    assert fams["laya_model_tokens_per_second"].samples[0].value == 55.5
    reqs = fams["laya_requests"]
    assert reqs.type == "counter"
    by_label = _by(reqs, "laya_requests_total", "api", "rule", "model", "status")
    assert by_label == {("chat", "code", "gemma-270m", "200"): 40,
                        ("messages", "default", "gemma-270m", "503"): 2, ("chat", "", "", "404"): 1}
    assert _by(fams["laya_request_fallbacks"], "laya_request_fallbacks_total",
               "rule", "target", "model") == {("default", "big", "gemma-270m"): 2}
    for family, total in (("laya_prompt_tokens", 400), ("laya_prompt_cached_tokens", 160),
                          ("laya_completion_tokens", 120)):
        assert _by(fams[family], family + "_total", "model") == {("gemma-270m",): total}
    ttft = fams["laya_time_to_first_token_seconds"]
    assert ttft.type == "histogram"
    assert _by(ttft, "laya_time_to_first_token_seconds_count", "model") == {("gemma-270m",): 40}
    buckets = {s.labels["le"]: s.value for s in ttft.samples if s.name.endswith("_bucket")}
    assert buckets["0.025"] == 0 and buckets["0.05"] == 40  # 40 ms
    duration = _by(fams["laya_request_duration_seconds"], "laya_request_duration_seconds_sum",
                   "api", "model")
    assert duration[("chat", "gemma-270m")] == pytest.approx(12.0)
    assert duration[("messages", "gemma-270m")] == pytest.approx(0.01)
    events = _by(fams["laya_events"], "laya_events_total", "kind")
    assert events == {("model_loaded",): 1, ("emergency_unload",): 1, ("model_unloaded",): 1}
    assert _by(fams["laya_guard_actions"], "laya_guard_actions_total", "action", "model") == {
        ("emergency_unload", "gemma-270m"): 1, ("evict", "big"): 1}
    for name in ("laya_ram_used_bytes", "laya_swap_used_bytes", "laya_model_rss_bytes",
                 "laya_model_kv_used_tokens", "laya_model_kv_bytes", "laya_model_requests_active",
                 "laya_model_requests_queued"):
        assert name in fams, name
    assert "# HELP laya_ram_used_bytes" in text and "# TYPE laya_ram_used_bytes gauge" in text


def test_metrics_before_the_first_sample():
    """Nothing known is nothing reported: no gauge sample, and counters without a single series."""
    assert [f.name for f in _families(_metrics(None, {})).values() if f.samples] == []
    fams = _families(_metrics(None, {"m": ModelSample(ModelState.UNLOADED)},
                              events=[{"kind": "config_applied"}]))
    assert {name for name, f in fams.items() if f.samples} == {
        "laya_model_loaded", "laya_model_requests_active", "laya_model_requests_queued",
        "laya_events"}  # a model's request counts are known (0) before any sample


def test_each_engine_has_its_own_registry():
    first, second = EngineMetrics(), EngineMetrics()
    first.observe_request(REQUESTS[0])
    assert "laya_requests_total{" in first.render().decode()
    assert "laya_requests_total{" not in second.render().decode()


# -- the per-model record ----------------------------------------------------------------------------

WIRE_KEYS = {"state", "pid", "rss", "private", "shared", "vram", "kv_used_tokens",
             "kv_capacity_tokens", "kv_bytes", "kv_capacity_bytes", "active", "queued",
             "tokens_per_s"}


def test_model_sample_round_trips_the_wire_shape():
    record = MODELS["gemma-270m"]
    wire = record.to_json()
    assert set(wire) == WIRE_KEYS and wire["state"] == "busy" and type(wire["state"]) is str
    assert json.loads(json.dumps(wire)) == wire and ModelSample.from_json(wire) == record
    assert record.loaded and record.memory_bytes == 490 << 20
    mlx = ModelSample(ModelState.READY, mlx_peak_memory=7 << 20).to_json()
    assert set(mlx) == WIRE_KEYS | {"mlx_peak_memory"}  # MLX figures only when reported
    with pytest.raises(ValueError):
        ModelSample.from_json({**wire, "state": "stopped"})  # no made-up states


def test_model_states_are_the_engines():
    from laya_desktop.engine.runner_handle import RunnerState
    from laya_desktop.engine.served_model import ServedState
    assert ServedState is ModelState  # the engine's served state is the record's
    assert {s.value for s in RunnerState} <= {s.value for s in ModelState}
    assert [s for s in ModelState if s.loaded] == [ModelState.READY, ModelState.BUSY]


def test_gpu_look_without_a_free_descriptor_is_tried_again(monkeypatch):
    """No descriptor free to import NVML's module is no answer about the GPU: look again later,
    instead of reporting 'no GPU' for the engine's whole life."""
    import builtins
    import errno

    from laya_desktop.telemetry.gpu import GpuSampler
    real_import = builtins.__import__
    calls = {"n": 0}

    def out_of_descriptors(name, *args, **kwargs):
        if name == "pynvml" and calls["n"] == 0:
            calls["n"] += 1
            raise OSError(errno.EMFILE, "Too many open files")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", out_of_descriptors)
    gpu = GpuSampler()
    gpu.start()
    assert calls["n"] == 1 and gpu.status_message == "" and not gpu._looked
    gpu.start()                              # descriptors back: this look gives an answer
    assert gpu._looked and (gpu.available or gpu.status_message)
    gpu.close()
