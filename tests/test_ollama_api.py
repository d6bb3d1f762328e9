"""Ollama's API (/api/*) on a real engine process, through the real `ollama` client from PyPI.

The tiny random GGUF serves chat and generate (real tokens, no real text), a tiny GGUF with mean
pooling serves embeddings; SmolLM2 (built in, `slow`) answers one real chat, one structured
`format` and one tool call. Every error must be Ollama's shape, `{"error": "message"}`, and a
hypothesis fuzz of /api/chat and /api/generate checks that malformed bodies get a 4xx in it.
"""
from __future__ import annotations

import json

import httpx
import jsonschema
import ollama
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_harness import running_engine
from loopback_upstream import chat_upstreams
from property_budget import examples, property_test

USER = [{"role": "user", "content": "hi"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


def _config(tiny, emb, upstream_url: str) -> dict:
    return {
        "models": [
            {"name": "tiny", "backend": "llama_cpp", "path": str(tiny), "n_ctx": 1024, "parallel": 2},
            {"name": "tiny-256", "backend": "llama_cpp", "path": str(tiny), "n_ctx": 256,
             "parallel": 1},
            {"name": "emb", "backend": "llama_cpp", "path": str(emb), "n_ctx": 128, "parallel": 1,
             "embedding": True},
            {"name": "cloud", "backend": "openai", "base_url": upstream_url},
        ],
        "routes": [{"name": "ollama-embed", "match": {"path": ["/api/embed", "/api/embeddings"]},
                    "target": "emb"},
                   {"name": "short-first", "match": {"tags": ["short-first"]}, "target": "tiny-256",
                    "fallback": ["tiny"]},
                   {"name": "ollama-chat", "match": {"path": ["/api/chat"], "keywords": ["route me"]},
                    "target": "tiny"},
                   {"name": "default", "target": "tiny"}],
    }


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    import gguf
    from gguf_factory import write_tiny_gguf
    folder = tmp_path_factory.mktemp("ollama")
    emb = write_tiny_gguf(folder / "emb.gguf", pooling_type=gguf.PoolingType.MEAN)
    with chat_upstreams(upstream=0.0) as upstreams, \
            running_engine(_config(tiny_gguf, emb, upstreams["upstream"].base_url), folder) as eng:
        yield eng
        assert eng.proc.poll() is None, "the engine died"
        assert "unhandled error" not in eng.log_path.read_text(errors="replace"), eng.log()


@pytest.fixture(scope="module")
def client(engine):
    return ollama.Client(host=engine.url, timeout=60)


@pytest.fixture(scope="module")
def http(engine):
    with httpx.Client(base_url=engine.url, timeout=60) as c:
        yield c


def ollama_error(r: httpx.Response) -> str:
    """The message of an answer in Ollama's error shape (and nothing else in it)."""
    body = r.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"], body
    return body["error"]


def ndjson(r: httpx.Response) -> list[dict]:
    assert r.headers["content-type"].startswith("application/x-ndjson"), r.headers
    return [json.loads(line) for line in r.text.splitlines()]


def last_request(http: httpx.Client) -> dict:
    return http.get("/admin/requests").json()["requests"][-1]


def test_chat_whole_answer(client, http):
    reply = client.chat(model="tiny", messages=USER, stream=False, options={"num_predict": 4})
    assert reply.done and reply.done_reason in ("stop", "length")
    assert reply.message.role == "assistant" and isinstance(reply.message.content, str)
    assert reply.model == "tiny" and reply.created_at
    assert reply.prompt_eval_count > 0 and 0 < reply.eval_count <= 4
    assert reply.total_duration > 0
    entry = last_request(http)
    assert (entry["api"], entry["path"], entry["model"], entry["status"]) == \
        ("ollama", "/api/chat", "tiny", 200)
    assert entry["completion_tokens"] == reply.eval_count


def test_chat_streams_ndjson_by_default(client, http):
    parts = list(client.chat(model="tiny", messages=USER, stream=True,
                             options={"num_predict": 6, "temperature": 0}))
    assert all(not p.done for p in parts[:-1]) and parts[-1].done
    last = parts[-1]
    assert last.done_reason == "length" and last.eval_count == 6 and last.prompt_eval_count > 0
    assert all(getattr(last, name) > 0 for name in DURATIONS)
    assert last.total_duration >= last.load_duration + last.prompt_eval_duration + last.eval_duration
    text = "".join(p.message.content for p in parts)
    # `stream` absent streams too (Ollama's default), typed as NDJSON, one object per line
    r = http.post("/api/chat", json={"model": "tiny", "messages": USER,
                                     "options": {"num_predict": 6, "temperature": 0}})
    lines = ndjson(r)
    assert lines[-1]["done"] is True and lines[-1]["eval_count"] == 6
    assert "".join(line["message"]["content"] for line in lines) == text   # greedy: the same


def test_logprobs_whole_and_streamed(client):
    reply = client.chat(model="tiny", messages=USER, stream=False, logprobs=True, top_logprobs=2,
                        options={"num_predict": 3})
    assert len(reply.logprobs) == 3 and all(len(e.top_logprobs) == 2 for e in reply.logprobs)
    assert "".join(e.token for e in reply.logprobs) == reply.message.content
    parts = list(client.generate(model="tiny", prompt="x", stream=True, logprobs=True,
                                 options={"num_predict": 3}))
    assert sum(len(p.logprobs or []) for p in parts) == 3


def test_generate_whole_and_streamed(client):
    whole = client.generate(model="tiny", prompt="Once upon a time", stream=False,
                            options={"num_predict": 5, "temperature": 0, "seed": 1})
    assert whole.done and whole.eval_count == 5 and isinstance(whole.response, str)
    parts = list(client.generate(model="tiny", prompt="Once upon a time", stream=True,
                                 options={"num_predict": 5, "temperature": 0, "seed": 1}))
    assert parts[-1].done and parts[-1].done_reason == "length"
    assert "".join(p.response for p in parts) == whole.response
    # `system` goes into the prompt: more tokens are read
    with_system = client.generate(model="tiny", prompt="Once upon a time", system="Be brief.",
                                  stream=False, options={"num_predict": 1})
    assert with_system.prompt_eval_count > whole.prompt_eval_count


def test_generate_raw_skips_the_template(client):
    raw = client.generate(model="tiny", prompt="abc", raw=True, stream=False,
                          options={"num_predict": 1})
    templated = client.generate(model="tiny", prompt="abc", stream=False, options={"num_predict": 1})
    assert raw.prompt_eval_count < templated.prompt_eval_count


def test_options_reach_the_sampler(client):
    stop_free = client.generate(model="tiny", prompt="x", stream=False,
                                options={"num_predict": 8, "temperature": 0})
    assert stop_free.eval_count == 8
    runs = {client.generate(model="tiny", prompt="x", stream=False,
                            options={"num_predict": 8, "temperature": 1.5, "top_k": 0, "top_p": 1.0,
                                     "min_p": 0.0, "seed": seed, "repeat_penalty": 1.1,
                                     "presence_penalty": 0.5, "frequency_penalty": 0.5}).response
            for seed in (1, 1, 2, 3, 4)}
    assert 2 <= len(runs) <= 4   # one seed gives one answer; other seeds (mostly) others


def test_format_json_schema_is_a_grammar(client):
    parts = list(client.chat(model="tiny", messages=USER, stream=True, format=PERSON,
                             options={"num_predict": 120, "temperature": 0}))
    text = "".join(p.message.content for p in parts)
    assert text.lstrip().startswith("{")   # a random model's tokens, held to the schema
    if parts[-1].done_reason == "stop":
        jsonschema.validate(json.loads(text), PERSON)


def test_tools_and_a_tool_round_trip(client):
    bare = client.chat(model="tiny", messages=USER, stream=False, options={"num_predict": 1})
    history = [{"role": "user", "content": "weather in Oslo?"},
               {"role": "assistant", "content": "",
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
               {"role": "tool", "tool_name": "get_weather", "content": '{"sky": "sunny"}'}]
    reply = client.chat(model="tiny", messages=history, tools=[WEATHER], stream=False,
                        options={"num_predict": 1})
    assert reply.done and reply.prompt_eval_count > bare.prompt_eval_count


def test_embed_and_the_older_embeddings(client, http):
    reply = client.embed(model="emb", input=["hello there", "general kenobi"])
    assert len(reply.embeddings) == 2 and len(reply.embeddings[0]) == 64
    assert reply.embeddings[0] != reply.embeddings[1] and reply.prompt_eval_count > 0
    old = client.embeddings(model="emb", prompt="hello there")
    assert old.embedding == pytest.approx(reply.embeddings[0], abs=1e-5)
    entry = last_request(http)
    assert (entry["api"], entry["path"], entry["rule"]) == ("ollama", "/api/embeddings", "direct")
    routed = http.post("/api/embed", json={"model": "anything", "input": "hi"})
    assert routed.status_code == 200 and routed.headers["x-laya-route"] == "ollama-embed"
    # a chat model does not embed, an embedding model does not chat: refused in Ollama's shape
    r = http.post("/api/embed", json={"model": "tiny", "input": "hi"})
    assert r.status_code == 400 and "embeddings" in ollama_error(r)
    r = http.post("/api/chat", json={"model": "emb", "messages": USER, "stream": False})
    assert r.status_code == 400 and "embeddings only" in ollama_error(r)


def test_routing_sees_the_path_and_the_user_text(http):
    r = http.post("/api/chat", json={"model": "llama3.2", "stream": False,
                                     "messages": [{"role": "user", "content": "please ROUTE ME"}],
                                     "options": {"num_predict": 1}})
    assert r.status_code == 200 and r.headers["x-laya-route"] == "ollama-chat"
    assert r.headers["x-laya-model"] == "tiny" and r.json()["model"] == "tiny"
    r = http.post("/api/generate", json={"model": "llama3.2", "prompt": "please route me",
                                         "stream": False, "options": {"num_predict": 1}})
    assert r.headers["x-laya-route"] == "default"   # that rule is for /api/chat only
    r = http.post("/api/chat", json={"model": "tiny:latest", "messages": USER, "stream": False,
                                     "options": {"num_predict": 1}})
    assert r.status_code == 200 and r.headers["x-laya-route"] == "direct"


def test_num_ctx_over_a_model_falls_back_to_one_that_holds_it(http):
    body = {"model": "auto", "messages": USER, "stream": False, "tags": ["short-first"],
            "options": {"num_ctx": 512, "num_predict": 1}}
    r = http.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["x-laya-model"] == "tiny" and r.headers["x-laya-fallback-from"] == "tiny-256"
    body["options"]["num_ctx"] = 200
    assert http.post("/api/chat", json=body).headers["x-laya-model"] == "tiny-256"


def test_a_remote_model_answers_in_ollamas_shape(client, http):
    reply = client.chat(model="cloud", messages=USER, stream=False)
    assert reply.message.content == "from upstream" and reply.done and reply.eval_count == 4
    assert last_request(http)["model"] == "cloud"
    r = http.post("/api/embed", json={"model": "cloud", "input": "hi"})
    assert r.status_code == 400 and "cloud" in ollama_error(r)


def test_list_show_ps_version(client, http):
    client.chat(model="tiny", messages=USER, stream=False, options={"num_predict": 1})
    listed = {m.model: m for m in client.list().models}
    assert set(listed) == {"tiny", "tiny-256", "emb", "cloud"}
    tiny = listed["tiny"]
    assert tiny.size > 0 and len(tiny.digest) == 64 and tiny.modified_at is not None
    assert tiny.details.format == "gguf" and tiny.details.family == "llama"
    assert tiny.details.quantization_level and tiny.details.parameter_size.endswith("M")
    shown = client.show("tiny")
    assert shown.details.family == "llama" and shown.modelinfo["general.architecture"] == "llama"
    assert shown.modelinfo["general.parameter_count"] > 0 and "num_ctx 1024" in shown.parameters
    assert "tools" in shown.capabilities and "models.yaml" in shown.modelfile
    assert client.show("emb").capabilities == ["embedding"]
    with pytest.raises(ollama.ResponseError) as missing:
        client.show("nope")
    assert missing.value.status_code == 404 and "nope" in missing.value.error
    cloud = http.get("/api/tags").json()["models"][3]
    assert cloud["remote_model"] == "cloud" and cloud["remote_host"].startswith("127.0.0.1:")
    running = {m.model: m for m in client.ps().models}
    assert "tiny" in running and running["tiny"].context_length == 1024
    assert running["tiny"].size > 0 and running["tiny"].expires_at is not None
    version = http.get("/api/version").json()["version"]
    assert [int(p) for p in version.split(".")] >= [0, 5, 0]   # structured outputs' release


def test_load_and_unload_idioms(client, http):
    loaded = http.post("/api/generate", json={"model": "tiny"}).json()
    assert loaded["done"] and loaded["done_reason"] == "load"
    assert "tiny" in {m.model for m in client.ps().models}
    gone = http.post("/api/chat", json={"model": "tiny", "messages": [], "keep_alive": 0}).json()
    assert gone["done_reason"] == "unload" and gone["message"]["content"] == ""
    assert "tiny" not in {m.model for m in client.ps().models}


def test_model_store_calls_answer_501(client, http):
    with pytest.raises(ollama.ResponseError) as pulled:
        client.pull("llama3.2")
    assert pulled.value.status_code == 501 and "models.yaml" in pulled.value.error
    for method, path in (("POST", "/api/push"), ("POST", "/api/create"), ("POST", "/api/copy"),
                         ("DELETE", "/api/delete"), ("HEAD", "/api/blobs/sha256:00"),
                         ("POST", "/api/blobs/sha256:00")):
        r = http.request(method, path, json={"model": "tiny"})
        assert r.status_code == 501, (path, r.status_code)
        if method != "HEAD":
            assert "models.yaml" in ollama_error(r)


@pytest.mark.parametrize("body, named", [
    ({"options": {"num_gpu": 99}}, "options.num_gpu"),
    ({"options": {"num_ctx": 4096}}, "options.num_ctx"),
    ({"options": {"tfs_z": 1.0}}, "options.tfs_z"),
    ({"options": {"temperature": "hot"}}, "options.temperature"),
    ({"options": {"stop": [1]}}, "stop"),
    ({"options": {"num_predict": 0}}, "options.num_predict"),
    ({"think": True}, "think"),
    ({"keep_alive": "1h"}, "idle_ttl_s 900"),   # longer than the model stays loaded
    ({"keep_alive": -1}, "keep_alive"),
    ({"keep_alive": 0}, "keep_alive"),
    ({"keep_alive": "soon"}, "keep_alive"),
    ({"format": "yaml"}, "format"),
    ({"truncate": True}, "truncate"),
    ({"definitely_not_a_field": 1}, "definitely_not_a_field"),
    ({"messages": [{"role": "user", "content": "look", "images": ["iVBORw0KGgo="]}]},
     "messages[0].images"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
])
def test_what_cannot_be_honoured_is_refused_by_name(http, body, named):
    r = http.post("/api/chat", json={"model": "tiny", "messages": USER, "stream": False, **body})
    message = ollama_error(r)
    assert r.status_code == 400 and named in message, (r.status_code, message)


def test_generate_refusals_and_an_unknown_model(http, tiny_gguf, tmp_path):
    for body, named in (({"template": "{{ .Prompt }}"}, "template"), ({"context": [1, 2]}, "context"),
                        ({"suffix": "end"}, "suffix"), ({"raw": True, "system": "x"}, "system"),
                        ({"images": ["R0lGODlh"]}, "images")):
        r = http.post("/api/generate", json={"model": "tiny", "prompt": "x", "stream": False, **body})
        assert r.status_code == 400 and named in ollama_error(r), (body, r.text)
    for fits in ({"options": {"num_ctx": 64, "num_predict": 1}},   # a context the model holds
                 {"keep_alive": "5m", "options": {"num_predict": 1}},   # within its idle_ttl_s
                 {"keep_alive": 300, "options": {"num_predict": 1}}):
        r = http.post("/api/chat", json={"model": "tiny", "messages": USER, "stream": False, **fits})
        assert r.status_code == 200, (fits, r.text)
    config = {"server": {"api_key": "sesame"},
              "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 128}],
              "routes": [{"name": "code-only", "match": {"tags": ["code"]}, "target": "tiny"}]}
    with running_engine(config, tmp_path) as bare:
        r = httpx.get(bare.url + "/api/tags")
        assert r.status_code == 401 and "API key" in ollama_error(r)
        keyed = ollama.Client(host=bare.url, headers={"Authorization": "Bearer sesame"})
        assert [m.model for m in keyed.list().models] == ["tiny"]
        with pytest.raises(ollama.ResponseError) as unrouted:
            keyed.chat(model="llama3.2", messages=USER, stream=False)
        assert unrouted.value.status_code == 404 and "llama3.2" in unrouted.value.error
        key = {"Authorization": "Bearer sesame"}
        r = httpx.get(bare.url + "/api/nothing-here", headers=key)
        assert r.status_code == 404 and ollama_error(r)
        r = httpx.get(bare.url + "/api/chat", headers=key)
        assert r.status_code == 405 and ollama_error(r)


@pytest.mark.parametrize("value, seconds", [(300, 300), (0, 0), (-1, -1), ("-1", -1), ("0", 0),
                                            ("5m", 300), ("1h30m", 5400), ("1.5s", 1.5),
                                            ("-1m", -60), ("250ms", 0.25), (None, None)])
def test_keep_alive_durations(value, seconds):
    from laya_desktop.engine.apis.ollama_terms import keep_alive_seconds
    assert keep_alive_seconds(value) == seconds


@pytest.mark.parametrize("value", ["", "5 m", "m5", "5d", "1h-1m", True, [], {}])
def test_keep_alive_that_is_no_duration_is_refused(value):
    from laya_desktop.engine.apis.ollama_terms import keep_alive_seconds
    from laya_desktop.engine.errors import ApiError
    with pytest.raises(ApiError, match="keep_alive"):
        keep_alive_seconds(value)


def test_a_pinned_model_or_one_never_idle_unloaded_keeps_alive_for_ever():
    from types import SimpleNamespace
    from laya_desktop.engine.apis.ollama_terms import keep_alive_check
    from laya_desktop.engine.errors import ApiError
    for_ever = keep_alive_check(-1)
    for_ever(SimpleNamespace(name="p", keep_in_memory=True, idle_ttl_s=900))
    for_ever(SimpleNamespace(name="n", keep_in_memory=False, idle_ttl_s=0))
    with pytest.raises(ApiError, match="idle_ttl_s 900"):
        for_ever(SimpleNamespace(name="t", keep_in_memory=False, idle_ttl_s=900))


# --- malformed bodies: a 4xx in Ollama's shape, never a 5xx or a dead engine ---------------------

BASES = {"/api/chat": {"model": "tiny", "messages": USER, "stream": False,
                       "options": {"num_predict": 2}},
         "/api/generate": {"model": "tiny", "prompt": "hi", "stream": False,
                           "options": {"num_predict": 2}}}
EXTRA_KEYS = ["stream", "options", "format", "tools", "think", "keep_alive", "raw", "system",
              "template", "context", "images", "messages", "prompt", "model", "tags", "logprobs",
              "top_logprobs", "suffix", "truncate"]
OPTION_KEYS = ["num_predict", "temperature", "top_k", "top_p", "min_p", "seed", "stop", "num_ctx",
               "repeat_penalty", "num_gpu", "mirostat"]
scalars = (st.none() | st.booleans() | st.integers(min_value=-(10 ** 20), max_value=10 ** 20)
           | st.sampled_from([0, -1, -2, 2 ** 63, 10 ** 300]) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=30) | st.sampled_from(["json", "", "tiny", "tiny:latest", "../x"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=10)
FUZZ = settings(max_examples=examples(120), deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@st.composite
def mutated(draw, base: dict):
    body = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["replace", "drop", "add", "option", "message"]))
        keys = sorted(body)
        if action == "replace" and keys:
            body[draw(st.sampled_from(keys))] = draw(json_values)
        elif action == "drop" and keys:
            body.pop(draw(st.sampled_from(keys)))
        elif action == "add":
            body[draw(st.sampled_from(EXTRA_KEYS))] = draw(json_values)
        elif action == "option":
            options = body.get("options") if isinstance(body.get("options"), dict) else {}
            options[draw(st.sampled_from(OPTION_KEYS))] = draw(json_values)
            body["options"] = options
        else:
            body["messages"] = [draw(st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant", "tool", "User", "x"]) | scalars},
                optional={"content": json_values, "tool_calls": json_values, "images": json_values,
                          "tool_name": json_values, "thinking": json_values}))]
    if isinstance(body.get("options"), dict):
        n = body["options"].get("num_predict")
        if not isinstance(n, int) or isinstance(n, bool) or n > 2 or n < 0:
            body["options"]["num_predict"] = 2   # a valid request is answered quickly
    return body


def _check(r: httpx.Response) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:400])
    if r.status_code >= 400:
        ollama_error(r)
    elif r.headers["content-type"].startswith("application/x-ndjson"):
        lines = ndjson(r)
        assert lines[-1].get("done") is True or "error" in lines[-1], lines[-1]
    else:
        assert r.json()["done"] is True


@property_test
@pytest.mark.parametrize("path", list(BASES))
def test_mutated_bodies_get_ollama_shaped_answers(http, path):
    @FUZZ
    @given(body=mutated(BASES[path]))
    def run(body):
        _check(http.post(path, content=json.dumps(body).encode(),
                         headers={"content-type": "application/json"}))
    run()


@pytest.mark.parametrize("path", list(BASES))
def test_raw_bodies_get_ollama_shaped_400s(http, path):
    for raw in (b"", b"null", b"[]", b'"x"', b'{"model": "tiny"', b"\xff\xfe",
                b'{"model": "tiny", "options": {"temperature": NaN}}', b"[" * 10_000):
        r = http.post(path, content=raw, headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, (raw[:40], r.status_code)
        ollama_error(r)


# --- SmolLM2: real text, a structured answer and a tool call --------------------------------------

@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    config = {"models": [{"name": "smol", "backend": "llama_cpp",
                          "path": "builtin:smollm2-135m-instruct", "n_ctx": 2048, "parallel": 1}],
              "routes": [{"name": "default", "target": "smol"}]}
    with running_engine(config, tmp_path_factory.mktemp("ollama-smol")) as eng:
        yield ollama.Client(host=eng.url, timeout=120), eng.url


@pytest.mark.slow
def test_smollm2_real_chat_and_format(smol):
    client, _ = smol
    reply = client.chat(model="smol", stream=False, options={"temperature": 0, "num_predict": 30},
                        messages=[{"role": "user", "content": "Name the largest ocean on Earth."}])
    assert "pacific" in reply.message.content.lower() and reply.done_reason == "stop"
    person = client.chat(model="smol", stream=False, format=PERSON,
                         options={"temperature": 0, "num_predict": 60},
                         messages=[{"role": "user", "content": "Invent a person with a name and an age."}])
    jsonschema.validate(json.loads(person.message.content), PERSON)
    answer = client.generate(model="smol", prompt="Reply with a JSON object.", format="json",
                             stream=False, options={"temperature": 0, "num_predict": 60})
    assert isinstance(json.loads(answer.response), dict)


@pytest.mark.slow
def test_smollm2_tool_call(smol):
    """SmolLM2 does not call a tool unasked, and Ollama's API cannot ask: Laya's own `tool_choice`
    forces the call; the stream is read with the ollama package's own response type."""
    _, url = smol
    r = httpx.post(url + "/api/chat", timeout=120, json={
        "model": "smol", "tools": [WEATHER], "tool_choice": "required",
        "options": {"temperature": 0, "num_predict": 60},
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}]})
    parts = [ollama.ChatResponse(**line) for line in ndjson(r)]
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert parts[-1].done and parts[-1].done_reason == "stop" and len(calls) == 1
    assert calls[0].function.name == "get_weather"
    jsonschema.validate(dict(calls[0].function.arguments), WEATHER["function"]["parameters"])
    # the call goes back as Ollama's clients send it: arguments an object, the result by tool_name
    followed = ollama.Client(host=url, timeout=120).chat(
        model="smol", tools=[WEATHER], stream=False, options={"temperature": 0, "num_predict": 30},
        messages=[{"role": "user", "content": "What is the weather in Paris?"},
                  {"role": "assistant", "content": "", "tool_calls": [calls[0].model_dump()]},
                  {"role": "tool", "tool_name": "get_weather", "content": '{"sky": "sunny", "c": 21}'}])
    assert followed.message.content and not followed.message.tool_calls
