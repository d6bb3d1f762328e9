"""Every error in its API's shape with the right status, against a real engine: type
confusions in the Responses and Messages parsers are 400s naming the field; a full queue is 429
for count_tokens as for /v1/messages; a runner stopped or killed mid-answer is 503 with
Retry-After and a short text without paths or logs; a GGUF whose header nests 20,000 deep fails
its own load cleanly; a client that leaves mid-body is logged as 499, quietly."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from engine_harness import running_engine
from gguf_factory import write_nested_gguf
from test_faults import gone, sigstop

USER = [{"role": "user", "content": "hi"}]
# The tiny model's control tokens (gguf_factory: EOS and the chat markers), banned so that a long
# answer really is long; sampled freely, its random weights pick EOS within a few hundred tokens.
NO_EOS = {"276": -100, "277": -100, "278": -100}


def tiny_model(name: str, path, **extra) -> dict:
    return {"name": name, "backend": "llama_cpp", "path": str(path), "n_ctx": 256, "parallel": 1,
            "idle_ttl_s": 0, **extra}


def anthropic_error(r: httpx.Response, status: int, kind: str) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["type"] == "error" and body["error"]["type"] == kind, body
    return body["error"]


def openai_error(r: httpx.Response, status: int, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) >= {"message", "type", "code"}, error
    if code is not None:
        assert error["code"] == code, error
    return error


def pid_of(c: httpx.Client, name: str) -> int:
    return next(m["pid"] for m in c.get("/admin/models").json()["models"] if m["name"] == name)


def model_state(c: httpx.Client, name: str) -> dict:
    return next(m for m in c.get("/admin/models").json()["models"] if m["name"] == name)


def wait_for(predicate, within: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# -- one engine for the parsers, the queue and the corrupt file ---------------------------------

@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    folder = tmp_path_factory.mktemp("shapes")
    nested = write_nested_gguf(folder / "nested.gguf")
    config = {"models": [tiny_model("tiny", tiny_gguf, n_ctx=32768),
                         tiny_model("nested", nested)],
              "routes": [{"name": "default", "target": "tiny"}],
              "scheduler": {"max_queue": 1, "queue_timeout_ms": 60000}}
    with running_engine(config, folder) as eng:
        yield eng


@pytest.fixture(scope="module")
def client(engine):
    with engine.client(timeout=60) as c:
        yield c


RESPONSES = {"model": "tiny", "input": "hi", "max_output_tokens": 2, "store": False}
FUNCTION = {"type": "function", "name": "f", "parameters": {"type": "object"}}


@pytest.mark.parametrize("extra, field", [
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "tools": 5}}, "tool_choice.tools"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "tools": True}}, "tool_choice.tools"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "tools": [{"name": [1]}]}},
     "tool_choice.tools[0].name"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "tools": [7]}},
     "tool_choice.tools[0]"),
    ({"tools": True}, "tools"),
    ({"tools": [{"type": "function", "name": [1]}]}, "tools[0].name"),
    ({"tools": [{"type": "custom", "name": {"a": 1}}]}, "tools[0].name"),
    ({"reasoning": 5}, "reasoning"),
    ({"metadata": [1]}, "metadata"),
    ({"user": {"id": 1}}, "user"),
    ({"service_tier": 3}, "service_tier"),
    ({"input": [{"role": [1], "content": "x"}]}, "input[0].role"),
])
def test_responses_type_confusions_are_400_naming_the_field(client, extra, field):
    error = openai_error(client.post("/v1/responses", json={**RESPONSES, **extra}), 400)
    assert f"'{field}'" in error["message"], error


@pytest.mark.parametrize("extra, field", [
    ({"tools": True}, "tools"),
    ({"tools": [{"name": [1], "input_schema": {}}]}, "tools[0].name"),
    ({"tool_choice": {"type": "tool", "name": [1]}}, "tool_choice"),
    ({"metadata": 5}, "metadata"),
    ({"service_tier": []}, "service_tier"),
    ({"stop_sequences": [1]}, "stop_sequences"),
    ({"messages": [{"role": [1], "content": "x"}]}, "messages[0].role"),
])
def test_messages_type_confusions_are_400_naming_the_field(client, extra, field):
    body = {"model": "tiny", "messages": USER, "max_tokens": 2, **extra}
    error = anthropic_error(client.post("/v1/messages", json=body), 400, "invalid_request_error")
    assert f"'{field}'" in error["message"], error


def test_chat_role_of_the_wrong_type_is_a_400(client):
    error = openai_error(client.post("/v1/chat/completions", json={
        "model": "tiny", "messages": [{"role": {}, "content": "x"}]}), 400, "invalid_messages")
    assert "'messages[0].role'" in error["message"]


@pytest.mark.timeout(120)
def test_a_full_queue_is_429_for_count_tokens_as_for_messages(engine, client):
    long = {"model": "tiny", "max_tokens": 30000, "stream": True, "messages": USER,
            "logit_bias": NO_EOS}
    with client.stream("POST", "/v1/chat/completions", json=long) as first:
        lines = first.iter_lines()    # kept: a dropped iterator closes the stream
        next(lines)                                      # tiny's one slot is taken ...
        waiting = threading.Thread(target=lambda: engine.client(timeout=60).post(
            "/v1/chat/completions", json={"model": "tiny", "max_tokens": 1, "messages": USER}))
        waiting.start()                                  # ... and its queue of one is full
        wait_for(lambda: model_state(client, "tiny")["queued"] == 1, what="a queued request")
        count = client.post("/v1/messages/count_tokens", json={"model": "tiny", "messages": USER})
        error = anthropic_error(count, 429, "rate_limit_error")
        assert "queue" in error["message"] and count.headers["retry-after"]
        message = client.post("/v1/messages", json={"model": "tiny", "messages": USER,
                                                    "max_tokens": 2})
        anthropic_error(message, 429, "rate_limit_error")
        assert message.headers["retry-after"]
    waiting.join(60)
    count = client.post("/v1/messages/count_tokens", json={"model": "tiny", "messages": USER})
    assert count.status_code == 200 and count.json()["input_tokens"] > 0
    logged = client.get("/admin/requests").json()["requests"]
    assert any(e["path"] == "/v1/messages/count_tokens" and e["status"] == 429 for e in logged)


def test_a_corrupt_gguf_fails_its_own_load_in_each_shape(engine, client, tmp_path):
    chat = client.post("/v1/chat/completions", json={"model": "nested", "messages": USER,
                                                     "max_tokens": 2})
    error = openai_error(chat, 503, "load_failed")
    assert "damaged GGUF" in error["message"] and "nested" in error["message"]
    assert str(tmp_path.parent) not in error["message"] and ".gguf" not in error["message"]
    assert chat.headers["retry-after"]
    messages = client.post("/v1/messages", json={"model": "nested", "messages": USER,
                                                 "max_tokens": 2})
    assert "damaged GGUF" in anthropic_error(messages, 503, "overloaded_error")["message"]
    count = client.post("/v1/messages/count_tokens", json={"model": "nested", "messages": USER})
    assert "damaged GGUF" in anthropic_error(count, 503, "overloaded_error")["message"]
    load = client.post("/admin/models/nested/load")
    assert load.status_code == 503 and "damaged GGUF" in load.json()["error"]["message"]
    state = model_state(client, "nested")
    assert state["state"] == "error" and "nested more than" in state["error"]   # details: admin
    ok = client.post("/v1/chat/completions", json={"model": "tiny", "messages": USER,
                                                   "max_tokens": 2})
    assert ok.status_code == 200, ok.text
    assert "RecursionError" not in engine.log() and "Traceback" not in engine.log()


def test_inspect_on_a_deeply_nested_gguf_is_one_line_and_exit_1(tmp_path):
    nested = write_nested_gguf(tmp_path / "nested.gguf")
    proc = subprocess.run([sys.executable, "-m", "laya_desktop", "models", "inspect", str(nested)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "damaged GGUF file" in proc.stderr and "Traceback" not in proc.stderr
    shallow = write_nested_gguf(tmp_path / "shallow.gguf", depth=3)   # a few levels: read
    ok = subprocess.run([sys.executable, "-m", "laya_desktop", "models", "inspect", str(shallow)],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr


def _send_half_a_body(engine, path: str) -> None:
    body = json.dumps({"model": "tiny", "messages": USER, "max_tokens": 2}).encode()
    with socket.create_connection(("127.0.0.1", engine.port), timeout=10) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                  f"\r\nContent-Length: {len(body) + 5000}\r\n\r\n".encode() + body)
        time.sleep(0.2)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages/count_tokens"])
def test_a_client_that_leaves_mid_body_is_logged_quietly(engine, client, path):
    seq = client.get("/admin/requests").json()["seq"]
    _send_half_a_body(engine, path)

    def logged():
        items = client.get(f"/admin/requests?since={seq}").json()["requests"]
        return [e for e in items if e["path"] == path]
    wait_for(lambda: logged(), what="the request log entry")
    (entry,) = logged()
    assert entry["status"] == 499
    log = engine.log()
    assert "ClientDisconnect" not in log and "Traceback" not in log, log[-2000:]
    assert client.post("/v1/chat/completions", json={"model": "tiny", "messages": USER,
                                                     "max_tokens": 2}).status_code == 200


@pytest.mark.parametrize("path", ["/admin/route/explain", "/admin/route/replay"])
def test_a_client_that_leaves_an_admin_body_is_quiet_too(engine, client, path):
    _send_half_a_body(engine, path)
    time.sleep(0.3)
    log = engine.log()
    assert "ClientDisconnect" not in log and "Traceback" not in log, log[-2000:]
    assert client.get("/admin/models").status_code == 200


# -- a runner stopped or killed during a non-streamed answer ------------------------------------

def hang_config(gguf) -> dict:
    # the bound on a silent runner is the scheduler's queue_timeout_ms
    return {"models": [tiny_model("tiny", gguf, n_ctx=32768)],
            "routes": [{"name": "default", "target": "tiny"}],
            "scheduler": {"queue_timeout_ms": 2000}}


LONG_ANSWERS = {
    "/v1/chat/completions": {"model": "tiny", "max_tokens": 30000, "messages": USER,
                             "logit_bias": NO_EOS},
    # no logit_bias in these APIs: the answer may end early, so the runner is stopped as soon as
    # it has the request (the chat case covers a stop after tokens came)
    "/v1/messages": {"model": "tiny", "max_tokens": 30000, "messages": USER},
    "/v1/responses": {"model": "tiny", "max_output_tokens": 30000, "input": "hi"},
}


def answer_while(eng, c, path: str, act) -> httpx.Response:
    """POST a long non-streamed answer, `act(pid)` once the runner is generating it."""
    pid = pid_of(c, "tiny")
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(
        r=eng.client(timeout=60).post(path, json=LONG_ANSWERS[path])))
    worker.start()
    wait_for(lambda: model_state(c, "tiny")["active"] == 1, what="the request on the runner")
    if "logit_bias" in LONG_ANSWERS[path]:
        time.sleep(0.3)                   # mid-generation: tokens are being made
    try:
        act(pid)
        worker.join(30)
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)
    return result["r"]


def check_503(path: str, r: httpx.Response, code: str) -> str:
    assert r.status_code == 503, r.text
    assert int(r.headers["retry-after"]) >= 1
    if path == "/v1/messages":
        return anthropic_error(r, 503, "overloaded_error")["message"]
    return openai_error(r, 503, code)["message"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("path", list(LONG_ANSWERS))
def test_a_runner_stopped_mid_answer_is_503_with_retry_after(tiny_gguf, tmp_path, path):
    with running_engine(hang_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/tiny/load").raise_for_status()
        message = check_503(path, answer_while(eng, c, path, sigstop), "runner_unresponsive")
        assert "tiny" in message
        logged = c.get("/admin/requests").json()["requests"]
        assert logged[-1]["status"] == 503


@pytest.mark.timeout(180)
def test_a_runner_killed_mid_answer_is_503_and_tells_nothing_of_its_insides(tiny_gguf, tmp_path):
    with running_engine(hang_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/tiny/load").raise_for_status()
        r = answer_while(eng, c, "/v1/chat/completions", lambda pid: os.kill(pid, signal.SIGKILL))
        message = check_503("/v1/chat/completions", r, "runner_crashed")
        assert message == "the runner of model 'tiny' crashed; retry"
        assert str(tiny_gguf) not in r.text and "exited with code" not in r.text
        # the details are the operator's: the events and the engine log
        crash = next(e for e in c.get("/admin/events").json()["events"]
                     if e["kind"] == "runner_crashed")
        assert "exited with code" in json.dumps(crash)
