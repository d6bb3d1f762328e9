"""Anthropic Messages adapter: the body's conversion to the shared call, and its writer fed with
lists of outputs (no engine). The end-to-end tests with the anthropic SDK are further down."""
from __future__ import annotations

import asyncio
import functools
import json
import subprocess
from pathlib import Path

import jsonschema
import pydantic
import pytest
from starlette.datastructures import Headers

from agent_clients import agent_binary, claude_env
from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.apis.messages import MESSAGES
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import Collected, Failed, Finished, TextDelta, ToolCall, Usage

DATA = Path(__file__).parent / "data"
NO_HEADERS = Headers({})
WEATHER = {"name": "get_weather", "description": "Weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}


def parse(**body):
    body.setdefault("max_tokens", 100)
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return MESSAGES.parse(body, NO_HEADERS)


def refused(**body) -> str:
    with pytest.raises(ApiError) as info:
        parse(**body)
    assert info.value.status == 400
    return info.value.message


# --- Claude Code's own requests ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["claude_code_request.json", "claude_code_tool_turn.json"])
def test_claude_code_requests_are_accepted(name):
    body = json.loads((DATA / name).read_text())
    call = MESSAGES.parse(body, NO_HEADERS)
    assert call.api == "messages" and call.stream and call.body is body
    messages = call.command["messages"]
    assert messages[0]["role"] == "system"
    # the billing header is for Anthropic, not the model; the deferred placeholder stays out
    assert "x-anthropic-billing-header" not in messages[0]["content"]
    assert "DeferredToolPlaceholder" not in call.tool_names and "Bash" in call.tool_names
    assert call.command["params"]["max_tokens"] == body["max_tokens"]
    assert [m["role"] for m in messages[:3]] == ["system", "user", "system"]
    assert "hi" in messages[1]["content"] or "hello.txt" in messages[1]["content"]


def test_claude_code_tool_turn_keeps_the_call_and_its_result():
    call = MESSAGES.parse(json.loads((DATA / "claude_code_tool_turn.json").read_text()), NO_HEADERS)
    assistant, tool = call.command["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "Read"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["file_path"].endswith("hello.txt")
    assert tool == {"role": "tool", "content": "1\tsecret-ish file content\n2\t",
                    "tool_call_id": assistant["tool_calls"][0]["id"]}


# --- body conversion -----------------------------------------------------------------------------

def test_system_as_string_or_blocks():
    assert parse(system="be brief").command["messages"][0] == {"role": "system", "content": "be brief"}
    call = parse(system=[{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                         {"type": "text", "text": "b"}])
    assert call.command["messages"][0]["content"] == "a\n\nb"
    assert "system[0]" in refused(system=[{"type": "image", "source": {}}])


def test_blocks_become_chat_messages_in_order():
    call = parse(messages=[
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xx"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": "rain"}]},
            {"type": "text", "text": "and tomorrow?"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no data", "is_error": True}]},
    ], tools=[WEATHER])
    roles = [(m["role"], m["content"]) for m in call.command["messages"]]
    assert roles == [("user", "weather?"), ("assistant", "Let me look."), ("tool", "rain"),
                     ("user", "and tomorrow?"), ("assistant", ""), ("tool", "Error: no data")]
    first_call = call.command["messages"][1]["tool_calls"][0]
    assert first_call == {"id": "toolu_1", "type": "function",
                          "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    assert call.command["messages"][2]["tool_call_id"] == "toolu_1"
    # tool results are not user text for the rules
    assert call.chat["messages"][2]["role"] == "tool"


def test_the_rules_see_user_text_and_tags_not_tool_results():
    from laya_desktop.routing.request import extract
    call = parse(tags=["code"], system="SYSTEMWORD", messages=[
        {"role": "user", "content": [{"type": "text", "text": "USERWORD"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "TOOLWORD"},
                                     {"type": "text", "text": "LATERWORD"}]}])
    seen = extract(call.path, call.chat, "fast")
    assert seen.path == "/v1/messages" and seen.tags == ("code", "fast")
    assert "userword" in seen.user_text_lower and "laterword" in seen.user_text_lower
    assert "toolword" not in seen.user_text_lower and "systemword" not in seen.user_text_lower


def test_images_and_pdfs_are_remote_only_named_by_the_clients_path():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}
    call = parse(messages=[{"role": "user", "content": [{"type": "text", "text": "see"}, image, pdf]}])
    assert call.remote_only == ["messages[0].content[1] (image)", "messages[0].content[2] (document)"]
    parts = call.chat["messages"][0]["content"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert parts[2]["file"]["file_data"] == "data:application/pdf;base64,JVBE"


def test_text_documents_reach_the_prompt():
    doc = {"type": "document", "title": "Notes", "source": {"type": "text", "media_type": "text/plain",
                                                            "data": "the sky is green"}}
    call = parse(messages=[{"role": "user", "content": [doc, {"type": "text", "text": "colour?"}]}])
    assert call.remote_only == []
    assert call.command["messages"][0]["content"] == "Notes\n\nthe sky is green\ncolour?"


def test_tools_and_tool_choice():
    call = parse(tools=[WEATHER], tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert call.tools == [{"type": "function", "function": {
        "name": "get_weather", "parameters": WEATHER["input_schema"], "description": "Weather in a city"}}]
    assert call.tool_choice == "required" and call.parallel_tool_calls is False
    assert "json_schema" in call.command["params"]      # a forced call decodes under the schema
    named = parse(tools=[WEATHER], tool_choice={"type": "tool", "name": "get_weather"})
    assert named.tool_choice == {"type": "function", "function": {"name": "get_weather"}}
    assert parse(tools=[WEATHER], tool_choice={"type": "none"}).command.get("tools") is None
    assert parse(tools=[WEATHER], tool_choice={"type": "auto"}).tool_choice == "auto"
    assert "nope" in refused(tools=[WEATHER], tool_choice={"type": "tool", "name": "nope"})


def test_deferred_tools_join_once_a_tool_search_references_them():
    search = {"name": "ToolSearch", "input_schema": {"type": "object", "properties": {}}}
    deferred = {**WEATHER, "defer_loading": True}
    assert parse(tools=[search, deferred]).tool_names == ["ToolSearch"]
    call = parse(tools=[search, deferred], messages=[
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch",
                                           "input": {"query": "weather"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "tool_reference", "tool_name": "get_weather"}]}]}])
    assert call.tool_names == ["ToolSearch", "get_weather"]
    assert call.command["messages"][-1]["content"] == "Tool 'get_weather' is now available."


