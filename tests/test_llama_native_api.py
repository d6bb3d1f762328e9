"""llama-server's own API on the real engine and a real llama.cpp runner (tiny GGUF): /completion
in its native format (non-streamed and streamed), /completions with both formats' fields, raw
GBNF `grammar` honoured through the guarded grammar worker and refused by name when it is bad or
too large, and llama-server's error types for a too-long prompt and a wrong key."""
from __future__ import annotations

import json

import openai
import pytest

from engine_harness import running_engine

KEY = "sk-native-test"


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    config = {"server": {"api_key": KEY},
              "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 256, "parallel": 2, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path_factory.mktemp("native")) as eng:
        yield eng


@pytest.fixture
def http(engine):
    with engine.client(headers={"Authorization": f"Bearer {KEY}"}) as c:
        yield c


def test_completion_answers_llama_servers_own_format(http):
    r = http.post("/completion", json={"prompt": "once upon", "n_predict": 4, "temperature": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body["content"], str) and body["stop"] is True
    assert 1 <= body["tokens_predicted"] <= 4 and body["tokens_evaluated"] > 0
    assert body["stop_type"] in ("limit", "eos") and body["generation_settings"]["n_predict"] == 4
    assert body["timings"]["predicted_n"] == body["tokens_predicted"]
    assert "choices" not in body
    if body["tokens_predicted"] == 4:
        assert body["stop_type"] == "limit" and body["stopped_limit"] is True


def test_completion_streams_data_objects_ending_with_stop_true(http):
    with http.stream("POST", "/completion", json={"prompt": "once upon", "n_predict": 5,
                                                  "temperature": 0, "stream": True}) as r:
        assert r.status_code == 200
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert "data: [DONE]" not in lines
    chunks = [json.loads(line[6:]) for line in lines]
    assert all(c["stop"] is False for c in chunks[:-1]) and chunks[-1]["stop"] is True
    streamed = "".join(c["content"] for c in chunks[:-1])
    assert chunks[-1]["tokens_predicted"] <= 5 and chunks[-1]["content"] == ""
    whole = http.post("/completion", json={"prompt": "once upon", "n_predict": 5, "temperature": 0})
    assert whole.json()["content"] == streamed


def test_completions_without_v1_carries_both_formats(engine, http):
    r = http.post("/completions", json={"prompt": "once upon", "max_tokens": 3, "temperature": 0})
    body = r.json()
    assert body["object"] == "text_completion" and body["content"] == body["choices"][0]["text"]
    assert body["tokens_predicted"] == body["usage"]["completion_tokens"]
    sdk = openai.OpenAI(base_url=engine.url, api_key=KEY, max_retries=0)
    assert sdk.completions.create(model="tiny", prompt="a", max_tokens=2).choices[0].text is not None


def test_bad_n_predict_is_refused_by_name(http):
    for bad in (0, -2, "4", True):
        r = http.post("/completion", json={"prompt": "a", "n_predict": bad})
        assert r.status_code == 400 and "n_predict" in r.json()["error"]["message"], r.text


def test_raw_gbnf_grammar_constrains_chat_and_completion(http):
    chat = http.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
        "grammar": 'root ::= "a"{5,5}'})
    assert chat.status_code == 200, chat.text
    assert chat.json()["choices"][0]["message"]["content"] == "aaaaa"
    done = http.post("/completion", json={"prompt": "x", "n_predict": 8,
                                          "grammar": 'root ::= ("yes" | "no") "!"'})
    assert done.status_code == 200, done.text
    assert done.json()["content"] in ("yes!", "no!")


@pytest.mark.parametrize("grammar,says", [
    ("root ::= this is (not valid GBNF", "could not parse"),
    ("main ::= \"a\"", "root"),
    ("root ::= root \"a\"", "left recursion"),
    ("root ::= " + "(" * 80 + '"a"' + ")" * 80, "nest 80 deep"),
    ('root ::= "a"{0,5000}', "repetition"),
    ("", "non-empty"),
    (7, "non-empty"),
])
def test_bad_or_oversized_grammars_are_400_naming_grammar(http, grammar, says):
    r = http.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "grammar": grammar})
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert "grammar" in message and says in message, message
    # the runner is still there for the next request
    ok = http.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert ok.status_code == 200


def test_grammar_with_a_json_schema_is_refused(http):
    r = http.post("/v1/completions", json={"prompt": "a", "grammar": 'root ::= "a"',
                                           "response_format": {"type": "json_object"}})
    assert r.status_code == 400 and "grammar" in r.json()["error"]["message"]


