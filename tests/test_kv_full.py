"""`kv_full` -> 503 with Retry-After in a real engine and a real llama.cpp runner.

The runner's unified KV cache holds n_ctx x parallel cells and each sequence is capped at n_ctx,
so the API alone cannot fill it. LAYA_FAULT_KV_FULL_AFTER (test-only, read by the llama.cpp
backend) makes the cache behave as if it held that many cells: the real decode path then fails
as llama_decode does when no KV slot is left, and everything from there on is the shipped code.
"""
from __future__ import annotations

import json

import pytest

from engine_harness import running_engine

CELLS = 48
# a prompt longer than the injected cache (but well inside n_ctx) fails while it is read;
# a short prompt with a long answer fails part way through its generation
LONG_PROMPT = {"messages": [{"role": "user", "content": "count " * 80}], "max_tokens": 4}
LONG_ANSWER = {"messages": [{"role": "user", "content": "go"}], "max_tokens": 400}
SHORT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def config(gguf) -> dict:
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 1024,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("kv_full")
    with running_engine(config(tiny_gguf), folder, env={"LAYA_FAULT_KV_FULL_AFTER": str(CELLS)}) as eng:
        yield eng


def assert_served(c) -> None:
    r = c.post("/v1/chat/completions", json=SHORT)
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] >= 1


def assert_kv_full_503(r) -> dict:
    assert r.status_code == 503, r.text
    assert int(r.headers["retry-after"]) >= 1
    return r.json()


def sse_data(lines) -> list[dict]:
    return [json.loads(line[5:]) for line in lines if line.startswith("data: {")]


# (path, body): OpenAI's chat completions (the prompt, then the generation overflows), its
# completions and the Responses API; each answers {"error": {"code": ...}}
OPENAI_SHAPED = {"chat-prompt": ("/v1/chat/completions", LONG_PROMPT),
                 "chat-generation": ("/v1/chat/completions", LONG_ANSWER),
                 "completions": ("/v1/completions", {"prompt": "go", "max_tokens": 400}),
                 "responses": ("/v1/responses", {"input": "go", "max_output_tokens": 400})}


@pytest.mark.parametrize("path, body", OPENAI_SHAPED.values(), ids=OPENAI_SHAPED.keys())
def test_kv_full_is_503_then_the_next_is_served(engine, path, body):
    with engine.client() as c:
        error = assert_kv_full_503(c.post(path, json=body))["error"]
        assert error["code"] == "kv_full" and "KV cache" in error["message"], error
        assert_served(c)


def test_messages_kv_full_is_503_in_anthropic_shape(engine):
    with engine.client() as c:
        body = assert_kv_full_503(c.post("/v1/messages", json={"model": "tiny", **LONG_ANSWER}))
        assert body["type"] == "error" and body["error"]["type"] == "overloaded_error", body
        assert "KV cache" in body["error"]["message"]
        assert_served(c)


def test_stream_gets_the_error_event_then_next_is_served(engine):
    with engine.client() as c:
        with c.stream("POST", "/v1/chat/completions", json={**LONG_ANSWER, "stream": True}) as r:
            assert r.status_code == 200   # the stream had started: the error comes as an event
            data = sse_data(r.iter_lines())
        tokens = [d for d in data if d.get("choices")]
        errors = [d["error"] for d in data if "error" in d]
        assert tokens, "the stream failed before any token: the fault fired too early"
        assert errors and errors[-1]["code"] == "kv_full", data[-3:]
        assert not any(d["choices"][0].get("finish_reason") for d in tokens)
        assert_served(c)
        kinds = [e["kind"] for e in c.get("/admin/events").json()["events"]]
        assert "runner_crashed" not in kinds   # the runner reported it and lived on


def test_messages_stream_gets_the_error_event(engine):
    with engine.client() as c:
        body = {"model": "tiny", **LONG_ANSWER, "stream": True}
        with c.stream("POST", "/v1/messages", json=body) as r:
            assert r.status_code == 200
            data = sse_data(r.iter_lines())
        kinds = [d["type"] for d in data]
        assert "content_block_delta" in kinds, kinds
        assert kinds[-1] == "error" and data[-1]["error"]["type"] == "overloaded_error", data[-2:]
        assert "message_stop" not in kinds
        assert_served(c)
