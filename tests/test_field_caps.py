"""Caps on the free-form fields of a request (engine/field_limits.py): each over its cap is a 400
in its API's own shape that names the field and the cap, on every API; real agent bodies stay
under them; and a burst of oversized requests leaves the engine's memory where it was."""
from __future__ import annotations

import gc
import json
from pathlib import Path

import httpx
import psutil
import pytest
from starlette.datastructures import Headers

from engine_harness import running_engine
from laya_desktop.engine import field_limits as fl
from laya_desktop.engine.apis.chat import CHAT
from laya_desktop.engine.apis.messages import MESSAGES
from laya_desktop.engine.apis.responses import RESPONSES
from laya_desktop.engine.errors import ApiError

DATA = Path(__file__).parent / "data"
USER = [{"role": "user", "content": "hi"}]
BASES = {
    "/v1/chat/completions": {"model": "tiny", "messages": USER, "max_tokens": 2},
    "/v1/completions": {"model": "tiny", "prompt": "hi", "max_tokens": 2},
    "/v1/responses": {"model": "tiny", "input": "hi", "max_output_tokens": 2, "store": False},
    "/v1/messages": {"model": "tiny", "messages": USER, "max_tokens": 2},
    "/v1/messages/count_tokens": {"model": "tiny", "messages": USER},
    "/v1/embeddings": {"model": "tiny", "input": "hi"},
}


def refused(body, header_tags=None, api="chat") -> ApiError:
    with pytest.raises(ApiError) as info:
        fl.check_request(body, header_tags, api)
    assert info.value.status == 400
    return info.value


# -- the caps, without an engine --------------------------------------------------------------------

@pytest.mark.parametrize("body, param, code", [
    ({"model": "m" * 257}, "model", "string_above_max_length"),
    ({"tags": ["t"] * 33}, "tags", "array_above_max_length"),
    ({"tags": ["t" * 65]}, "tags[0]", "string_above_max_length"),
    ({"tags": ",".join(["t"] * 33)}, "tags", "array_above_max_length"),
    ({"tags": "t" * 3000}, "tags", "string_above_max_length"),
    ({"tags": [1]}, "tags", "invalid_type"),
    ({"tags": {"a": 1}}, "tags", "invalid_type"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata", "object_above_max_properties"),
    ({"metadata": {"k" * 65: "v"}}, "metadata", "string_above_max_length"),
    ({"metadata": {"k": "v" * 513}}, "metadata.k", "string_above_max_length"),
    ({"metadata": {"k": {"nested": "x"}}}, "metadata.k", "invalid_type"),
    ({"metadata": "x"}, "metadata", "invalid_type"),
    ({"client_metadata": {"k": "v" * 8193}}, "client_metadata.k", "string_above_max_length"),
    ({"user": "u" * 257}, "user", "string_above_max_length"),
    ({"user": 5}, "user", "invalid_type"),
    ({"safety_identifier": "s" * 65}, "safety_identifier", "string_above_max_length"),
    ({"prompt_cache_key": "k" * 257}, "prompt_cache_key", "string_above_max_length"),
    ({"stop": ["s"] * 17}, "stop", "array_above_max_length"),
    ({"stop": "s" * 257}, "stop", "string_above_max_length"),
    ({"stop": ["ok", "s" * 257]}, "stop[1]", "string_above_max_length"),
    ({"stop_sequences": ["s"] * 17}, "stop_sequences", "array_above_max_length"),
    ({"tools": [{}] * 129}, "tools", "array_above_max_length"),
    ({"messages": [{}] * (fl.MAX_MESSAGES + 1)}, "messages", "array_above_max_length"),
    ({"input": [{}] * (fl.MAX_MESSAGES + 1)}, "input", "array_above_max_length"),
])
def test_each_cap_is_a_400_naming_the_field(body, param, code):
    error = refused(body)
    assert error.code == code
    assert error.extra["param"] == param
    assert f"'{param}'" in error.message
    if code != "invalid_type":
        assert "limit" in error.message


def test_the_header_tags_are_capped_like_the_body_field():
    assert refused({}, ",".join(["t"] * 33)).extra["param"] == "X-Laya-Tags"
    assert refused({}, "t" * 65).extra["param"] == "X-Laya-Tags[0]"
    fl.check_request({"tags": ["a"] * 32}, ",".join(["b"] * 32), "chat")   # each on its own cap


def test_values_at_the_caps_pass():
    fl.check_request({"model": "m" * 256, "tags": ["t" * 64] * 32, "user": "u" * 256,
                      "metadata": {f"{i:064d}": "v" * 512 for i in range(16)},
                      "stop": ["s" * 256] * 16, "tools": [{}] * 128}, None, "chat")


def test_messages_take_more_tools_than_openai():
    # Claude Code sends every MCP tool, deferred ones included; OpenAI's cap is 128
    fl.check_request({"tools": [{}] * 1024}, None, "messages")
    assert refused({"tools": [{}] * 1025}, api="messages").code == "array_above_max_length"
    assert refused({"tools": [{}] * 129}, api="responses").code == "array_above_max_length"


def test_tool_names_follow_openai_and_anthropic():
    for name in ("Bash", "mcp__github__create_issue", "apply_patch", "a-b_c9", "x" * 64):
        assert fl.TOOL_NAME.match(name)
    for name in ("x" * 65, "a.b", "a:b", "a b", "", "ünï"):
        assert not fl.TOOL_NAME.match(name)
    long = "x" * 65
    chat = {"messages": USER, "tools": [{"type": "function", "function": {"name": long}}]}
    with pytest.raises(ApiError, match=r"tools\[0\].function.name.*1 to 64"):
        CHAT.parse(chat, Headers())
    with pytest.raises(ApiError, match=r"tools\[0\].name.*1 to 64"):
        RESPONSES.parse({"input": "x", "tools": [{"type": "function", "name": long}]}, Headers())
    with pytest.raises(ApiError, match=r"tools\[0\].name.*1 to 64"):
        MESSAGES.parse({"max_tokens": 1, "messages": USER,
                        "tools": [{"name": long, "input_schema": {}}]}, Headers())


def test_namespaces_count_toward_the_responses_tool_cap():
    inner = [{"type": "function", "name": f"t{i}"} for i in range(129)]
    with pytest.raises(ApiError) as info:
        RESPONSES.parse({"input": "x", "tools": [{"type": "namespace", "name": "ns",
                                                  "tools": inner}]}, Headers())
    assert info.value.code == "array_above_max_length"


@pytest.mark.parametrize("name, api", [("claude_code_request.json", MESSAGES),
                                        ("claude_code_tool_turn.json", MESSAGES),
                                        ("codex_request.json", RESPONSES)])
def test_real_agent_bodies_pass_the_caps(name, api):
    body = json.loads((DATA / name).read_text())
    fl.check_request(body, None, api.name)
    call = api.parse(body, Headers())
    assert call.tools


# -- against a real engine: every API, its own shape ----------------------------------------------

@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 256, "parallel": 1, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path_factory.mktemp("caps")) as eng:
        yield eng


