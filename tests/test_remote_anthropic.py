"""The anthropic remote backend: chat bodies translated to Messages, and Messages answers (JSON
and SSE) read back as shared outputs. End-to-end tests against a second engine are further down."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import httpx
import jsonschema
import pytest

from laya_desktop.engine import remote_anthropic
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import Failed, Finished, TextDelta, ToolCall
from laya_desktop.engine.request_body import chat_call

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_codex_request_translates():
    from starlette.datastructures import Headers

    from laya_desktop.engine.apis.responses import RESPONSES
    codex = json.loads((Path(__file__).parent / "data" / "codex_request.json").read_text())
    body = remote_anthropic.messages_body(RESPONSES.parse(codex, Headers({})).chat, "claude-x")
    assert body["model"] == "claude-x" and body["system"] and body["tool_choice"] == {"type": "auto"}
    assert "exec_command" in [t["name"] for t in body["tools"]]
    assert all(t["input_schema"]["type"] == "object" for t in body["tools"])
    assert [m["role"] for m in body["messages"]][0] == "user"


def test_auth_headers(monkeypatch):
    model = SimpleNamespace(api_key_env="UPSTREAM_KEY")
    monkeypatch.setenv("UPSTREAM_KEY", "sk-test")
    assert remote_anthropic.auth_headers(model, {}) == {"anthropic-version": "2023-06-01",
                                                        "x-api-key": "sk-test"}
    forwarded = remote_anthropic.auth_headers(model, {"anthropic-version": "2024-01-01",
                                                      "anthropic-beta": "b1,b2", "x-api-key": "client"})
    assert forwarded == {"anthropic-version": "2024-01-01", "anthropic-beta": "b1,b2", "x-api-key": "sk-test"}
    assert "x-api-key" not in remote_anthropic.auth_headers(SimpleNamespace(api_key_env=None), {})


def body_of(**chat):
    chat.setdefault("messages", [{"role": "user", "content": "hi"}])
    return remote_anthropic.messages_body(chat_call(chat).chat, "claude-x")


def test_messages_body_with_tools_and_results():
    body = body_of(messages=[
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Oslo and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
        {"role": "tool", "tool_call_id": "call_2", "content": "sun"},
        {"role": "user", "content": "thanks"},
    ], tools=[WEATHER], tool_choice="required", parallel_tool_calls=False, max_tokens=50,
        temperature=0.3, stop="END", stream=True)
    assert body == {
        "model": "claude-x", "max_tokens": 50, "system": "be brief", "temperature": 0.3,
        "stop_sequences": ["END"], "stream": True,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "weather in Oslo and Rome?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "rain"}]},
                {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "sun"}]},
                {"type": "text", "text": "thanks"}]}],
        "tools": [{"name": "get_weather", "description": "Weather in a city",
                   "input_schema": WEATHER["function"]["parameters"]}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True}}


@pytest.mark.parametrize("choice,expected", [
    ("auto", {"type": "auto"}), ("none", {"type": "none"}),
    ({"type": "function", "function": {"name": "get_weather"}}, {"type": "tool", "name": "get_weather"})])
def test_tool_choice(choice, expected):
    assert body_of(tools=[WEATHER], tool_choice=choice)["tool_choice"] == expected


def test_defaults_and_images():
    body = body_of(messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}])
    assert body["max_tokens"] == remote_anthropic.DEFAULT_MAX_TOKENS and "tools" not in body
    assert body["messages"][0]["content"][1:] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]


@pytest.mark.parametrize("field,value", [
    ("response_format", {"type": "json_object"}), ("logprobs", True), ("seed", 3),
    ("frequency_penalty", 0.5)])
def test_untranslatable_fields_are_refused_by_name(field, value):
    with pytest.raises(ApiError) as info:
        body_of(**{field: value})
    assert info.value.status == 400 and f"'{field}'" in info.value.message


def test_n_and_hot_temperature_are_refused():
    for chat in ({"n": 2}, {"temperature": 1.5}):
        with pytest.raises(ApiError) as info:
            remote_anthropic.messages_body({"messages": [{"role": "user", "content": "x"}], **chat}, "m")
        assert info.value.status == 400


def collect(response: httpx.Response, stream: bool) -> list:
    async def run():
        return [out async for out in remote_anthropic.outputs(response, stream)]
    return asyncio.run(run())


def sse(*events: dict) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_json_answer():
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
               "content": [{"type": "thinking", "thinking": "...", "signature": "s"},
                           {"type": "text", "text": "Checking."},
                           {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
               "stop_reason": "tool_use", "stop_sequence": None,
               "usage": {"input_tokens": 5, "cache_read_input_tokens": 10, "output_tokens": 7}}
    outs = collect(httpx.Response(200, json=message), False)
    assert outs[:2] == [TextDelta("Checking."), ToolCall("toolu_1", "get_weather", '{"city": "Oslo"}')]
    assert outs[2].finish_reason == "tool_calls"
    assert (outs[2].usage.prompt_tokens, outs[2].usage.completion_tokens, outs[2].usage.cached_tokens) == (15, 7, 10)


def test_sse_answer():
    raw = sse({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                    "content": [], "usage": {"input_tokens": 9, "output_tokens": 1}}},
              {"type": "ping"},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
              {"type": "content_block_stop", "index": 0},
              {"type": "content_block_start", "index": 1,
               "content_block": {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}},
              {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"ci'}},
              {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": 'ty":"Rome"}'}},
              {"type": "content_block_stop", "index": 1},
              {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}},
              {"type": "message_stop"})
    outs = collect(httpx.Response(200, content=raw), True)
    assert outs[:2] == [TextDelta("Hi"), ToolCall("toolu_2", "get_weather", '{"city":"Rome"}')]
    assert isinstance(outs[2], Finished) and outs[2].finish_reason == "tool_calls"
    assert (outs[2].usage.prompt_tokens, outs[2].usage.completion_tokens) == (9, 12)


@pytest.mark.parametrize("reason,finish", [("end_turn", "stop"), ("max_tokens", "length"),
                                           ("stop_sequence", "stop")])
def test_sse_stop_reasons(reason, finish):
    raw = sse({"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
              {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}},
              {"type": "message_stop"})
    assert collect(httpx.Response(200, content=raw), True)[-1].finish_reason == finish


def test_sse_error_and_cut_off():
    raw = sse({"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
              {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    failed = collect(httpx.Response(200, content=raw), True)[-1]
    assert isinstance(failed, Failed) and failed.status == 503 and "busy" in failed.message
    cut = sse({"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}})
    outs = collect(httpx.Response(200, content=cut), True)
    assert outs[0] == TextDelta("Hi") and isinstance(outs[-1], Failed) and outs[-1].status == 502


# --- end to end: a second engine is the Anthropic upstream ---------------------------------------

UPSTREAM_KEY = "upstream-secret"
WEATHER_TOOL = {"name": "get_weather", "description": "The current weather in a city.",
                "input_schema": WEATHER["function"]["parameters"]}


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """`front` routes everything to `claude` (backend anthropic), whose upstream is another engine
    that takes only its own key and only the model name `smol` (no rule matches other names)."""
    from engine_harness import running_engine
    upstream_config = {"server": {"api_key": UPSTREAM_KEY},
                       "models": [{"name": "smol", "backend": "llama_cpp",
                                   "path": "builtin:smollm2-135m-instruct", "n_ctx": 2048, "parallel": 2}],
                       "routes": [{"name": "tagged-only", "match": {"tags": ["never-sent"]},
                                   "target": "smol"}]}
    with running_engine(upstream_config, tmp_path_factory.mktemp("upstream")) as upstream:
        front_config = {"models": [
            {"name": "claude", "backend": "anthropic", "base_url": upstream.url,
             "api_key_env": "LAYA_TEST_UPSTREAM_KEY", "remote_model": "smol"},
            {"name": "claude-wrong-key", "backend": "anthropic", "base_url": upstream.url,
             "api_key_env": "LAYA_TEST_WRONG_KEY", "remote_model": "smol"},
            {"name": "chat-only", "backend": "openai", "base_url": upstream.url + "/v1",
             "api_key_env": "LAYA_TEST_UPSTREAM_KEY", "remote_model": "smol"}],
            "routes": [{"name": "default", "target": "claude"}]}
        env = {"LAYA_TEST_UPSTREAM_KEY": UPSTREAM_KEY, "LAYA_TEST_WRONG_KEY": "nope"}
        with running_engine(front_config, tmp_path_factory.mktemp("front"), env) as front:
            yield front, upstream


def _upstream_log(upstream) -> list[dict]:
    with upstream.client() as c:
        log = c.get("/admin/requests", headers={"x-api-key": UPSTREAM_KEY}).json()
    return log if isinstance(log, list) else log.get("requests", log.get("data", []))


def test_chat_request_is_translated_to_messages_upstream(engines):
    import openai
    front, upstream = engines
    client = openai.OpenAI(base_url=front.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    raw = client.chat.completions.with_raw_response.create(
        model="auto", max_tokens=12, temperature=0,
        messages=[{"role": "system", "content": "Answer briefly."},
                  {"role": "user", "content": "In one sentence, what is the sea?"}])
    reply = raw.parse()
    assert raw.headers["x-laya-model"] == "claude"
    assert reply.choices[0].message.content and reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage.prompt_tokens > 10 and 0 < reply.usage.completion_tokens <= 12
    last = _upstream_log(upstream)[-1]
    assert (last["path"], last["api"], last["model"], last["status"]) == ("/v1/messages", "messages", "smol", 200)


def test_streamed_chat_with_a_forced_tool_through_anthropic(engines):
    import openai
    front, _ = engines
    client = openai.OpenAI(base_url=front.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    stream = client.chat.completions.create(
        model="auto", max_tokens=80, temperature=0, stream=True,
        messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    calls, finish = [], None
    for chunk in stream:
        if chunk.choices:
            calls += chunk.choices[0].delta.tool_calls or []
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and [c.function.name for c in calls] == ["get_weather"]
    jsonschema.validate(json.loads(calls[0].function.arguments), WEATHER["function"]["parameters"])


def test_messages_request_passes_through(engines):
    import anthropic
    front, upstream = engines
    client = anthropic.Anthropic(base_url=front.url, api_key="unused", max_retries=0, timeout=120)
    raw = client.messages.with_raw_response.create(
        model="claude-opus-5-5", max_tokens=60, tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=[{"role": "user", "content": "Weather in Oslo?"}])
    message = raw.parse()
    assert raw.headers["x-laya-model"] == "claude"
    assert message.model == "smol"          # the upstream's own answer, as it came
    (block,) = message.content
    assert block.type == "tool_use"
    jsonschema.validate(block.input, WEATHER_TOOL["input_schema"])
    counted = client.messages.count_tokens(model="claude-opus-5-5", messages=[{"role": "user", "content": "hi"}])
    assert counted.input_tokens > 0
    paths = [(e["path"], e["model"]) for e in _upstream_log(upstream)[-2:]]
    assert paths == [("/v1/messages", "smol"), ("/v1/messages/count_tokens", "smol")]


def test_wrong_upstream_key_is_the_upstreams_401(engines):
    import anthropic
    front, _ = engines
    client = anthropic.Anthropic(base_url=front.url, api_key="unused", max_retries=0, timeout=60)
    with pytest.raises(anthropic.AuthenticationError) as info:
        client.messages.create(model="claude-wrong-key", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert info.value.body["type"] == "error"


def test_messages_request_to_a_chat_only_upstream(engines):
    """A Messages client (Claude Code's API) served by an `openai` target: chat completions upstream,
    Anthropic's events back."""
    import anthropic
    front, upstream = engines
    client = anthropic.Anthropic(base_url=front.url, api_key="unused", max_retries=0, timeout=120)
    with client.messages.stream(model="chat-only", max_tokens=60, tools=[WEATHER_TOOL],
                                tool_choice={"type": "tool", "name": "get_weather"},
                                messages=[{"role": "user", "content": "Weather in Oslo?"}]) as stream:
        message = stream.get_final_message()
    assert message.model == "chat-only" and message.stop_reason == "tool_use"
    (block,) = message.content
    jsonschema.validate(block.input, WEATHER_TOOL["input_schema"])
    last = _upstream_log(upstream)[-1]
    assert (last["path"], last["api"], last["model"]) == ("/v1/chat/completions", "chat", "smol")
