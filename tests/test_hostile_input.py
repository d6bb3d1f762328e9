"""Hostile requests against a real engine process: every answer is a 200 or a 4xx in the API's
own error shape, never a 5xx, a hang or a dead engine.

One engine on the tiny GGUF serves the whole module. Hypothesis mutates a valid body of each
endpoint (wrong types, missing fields, absurd numbers, unknown models, path tricks in names) and
sends raw bodies no JSON encoder writes (NaN and Infinity literals, deep nesting, invalid UTF-8,
integers of thousands of digits, truncated JSON) under random content types. The last test prints
how many requests ran.
"""
from __future__ import annotations

import json
import socket
import time
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api_shapes import check_shape
from engine_harness import running_engine
from laya_desktop.engine.web_guard import json_type
from property_budget import examples, property_test

SENT = {"count": 0, "started": None}
TIMEOUT = httpx.Timeout(30.0)   # a hang fails the test instead of stalling it
SETTINGS = settings(max_examples=examples(150), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
LIMIT_MB = 1

USER = [{"role": "user", "content": "hi"}]
BASES = {
    "/v1/chat/completions": {"model": "tiny", "messages": USER, "max_tokens": 2},
    "/v1/completions": {"model": "tiny", "prompt": "hi", "max_tokens": 2},
    "/v1/responses": {"model": "tiny", "input": "hi", "max_output_tokens": 2, "store": False},
    "/v1/messages": {"model": "tiny", "messages": USER, "max_tokens": 2},
    "/v1/messages/count_tokens": {"model": "tiny", "messages": USER},
    "/v1/embeddings": {"model": "emb", "input": "hi"},
    "/admin/route/explain": {"model": "auto", "messages": USER},
}
EXTRA_KEYS = ["stream", "temperature", "top_p", "top_k", "stop", "seed", "n", "tools", "tool_choice",
              "response_format", "logit_bias", "logprobs", "top_logprobs", "tags", "system",
              "stream_options", "instructions", "previous_response_id", "input", "messages",
              "prompt", "max_tokens", "max_output_tokens", "model", "path", "encoding_format",
              "dimensions", "stop_sequences", "thinking", "metadata", "parallel_tool_calls"]
TRICKY_NAMES = ["../../etc/passwd", "%2e%2e%2f%2e%2e", "tiny\x00", "tiny/../tiny", "..", "auto",
                "nope", "", " ", "TINY", "tiny\n", "x" * 5000, "\u202etiny", "emb", "tiny:latest",
                "C:\\Windows\\system32", "file:///etc/passwd", "builtin:../../x"]

scalars = (st.none() | st.booleans()
           | st.integers(min_value=-(10 ** 30), max_value=10 ** 30)
           | st.sampled_from([0, -1, 2 ** 31, 2 ** 63, 10 ** 300, 10 ** 4000])
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.sampled_from([1e308, -1e308, 5e-324, -0.0])
           | st.text(max_size=40) | st.sampled_from(TRICKY_NAMES))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)


def nested(depth: int, leaf=None):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def mutated(draw, base: dict):
    """A valid body with a few fields replaced, removed or added."""
    body = dict(base)
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["replace", "drop", "add", "model", "deep"]))
        keys = sorted(body)
        if action == "replace" and keys:
            body[draw(st.sampled_from(keys))] = draw(json_values)
        elif action == "drop" and keys:
            body.pop(draw(st.sampled_from(keys)))
        elif action == "add":
            body[draw(st.sampled_from(EXTRA_KEYS))] = draw(json_values)
        elif action == "model":
            body["model"] = draw(st.sampled_from(TRICKY_NAMES) | st.text(max_size=30))
        else:  # nesting inside a real field, near and over the engine's limit
            depth = draw(st.sampled_from([20, 100, 127, 129, 500]))
            field = draw(st.sampled_from(["messages", "input", "tools", "metadata", "stop"]))
            body[field] = nested(depth, draw(scalars))
    if draw(st.booleans()) and "max_tokens" in body:
        body["max_tokens"] = min(body["max_tokens"], 2) if isinstance(body["max_tokens"], int) \
            and not isinstance(body["max_tokens"], bool) else body["max_tokens"]
    return body


