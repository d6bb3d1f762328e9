"""Fuzzing what test_hostile_input.py leaves out: JSON Schemas through all five grammar paths,
tool lists and tool choices of each API, and request headers.

One engine on the tiny GGUF serves the module. Every answer must be a 200 or a 4xx in the API's
own error shape; the runner that serves the grammars must never crash (its pid is the same at the
end) and the engine must log no unhandled error. The last test prints how many requests ran.
"""
from __future__ import annotations

import ipaddress
import json
import time
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import api_shapes
from engine_harness import running_engine
from property_budget import examples, property_test

SENT = {"count": 0, "started": None, "statuses": {}}
TIMEOUT = httpx.Timeout(60.0)   # a hang fails the test instead of stalling it
SETTINGS = settings(max_examples=examples(120), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
USER = [{"role": "user", "content": "hi"}]

# -- JSON Schemas: shapes the converters know, odd ones they may not, and bounds near and far
# past what llama.cpp's grammar code survives ------------------------------------------------
BOUNDS = st.sampled_from([0, 1, 3, 64, 1000, 5000, 20_000, 10 ** 6, 10 ** 8, -1, 2 ** 63])
PATTERNS = st.sampled_from(["^[a-z]+$", "^a{0,20000}$", "^(a|b){3,9}$", "[", "^\\d{1,99999}$",
                            "(((((((((((a)))))))))))", "^.*$", "^(?:x|y)+z$", "\\p{L}"])
FORMATS = st.sampled_from(["date", "date-time", "time", "uuid", "email", "uri", "nonsense"])
names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
leaf_schemas = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean",
                                                    "null", "object", "array", "wat"])}),
    st.fixed_dictionaries({"type": st.just("string")},
                          optional={"minLength": BOUNDS, "maxLength": BOUNDS, "pattern": PATTERNS,
                                    "format": FORMATS}),
    st.fixed_dictionaries({"type": st.sampled_from(["integer", "number"])},
                          optional={"minimum": BOUNDS, "maximum": BOUNDS,
                                    "exclusiveMinimum": BOUNDS, "multipleOf": BOUNDS}),
    st.builds(lambda n: {"enum": [f"value-{i}" for i in range(n)]},
              st.sampled_from([0, 1, 5, 300, 5000, 20_000])),
    st.builds(lambda v: {"const": v}, st.none() | st.integers() | st.text(max_size=8)),
    st.just({}), st.just(True), st.just(False), st.just({"$ref": "#/$defs/nowhere"}),
    st.integers() | st.text(max_size=5) | st.none(),     # not a schema at all
)


def _compose(inner):
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("object"),
                               "properties": st.dictionaries(names, inner, max_size=4)},
                              optional={"required": st.lists(names, max_size=3),
                                        "additionalProperties": st.booleans() | inner,
                                        "minProperties": BOUNDS, "maxProperties": BOUNDS}),
        st.fixed_dictionaries({"type": st.just("array"), "items": inner},
                              optional={"minItems": BOUNDS, "maxItems": BOUNDS,
                                        "prefixItems": st.lists(inner, max_size=3),
                                        "uniqueItems": st.booleans()}),
        st.builds(lambda k, xs: {k: xs}, st.sampled_from(["anyOf", "oneOf", "allOf"]),
                  st.lists(inner, max_size=4)),
        st.builds(lambda d: {"$defs": {"a": d}, "$ref": "#/$defs/a"}, inner),
    )


schemas = st.recursive(leaf_schemas, _compose, max_leaves=8)


def _nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


# The five ways a schema reaches the grammar code (path, body).
def grammar_paths(schema) -> list[tuple[str, dict]]:
    return [
        ("/v1/chat/completions", {"model": "tiny", "messages": USER, "max_tokens": 2,
                                  "response_format": {"type": "json_schema",
                                                      "json_schema": {"name": "x", "schema": schema}}}),
        ("/v1/chat/completions", {"model": "tiny", "messages": USER, "max_tokens": 2,
                                  "tools": [{"type": "function",
                                             "function": {"name": "f", "parameters": schema}}],
                                  "tool_choice": {"type": "function", "function": {"name": "f"}}}),
        ("/v1/responses", {"model": "tiny", "input": "hi", "max_output_tokens": 2, "store": False,
                           "text": {"format": {"type": "json_schema", "name": "x", "schema": schema}}}),
        ("/v1/messages", {"model": "tiny", "messages": USER, "max_tokens": 2,
                          "output_config": {"format": {"type": "json_schema", "schema": schema}}}),
        ("/v1/messages", {"model": "tiny", "messages": USER, "max_tokens": 2,
                          "tools": [{"name": "f", "input_schema": schema}],
                          "tool_choice": {"type": "tool", "name": "f"}}),
    ]


