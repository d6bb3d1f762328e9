"""Chat completions with tools, structured output and logprobs on a real engine and real models.

SmolLM2-135M-Instruct (built in) serves the text; the tiny random GGUF serves embeddings. The
client is the `openai` SDK, and every JSON answer is checked with `jsonschema`.
"""
from __future__ import annotations

import json

import httpx
import jsonschema
import pytest
from openai import BadRequestError, OpenAI

from engine_harness import running_engine

pytestmark = pytest.mark.slow  # make test-slow: SmolLM2's real tool calls end to end

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
READ_FILE = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    config = {
        "models": [
            {"name": "smol", "backend": "llama_cpp", "path": "builtin:smollm2-135m-instruct",
             "n_ctx": 2048, "parallel": 2},
            {"name": "smol-256", "backend": "llama_cpp", "path": "builtin:smollm2-135m-instruct",
             "n_ctx": 256, "parallel": 1},
            {"name": "embed", "backend": "llama_cpp", "path": str(tiny_gguf), "n_ctx": 256,
             "parallel": 1, "embedding": True},
        ],
        "routes": [{"name": "embeddings", "match": {"path": ["/v1/embeddings"]}, "target": "embed"},
                   {"name": "short-first", "match": {"tags": ["short-first"]}, "target": "smol-256",
                    "fallback": ["smol"]},
                   {"name": "default", "target": "smol"}],
    }
    with running_engine(config, tmp_path_factory.mktemp("chat-tools")) as eng:
        yield eng


@pytest.fixture(scope="module")
def client(engine):
    return OpenAI(base_url=engine.url + "/v1", api_key="unused", timeout=120, max_retries=0)


def test_named_tool_choice_forces_a_call_that_validates(client):
    reply = client.chat.completions.create(
        model="auto", max_tokens=80, temperature=0,
        messages=[{"role": "user", "content": "What is the weather like in Paris?"}],
        tools=[WEATHER, READ_FILE], tool_choice={"type": "function", "function": {"name": "get_weather"}})
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])


def test_required_tool_choice_streams_a_call(client):
    stream = client.chat.completions.create(
        model="auto", max_tokens=80, temperature=0, stream=True,
        messages=[{"role": "user", "content": "Show me the file notes.txt"}],
        tools=[WEATHER, READ_FILE], tool_choice="required")
    calls, finish = [], None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        calls += delta.tool_calls or []
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and len(calls) == 1
    tool = {"get_weather": WEATHER, "read_file": READ_FILE}[calls[0].function.name]
    jsonschema.validate(json.loads(calls[0].function.arguments), tool["function"]["parameters"])


def test_tool_result_round_trip_reaches_the_template(client, engine):
    messages = [
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": "celsius"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 21, "sky": "sunny"}'},
    ]
    reply = client.chat.completions.create(model="auto", max_tokens=24, temperature=0,
                                           messages=messages, tools=[WEATHER], tool_choice="none")
    assert reply.choices[0].message.content
    assert reply.choices[0].message.tool_calls is None
    # With tools offered and a result in the history, the prompt is longer than without them.
    with_tools = reply.usage.prompt_tokens
    bare = client.chat.completions.create(model="auto", max_tokens=1, temperature=0,
                                          messages=messages[:1]).usage.prompt_tokens
    assert with_tools > bare


def test_auto_tool_choice_answers_text_or_a_valid_call(client):
    reply = client.chat.completions.create(
        model="auto", max_tokens=60, temperature=0, tools=[WEATHER],
        messages=[{"role": "user", "content": "Call get_weather for Rome in celsius."}])
    message = reply.choices[0].message
    if message.tool_calls:
        assert reply.choices[0].finish_reason == "tool_calls"
        jsonschema.validate(json.loads(message.tool_calls[0].function.arguments),
                            WEATHER["function"]["parameters"])
    else:
        assert message.content


def test_json_schema_response_format_validates(client):
    reply = client.chat.completions.create(
        model="auto", max_tokens=60, temperature=0,
        messages=[{"role": "user", "content": "Invent a person with a name and an age."}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}})
    jsonschema.validate(json.loads(reply.choices[0].message.content), PERSON)


def test_json_object_response_format_is_an_object(client):
    reply = client.chat.completions.create(
        model="auto", max_tokens=300, temperature=0, response_format={"type": "json_object"},
        messages=[{"role": "user", "content": "Give me a short JSON object with a cat's name."}])
    assert reply.choices[0].finish_reason == "stop"   # the grammar ended it, not max_tokens
    assert isinstance(json.loads(reply.choices[0].message.content), dict)


