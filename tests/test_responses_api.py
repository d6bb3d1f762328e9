"""The Responses API adapter: request conversion, the stream and object writers, the store.

Pure tests (bodies in, lists of outputs through the writer) first; the end-to-end tests with the
real `openai` SDK against a real engine process are at the end of the file.
"""
from __future__ import annotations

import asyncio
import subprocess
import json
from pathlib import Path

import httpx
import jsonschema
import pytest
from starlette.datastructures import Headers

from agent_clients import agent_binary, codex_env
from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.apis.responses import RESPONSES
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import Collected, Failed, Finished, TextDelta, ToolCall, Usage
from laya_desktop.engine.response_store import ResponseStore

DATA = Path(__file__).parent / "data"
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}, "strict": True}


class FakeEngine:
    def __init__(self):
        self.responses = ResponseStore(max_responses=3)


def parse(body, engine=None):
    return RESPONSES.parse(body, Headers(), engine)


def bad(body, engine=None) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse(body, engine)
    return info.value


def run_stream(call, outputs, meta):
    async def source():
        for out in outputs:
            yield out

    async def gather():
        return [chunk async for chunk in RESPONSES.stream(call, source(), meta)]
    return asyncio.run(gather())


def events(chunks: list[bytes]) -> list[dict]:
    found = []
    for chunk in chunks:
        head, data = chunk.decode().strip().split("\n", 1)
        assert head.startswith("event: ") and data.startswith("data: ")
        payload = json.loads(data[6:])
        assert payload["type"] == head[7:]
        found.append(payload)
    return found


def collect(call, outputs, meta):
    result = Collected()
    for out in outputs:
        result.add(out)
    return RESPONSES.collect(call, result, meta)


# -- request conversion -----------------------------------------------------------------------
def test_string_input_and_instructions():
    call = parse({"model": "m", "input": "Hi there", "instructions": "Be brief",
                  "max_output_tokens": 20, "temperature": 0.2, "top_p": 0.9})
    assert call.api == "responses" and call.path == "/v1/responses"
    assert call.chat["messages"] == [{"role": "system", "content": "Be brief"},
                                     {"role": "user", "content": "Hi there"}]
    assert call.command["params"] == {"max_tokens": 20, "temperature": 0.2, "top_p": 0.9}
    assert call.body["input"] == "Hi there"  # the native body stays, for a Responses upstream


def test_items_become_chat_messages_with_tool_calls_and_results():
    call = parse({"input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"role": "user", "content": "weather in Oslo?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{\"city\":\"Bergen\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "rain"},
        {"type": "function_call_output", "call_id": "call_2",
         "output": [{"type": "input_text", "text": "sun"}]},
    ], "tools": [WEATHER]})
    messages = call.chat["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[2]["content"] == "Let me look."
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["call_1", "call_2"]
    assert messages[4] == {"role": "tool", "tool_call_id": "call_2", "content": "sun"}
    runner = call.command["messages"]
    assert runner[2]["tool_calls"][1]["function"] == {"name": "get_weather",
                                                       "arguments": "{\"city\":\"Bergen\"}"}
    assert runner[3]["tool_call_id"] == "call_1"


def test_function_tools_and_tool_choice():
    call = parse({"input": "x", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "get_weather"},
                  "parallel_tool_calls": False})
    assert call.chat["tools"][0] == {"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": WEATHER["parameters"], "strict": True}}
    assert call.tool_choice == {"type": "function", "function": {"name": "get_weather"}}
    assert call.parallel_tool_calls is False
    assert call.command["params"]["json_schema"]["properties"]["arguments"] == WEATHER["parameters"]
    for choice in ("auto", "none", "required"):
        assert parse({"input": "x", "tools": [WEATHER], "tool_choice": choice}).tool_choice == choice
    allowed = parse({"input": "x", "tools": [WEATHER, {**WEATHER, "name": "other"}],
                     "tool_choice": {"type": "allowed_tools", "mode": "required",
                                     "tools": [{"type": "function", "name": "other"}]}})
    assert allowed.tool_names == ["other"] and allowed.tool_choice == "required"