@pytest.mark.parametrize("kind", ["web_search_20250305", "bash_20250124", "text_editor_20250728",
                                  "code_execution_20250825"])
def test_server_tools_are_refused_by_type(kind):
    assert f"'tools[1].type' '{kind}'" in refused(tools=[WEATHER, {"type": kind, "name": "x"}])


def test_refused_by_name():
    assert "'max_tokens' is required" in refused(max_tokens=None)
    assert "'container'" in refused(container="c")
    assert "'mcp_servers'" in refused(mcp_servers=[])
    assert "'temperature'" in refused(temperature=1.5)
    assert "'tools[0].strict'" in refused(tools=[{**WEATHER, "strict": True}])
    assert "'context_management.edits[0].type'" in refused(
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]})
    assert "'messages[0].content[0].type' 'server_tool_use'" in refused(
        messages=[{"role": "user", "content": [{"type": "server_tool_use"}]}])
    assert "'thinking.type'" in refused(thinking={"type": "sometimes"})


def test_sampling_and_hints():
    call = parse(temperature=0.5, top_p=0.9, top_k=20, stop_sequences=["END"], metadata={"user_id": "u"},
                 thinking={"type": "enabled", "budget_tokens": 1024}, output_config={"effort": "low"},
                 service_tier="auto", tags=["fast"], stream=True)
    assert call.command["params"] == {"max_tokens": 100, "temperature": 0.5, "top_p": 0.9, "top_k": 20,
                                      "stop": ["END"]}
    assert call.chat["tags"] == ["fast"] and call.stream
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    structured = parse(output_config={"format": {"type": "json_schema", "schema": schema}})
    assert structured.command["params"]["json_schema"] == schema