def test_chat_logprobs_one_entry_per_token(client):
    reply = client.chat.completions.create(
        model="auto", max_tokens=8, temperature=0, logprobs=True, top_logprobs=3,
        messages=[{"role": "user", "content": "Say hello."}])
    entries = reply.choices[0].logprobs.content
    assert len(entries) == reply.usage.completion_tokens
    for entry in entries:
        assert len(entry.top_logprobs) == 3 and entry.logprob <= 0
        # greedy: the chosen token is the most likely one
        assert entry.logprob == pytest.approx(entry.top_logprobs[0].logprob, abs=1e-4)
    assert "".join(e.token for e in entries).strip()


def test_completions_logprobs_legacy_shape(client):
    reply = client.completions.create(model="smol", prompt="The sea is", max_tokens=5,
                                      temperature=0, logprobs=2)
    lp = reply.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == reply.usage.completion_tokens
    assert all(len(top) <= 2 for top in lp.top_logprobs)
    assert lp.text_offset[0] == 0


def test_fields_the_engine_cannot_honour_are_refused_by_name(client, engine):
    with pytest.raises(BadRequestError) as info:
        client.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}],
                                       extra_body={"audio": {"voice": "alloy", "format": "wav"}})
    assert "'audio'" in info.value.message
    image = {"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    answer = httpx.post(engine.url + "/v1/chat/completions", timeout=60,
                        json={"model": "auto", "messages": [image]})
    assert answer.status_code == 400
    assert "messages[0].content[1]" in answer.json()["error"]["message"]
    bad_choice = httpx.post(engine.url + "/v1/chat/completions", timeout=60, json={
        "model": "auto", "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER],
        "tool_choice": {"type": "function", "function": {"name": "nope"}}})
    assert bad_choice.status_code == 400 and "tool_choice" in bad_choice.json()["error"]["message"]


def test_max_tokens_past_the_context_stops_with_length(client):
    reply = client.chat.completions.create(
        model="smol-256", max_tokens=100_000, temperature=1.0, seed=3,
        messages=[{"role": "user", "content": "Count upwards from 1 forever: 1, 2, 3, " * 12}],
        extra_body={"logit_bias": {"2": -100}})   # token 2 is <|im_end|>: never stop early
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.prompt_tokens + reply.usage.completion_tokens == 256


def test_embeddings_from_a_gguf_marked_embedding(client, engine):
    answer = client.embeddings.create(model="auto", input=["the sea", "a mountain"])
    vectors = [d.embedding for d in answer.data]
    assert len(vectors) == 2 and len(vectors[0]) == 64 and vectors[0] != vectors[1]
    again = client.embeddings.create(model="embed", input="the sea")
    assert again.data[0].embedding == pytest.approx(vectors[0], abs=1e-5)
    assert answer.usage.prompt_tokens > 0
    as_text = httpx.post(engine.url + "/v1/chat/completions", timeout=60, json={
        "model": "embed", "messages": [{"role": "user", "content": "hi"}]})
    assert as_text.status_code == 400 and "embeddings only" in as_text.json()["error"]["message"]
    wrong = httpx.post(engine.url + "/v1/embeddings", timeout=60, json={"model": "smol", "input": "x"})
    assert wrong.status_code == 400 and "does not serve embeddings" in wrong.json()["error"]["message"]


def test_model_by_id(client, engine):
    assert client.models.retrieve("smol").id == "smol"
    missing = httpx.get(engine.url + "/v1/models/nope", timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_a_prompt_too_long_for_the_target_goes_to_a_fallback_that_holds_it(engine):
    long_prompt = "Summarise this: " + "the quick brown fox jumps over the lazy dog. " * 60
    body = {"messages": [{"role": "user", "content": long_prompt}], "max_tokens": 4, "temperature": 0}
    routed = httpx.post(engine.url + "/v1/chat/completions", timeout=120,
                        json={**body, "model": "auto", "tags": ["short-first"]})
    assert routed.status_code == 200, routed.text
    assert routed.headers["x-laya-model"] == "smol"
    assert routed.headers["x-laya-fallback-from"] == "smol-256"
    direct = httpx.post(engine.url + "/v1/chat/completions", timeout=120, json={**body, "model": "smol-256"})
    assert direct.status_code == 400 and direct.json()["error"]["code"] == "context_length_exceeded"