# Python's parser reads UTF-16 and UTF-32 (RFC 8259 asks for UTF-8 but allows taking others).
UTF16 = '{"model": "tiny", "prompt": "h\u00e9", "max_tokens": 2}'.encode("utf-16")
RAW_BODIES = [
    b'{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": NaN}',
    b'{"model": "tiny", "temperature": Infinity, "max_tokens": 2, "prompt": "x"}',
    b'{"model": "tiny", "top_p": -Infinity}', b"NaN", b"Infinity",
    b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000, b"[" * 200_000,
    b'{"model": "tiny", "messages": ' + b"[" * 900 + b"]" * 900 + b"}",
    b'{"max_tokens": ' + b"9" * 200_000 + b"}", b'{"max_tokens": 1e999999}',
    b"{" + b"x" * 200_000, b"\xff\xfe\x00{", b'{"model": "\xc3\x28"}', b"\x00" * 1000,
    b'{"model": "tiny"', b"", b" ", b"null", b"[]", b'"text"', b"12", b"true",
    b'{"model": "tiny", "model": "nope", "messages": [], "max_tokens": 2}',
    b'{"messages": [{"role": "user", "content": "\\ud800"}], "max_tokens": 2}',
    UTF16,
    b'{"model": "tiny", "prompt": "hi", "max_tokens": 2}\n{"second": 1}',
]
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/json; charset=latin-1", "",
                 "application/octet-stream", "image/png"]


def _tiny_config(tiny, emb) -> dict:
    return {
        "server": {"max_body_mb": LIMIT_MB},
        "models": [
            {"name": "tiny", "backend": "llama_cpp", "path": str(tiny), "n_ctx": 128, "parallel": 2,
             "idle_ttl_s": 0},  # no max_output_tokens: absurd max_tokens reach the runner
            {"name": "emb", "backend": "llama_cpp", "path": str(emb), "n_ctx": 128, "parallel": 1,
             "embedding": True},
        ],
        "routes": [{"name": "embeddings", "match": {"path": ["/v1/embeddings"]}, "target": "emb"},
                   {"name": "default", "target": "tiny"}],
    }


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    import gguf
    from gguf_factory import write_tiny_gguf
    folder = tmp_path_factory.mktemp("hostile")
    emb = write_tiny_gguf(folder / "emb.gguf", pooling_type=gguf.PoolingType.MEAN)
    with running_engine(_tiny_config(tiny_gguf, emb), folder) as eng:
        SENT["started"] = time.monotonic()
        yield eng
        assert eng.proc.poll() is None, "the engine died"
        assert "unhandled error" not in eng.log_path.read_text(errors="replace"), eng.log()


@pytest.fixture(scope="module")
def client(engine):
    with httpx.Client(base_url=engine.url, timeout=TIMEOUT) as c:
        yield c


def send(client: httpx.Client, method: str, path: str, **kw) -> httpx.Response:
    SENT["count"] += 1
    r = client.request(method, path, **kw)
    check_shape(path, r)
    return r


def _dumps(body) -> bytes:
    return json.dumps(body).encode()


@property_test
@pytest.mark.parametrize("path", list(BASES))
def test_mutated_bodies(client, path):
    @SETTINGS
    @given(body=mutated(BASES[path]))
    def run(body):
        r = send(client, "POST", path, content=_dumps(body),
                 headers={"content-type": "application/json"})
        if r.status_code == 200 and "text/event-stream" not in r.headers.get("content-type", ""):
            r.json()
    run()


@property_test
@pytest.mark.parametrize("path", list(BASES))
def test_whole_bodies_of_any_json(client, path):
    @settings(SETTINGS, max_examples=examples(40))
    @given(body=json_values)
    def run(body):
        send(client, "POST", path, content=_dumps(body), headers={"content-type": "application/json"})
    run()