def test_count_tokens_needs_no_max_tokens():
    call = MESSAGES.parse_count({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                 "tools": [WEATHER]}, NO_HEADERS)
    assert call.tool_names == ["get_weather"] and "max_tokens" not in call.command["params"]
    assert MESSAGES.count_response(12) == {"input_tokens": 12}


# --- errors and writer ---------------------------------------------------------------------------

@pytest.mark.parametrize("status,kind", [(400, "invalid_request_error"), (401, "authentication_error"),
                                         (404, "not_found_error"), (413, "request_too_large"),
                                         (429, "rate_limit_error"), (500, "api_error"),
                                         (502, "api_error"), (503, "overloaded_error"),
                                         (529, "overloaded_error")])
def test_error_shape(status, kind):
    response = MESSAGES.error_response(ApiError(status, "boom", headers={"Retry-After": "1"}), {"X-Laya-Route": "r"})
    assert response.status_code == status
    assert json.loads(response.body) == {"type": "error", "error": {"type": kind, "message": "boom"}}
    assert response.headers["retry-after"] == "1" and response.headers["x-laya-route"] == "r"


def _events(outputs) -> list[tuple[str, dict]]:
    async def run():
        async def source():
            for out in outputs:
                yield out
        return b"".join([chunk async for chunk in MESSAGES.stream(parse(), source(), Meta(model="m"))])
    raw = asyncio.run(run()).decode()
    events = []
    for frame in raw.strip().split("\n\n"):
        name_line, data_line = frame.split("\n")
        assert name_line.startswith("event: ") and data_line.startswith("data: ")
        payload = json.loads(data_line[6:])
        assert payload["type"] == name_line[7:]
        events.append((name_line[7:], payload))
    return events


@functools.cache
def anthropic_types():
    """The SDK's own types, imported by the tests that check against them (the import takes
    seconds, which every pytest-xdist worker would pay at collection)."""
    import anthropic.types
    return anthropic.types


@functools.cache
def stream_event():
    return pydantic.TypeAdapter(anthropic_types().RawMessageStreamEvent)


def test_stream_of_text_and_tool_use():
    events = _events([TextDelta("Hel"), TextDelta("lo"), ToolCall("toolu_1", "get_weather", '{"city":"Oslo"}'),
                      Finished("tool_calls", Usage(30, 7, 10))])
    assert [name for name, _ in events] == [
        "message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop"]
    for name, payload in events:
        if name != "ping":
            stream_event().validate_python(payload)
    start = events[0][1]["message"]
    assert start["id"].startswith("msg_") and start["role"] == "assistant" and start["model"] == "m"
    assert events[6][1] == {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}
    assert events[7][1]["delta"] == {"type": "input_json_delta", "partial_json": '{"city":"Oslo"}'}
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"] == {"input_tokens": 20, "cache_read_input_tokens": 10,
                              "cache_creation_input_tokens": 0, "output_tokens": 7}


@pytest.mark.parametrize("finish,reason", [("stop", "end_turn"), ("length", "max_tokens")])
def test_stream_stop_reasons(finish, reason):
    assert _events([TextDelta("x"), Finished(finish)])[-2][1]["delta"]["stop_reason"] == reason


def test_empty_answer_still_has_a_text_block():
    names = [name for name, _ in _events([Finished("stop")])]
    assert names[2:5] == ["content_block_start", "content_block_stop", "message_delta"]


