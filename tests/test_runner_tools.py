"""Runner side of agent requests: tools in the prompt, JSON-schema grammars, logprobs,
count_only and embeddings; pure template logic, then real runner processes on the tiny GGUF,
then the built-in SmolLM2 for real text."""
from __future__ import annotations

import json
import math

import jsonschema
import pytest

from laya_desktop.runners.chat_templates import normalize_messages, select_format
from laya_desktop.runners.llama_sampling import schema_grammar
from laya_desktop.runners.protocol import BadRequest, parse_params
from laya_desktop.runners.tool_prompt import check_tools, inline_tools, template_knows_tools
from test_runner_llama import GREEDY, Runner

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather and time in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18 C, sunny"},
    {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "14:05"},
]

# A Qwen-2.5-like template: reads `tools`, renders history arguments with tojson.
TOOLS_TEMPLATE = """{%- if tools %}<|im_start|>system
{{ messages[0].content if messages[0].role == 'system' else 'You are helpful.' }}
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- elif message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant
{%- for tc in message.tool_calls %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response id="{{ message.tool_call_id }}" name="{{ message.name }}">
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""
PLAIN_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                  "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

BOUNDED_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"},
                   "word": {"type": "string", "pattern": "^[a-z]{1,8}$"},
                   "pick": {"enum": ["red", "green", "blue"]},
                   "tags": {"type": "array", "maxItems": 3,
                            "items": {"type": "string", "pattern": "^[a-z]{1,3}$"}}},
    "required": ["ok", "n", "word", "pick", "tags"]}


# --- pure: templates and parameters ----------------------------------------------------------------

def test_a_jinja_template_with_tools_renders_them_and_the_history_intact():
    assert template_knows_tools(TOOLS_TEMPLATE) and not template_knows_tools(PLAIN_TEMPLATE)
    fmt = select_format(None, TOOLS_TEMPLATE, "qwen2", "", "<|im_end|>")
    assert fmt.native_tools
    text = fmt.render(normalize_messages(HISTORY), check_tools([WEATHER, CLOCK])).text
    assert '"name": "get_weather"' in text and '"name": "get_time"' in text
    assert '"description": "Current weather for a city"' in text
    # arguments reach the template parsed, so tojson writes an object, not a quoted string
    assert '{"name": "get_weather", "arguments": {"city": "Paris"}}' in text
    assert '<tool_response id="call_1" name="get_weather">\n18 C, sunny' in text
    assert '<tool_response id="call_2" name="get_time">\n14:05' in text
    assert text.endswith("<|im_start|>assistant\n")


def test_a_tool_use_template_beside_the_default_renders_requests_with_tools():
    fmt = select_format(None, PLAIN_TEMPLATE, "llama", "", "", tool_use_template=TOOLS_TEMPLATE)
    assert fmt.tool_template and not fmt.native_tools
    with_tools = fmt.render(normalize_messages(HISTORY), check_tools([WEATHER])).text
    assert '<tools>{"type": "function"' in with_tools and "# Tools" not in with_tools
    without = fmt.render(normalize_messages(HISTORY[:2])).text
    assert without == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n" \
        "Weather and time in Paris?<|im_end|>\n<|im_start|>assistant\n"


def test_formats_without_tools_get_hermes_text():
    tools = check_tools([WEATHER])
    chatml = select_format(None, None, "llama", "", "")
    assert not chatml.native_tools
    text = chatml.render(normalize_messages(HISTORY), tools).text
    assert text.startswith("<|im_start|>system\n# Tools")
    assert "</tool_call>\n\nBe brief.<|im_end|>" in text   # the system text follows the tools
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather"' in text
    assert "<tool_call>\n{\"name\": <function-name>" in text          # the instruction
    assert ('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": '
            '{"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}'
            in text)
    assert "<|im_start|>tool\n<tool_response>\n18 C, sunny\n</tool_response><|im_end|>" in text

    # a Jinja template without tools (SmolLM2's) and Gemma: results in one user turn
    plain = select_format(None, PLAIN_TEMPLATE, "llama", "", "")
    assert not plain.native_tools
    text = plain.render(normalize_messages(HISTORY), tools).text
    assert ("<|im_start|>user\n<tool_response>\n18 C, sunny\n</tool_response>\n<tool_response>\n"
            "14:05\n</tool_response><|im_end|>") in text and "get_weather" in text
    gemma = select_format(None, None, "gemma3", "", "").render(normalize_messages(HISTORY), tools).text
    assert "<start_of_turn>user\n# Tools" in gemma and "</tool_call>\n\nBe brief." in gemma
    assert "<start_of_turn>user\n<tool_response>\n18 C" in gemma and "tool\n" not in gemma


def test_inline_tools_without_tools_still_renders_history_calls():
    out = inline_tools(normalize_messages(HISTORY[1:3]), None, tool_role=True)
    assert [m["role"] for m in out] == ["user", "assistant"]
    assert out[1]["content"].startswith("<tool_call>\n{\"name\": \"get_weather\"")
    # without a tool role, results and the text after them make one user turn: roles alternate
    follow_up = HISTORY + [{"role": "user", "content": "Thanks. And tomorrow?"}]
    out = inline_tools(normalize_messages(follow_up), None, tool_role=False)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[-1]["content"].endswith("14:05\n</tool_response>\n\nThanks. And tomorrow?")


def test_bad_tools_messages_and_params_are_bad_requests():
    for tools in ("x", [{"type": "function"}], [{"type": "retrieval", "function": {"name": "a"}}],
                  [{"type": "function", "function": {"name": "a", "parameters": "no"}}]):
        with pytest.raises(BadRequest, match="tools"):
            check_tools(tools)
    with pytest.raises(BadRequest, match=r"messages\[0\].tool_calls"):
        normalize_messages([{"role": "assistant", "tool_calls": [{"function": {}}]}])
    assert parse_params({"logprobs": True, "top_logprobs": 20}).top_logprobs == 20
    for bad, field in (({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
                       ({"top_logprobs": 2}, "top_logprobs"), ({"logprobs": "yes"}, "logprobs"),
                       ({"json_schema": "object"}, "response_format")):
        with pytest.raises(BadRequest, match=field):
            parse_params(bad)


def test_schema_grammar_refuses_what_it_cannot_convert_and_strings_stay_json():
    for schema in ({"type": "foo"}, {"$ref": "https://example.com/s.json"},
                   {"type": "string", "pattern": "(("}):
        with pytest.raises(BadRequest, match="response_format"):
            schema_grammar(schema)
    assert 'char ::= [^"\\\\\\x7F\\x00-\\x1F]' in schema_grammar({"type": "object"})


# --- the runner process on the tiny GGUF -----------------------------------------------------------

@pytest.fixture
def start():
    runners = []

    def _start(path, **spec):
        runner = Runner({"name": "t", "path": str(path), "n_ctx": 512, "parallel": 4, **spec})
        runners.append(runner)
        return runner
    yield _start
    for runner in runners:
        runner.close()


def test_json_schema_output_parses_and_validates(start, tiny_gguf):
    r = start(tiny_gguf)
    r.ready()
    ids = ["greedy", "s1", "s2", "s3"]
    for i, req_id in enumerate(ids):
        sampling = GREEDY if req_id == "greedy" else {"temperature": 1.0, "seed": i}
        r.generate(req_id, {"max_tokens": 300, "json_schema": BOUNDED_SCHEMA, **sampling},
                   kind="chat", messages=[{"role": "user", "content": "Answer in JSON"}])
    texts, final, _ = r.collect(ids, timeout=60)
    for req_id in ids:
        assert final[req_id]["finish_reason"] == "stop", (final[req_id], texts[req_id])
        jsonschema.validate(json.loads(texts[req_id]), BOUNDED_SCHEMA)


def test_bad_schema_is_refused_naming_response_format(start, tiny_gguf):
    r = start(tiny_gguf)
    r.ready()
    r.generate("bad", {"json_schema": {"type": "object", "properties": 5}}, kind="completion",
               prompt="x")
    _, final, _ = r.collect(["bad"])
    assert final["bad"]["code"] == "bad_request" and "response_format" in final["bad"]["message"]


def test_logprobs_one_entry_per_completion_token(start, tiny_gguf):
    r = start(tiny_gguf)
    r.ready()
    body = {"kind": "completion", "prompt": "The quick brown fox"}
    r.generate("greedy", {"max_tokens": 16, "logprobs": True, "top_logprobs": 5, **GREEDY}, **body)
    r.generate("sampled", {"max_tokens": 16, "logprobs": True, "top_logprobs": 3,
                           "temperature": 1.5, "seed": 3}, **body)
    r.generate("plain", {"max_tokens": 4, **GREEDY}, **body)
    texts, final, log = r.collect(["greedy", "sampled", "plain"])
    for req_id, top_n in (("greedy", 5), ("sampled", 3)):
        entries = [x for e in log if e.get("id") == req_id and e["event"] == "token"
                   for x in e["logprobs"]]
        assert len(entries) == final[req_id]["usage"]["completion_tokens"] == 16
        assert b"".join(bytes(x["bytes"]) for x in entries).decode("utf-8", "replace") == texts[req_id]
        for x in entries:
            tops = [t["logprob"] for t in x["top_logprobs"]]
            assert len(tops) == top_n and tops == sorted(tops, reverse=True)
            assert x["logprob"] <= tops[0] + 1e-9 and x["logprob"] <= 0
            assert math.fsum(math.exp(t) for t in tops) <= 1 + 1e-6
            if req_id == "greedy":
                assert x["logprob"] == pytest.approx(tops[0]) and x["token"] == x["top_logprobs"][0]["token"]
    assert all("logprobs" not in e for e in log if e.get("id") == "plain")


def test_count_only_counts_tools_without_taking_a_slot(start, tiny_gguf):
    r = start(tiny_gguf, n_ctx=4096, parallel=1)
    r.ready()
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    r.generate("busy", {"max_tokens": 3000}, kind="completion", prompt="Go on")
    r.generate("plain", {}, kind="chat", messages=messages, count_only=True)
    r.generate("tools", {}, kind="chat", messages=messages, tools=[WEATHER], count_only=True)
    _, final, log = r.collect(["plain", "tools"])
    assert final["plain"]["finish_reason"] == final["tools"]["finish_reason"] == "count"
    assert final["tools"]["usage"]["prompt_tokens"] > final["plain"]["usage"]["prompt_tokens"] > 3
    assert final["tools"]["usage"]["completion_tokens"] == 0
    assert not any(e["event"] == "done" and e["id"] == "busy" for e in log)   # answered at once
    r.send(op="cancel", id="busy")


def test_a_gguf_template_with_tools_renders_them(start, tmp_path):
    from gguf_factory import write_tiny_gguf
    path = write_tiny_gguf(tmp_path / "tools.gguf", chat_template=TOOLS_TEMPLATE)
    r = start(path, n_ctx=2048)   # byte-level tokens: the history is long
    info = r.ready()
    assert info["tool_template"] is True and info["chat_format"] == "gguf"
    r.generate("plain", {}, kind="chat", messages=HISTORY[:2], count_only=True)
    r.generate("tools", {}, kind="chat", messages=HISTORY[:2], tools=[WEATHER], count_only=True)
    r.generate("turn", {"max_tokens": 4, **GREEDY}, kind="chat", messages=HISTORY,
               tools=[WEATHER, CLOCK])
    _, final, _ = r.collect(["plain", "tools", "turn"])
    assert final["tools"]["usage"]["prompt_tokens"] > final["plain"]["usage"]["prompt_tokens"] + 20
    assert final["turn"]["event"] == "done", final["turn"]
    assert final["turn"]["usage"]["prompt_tokens"] > 100

    named = write_tiny_gguf(tmp_path / "named.gguf", chat_template=[
        {"name": "default", "template": PLAIN_TEMPLATE}, {"name": "tool_use", "template": TOOLS_TEMPLATE}])
    assert start(named).ready()["tool_template"] is True


def test_embeddings(start, tiny_gguf, tmp_path):
    r = start(tiny_gguf, n_ctx=64, embedding=True)
    info = r.ready()
    assert info["embedding"] is True and info["n_embd"] == 64 and info["pooling"] == "mean"
    r.send(op="generate", id="e", kind="embedding", inputs=["hello world", "a different text",
                                                           "hello world"])
    r.send(op="generate", id="long", kind="embedding", inputs=["ok", "word " * 100])
    r.generate("chat", {}, kind="chat", messages=[{"role": "user", "content": "hi"}])
    final = {}
    while len(final) < 3:
        e = r.next()
        if e["event"] in ("embeddings", "error"):
            final[e["id"]] = e
    data = final["e"]["data"]
    assert len(data) == 3 and all(len(v) == 64 for v in data)
    assert all(math.fsum(x * x for x in v) == pytest.approx(1.0) for v in data)
    assert data[0] == data[2] and data[0] != data[1]
    assert final["e"]["usage"]["prompt_tokens"] > 6
    assert final["long"]["code"] == "context_length_exceeded" and "input[1]" in final["long"]["message"]
    assert final["chat"]["code"] == "bad_request" and "embeddings only" in final["chat"]["message"]

    from gguf_factory import write_tiny_gguf
    last = start(write_tiny_gguf(tmp_path / "last.gguf", pooling_type=3), n_ctx=64, embedding=True)
    assert last.ready()["pooling"] == "last"              # the GGUF's own pooling
    last.send(op="generate", id="e", kind="embedding", inputs=["hello world"])
    while (e := last.next())["event"] != "embeddings":
        pass
    assert e["data"][0] != data[0]
    text = start(tiny_gguf)
    assert text.ready()["embedding"] is False
    text.send(op="generate", id="e", kind="embedding", inputs=["hello"])
    _, final, _ = text.collect(["e"])
    assert final["e"]["code"] == "bad_request" and "embedding" in final["e"]["message"]


def test_a_reranker_gguf_cannot_load_as_an_embedding_model(start, tmp_path):
    from gguf_factory import write_tiny_gguf
    r = start(write_tiny_gguf(tmp_path / "rank.gguf", pooling_type=4), embedding=True)
    event = r.next(timeout=30)
    assert event["event"] == "load_failed" and "pooling" in event["message"]


# --- the built-in SmolLM2 ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smollm2_path():
    from laya_desktop.runners.builtin import resolve_model_path
    return resolve_model_path("builtin:smollm2-135m-instruct")


@pytest.mark.slow
def test_smollm2_forced_tool_call_validates(start, smollm2_path):
    r = start(smollm2_path, n_ctx=2048, parallel=2)
    assert r.ready()["tool_template"] is False                 # plain ChatML: Hermes text
    params = WEATHER["function"]["parameters"]
    call_schema = {"type": "object", "properties": {"name": {"const": "get_weather"},
                                                    "arguments": params},
                   "required": ["name", "arguments"]}
    r.generate("call", {"max_tokens": 100, "json_schema": call_schema, **GREEDY}, kind="chat",
               messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=[WEATHER])
    r.generate("obj", {"max_tokens": 200, "json_schema": {"type": "object"}, **GREEDY}, kind="chat",
               messages=[{"role": "user", "content": "Give a JSON object describing a cat with name and age."}])
    texts, final, _ = r.collect(["call", "obj"], timeout=120)
    assert final["call"]["finish_reason"] == "stop"
    call = json.loads(texts["call"])
    jsonschema.validate(call, call_schema)
    assert call["arguments"]["city"] == "Paris"
    assert final["obj"]["finish_reason"] == "stop" and isinstance(json.loads(texts["obj"]), dict)