@pytest.mark.parametrize("path", list(BASES) + ["/admin/config"])
def test_raw_bodies_and_content_types(client, path):
    method = "PUT" if path == "/admin/config" else "POST"
    for i, raw in enumerate(RAW_BODIES):
        content_type = CONTENT_TYPES[i % len(CONTENT_TYPES)]
        r = send(client, method, path, content=raw, headers={"content-type": content_type})
        if not json_type(content_type):   # a JSON endpoint takes JSON only
            assert r.status_code == 415, (content_type, r.status_code, r.text[:300])
            continue
        lenient = raw is UTF16 or path == "/admin/route/explain"  # explains any object
        allowed = (200, 400, 404) if lenient else (400, 404, 413, 422)
        assert r.status_code in allowed, (raw[:80], r.status_code, r.text[:300])


def test_deep_nesting_is_a_400_in_each_shape(client):
    for path in ("/v1/chat/completions", "/v1/messages", "/admin/config"):
        r = send(client, "PUT" if path.startswith("/admin") else "POST", path,
                 content=b"[" * 100_000 + b"]" * 100_000)
        assert r.status_code == 400
        assert "nested deeper" in r.text


def test_connection_survives_a_refused_body(engine):
    """A 200 KB invalid body sent on the connection that carried a refused one got a
    reset instead of a status. The same keep-alive connection now answers both, every time."""
    with httpx.Client(base_url=engine.url, timeout=TIMEOUT) as c:
        for _ in range(10):
            assert send(c, "POST", "/v1/chat/completions", content=b"[" * 100_000).status_code == 400
            assert send(c, "POST", "/v1/chat/completions", content=b"{" + b"x" * 200_000).status_code == 400


def test_huge_bodies_are_413_in_each_shape(client):
    big = b'{"prompt": "' + b"x" * (LIMIT_MB * 1024 * 1024) + b'"}'

    def chunks():
        for i in range(0, len(big), 1 << 16):
            yield big[i:i + (1 << 16)]

    for path in list(BASES) + ["/admin/config"]:
        method = "PUT" if path == "/admin/config" else "POST"
        for content in (big, chunks()):
            r = send(client, method, path, content=content)
            assert r.status_code == 413, (path, r.status_code)
            error = r.json()["error"]
            assert error["type"] == "request_too_large" if path.startswith("/v1/messages") \
                else error["code"] == "request_too_large"


@property_test
@SETTINGS
@given(name=st.sampled_from(TRICKY_NAMES) | st.text(min_size=1, max_size=40))
def test_model_names_in_paths(client, name):
    quoted = quote(name, safe="")
    empty = (307,) if not name else ()  # ".../" redirects to the path without the slash
    r = send(client, "GET", f"/v1/models/{quoted}")
    assert r.status_code in (200, 404, *empty), r.text
    for action in ("load", "unload"):
        r = send(client, "POST", f"/admin/models/{quoted}/{action}")
        assert r.status_code in (200, 400, 404, 405, *empty), r.text
    for method in ("GET", "DELETE"):
        r = send(client, method, f"/v1/responses/{quoted}")
        assert r.status_code in (404, 400, *empty), r.text


def _raw_request(engine, target: bytes) -> tuple[int, bytes]:
    """A request line as given (no client normalises `..` or NUL away)."""
    with socket.create_connection(("127.0.0.1", engine.port), timeout=30) as s:
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    SENT["count"] += 1
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, data


@pytest.mark.parametrize("target", [
    b"/v1/models/../admin/config", b"/v1/models/%2e%2e/%2e%2e/admin/config", b"/v1/models/tiny%00",
    b"/v1/models/..%2f..%2fetc%2fpasswd", b"/v1/models/%ff%fe", b"/admin/models/..%2f/load",
    b"/v1/models/" + b"a" * 8000, b"//v1/models", b"/v1/models/tiny?x=%00", b"/admin/requests?since=x",
    b"/admin/requests?since=99999999999999999999999", b"/admin/events?since=-1", b"/admin/telemetry",
    b"/admin/requests?status=%C2%B2", b"/admin/requests?status=1e3&rule=%00&model=%ff",
    b"/metrics", b"/v1/models", b"/admin/models", b"/admin/config",
])
def test_raw_paths(engine, target):
    status, data = _raw_request(engine, target)
    assert 200 <= status < 500, data[:300]
    if status >= 400:
        head, _, body = data.partition(b"\r\n\r\n")
        if b"transfer-encoding: chunked" not in head.lower():
            assert b'"error"' in body, data[:300]


