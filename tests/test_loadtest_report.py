"""Load-test aggregation (pure tables) and the generator's parsing of OpenAI responses.

The generator talks to an httpx.MockTransport here only to pin down how it reads SSE chunks,
usage and errors; the end-to-end load test runs against the real engine elsewhere.
"""
from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest

from laya_desktop.loadtest.generator import DEFAULT_PROMPTS, chat_url, run_loadtest, run_loadtest_sync
from laya_desktop.loadtest.report import LoadTestReport, RequestResult, aggregate, percentile, render_table


def R(i, status=200, latency=100.0, ttft=None, tokens=16, route="default", model="gemma", error=None):
    return RequestResult(index=i, status=status, latency_ms=latency, ttft_ms=ttft,
                         completion_tokens=tokens, route=route, model=model, error=error)


# -- percentile ------------------------------------------------------------------------------------

@pytest.mark.parametrize("values, q, expected", [
    ([], 50, None),
    ([7.0], 99, 7.0),
    ([1, 2, 3, 4], 50, 2.5),
    ([1, 2, 3, 4, 5], 50, 3),
    (list(range(1, 101)), 95, 95.05),
    (list(range(1, 101)), 99, 99.01),
    ([5, 1, 3], 0, 1),
    ([5, 1, 3], 100, 5),
])
def test_percentile(values, q, expected):
    got = percentile(values, q)
    assert got == (None if expected is None else pytest.approx(expected))


# -- aggregate --------------------------------------------------------------------------------------

@pytest.mark.parametrize("results, wall, expect", [
    ([], 1.0, {"requests": 0, "ok": 0, "errors": 0, "status_counts": {}, "tokens_per_s": 0.0,
               "routes": {}, "latency_ms": {"p50": None, "p95": None, "p99": None, "mean": None, "max": None}}),
    ([R(0), R(1, latency=300)], 2.0,
     {"requests": 2, "ok": 2, "errors": 0, "status_counts": {"200": 2}, "tokens_per_s": 16.0,
      "completion_tokens": 32, "routes": {"default": 2}}),
    # errors: not counted in latency or tokens, counted by status
    ([R(0, latency=100), R(1, status=429, latency=1, tokens=0, error="429: queue full"),
      R(2, status=0, latency=5, tokens=0, route=None, model=None, error="ConnectError")], 1.0,
     {"requests": 3, "ok": 1, "errors": 2, "status_counts": {"200": 1, "429": 1, "no_response": 1},
      "tokens_per_s": 16.0, "routes": {"default": 2}}),
    # routes and models are counted from headers
    ([R(0, route="code", model="a"), R(1, route="default", model="b"), R(2, route="code", model="a")], 3.0,
     {"routes": {"code": 2, "default": 1}, "models": {"a": 2, "b": 1}, "requests_per_s": 1.0}),
    # a 200 whose stream broke is an error
    ([R(0, error="stream ended without [DONE]")], 1.0, {"ok": 0, "errors": 1, "tokens_per_s": 0.0}),
])
def test_aggregate(results, wall, expect):
    summary = aggregate(results, wall)
    for key, value in expect.items():
        assert summary[key] == value, key
    json.dumps(summary)


def test_aggregate_percentiles_over_successes_only():
    results = [R(i, latency=float(i + 1), ttft=float(i + 1) / 10) for i in range(100)]
    results.append(R(100, status=503, latency=0.5, error="503: busy"))
    s = aggregate(results, 10.0)
    assert s["latency_ms"]["p50"] == pytest.approx(50.5)
    assert s["latency_ms"]["p95"] == pytest.approx(95.05)
    assert s["latency_ms"]["p99"] == pytest.approx(99.01)
    assert s["latency_ms"]["max"] == 100.0
    assert s["ttft_ms"]["p50"] == pytest.approx(5.05)
    assert s["tokens_per_s"] == 160.0
    assert s["error_samples"] == ["503: busy"]


def test_error_samples_are_distinct_and_bounded():
    results = [R(i, status=500, error=f"500: e{i % 7}") for i in range(50)]
    assert aggregate(results, 1.0)["error_samples"] == [f"500: e{i}" for i in range(5)]


