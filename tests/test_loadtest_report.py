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


# -- rate mode, duration, inter-token latency, route distribution, causes -----------------------------

def test_itl_fallbacks_and_route_models():
    from laya_desktop.loadtest.report import aggregate
    results = [R(0, route="code", model="big"), R(1, route="code", model="small"),
               R(2, route="default", model="small")]
    results[0].itl_ms, results[1].itl_ms = 10.0, 30.0
    results[1].fallback_from = "big"
    s = aggregate(results, 1.0)
    assert s["itl_ms"]["p50"] == 20.0 and s["itl_ms"]["max"] == 30.0
    assert s["fallbacks"] == {"big → small": 1}
    assert s["route_models"] == {"code → big": 1, "code → small": 1, "default → small": 1}
    assert "fallbacks    big → small: 1" in render_table(s)


@pytest.mark.parametrize("result, cause", [
    (R(0, status=429, error="429: queue full (12 waiting)"), "429: queue full (N waiting)"),
    (R(0, status=400, error="400: the prompt has 4348 tokens, more than 512"), "400: the prompt has N tokens, more than N"),
    (R(0, status=0, error="ReadTimeout: timed out"), "no response: ReadTimeout"),
    (R(0, status=0, error="ConnectError"), "no response: ConnectError"),
    (R(0, status=200, error="stream ended without [DONE]"), "stream ended without [DONE]"),
])
def test_error_cause(result, cause):
    from laya_desktop.loadtest.report import error_cause
    assert error_cause(result) == cause


def test_errors_by_cause_groups_and_orders_by_count():
    results = [R(i, status=429, error=f"429: queue full ({i} waiting)") for i in range(3)]
    results.append(R(3, status=0, error="ConnectError"))
    assert aggregate(results, 1.0)["errors_by_cause"] == {"429: queue full (N waiting)": 3,
                                                         "no response: ConnectError": 1}


@pytest.mark.parametrize("values, bins, edges0, counts", [
    ([], 4, None, []),
    ([5.0, 5.0], 4, 5.0, [2]),
    ([0.0, 1.0, 2.0, 3.0, 4.0], 4, 0.0, [1, 1, 1, 2]),      # the maximum falls in the last bin
])
def test_histogram(values, bins, edges0, counts):
    from laya_desktop.loadtest.report import histogram
    edges, got = histogram(values, bins)
    assert got == counts
    assert (edges[0] if edges else None) == edges0 and (len(edges) == len(got) + 1 if got else edges == [])


def test_itl_is_measured_from_content_chunks():
    report = run_loadtest_sync("http://engine", concurrency=1, requests=1, prompts=["chunks"],
                               transport=make_transport([]))
    r = report.results[0]
    assert r.ok and r.itl_ms is not None and r.itl_ms >= 0   # three chunks, two gaps


def test_per_prompt_tags_join_the_global_ones_and_fallback_is_read():
    from laya_desktop.loadtest.prompts import Prompt
    seen = []
    base = make_transport(seen)

    def handler(request):
        resp = base.handle_request(request)
        resp.headers["X-Laya-Fallback-From"] = "big"
        return resp
    report = run_loadtest_sync("http://engine", concurrency=1, requests=2,
                               prompts=[Prompt("a", ("code",)), Prompt("b")], tags=["lt"],
                               transport=httpx.MockTransport(handler))
    assert [req.headers.get("x-laya-tags") for req, _ in seen] == ["lt,code", "lt"]
    assert report.summary()["fallbacks"] == {"big → gemma": 2}
    assert [r.prompt_chars for r in report.results] == [1, 1]


def test_rate_mode_sends_poisson_arrivals_regardless_of_in_flight():
    seen = []
    report = asyncio.run(run_loadtest("http://engine", concurrency=1, requests=20, rate=200.0,
                                      transport=make_transport(seen)))
    assert len(report.results) == 20 and all(r.ok for r in report.results)
    starts = sorted(r.started_s for r in report.results)
    assert starts[-1] < 1.0                       # 20 at 200/s: about 0.1 s, not 20 round trips
    s = report.summary()
    assert s["mode"] == "rate" and s["rate"] == 200.0


def test_poisson_arrivals_have_the_asked_mean():
    from itertools import islice

    from laya_desktop.loadtest.generator import poisson_arrivals
    times = list(islice(poisson_arrivals(50.0, seed=3), 5000))
    assert times == sorted(times)
    assert times[-1] / len(times) == pytest.approx(1 / 50.0, rel=0.05)


def test_duration_bounds_the_run_without_a_count():
    report = asyncio.run(run_loadtest("http://engine", concurrency=2, requests=None, duration_s=0.3,
                                      transport=make_transport([])))
    assert report.results and max(r.started_s for r in report.results) < 0.3 + 0.05
    assert report.summary()["duration_s"] == 0.3


def test_neither_count_nor_duration_is_refused():
    with pytest.raises(ValueError):
        asyncio.run(run_loadtest("http://engine", requests=None))


# -- prompts and exports -------------------------------------------------------------------------------

def test_builtin_mixes():
    from laya_desktop.loadtest.prompts import LONG_CHARS, builtin
    assert all(p.tags == ("code",) for p in builtin("code"))
    assert all(len(p.text) >= LONG_CHARS - 1 for p in builtin("long"))
    mixed = builtin("mixed")
    assert {p.tags for p in mixed} == {(), ("code",)} and max(len(p.text) for p in mixed) >= LONG_CHARS - 1
    with pytest.raises(ValueError, match="valid: short"):
        builtin("nope")


@pytest.mark.parametrize("text, problem", [
    ('{"prompt": "a", "tags": ["x"]}\n\n{"prompt": "b"}\n', None),
    ('{"prompt": "a"}\n{oops\n', ":2: not JSON"),
    ('{"text": "a"}\n', ':1: needs a non-empty "prompt"'),
    ('{"prompt": "a", "tags": "x"}\n', '"tags" must be a list'),
    ("\n", "no prompts"),
])
def test_read_jsonl(tmp_path, text, problem):
    from laya_desktop.loadtest.prompts import Prompt, read_jsonl
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    if problem is None:
        assert read_jsonl(str(path)) == [Prompt("a", ("x",)), Prompt("b")]
    else:
        with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
            read_jsonl(str(path))


def test_exports_parse(tmp_path):
    import csv

    from laya_desktop.loadtest.export import write_csv, write_json
    report = LoadTestReport([R(0, ttft=12.0), R(1, status=429, error="429: full")], wall_s=2.0, url="u")
    write_json(report, tmp_path / "r.json", sweep={"steps": []})
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary"]["requests"] == 2 and data["requests"][1]["status"] == 429 and data["sweep"] == {"steps": []}
    assert write_csv(report.results, tmp_path / "r.csv") == 2
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [r["status"] for r in rows] == ["200", "429"] and rows[0]["ttft_ms"] == "12.0" and rows[1]["ttft_ms"] == ""
