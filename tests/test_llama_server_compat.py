"""What llama-server's clients send, against the real engine process and a real llama.cpp runner
on tiny GGUFs, through the real openai and anthropic SDKs: the routes without /v1,
token-id embeddings, n choices, llama-server's fields honoured or refused by name, `timings`,
Anthropic's message_start usage, a tool call's first delta."""
from __future__ import annotations

import json

import anthropic
import gguf
import httpx
import openai
import pytest

from engine_harness import running_engine
from gguf_factory import write_tiny_gguf

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
# no arguments: the random-weight model's forced call then ends within a few tokens
NOW = {"type": "function", "function": {"name": "now", "parameters": {"type": "object",
                                                                        "properties": {}}}}
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama-compat")
    emb = write_tiny_gguf(folder / "emb.gguf", pooling_type=gguf.PoolingType.MEAN)
    config = {
        "models": [
            {"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf), "n_ctx": 1024,
             "parallel": 3, "idle_ttl_s": 0},
            {"name": "emb", "backend": "llama_cpp", "path": str(emb), "n_ctx": 256,
             "parallel": 1, "embedding": True},
        ],
        "routes": [{"name": "emb", "match": {"path": ["/v1/embeddings", "/embeddings"]},
                    "target": "emb"},
                   {"name": "default", "target": "tiny"}],
    }
    with running_engine(config, folder) as eng:
        yield eng


@pytest.fixture
def http(engine):
    with engine.client() as c:
        yield c


def test_every_openai_route_answers_without_v1_too(engine, http):
    for prefix in ("/v1", ""):
        chat = http.post(prefix + "/chat/completions",
                         json={"messages": HI, "max_tokens": 3, "temperature": 0})
        assert chat.status_code == 200, chat.text
        assert chat.json()["object"] == "chat.completion"
        done = http.post(prefix + "/completions", json={"prompt": "a", "max_tokens": 3})
        assert done.status_code == 200 and done.json()["object"] == "text_completion"
        emb = http.post(prefix + "/embeddings", json={"input": "hello"})
        assert emb.status_code == 200 and len(emb.json()["data"]) == 1
        assert [m["id"] for m in http.get(prefix + "/models").json()["data"]] == ["auto", "tiny", "emb"]
        assert http.get(prefix + "/models/tiny").json()["id"] == "tiny"
        resp = http.post(prefix + "/responses", json={"input": "hi", "max_output_tokens": 3})
        assert resp.status_code == 200 and resp.json()["object"] == "response"
    # an SDK whose base_url lacks /v1
    sdk = openai.OpenAI(base_url=engine.url, api_key="unused", max_retries=0)
    assert sdk.chat.completions.create(model="auto", messages=HI, max_tokens=2).choices


def test_embeddings_take_token_ids_and_arrays_of_them(http):
    flat = http.post("/v1/embeddings", json={"input": [12, 34, 56]})
    assert flat.status_code == 200, flat.text
    assert len(flat.json()["data"]) == 1 and flat.json()["usage"]["prompt_tokens"] == 3
    nested = http.post("/v1/embeddings", json={"input": [[12, 34], [56, 78, 90]]})
    assert [d["index"] for d in nested.json()["data"]] == [0, 1]
    assert nested.json()["usage"]["prompt_tokens"] == 5
    # the same tokens as ids or as text give the same vector
    sdk_vec = http.post("/v1/embeddings", json={"input": [[12, 34]]}).json()["data"][0]["embedding"]
    assert nested.json()["data"][0]["embedding"] == pytest.approx(sdk_vec)


def test_embeddings_refuse_empty_and_out_of_vocabulary_inputs_clearly(http):
    empty = http.post("/v1/embeddings", json={"input": ""})
    assert empty.status_code == 400
    assert "empty string" in empty.json()["error"]["message"]
    assert "token arrays" not in empty.json()["error"]["message"]
    mixed = http.post("/v1/embeddings", json={"input": [[1, "x"]]})
    assert mixed.status_code == 400 and "input[0]" in mixed.json()["error"]["message"]
    huge = http.post("/v1/embeddings", json={"input": [10 ** 9]})
    assert huge.status_code == 400 and "vocabulary" in huge.json()["error"]["message"]