def test_failure_mid_stream_is_an_error_event():
    events = _events([TextDelta("par"), Failed("runner_crashed", "it crashed", 503)])
    assert events[-1] == ("error", {"type": "error", "error": {"type": "overloaded_error",
                                                               "message": "it crashed"}})
    assert "message_stop" not in [name for name, _ in events]


def test_collect():
    result = Collected()
    for out in (TextDelta("It is "), TextDelta("raining."), ToolCall("toolu_9", "get_weather", '{"city": "Oslo"}'),
                Finished("tool_calls", Usage(12, 5))):
        result.add(out)
    message = MESSAGES.collect(parse(), result, Meta(model="m"))
    anthropic_types().Message.model_validate(message)
    assert message["content"] == [{"type": "text", "text": "It is raining."},
                                  {"type": "tool_use", "id": "toolu_9", "name": "get_weather",
                                   "input": {"city": "Oslo"}}]
    assert message["stop_reason"] == "tool_use" and message["usage"]["input_tokens"] == 12
    plain = Collected()
    plain.add(Finished("length", Usage(3, 100)))
    assert MESSAGES.collect(parse(), plain, Meta(model="m"))["stop_reason"] == "max_tokens"


# --- end to end: the anthropic SDK against a real engine ------------------------------------------

API_KEY = "laya-test-key"
WEATHER_TOOL = {"name": "get_weather", "description": "The current weather in a city.",
                "input_schema": {"type": "object", "properties": {
                    "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                    "required": ["city", "unit"], "additionalProperties": False}}
HELLO = [{"role": "user", "content": "In one sentence, what is the sea?"}]
WEATHER_SYSTEM = "You are a weather service."


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from engine_harness import running_engine
    config = {"server": {"api_key": API_KEY},
              "models": [{"name": "smol", "backend": "llama_cpp", "path": "builtin:smollm2-135m-instruct",
                          "n_ctx": 8192, "parallel": 2}],
              # greedy unless a request says otherwise, as the shipped agents rule: Claude Code
              # sends no temperature, and sampled, SmolLM2 sometimes answered beside the question
              "routes": [{"name": "default", "target": "smol", "sampling": {"temperature": 0}}]}
    with running_engine(config, tmp_path_factory.mktemp("messages")) as eng:
        yield eng


@pytest.fixture(scope="module")
def client(engine):
    import anthropic
    return anthropic.Anthropic(base_url=engine.url, api_key=API_KEY, max_retries=0, timeout=120)


def test_create(client):
    raw = client.messages.with_raw_response.create(model="claude-opus-5-5", max_tokens=40, extra_body={"temperature": 0},
                                                   system="You answer briefly.", messages=HELLO)
    message = raw.parse()
    assert raw.headers["x-laya-route"] == "default" and raw.headers["x-laya-model"] == "smol"
    assert message.id.startswith("msg_") and message.role == "assistant" and message.model == "smol"
    assert message.content[0].type == "text" and "sea" in message.content[0].text.lower()
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.input_tokens > 10 and 0 < message.usage.output_tokens <= 40


def test_stream(client):
    with client.messages.stream(model="claude-opus-5-5", max_tokens=8, extra_body={"temperature": 0}, messages=HELLO) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text and final.content[0].text == text
    assert final.stop_reason == "max_tokens" and final.usage.output_tokens == 8
    assert final.usage.input_tokens > 10     # from message_delta: known once the prompt is read


def test_beta_path_takes_the_claude_code_headers(client):
    message = client.beta.messages.create(   # POST /v1/messages?beta=true
        model="claude-opus-5-5", max_tokens=5, messages=HELLO,
        betas=["claude-code-20250219", "interleaved-thinking-2025-05-14"],
        thinking={"type": "adaptive"}, metadata={"user_id": "u1"})
    assert message.content[0].type == "text" and message.usage.output_tokens <= 5


def _tool_input(message):
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert block.name == "get_weather" and block.id
    jsonschema.validate(block.input, WEATHER_TOOL["input_schema"])
    return block


def test_forced_tool_use_validates_against_the_schema(client):
    message = client.messages.create(
        model="claude-opus-5-5", max_tokens=80, extra_body={"temperature": 0}, tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=[{"role": "user", "content": "What is the weather like in Paris?"}])
    assert message.stop_reason == "tool_use"
    _tool_input(message)


def test_streamed_tool_use_and_its_result(client):
    with client.messages.stream(
            model="claude-opus-5-5", max_tokens=80, extra_body={"temperature": 0}, tools=[WEATHER_TOOL],
            tool_choice={"type": "any"}, system=WEATHER_SYSTEM,
            messages=[{"role": "user", "content": "Weather in Oslo?"}]) as stream:
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    block = _tool_input(message)
    answer = client.messages.create(
        model="claude-opus-5-5", max_tokens=30, extra_body={"temperature": 0}, tools=[WEATHER_TOOL],
        system=WEATHER_SYSTEM,
        messages=[{"role": "user", "content": "Weather in Oslo?"},
                  {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id,
                                                "content": "12 degrees and rain"}]}])
    assert answer.content and answer.stop_reason in ("end_turn", "max_tokens", "tool_use")
    # the next turn reads only what is new: the first turn's prompt (system, tools, question) is cached
    assert answer.usage.cache_read_input_tokens >= message.usage.input_tokens + message.usage.cache_read_input_tokens


def test_count_tokens(client):
    plain = client.messages.count_tokens(model="claude-opus-5-5", messages=HELLO).input_tokens
    with_tools = client.messages.count_tokens(model="claude-opus-5-5", messages=HELLO,
                                              tools=[WEATHER_TOOL]).input_tokens
    assert 10 < plain < with_tools


def test_claude_code_request_counts(engine):
    body = json.loads((DATA / "claude_code_request.json").read_text())
    del body["stream"]
    with engine.client() as c:
        reply = c.post("/v1/messages/count_tokens?beta=true", json=body, headers={"x-api-key": API_KEY})
    assert reply.status_code == 200, reply.text
    assert reply.json()["input_tokens"] > 5000


def test_errors_in_anthropics_shape(client, engine):
    import anthropic
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}])
    assert info.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": info.value.body["error"]["message"]}}
    assert "messages[0].content[0] (image)" in info.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        client.messages.create(model="m", messages=HELLO, max_tokens=None)  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError, match=r"tools\[0\]\.type"):
        client.messages.create(model="m", max_tokens=5, messages=HELLO,
                               tools=[{"type": "web_search_20250305", "name": "web_search"}])
    wrong = anthropic.Anthropic(base_url=engine.url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as info:
        wrong.messages.create(model="m", max_tokens=5, messages=HELLO)
    assert info.value.body["error"]["type"] == "authentication_error"
    with engine.client() as c:   # the Bearer form works too
        ok = c.post("/v1/messages", json={"model": "m", "max_tokens": 2, "messages": HELLO},
                    headers={"Authorization": f"Bearer {API_KEY}"})
        log = c.get("/admin/requests", headers={"x-api-key": API_KEY}).json()
    assert ok.status_code == 200
    entries = log if isinstance(log, list) else log.get("requests", log.get("data", []))
    assert any(e.get("api") == "messages" and e.get("path") == "/v1/messages" for e in entries)


def test_claude_code_print_mode(engine, tmp_path):
    """Claude Code itself, with a short system prompt and no tools so that a small context holds
    the turn (its full prompt is about 12k tokens: tests/test_agents_e2e.py runs that one)."""
    claude = agent_binary("claude")
    env = claude_env(tmp_path, engine.url, API_KEY)
    done = subprocess.run([claude, "-p", "--bare", "--system-prompt", "You answer in one short sentence.",
                           "--tools", "", "--", "In one sentence, what is the sea?"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "sea" in done.stdout.lower()