@pytest.fixture(scope="module")
def client(engine):
    with engine.client(timeout=60) as c:
        yield c


def check_400(path: str, r: httpx.Response, field: str) -> None:
    assert r.status_code == 400, (path, r.status_code, r.text[:300])
    body = r.json()
    if path.startswith("/v1/messages"):
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    else:
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["param"] == field
    assert f"'{field}'" in body["error"]["message"] and "limit" in body["error"]["message"]
    assert len(r.content) < 2000     # the answer does not quote the oversized value


@pytest.mark.parametrize("path", list(BASES))
def test_caps_on_every_api(client, path):
    base = BASES[path]
    check_400(path, client.post(path, json={**base, "model": "m" * 5000}), "model")
    check_400(path, client.post(path, json={**base, "tags": ["t"] * 1000}), "tags")
    check_400(path, client.post(path, json=base, headers={"X-Laya-Tags": ",".join(["t"] * 40)}),
              "X-Laya-Tags")
    check_400(path, client.post(path, json={**base, "metadata": {"k": "v" * 600}}), "metadata.k")
    stop = "stop_sequences" if path == "/v1/messages" else "stop"
    if path not in ("/v1/embeddings", "/v1/messages/count_tokens"):
        check_400(path, client.post(path, json={**base, stop: ["s"] * 17}), stop)
    assert client.post(path, json=base).status_code in (200, 400)   # the engine still serves


def test_tool_caps_on_the_engine(client):
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(129)]
    check_400("/v1/chat/completions", client.post("/v1/chat/completions", json={
        **BASES["/v1/chat/completions"], "tools": tools}), "tools")
    ok = client.post("/v1/chat/completions", json={**BASES["/v1/chat/completions"],
                                                   "tools": tools[:128]})
    # past the caps, up to the model: 128 tool definitions do not fit a 256-token context
    assert ok.json()["error"]["code"] == "context_length_exceeded", ok.text


# -- memory: oversized fields are not kept --------------------------------------------------------

def rss(engine) -> int:
    return psutil.Process(engine.proc.pid).memory_info().rss


@pytest.mark.timeout(300)
def test_forty_oversized_requests_leave_the_engines_memory_alone(engine, client):
    big = "m" * (8 * 1024 * 1024)
    attacks = [
        ("/v1/chat/completions", {**BASES["/v1/chat/completions"], "model": big}),
        ("/v1/chat/completions", {**BASES["/v1/chat/completions"],
                                  "tags": [f"t{i}" for i in range(400_000)]}),
        ("/v1/responses", {**BASES["/v1/responses"], "store": True, "metadata": {"k": big}}),
    ]
    client.post("/v1/chat/completions", json=BASES["/v1/chat/completions"])   # warm
    before = rss(engine)
    for path, body in attacks:
        raw = json.dumps(body).encode()
        for _ in range(40):
            r = client.post(path, content=raw, headers={"Content-Type": "application/json"})
            assert r.status_code == 400, r.text[:300]
    gc.collect()
    grown = rss(engine) - before
    print(f"engine RSS {before / 2**20:.0f} MiB -> {rss(engine) / 2**20:.0f} MiB "
          f"after 120 oversized requests")
    # each body is parsed (8 MB+) and dropped; what may stay is the allocator's high-water mark
    assert grown < 100 * 2**20, grown / 2**20