def test_n_choices_on_chat_and_completions(engine):
    sdk = openai.OpenAI(base_url=engine.url + "/v1", api_key="unused", max_retries=0)
    chat = sdk.chat.completions.create(model="auto", messages=HI, max_tokens=4, n=3, seed=1)
    assert [c.index for c in chat.choices] == [0, 1, 2]
    assert chat.usage.completion_tokens == 12
    assert all(c.finish_reason == "length" for c in chat.choices)
    done = sdk.completions.create(model="auto", prompt="a", max_tokens=4, n=2)
    assert [c.index for c in done.choices] == [0, 1] and done.usage.completion_tokens == 8


def test_n_choices_stream_with_an_index_per_choice(engine):
    sdk = openai.OpenAI(base_url=engine.url + "/v1", api_key="unused", max_retries=0)
    stream = sdk.chat.completions.create(model="auto", messages=HI, max_tokens=4, n=2, stream=True,
                                         stream_options={"include_usage": True})
    chunks = list(stream)
    finishes = {c.choices[0].index: c.choices[0].finish_reason for c in chunks
                if c.choices and c.choices[0].finish_reason}
    assert finishes == {0: "length", 1: "length"}
    roles = [c.choices[0].index for c in chunks if c.choices and c.choices[0].delta.role]
    assert sorted(roles) == [0, 1]
    assert chunks[-1].usage.completion_tokens == 8


def test_n_over_the_models_parallel_is_refused_by_name(http):
    reply = http.post("/v1/chat/completions", json={"messages": HI, "n": 4})
    assert reply.status_code == 400 and "'n'" in reply.json()["error"]["message"]
    reply = http.post("/v1/chat/completions", json={"messages": HI, "n": 0})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_n"


@pytest.mark.parametrize("path,base", [("/v1/chat/completions", {"messages": HI}),
                                       ("/v1/completions", {"prompt": "a"})])
@pytest.mark.parametrize("field,value", [
    ("definitely_not_a_field", 1), ("grammar", 7), ("timings_per_token", 1),
    ("return_progress", True), ("verbose", "yes"), ("n_probs", 3), ("samplers", ["top_k"]),
    ("typical_p", 0.5), ("mirostat", 2), ("ignore_eos", True), ("cache_prompt", "no"),
    ("id_slot", "first")])
def test_fields_not_taken_are_refused_by_name(http, path, base, field, value):
    reply = http.post(path, json={**base, field: value, "max_tokens": 2})
    assert reply.status_code == 400, reply.text
    assert f"'{field}'" in reply.json()["error"]["message"]


def test_continue_final_message_is_refused_on_chat(http):
    reply = http.post("/v1/chat/completions", json={"messages": HI, "continue_final_message": True})
    assert reply.status_code == 400 and "continue_final_message" in reply.json()["error"]["message"]


def test_llama_server_fields_in_the_values_laya_honours(http):
    reply = http.post("/v1/chat/completions", json={
        "messages": HI, "max_tokens": 3, "cache_prompt": True, "id_slot": 0, "min_p": 0.1,
        "top_k": 5, "dry_multiplier": 0.5, "repeat_last_n": 16})
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("path,base", [("/v1/chat/completions", {"messages": HI}),
                                       ("/v1/completions", {"prompt": "a"})])
@pytest.mark.parametrize("shape", ["top_level", "json_object_schema"])
def test_json_schema_fields_constrain_the_output(http, path, base, shape):
    schema = {"type": "object", "properties": {"a": {"const": "xyz"}}, "required": ["a"]}
    extra = {"json_schema": schema} if shape == "top_level" else {
        "response_format": {"type": "json_object", "schema": schema}}
    reply = http.post(path, json={**base, **extra, "max_tokens": 40, "temperature": 0})
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    text = choice["message"]["content"] if "message" in choice else choice["text"]
    assert json.loads(text) == {"a": "xyz"}