def test_too_long_prompt_has_llama_servers_type_and_counts(http):
    long = "word " * 600
    for stream in (False, True):
        r = http.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": long}], "stream": stream})
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["type"] == "exceed_context_size_error"
        assert error["code"] == "context_length_exceeded"
        assert error["n_ctx"] == 256 and error["n_prompt_tokens"] > 256


def test_wrong_key_is_authentication_error(engine):
    with engine.client() as c:
        for headers in ({}, {"Authorization": "Bearer nope"}):
            r = c.post("/completion", json={"prompt": "a"}, headers=headers)
            assert r.status_code == 401
            assert r.json()["error"]["type"] == "authentication_error"
            assert r.json()["error"]["code"] == "invalid_api_key"


def test_verbose_adds_llama_servers_own_answer(http):
    messages = [{"role": "system", "content": "Book"}, {"role": "user", "content": "hi"}]
    plain = http.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 2,
                                                    "verbose": False}).json()
    assert "__verbose" not in plain
    verbose = http.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 2,
                                                      "verbose": True}).json()
    assert "Book" in verbose["__verbose"]["prompt"]
    assert verbose["__verbose"]["content"] == verbose["choices"][0]["message"]["content"]
    done = http.post("/v1/completions", json={"prompt": "pages", "max_tokens": 2,
                                              "verbose": True}).json()
    assert done["__verbose"]["prompt"] == "pages"
    assert http.post("/v1/completions", json={"prompt": "a", "verbose": "yes"}).status_code == 400


def test_n_probs_response_fields_and_prompt_objects_on_completion(http):
    r = http.post("/completion", json={"prompt": {"prompt_string": "once upon"}, "n_probs": 3,
                                       "n_predict": 3, "temperature": 0})
    assert r.status_code == 200, r.text
    probs = r.json()["completion_probabilities"]
    assert len(probs) == r.json()["tokens_predicted"]
    assert "".join(p["token"] for p in probs) == r.json()["content"]
    for p in probs:
        assert p["id"] >= 0 and p["logprob"] <= 0 and len(p["top_logprobs"]) == 3
        assert p["top_logprobs"][0]["logprob"] >= p["logprob"]
    with http.stream("POST", "/completion", json={"prompt": "once upon", "n_probs": 2,
                                                  "n_predict": 3, "temperature": 0,
                                                  "stream": True}) as s:
        chunks = [json.loads(line[6:]) for line in s.iter_lines() if line.startswith("data: ")]
    assert all(len(c["completion_probabilities"]) >= 1 for c in chunks if not c["stop"])
    picked = http.post("/completion", json={"prompt": "a", "n_predict": 2, "response_fields": [
        "content", "generation_settings/n_predict", "nope/x"]}).json()
    assert set(picked) == {"content", "generation_settings/n_predict"}
    assert picked["generation_settings/n_predict"] == 2
    for bad in ({"prompt": {"prompt_string": "a", "multimodal_data": "x"}},
                {"prompt": "a", "n_probs": 99}, {"prompt": "a", "response_fields": "content"}):
        reply = http.post("/completion", json=bad)
        assert reply.status_code == 400, reply.text


def test_cache_prompt_false_reads_the_whole_prompt_again(http):
    body = {"prompt": "the same prompt every time", "n_predict": 2, "temperature": 0}
    http.post("/completion", json=body)
    cached = http.post("/completion", json=body).json()
    assert cached["tokens_cached"] > 0
    fresh = http.post("/completion", json={**body, "cache_prompt": False}).json()
    assert fresh["tokens_cached"] == 0 and fresh["content"] == cached["content"]


def test_two_assistant_messages_at_the_end_are_refused(http):
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"},
             {"role": "assistant", "content": "b"}]
    r = http.post("/v1/chat/completions", json={"messages": turns, "max_tokens": 2})
    assert r.status_code == 400 and "two assistant messages" in r.json()["error"]["message"]
    ok = http.post("/v1/chat/completions", json={"messages": turns[:2], "max_tokens": 2})
    assert ok.status_code == 200


def test_health_needs_no_key_as_llama_servers(engine):
    with engine.client() as c:
        r = c.get("/health")
        assert r.status_code == 200 and r.json() == {"status": "ok"}
        assert c.get("/v1/models").status_code == 401