# -- tools and tool choices of each API ------------------------------------------------------
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
tool_names = st.sampled_from(["f", "get_weather", "Bash", "mcp__server__tool", "", "a" * 65,
                              "bad name", "ünïcode", "x" * 5000]) | json_values
chat_tools = st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("function"),
                           "function": st.fixed_dictionaries(
                               {"name": tool_names},
                               optional={"description": json_values, "parameters": schemas,
                                         "strict": json_values})}),
    st.fixed_dictionaries({"type": json_values}, optional={"function": json_values}),
    json_values), max_size=4) | json_values
chat_choices = st.one_of(st.sampled_from(["auto", "none", "required", "any", ""]),
                         st.fixed_dictionaries({"type": st.just("function"),
                                                "function": st.fixed_dictionaries({"name": tool_names})}),
                         json_values)
responses_tools = st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("function"), "name": tool_names},
                          optional={"parameters": schemas, "description": json_values,
                                    "strict": json_values}),
    st.fixed_dictionaries({"type": st.just("custom"), "name": tool_names},
                          optional={"format": json_values, "description": json_values}),
    st.fixed_dictionaries({"type": st.sampled_from(["web_search", "file_search", "mcp",
                                                    "local_shell", "wat"])}),
    json_values), max_size=4) | json_values
responses_choices = st.one_of(
    st.sampled_from(["auto", "none", "required"]),
    st.fixed_dictionaries({"type": st.just("function"), "name": tool_names}),
    st.fixed_dictionaries({"type": st.just("allowed_tools"),
                           "mode": st.sampled_from(["auto", "required"]) | json_values,
                           "tools": st.lists(st.fixed_dictionaries({"type": st.just("function"),
                                                                    "name": tool_names}),
                                             max_size=3) | json_values}),
    json_values)
messages_tools = st.lists(st.one_of(
    st.fixed_dictionaries({"name": tool_names},
                          optional={"input_schema": schemas, "description": json_values,
                                    "type": st.sampled_from(["custom", "bash_20250124",
                                                             "web_search_20250305", "wat"])}),
    json_values), max_size=4) | json_values
messages_choices = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["auto", "any", "none", "tool", "wat"])},
                          optional={"name": tool_names,
                                    "disable_parallel_tool_use": json_values}),
    json_values)

# -- headers ---------------------------------------------------------------------------------
# what an HTTP client can send at all: no control characters, no spaces at either end
header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=60).map(str.strip)
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                 "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/octet-stream", "", "json"]


def _tiny_config(tiny) -> dict:
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny), "n_ctx": 256,
                        "parallel": 2, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    folder = tmp_path_factory.mktemp("fuzz")
    with running_engine(_tiny_config(tiny_gguf), folder) as eng:
        with eng.client() as c:
            assert c.post("/admin/models/tiny/load").status_code == 200
            pid = _runner_pid(c)
        SENT["started"] = time.monotonic()
        yield eng
        with eng.client() as c:
            assert _runner_pid(c) == pid, "the runner crashed or was restarted during the fuzz"
        assert eng.proc.poll() is None, "the engine died"
        log = eng.log_path.read_text(errors="replace")
        assert "unhandled error" not in log and "Traceback" not in log, eng.log()


def _runner_pid(c: httpx.Client) -> int:
    return c.get("/admin/models").json()["models"][0]["pid"]


@pytest.fixture(scope="module")
def client(engine):
    with httpx.Client(base_url=engine.url, timeout=TIMEOUT) as c:
        yield c


def check_shape(path: str, r: httpx.Response) -> None:
    SENT["statuses"][r.status_code] = SENT["statuses"].get(r.status_code, 0) + 1
    api_shapes.check_shape(path, r)


def send(client: httpx.Client, path: str, body, headers: dict | None = None) -> httpx.Response:
    SENT["count"] += 1
    r = client.post(path, content=json.dumps(body).encode(),
                    headers={"content-type": "application/json", **(headers or {})})
    check_shape(path, r)
    return r


@property_test
@pytest.mark.parametrize("way", range(5), ids=["chat-format", "chat-tool", "responses-format",
                                               "messages-format", "messages-tool"])
def test_schemas_through_every_grammar_path(client, way):
    @SETTINGS
    @given(schema=schemas)
    def run(schema):
        path, body = grammar_paths(schema)[way]
        send(client, path, body)
    run()


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": 20_000}, {"type": "string", "minLength": 10 ** 8},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 20_000},
    {"type": "string", "pattern": "^a{0,20000}$"}, {"enum": [f"v{i}" for i in range(20_000)]},
    _nested(100), _nested(400),
], ids=["maxLength", "minLength", "maxItems", "pattern", "enum", "nest100", "nest400"])
def test_the_attack_schemas_are_refused_or_served_on_every_path(client, schema):
    for path, body in grammar_paths(schema):
        r = send(client, path, body)
        assert r.status_code in (200, 400), (path, r.status_code, r.text[:300])