def test_a_schema_past_the_limits_is_refused_naming_json_schema(http):
    schema = {"type": "string", "maxLength": 100000}
    reply = http.post("/v1/chat/completions", json={"messages": HI, "json_schema": schema})
    assert reply.status_code == 400 and "'json_schema'" in reply.json()["error"]["message"]


def test_timings_in_the_answer_and_the_last_chunk(http):
    body = http.post("/v1/chat/completions", json={"messages": HI, "max_tokens": 5}).json()
    assert body["timings"]["predicted_n"] == 5
    assert body["timings"]["prompt_n"] + body["timings"]["cache_n"] == body["usage"]["prompt_tokens"]
    assert body["timings"]["predicted_ms"] >= 0
    with http.stream("POST", "/v1/completions",
                     json={"prompt": "a", "max_tokens": 4, "stream": True}) as reply:
        events = [json.loads(line[6:]) for line in reply.iter_lines()
                  if line.startswith("data: {")]
    assert events[-1]["timings"]["predicted_n"] == 4
    assert all("timings" not in e for e in events[:-1])


def test_timings_per_token_on_each_content_chunk(http):
    with http.stream("POST", "/v1/chat/completions", json={
            "messages": HI, "max_tokens": 5, "stream": True, "timings_per_token": True}) as reply:
        events = [json.loads(line[6:]) for line in reply.iter_lines()
                  if line.startswith("data: {")]
    assert "timings" not in events[0]
    counts = [e["timings"]["predicted_n"] for e in events[1:-1] if e["choices"][0]["delta"]]
    assert counts and counts == sorted(counts) and counts[-1] <= 5
    assert all("predicted_per_second" in e["timings"] for e in events[1:])


def test_a_tool_call_stream_opens_with_null_content_and_text_with_empty(engine):
    sdk = openai.OpenAI(base_url=engine.url + "/v1", api_key="unused", max_retries=0)
    calls = list(sdk.chat.completions.create(
        model="auto", messages=HI, max_tokens=200, stream=True, tools=[WEATHER, NOW],
        tool_choice={"type": "function", "function": {"name": "now"}}))
    first = calls[0].choices[0].delta
    assert first.role == "assistant" and first.content is None
    assert any(c.choices and c.choices[0].delta.tool_calls for c in calls)
    text = list(sdk.chat.completions.create(model="auto", messages=HI, max_tokens=3, stream=True))
    assert text[0].choices[0].delta.role == "assistant" and text[0].choices[0].delta.content == ""


def test_anthropic_message_start_has_the_prompts_tokens(engine):
    client = anthropic.Anthropic(base_url=engine.url, api_key="unused", max_retries=0)
    with client.messages.stream(model="auto", max_tokens=4,
                                messages=[{"role": "user", "content": "hello there"}]) as stream:
        events = list(stream)
        final = stream.get_final_message()
    start = next(e for e in events if e.type == "message_start")
    assert start.message.usage.input_tokens > 0
    assert start.message.usage.cache_read_input_tokens == 0
    assert final.usage.input_tokens + final.usage.cache_read_input_tokens == \
        start.message.usage.input_tokens


def test_unknown_fields_cost_nothing_on_responses_and_messages(http):
    """The other APIs keep their own field checks (they convert into a chat body that is not
    checked again): their known fields still pass."""
    reply = http.post("/v1/responses", json={"input": "hi", "max_output_tokens": 2,
                                             "metadata": {"a": "b"}, "store": False})
    assert reply.status_code == 200, reply.text
    reply = http.post("/v1/messages", json={"messages": HI, "max_tokens": 2,
                                            "definitely_not_a_field": 1})
    assert reply.status_code == 400 and "definitely_not_a_field" in reply.text