@property_test
def test_admin_config_put_mutations(client):
    """PUT /admin/config with a valid config changed here and there: a 200 or a 400 naming the
    errors; whatever was applied is put back so the rest of the module runs on the same config."""
    original = client.get("/admin/config").json()
    sections = {k: v for k, v in original.items() if isinstance(v, dict)}

    @settings(SETTINGS, max_examples=examples(40))
    @given(section=st.sampled_from(sorted(sections)), key=st.text(max_size=12)
           | st.sampled_from(["host", "port", "api_key", "max_body_mb", "cors_origins", "guard",
                              "ram_high_pct", "max_queue", "admin_api_key"]),
           value=json_values)
    def run(section, key, value):
        body = json.loads(json.dumps(original))
        body[section] = {**body[section], key: value}
        r = send(client, "PUT", "/admin/config", content=_dumps(body))
        # a change to the server section needs the app token or the admin key
        assert r.status_code in ((200, 400, 403) if section == "server" else (200, 400)), r.text
        if r.status_code == 200:
            assert send(client, "PUT", "/admin/config", content=_dumps(original)).status_code == 200
    run()
    assert client.get("/admin/config").json()["models"] == original["models"]


def test_prompts_over_n_ctx_are_400_context_length_exceeded(client):
    long = "word " * 400   # n_ctx is 128
    bodies = {"/v1/chat/completions": {"messages": [{"role": "user", "content": long}], "max_tokens": 2},
              "/v1/completions": {"prompt": long, "max_tokens": 2},
              "/v1/responses": {"input": long, "max_output_tokens": 2, "store": False},
              "/v1/messages": {"messages": [{"role": "user", "content": long}], "max_tokens": 2}}
    for path, body in bodies.items():
        for stream in (False, True):
            r = send(client, "POST", path, content=_dumps({"model": "tiny", **body, "stream": stream}))
            assert r.status_code == 400, (path, stream, r.status_code, r.text[:300])
            error = r.json()["error"]
            assert "context" in error["message"], error
            if not path.startswith("/v1/messages"):
                assert error["code"] == "context_length_exceeded", error


def test_wrong_methods(client):
    for path in list(BASES) + ["/v1/models", "/healthz"]:
        for method in ("GET", "DELETE", "PATCH", "PUT"):
            r = send(client, method, path)
            assert r.status_code in (200, 404, 405), (method, path, r.status_code)


def test_engine_still_serves_and_count(engine, client):
    assert client.get("/healthz").json() == {"status": "ok"}
    r = send(client, "POST", "/v1/chat/completions", content=_dumps(BASES["/v1/chat/completions"]))
    assert r.status_code == 200
    assert engine.proc.poll() is None
    elapsed = time.monotonic() - SENT["started"]
    print(f"\nhostile input: {SENT['count']} requests in {elapsed:.1f} s, no 5xx, engine alive")


def test_an_unexpected_error_closes_the_connection_in_the_apis_shape():
    """Whatever 500 is left: uvicorn drops the connection after it, so the answer must say
    `Connection: close` or a keep-alive client's next request meets a reset."""
    import asyncio

    from starlette.requests import Request

    from laya_desktop.engine.app import _unexpected

    def answer(path):
        request = Request({"type": "http", "method": "POST", "path": path, "headers": [],
                           "query_string": b""})
        return asyncio.run(_unexpected(request, RuntimeError("secret detail")))

    openai_shaped, anthropic_shaped = answer("/v1/chat/completions"), answer("/v1/messages")
    for r in (openai_shaped, anthropic_shaped):
        assert r.status_code == 500 and r.headers["connection"] == "close"
        assert b"secret detail" not in r.body  # the type, not the text, of an internal error
    assert json.loads(anthropic_shaped.body)["type"] == "error"
    assert json.loads(openai_shaped.body)["error"]["code"] == "internal_error"