def test_render_table():
    report = LoadTestReport([R(0, ttft=12.0), R(1, status=429, error="429: full")], wall_s=2.0,
                            url="http://x", concurrency=4)
    text = render_table(report.summary())
    for needle in ("requests     2", "errors 1", "p50", "p99", "latency ms", "TTFT ms", "tokens/s",
                   "default: 2", "429: full"):
        assert needle in text, needle
    empty = render_table(aggregate([], 0.0))
    assert "latency ms" in empty and "-" in empty


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:8555", "http://127.0.0.1:8555/v1/chat/completions"),
    ("http://127.0.0.1:8555/", "http://127.0.0.1:8555/v1/chat/completions"),
    ("http://127.0.0.1:8555/v1", "http://127.0.0.1:8555/v1/chat/completions"),
    ("http://127.0.0.1:8555/v1/", "http://127.0.0.1:8555/v1/chat/completions"),
    (" http://h/api/v1 ", "http://h/api/v1/chat/completions"),
])
def test_chat_url(url, expected):
    assert chat_url(url) == expected


# -- generator: how it reads responses ---------------------------------------------------------------

def sse(*chunks, done=True) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def content(text):
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def make_transport(seen: list):
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((request, body))
        prompt = body["messages"][0]["content"]
        headers = {"X-Laya-Route": "default", "X-Laya-Model": "gemma", "content-type": "text/event-stream"}
        if prompt == "refuse":
            return httpx.Response(429, json={"error": {"message": "queue full", "type": "x", "code": "q"}},
                                  headers={"X-Laya-Route": "default"})
        if not body.get("stream"):
            return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}],
                                             "usage": {"completion_tokens": 5}}, headers=headers)
        if prompt == "usage":
            return httpx.Response(200, headers=headers, content=sse(
                {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
                content("a"), content("b"), {"choices": [], "usage": {"completion_tokens": 9}}))
        if prompt == "broken":
            return httpx.Response(200, headers=headers, content=sse(content("a"), done=False))
        if prompt == "stream-error":
            return httpx.Response(200, headers=headers, content=sse(content("a"),
                                                                    {"error": {"message": "runner crashed"}}))
        return httpx.Response(200, headers=headers, content=sse(content("x"), content("y"), content("z")))
    return httpx.MockTransport(handler)


def test_generator_reads_streams_usage_and_errors():
    seen = []
    got = []
    prompts = ["usage", "chunks", "refuse", "broken", "stream-error"]
    report = run_loadtest_sync("http://engine/v1", concurrency=2, requests=5, max_tokens=7, prompts=prompts,
                               tags=["code", "fast"], api_key="k", on_result=got.append,
                               transport=make_transport(seen))
    by_prompt = {prompts[r.index]: r for r in report.results}
    assert [r.index for r in report.results] == [0, 1, 2, 3, 4]
    assert len(got) == 5
    u = by_prompt["usage"]
    assert u.ok and u.completion_tokens == 9 and u.ttft_ms is not None and u.route == "default"
    assert u.model == "gemma"
    assert by_prompt["chunks"].completion_tokens == 3      # no usage chunk: counted
    r = by_prompt["refuse"]
    assert r.status == 429 and r.error == "429: queue full" and not r.ok
    assert by_prompt["broken"].error == "stream ended without [DONE]"
    assert by_prompt["stream-error"].error == "stream error: runner crashed"
    req, body = seen[0]
    assert str(req.url) == "http://engine/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer k" and req.headers["x-laya-tags"] == "code,fast"
    assert body["max_tokens"] == 7 and body["stream_options"] == {"include_usage": True}
    s = report.summary()
    assert s["requests"] == 5 and s["ok"] == 2 and s["errors"] == 3 and s["completion_tokens"] == 12


def test_generator_non_stream_and_default_prompts():
    seen = []
    report = run_loadtest_sync("http://engine", concurrency=3, requests=4, stream=False,
                               transport=make_transport(seen))
    assert all(r.ok and r.completion_tokens == 5 and r.ttft_ms is None for r in report.results)
    assert sorted(b["messages"][0]["content"] for _, b in seen) == sorted(DEFAULT_PROMPTS[:4])
    assert "stream_options" not in seen[0][1]


def test_generator_connection_error_is_a_result():
    report = run_loadtest_sync("http://127.0.0.1:9", concurrency=1, requests=2, timeout_s=5)
    assert [r.status for r in report.results] == [0, 0]
    assert all(r.error for r in report.results)
    assert report.summary()["status_counts"] == {"no_response": 2}


def test_generator_cancel_stops_new_requests():
    cancel = threading.Event()
    seen = []

    def on_result(result):
        if result.index == 1:
            cancel.set()

    report = asyncio.run(run_loadtest("http://engine", concurrency=1, requests=50, on_result=on_result,
                                      cancel=cancel, transport=make_transport(seen)))
    assert len(report.results) == 2 and report.cancelled
    assert report.summary()["cancelled"] is True