@property_test
@SETTINGS
@given(tools=chat_tools, choice=chat_choices | st.none())
def test_chat_tools(client, tools, choice):
    body = {"model": "tiny", "messages": USER, "max_tokens": 2, "tools": tools}
    if choice is not None:
        body["tool_choice"] = choice
    send(client, "/v1/chat/completions", body)


@property_test
@SETTINGS
@given(tools=responses_tools, choice=responses_choices | st.none())
def test_responses_tools(client, tools, choice):
    body = {"model": "tiny", "input": "hi", "max_output_tokens": 2, "store": False, "tools": tools}
    if choice is not None:
        body["tool_choice"] = choice
    send(client, "/v1/responses", body)


@property_test
@SETTINGS
@given(tools=messages_tools, choice=messages_choices | st.none(),
       path=st.sampled_from(["/v1/messages", "/v1/messages/count_tokens"]))
def test_messages_tools(client, tools, choice, path):
    body = {"model": "tiny", "messages": USER, "max_tokens": 2, "tools": tools}
    if choice is not None:
        body["tool_choice"] = choice
    send(client, path, body)


BODIES = {"/v1/chat/completions": {"model": "tiny", "messages": USER, "max_tokens": 2},
          "/v1/responses": {"model": "tiny", "input": "hi", "max_output_tokens": 2, "store": False},
          "/v1/messages": {"model": "tiny", "messages": USER, "max_tokens": 2},
          "/v1/completions": {"model": "tiny", "prompt": "hi", "max_tokens": 2}}


@property_test
@SETTINGS
@given(path=st.sampled_from(sorted(BODIES)),
       tags=header_text | st.just(",".join(["t"] * 5000)) | st.just("x" * 60_000),
       auth=header_text, accept=header_text | st.just("text/event-stream"),
       ctype=st.sampled_from(CONTENT_TYPES), extra=st.dictionaries(
           st.sampled_from(["x-laya-route", "x-request-id", "user-agent", "anthropic-version",
                            "anthropic-beta", "openai-organization", "x-stainless-os"]),
           header_text, max_size=3))
def test_headers(client, path, tags, auth, accept, ctype, extra):
    headers = {"x-laya-tags": tags, "authorization": auth, "accept": accept, **extra}
    SENT["count"] += 1
    r = client.post(path, content=json.dumps(BODIES[path]).encode(),
                    headers={**headers, "content-type": ctype})
    check_shape(path, r)
    if not ctype.lower().startswith("application/json"):
        # a body a browser may send cross-site without asking first is never served
        assert r.status_code in (400, 415), (ctype, r.status_code, r.text[:200])


@property_test
@SETTINGS
@given(host=st.sampled_from(["rebind.attacker.example", "evil.example:80", "127.0.0.2",
                             "localhost.attacker.example", "[::2]", "0.0.0.0", "", "a" * 300])
       | header_text,
       path=st.sampled_from(sorted(BODIES) + ["/admin/config", "/v1/models", "/metrics"]))
def test_hosts_other_than_the_engine_are_refused(engine, client, host, path):
    """Only IP literals (nothing rebinds them), localhost and *.localhost pass without
    server.allowed_hosts; any other name, a DNS-rebinding page's among them, gets 421."""
    SENT["count"] += 1
    method = "GET" if path in ("/admin/config", "/v1/models", "/metrics") else "POST"
    body = json.dumps(BODIES.get(path, {})).encode() if method == "POST" else None
    r = client.request(method, path, content=body,
                       headers={"host": host, "content-type": "application/json"})
    if _ip_or_localhost(host):
        check_shape(path, r)
    else:
        assert r.status_code == 421, (host, r.status_code, r.text[:200])


def _ip_or_localhost(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host   # name:port
    name = name.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


@property_test
@SETTINGS
@given(origin=st.sampled_from(["http://evil.example", "null", "https://localhost.evil.example",
                               "http://127.0.0.1.evil.example", "file://", "chrome-extension://x"])
       | header_text.map(lambda t: "http://" + t),
       path=st.sampled_from(sorted(BODIES)))
def test_foreign_origins_are_refused(client, origin, path):
    SENT["count"] += 1
    r = client.post(path, content=json.dumps(BODIES[path]).encode(),
                    headers={"origin": origin, "content-type": "application/json"})
    check_shape(path, r)
    if _host_of(origin) not in ("127.0.0.1", "localhost", "::1"):
        assert r.status_code == 403, (origin, r.status_code, r.text[:200])


def _host_of(origin: str) -> str | None:
    try:
        return urlsplit(origin).hostname
    except ValueError:
        return None


def test_report_how_many_requests_ran(engine):
    took = time.monotonic() - SENT["started"]
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(SENT["statuses"].items()))
    print(f"\nfuzzed schemas, tools and headers: {SENT['count']} requests in {took:.0f} s "
          f"({statuses})")
    assert SENT["count"] > 0