def test_tool_refusals_name_the_field():
    error = bad({"input": "x", "tools": [WEATHER, {"type": "file_search", "vector_store_ids": []}]})
    assert error.status == 400 and "tools[1].type" in error.message
    assert "'tool_choice'" in bad({"input": "x", "tools": [WEATHER],
                                   "tool_choice": {"type": "function", "name": "nope"}}).message
    assert "tool_choice" in bad({"input": "x", "tool_choice": {"type": "web_search_preview"}}).message


def test_web_search_is_accepted_and_not_offered_to_the_model():
    call = parse({"input": "x", "tools": [WEATHER, {"type": "web_search", "external_web_access": False}]})
    assert call.tool_names == ["get_weather"]
    assert call.options["ignored_tools"] == ["tools[1] (web_search)"]


def test_custom_and_namespace_tools_become_functions():
    call = parse({"input": "x", "tools": [
        {"type": "custom", "name": "apply_patch", "description": "Patch files",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}},
        {"type": "namespace", "name": "agents", "description": "sub-agents",
         "tools": [{"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}]}]})
    patch = call.tools[0]["function"]
    assert patch["parameters"]["properties"] == {"input": {"type": "string"}}
    assert "start: /.+/" in patch["description"]
    assert call.tool_names == ["apply_patch", "spawn"]
    assert call.options["tool_kinds"] == {"apply_patch": "custom"}
    assert call.options["namespaces"] == {"spawn": "agents"}


def test_text_format_json_schema():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    call = parse({"input": "x", "text": {"format": {"type": "json_schema", "name": "num",
                                                    "schema": schema, "strict": True}}})
    assert call.chat["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "num", "schema": schema, "strict": True}}
    assert call.command["params"]["json_schema"] == schema
    assert parse({"input": "x", "text": {"format": {"type": "json_object"}}}).command["params"][
        "json_schema"] == {"type": "object"}
    assert "text.format" in bad({"input": "x", "text": {"format": {"type": "json_schema"}}}).message


def test_fields_without_local_meaning_are_accepted():
    call = parse({"input": "x", "reasoning": {"effort": "low", "summary": "auto"},
                  "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k",
                  "metadata": {"a": "b"}, "store": False, "service_tier": "auto", "user": "u",
                  "safety_identifier": "s", "truncation": "disabled", "client_metadata": {"x": "y"},
                  "stream_options": {"include_obfuscation": False}, "text": {"verbosity": "low"}})
    assert call.chat["messages"] == [{"role": "user", "content": "x"}]


def test_unsupported_fields_are_refused_by_name():
    assert "max_tool_calls" in bad({"input": "x", "max_tool_calls": 2}).message
    assert "truncation" in bad({"input": "x", "truncation": "auto"}).message
    assert "background" in bad({"input": "x", "background": True}).message
    assert "max_output_tokens" in bad({"input": "x", "max_output_tokens": 0}).message
    assert "input[0].type" in bad({"input": [{"type": "computer_call_output"}]}).message
    assert "input[0].content[0]" in bad({"input": [{"role": "user", "content": [
        {"type": "input_image", "file_id": "file_1"}]}]}).message


def test_image_input_is_remote_only():
    call = parse({"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}]})
    assert call.chat["messages"][0]["content"][1]["type"] == "image_url"
    assert call.remote_only == ["messages[0].content[1] (image_url)"]


def test_logprobs_through_top_logprobs():
    call = parse({"input": "x", "top_logprobs": 3, "include": ["message.output_text.logprobs"]})
    assert call.command["params"]["logprobs"] is True and call.command["params"]["top_logprobs"] == 3


def test_codex_request_is_accepted():
    body = json.loads((DATA / "codex_request.json").read_text())
    call = parse(body)
    assert call.stream and call.tool_choice == "auto"
    assert "exec_command" in call.tool_names and "close_agent" in call.tool_names
    messages = call.chat["messages"]
    assert messages[0]["role"] == "system"  # developer messages merged into one system turn
    assert [m["role"] for m in messages].count("system") == 1
    assert messages[-1] == {"role": "user", "content": "say hi"}
    assert call.chat["stream_options"] == {"include_usage": True}


# -- writers ---------------------------------------------------------------------------------
def test_stream_text_then_tool_call_in_order():
    call = parse({"input": "x", "tools": [WEATHER], "stream": True})
    meta = Meta(model="tiny")
    got = events(run_stream(call, [TextDelta("Hel"), TextDelta("lo"),
                                   ToolCall("call_9", "get_weather", "{\"city\":\"Oslo\"}"),
                                   Finished("tool_calls", Usage(7, 3, 2))], meta))
    assert [e["type"] for e in got] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    assert [e["sequence_number"] for e in got] == list(range(len(got)))
    assert got[0]["response"]["status"] == "in_progress" and got[0]["response"]["id"] == "resp_" + meta.hex_id
    assert got[6]["text"] == "Hello"
    assert got[9]["item"]["type"] == "function_call" and got[9]["item"]["arguments"] == ""
    assert got[12]["item"]["call_id"] == "call_9" and got[12]["output_index"] == 1
    done = got[-1]["response"]
    assert done["status"] == "completed"
    assert [i["type"] for i in done["output"]] == ["message", "function_call"]
    assert done["usage"] == {"input_tokens": 7, "input_tokens_details": {"cached_tokens": 2},
                             "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
                             "total_tokens": 10}


def test_stream_length_is_incomplete_and_failure_is_failed():
    call = parse({"input": "x", "stream": True, "max_output_tokens": 2})
    got = events(run_stream(call, [TextDelta("a"), Finished("length", Usage(1, 2))], Meta(model="m")))
    assert got[-1]["type"] == "response.incomplete"
    assert got[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert got[-2]["item"]["status"] == "incomplete"
    failed = events(run_stream(call, [TextDelta("a"), Failed("runner_crashed", "boom", 503)], Meta(model="m")))
    assert failed[-1]["type"] == "response.failed"
    assert failed[-1]["response"]["error"] == {"code": "runner_crashed", "message": "boom"}
    cut = events(run_stream(call, [TextDelta("a")], Meta(model="m")))
    assert cut[-1]["type"] == "response.failed"


def test_collect_builds_the_response_object():
    call = parse({"input": "x", "tools": [WEATHER], "temperature": 0.5, "metadata": {"k": "v"}})
    response = collect(call, [TextDelta("ok"), ToolCall("call_1", "get_weather", "{}"),
                              Finished("tool_calls", Usage(5, 2))], Meta(model="tiny"))
    assert response["object"] == "response" and response["status"] == "completed"
    assert response["id"].startswith("resp_") and response["model"] == "tiny"
    message, fn = response["output"]
    assert message["content"][0] == {"type": "output_text", "text": "ok", "annotations": [], "logprobs": []}
    assert fn["type"] == "function_call" and fn["name"] == "get_weather" and fn["status"] == "completed"
    assert response["temperature"] == 0.5 and response["metadata"] == {"k": "v"}
    assert response["tools"] == [WEATHER] and response["usage"]["total_tokens"] == 7


def test_custom_tool_call_comes_back_as_custom_item():
    call = parse({"input": "x", "tools": [{"type": "custom", "name": "apply_patch"}],
                  "tool_choice": "required", "stream": True})
    got = events(run_stream(call, [ToolCall("call_1", "apply_patch", "{\"input\": \"*** Begin\"}"),
                                   Finished("tool_calls")], Meta(model="m")))
    kinds = [e["type"] for e in got]
    assert "response.custom_tool_call_input.delta" in kinds
    item = got[-1]["response"]["output"][0]
    assert item == {"id": item["id"], "type": "custom_tool_call", "status": "completed",
                    "call_id": "call_1", "name": "apply_patch", "input": "*** Begin"}


# -- the store ---------------------------------------------------------------------------------
def test_previous_response_id_continues_the_conversation():
    engine = FakeEngine()
    first = parse({"input": "My name is Ada.", "instructions": "Be kind"}, engine)
    answer = collect(first, [TextDelta("Hello Ada"), Finished("stop")], Meta(model="m", engine=engine))
    second = parse({"input": "What is my name?", "previous_response_id": answer["id"],
                    "instructions": "Be short"}, engine)
    assert second.chat["messages"] == [
        {"role": "system", "content": "Be short"},  # instructions are not carried over
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada"},
        {"role": "user", "content": "What is my name?"}]
    ref = parse({"input": [{"type": "item_reference", "id": answer["output"][0]["id"]},
                           {"role": "user", "content": "again"}]}, engine)
    assert ref.chat["messages"][0] == {"role": "assistant", "content": "Hello Ada"}


def test_tool_call_round_trip_through_the_store():
    engine = FakeEngine()
    first = parse({"input": "weather?", "tools": [WEATHER]}, engine)
    answer = collect(first, [ToolCall("call_1", "get_weather", "{\"city\":\"Oslo\"}"),
                             Finished("tool_calls")], Meta(model="m", engine=engine))
    assert [i["type"] for i in answer["output"]] == ["function_call"]
    second = parse({"previous_response_id": answer["id"], "tools": [WEATHER],
                    "input": [{"type": "function_call_output", "call_id": "call_1", "output": "rain"}]},
                   engine)
    roles = [(m["role"], bool(m.get("tool_calls"))) for m in second.command["messages"]]
    assert roles == [("user", False), ("assistant", True), ("tool", False)]


def test_unknown_previous_response_is_404_in_openai_shape():
    error = bad({"input": "x", "previous_response_id": "resp_nope"}, FakeEngine())
    assert error.status == 404
    assert error.body() == {"error": {"message": "Previous response with id 'resp_nope' not found.",
                                      "type": "invalid_request_error", "param": "previous_response_id",
                                      "code": "previous_response_not_found"}}


def test_store_false_is_not_kept_and_the_store_is_bounded():
    engine = FakeEngine()
    call = parse({"input": "x", "store": False}, engine)
    collect(call, [TextDelta("a"), Finished("stop")], Meta(model="m", engine=engine))
    assert len(engine.responses) == 0
    ids = []
    for n in range(5):
        call = parse({"input": f"turn {n}"}, engine)
        ids.append(collect(call, [TextDelta("a"), Finished("stop")], Meta(model="m", engine=engine))["id"])
    assert len(engine.responses) == 3
    assert engine.responses.get(ids[0]) is None and engine.responses.get(ids[4]) is not None


def test_streamed_response_is_stored_too():
    engine = FakeEngine()
    call = parse({"input": "x", "stream": True}, engine)
    meta = Meta(model="m", engine=engine)
    run_stream(call, [TextDelta("streamed"), Finished("stop")], meta)
    record = engine.responses.get("resp_" + meta.hex_id)
    assert record is not None and record.messages[-1] == {"role": "assistant", "content": "streamed"}


# -- end to end: the openai SDK against real engine processes ---------------------------------
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
WEATHER_SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"], "additionalProperties": False}
SDK_WEATHER = {"type": "function", "name": "get_weather", "description": "The current weather in a city.",
               "parameters": WEATHER_SCHEMA, "strict": True}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """An engine serving SmolLM2 itself: the local target, and the upstream of `front`."""
    from engine_harness import running_engine
    config = {"models": [{"name": "smol", "backend": "llama_cpp",
                          "path": "builtin:smollm2-135m-instruct", "n_ctx": 2048, "parallel": 2}],
              "routes": [{"name": "default", "target": "smol"}]}
    with running_engine(config, tmp_path_factory.mktemp("responses-upstream")) as eng:
        yield eng


@pytest.fixture(scope="module")
def front(tmp_path_factory, upstream):
    """An engine whose models are the upstream engine: over chat completions, and natively."""
    from engine_harness import running_engine
    base = upstream.url + "/v1"
    config = {"models": [
        {"name": "chat-only", "backend": "openai", "base_url": base, "remote_model": "smol"},
        {"name": "native", "backend": "openai", "base_url": base, "remote_model": "smol",
         "responses": True}],
        "routes": [{"name": "default", "target": "chat-only"}]}
    with running_engine(config, tmp_path_factory.mktemp("responses-front")) as eng:
        yield eng


def sdk(engine):
    from openai import OpenAI
    return OpenAI(base_url=engine.url + "/v1", api_key="unused", timeout=180, max_retries=0)


def test_sdk_create_plain(upstream):
    client = sdk(upstream)
    raw = client.responses.with_raw_response.create(
        model="auto", input="In one sentence, what is the sea?", max_output_tokens=40, temperature=0)
    assert raw.headers["x-laya-model"] == "smol" and raw.headers["x-laya-route"] == "default"
    response = raw.parse()
    assert response.status in ("completed", "incomplete") and response.id.startswith("resp_")
    assert response.output_text.strip()
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert client.responses.retrieve(response.id).output_text == response.output_text


def test_sdk_stream(upstream):
    client = sdk(upstream)
    kinds, deltas = [], []
    with client.responses.stream(model="smol", input="Name three colours.", instructions="Be brief.",
                                 max_output_tokens=30, temperature=0) as stream:
        for ev in stream:
            kinds.append(ev.type)
            if ev.type == "response.output_text.delta":
                deltas.append(ev.delta)
        final = stream.get_final_response()
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:-1] == ["response.output_text.done", "response.content_part.done",
                            "response.output_item.done"]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert final.output_text == "".join(deltas) and deltas


def test_forced_function_call_validates_and_round_trips(upstream):
    client = sdk(upstream)
    first = client.responses.create(
        model="smol", input="What is the weather like in Paris?", tools=[SDK_WEATHER],
        instructions="You are a weather service.",
        tool_choice={"type": "function", "name": "get_weather"}, max_output_tokens=80, temperature=0)
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and call.call_id and call.status == "completed"
    jsonschema.validate(json.loads(call.arguments), WEATHER_SCHEMA)
    second = client.responses.create(
        model="smol", tools=[SDK_WEATHER], max_output_tokens=40, temperature=0,
        instructions="You are a weather service.",
        input=[{"role": "user", "content": "What is the weather like in Paris?"},
               {"type": "function_call", "call_id": call.call_id, "name": call.name,
                "arguments": call.arguments},
               {"type": "function_call_output", "call_id": call.call_id,
                "output": "{\"temperature\": 21, \"sky\": \"sunny\"}"}])
    assert second.status in ("completed", "incomplete")
    assert second.output and second.usage.input_tokens > first.usage.input_tokens
    # an agent's next turn: the first turn's prompt (instructions, tools, question) is not read again
    assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens


def test_streamed_forced_function_call(upstream):
    client = sdk(upstream)
    stream = client.responses.create(
        model="smol", input="Weather in Rome, in celsius?", tools=[SDK_WEATHER], tool_choice="required",
        max_output_tokens=80, temperature=0, stream=True)
    kinds, done = [], None
    for ev in stream:
        kinds.append(ev.type)
        if ev.type == "response.function_call_arguments.done":
            done = ev.arguments
    assert "response.function_call_arguments.delta" in kinds and kinds[-1] == "response.completed"
    jsonschema.validate(json.loads(done), WEATHER_SCHEMA)


def test_previous_response_id_and_unknown_id(upstream):
    from openai import NotFoundError
    client = sdk(upstream)
    first = client.responses.create(model="smol", input="My name is Ada. Say hello.",
                                    max_output_tokens=20, temperature=0)
    second = client.responses.create(model="smol", input="What is my name?", previous_response_id=first.id,
                                     max_output_tokens=20, temperature=0)
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > first.usage.input_tokens  # the first turn came along
    with pytest.raises(NotFoundError) as info:
        client.responses.create(model="smol", input="hi", previous_response_id="resp_unknown")
    assert info.value.body["code"] == "previous_response_not_found"
    assert info.value.body["param"] == "previous_response_id"


def test_logprobs_and_delete(upstream):
    from openai import NotFoundError
    client = sdk(upstream)
    response = client.responses.create(model="smol", input="Say yes.", max_output_tokens=5, temperature=0,
                                       top_logprobs=2, include=["message.output_text.logprobs"])
    part = response.output[0].content[0]
    assert part.logprobs and len(part.logprobs[0].top_logprobs) == 2
    assert "".join(lp.token for lp in part.logprobs) == part.text
    assert client.responses.delete(response.id) is None
    with pytest.raises(NotFoundError):
        client.responses.retrieve(response.id)


def test_text_format_json_schema_output_validates(upstream):
    client = sdk(upstream)
    response = client.responses.create(
        model="smol", input="Invent a person: give a name and an age.", max_output_tokens=60, temperature=0,
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}})
    jsonschema.validate(json.loads(response.output_text), PERSON)


def test_unsupported_tool_is_400(upstream):
    from openai import BadRequestError
    with pytest.raises(BadRequestError) as info:
        sdk(upstream).responses.create(model="smol", input="x",
                                       tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}])
    assert "tools[0].type" in info.value.body["message"]


def test_chat_only_upstream_serves_responses_by_translation(front):
    client = sdk(front)
    raw = client.responses.with_raw_response.create(model="auto", input="Say hello.", max_output_tokens=20,
                                                    temperature=0)
    assert raw.headers["x-laya-model"] == "chat-only"
    assert raw.parse().output_text.strip()
    with client.responses.stream(model="chat-only", input="Weather in Oslo?", tools=[SDK_WEATHER],
                                 tool_choice={"type": "function", "name": "get_weather"},
                                 max_output_tokens=80, temperature=0) as stream:
        final = stream.get_final_response()
    (call,) = [item for item in final.output if item.type == "function_call"]
    jsonschema.validate(json.loads(call.arguments), WEATHER_SCHEMA)
    assert final.usage.input_tokens > 0


def test_responses_upstream_passes_through(front, upstream):
    client = sdk(front)
    raw = client.responses.with_raw_response.create(model="native", input="Say hello.", max_output_tokens=20,
                                                    temperature=0)
    assert raw.headers["x-laya-model"] == "native"
    first = raw.parse()
    # the upstream's own store holds it: only a passthrough can continue it
    second = client.responses.create(model="native", input="Again.", previous_response_id=first.id,
                                     max_output_tokens=20, temperature=0)
    assert second.previous_response_id == first.id
    requests = httpx.get(upstream.url + "/admin/requests").json()["requests"]
    assert {r["api"] for r in requests[-2:]} == {"responses"}
    from openai import NotFoundError
    with pytest.raises(NotFoundError):
        client.responses.create(model="chat-only", input="x", previous_response_id=first.id)


def run_codex(tmp_path, base_url: str, model: str, prompt: str, timeout: float):
    return subprocess.run([agent_binary("codex"), "exec", "--skip-git-repo-check", prompt],
                          cwd=tmp_path, env=codex_env(tmp_path, base_url, model),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_codex_parses_a_whole_turn_on_a_tiny_model(tmp_path, tiny_gguf):
    """Codex's real turn (~31k tokens for the tiny model's byte-level vocabulary: developer
    messages, 9 tools, a namespace and web_search) through the engine. The random model never
    stops on its own, so the context cuts it off: Codex must have read the stream to its end,
    `response.incomplete` included, and says so exactly as it does for OpenAI."""
    from engine_harness import running_engine
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 32768, "parallel": 1}],
              "routes": [{"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path) as eng:
        done = run_codex(tmp_path, eng.url + "/v1", "laya-agent", "Say hi.", timeout=360)
        requests = httpx.get(eng.url + "/admin/requests").json()["requests"]
    assert "Incomplete response returned, reason: max_output_tokens" in done.stderr, done.stderr[-2000:]
    (turn,) = [r for r in requests if r["path"] == "/v1/responses"]
    assert turn["status"] == 200 and turn["rule"] == "default" and turn["prompt_tokens"] > 20000


