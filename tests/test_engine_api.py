"""The engine as a real process on loopback, a real llama.cpp runner on a tiny GGUF, the openai SDK."""
from __future__ import annotations

import copy
import json
import time

import httpx
import openai
import pytest
import yaml

from engine_harness import free_port, running_engine
from strict_upstream import StrictUpstream

# Long enough to hold a slot for seconds even on the tiny model, the fastest there is.
LONG = {"messages": [{"role": "user", "content": "go"}], "max_tokens": 30000}


def tiny_config(gguf_path, **model_overrides) -> dict:
    model = {"name": "tiny", "backend": "llama_cpp", "path": str(gguf_path), "n_ctx": 256,
             "parallel": 2, "idle_ttl_s": 0}
    model.update(model_overrides)
    return {
        "models": [model],
        "routes": [
            {"name": "code", "match": {"tags": ["code"]}, "target": "tiny"},
            {"name": "default", "target": "tiny"},
        ],
    }


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    with running_engine(tiny_config(tiny_gguf), tmp_path_factory.mktemp("engine")) as eng:
        yield eng


@pytest.fixture
def sdk(engine):
    return openai.OpenAI(base_url=engine.url + "/v1", api_key="unused", max_retries=0)


def test_healthz_and_models(engine):
    with engine.client() as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        ids = [m["id"] for m in c.get("/v1/models").json()["data"]]
    assert ids == ["auto", "tiny"]


def test_chat_non_stream_with_route_headers(sdk):
    raw = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": "hello there"}], max_tokens=8,
        temperature=0, extra_body={"tags": ["code"]})
    reply = raw.parse()
    assert raw.headers["x-laya-route"] == "code"
    assert raw.headers["x-laya-model"] == "tiny"
    assert float(raw.headers["x-laya-route-us"]) >= 0
    assert reply.model == "tiny"
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 8
    assert reply.usage.prompt_tokens > 0
    assert isinstance(reply.choices[0].message.content, str)


def test_chat_stream(sdk):
    stream = sdk.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "count"}], max_tokens=6, stream=True,
        temperature=0, stream_options={"include_usage": True})
    chunks = list(stream)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "length"
    assert chunks[-1].usage.completion_tokens == 6


def test_completion_and_direct_model(sdk):
    raw = sdk.completions.with_raw_response.create(model="tiny", prompt="Once upon", max_tokens=5,
                                                   temperature=0)
    assert raw.headers["x-laya-route"] == "direct"
    reply = raw.parse()
    assert reply.object == "text_completion"
    assert reply.usage.completion_tokens == 5


def test_header_tags_route(engine):
    with engine.client() as c:
        r = c.post("/v1/chat/completions", headers={"X-Laya-Tags": "misc, code"},
                   json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 2})
    assert r.status_code == 200
    assert r.headers["x-laya-route"] == "code"


@pytest.mark.parametrize("body, status, code", [
    (b"{not json", 400, "invalid_json"),
    (json.dumps({"model": "auto"}).encode(), 400, "invalid_messages"),
    (json.dumps({"messages": [{"role": "wizard", "content": "x"}]}).encode(), 400, "invalid_messages"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": -3}).encode(), 400,
     "invalid_max_tokens"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}).encode(), 400,
     "invalid_temperature"),
])
def test_malformed_requests_get_openai_errors(engine, body, status, code):
    with engine.client() as c:
        r = c.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status
    error = r.json()["error"]
    assert error["code"] == code
    assert error["type"] == "invalid_request_error"
    assert error["message"]


def test_sdk_raises_bad_request(sdk):
    with pytest.raises(openai.BadRequestError):
        sdk.chat.completions.create(model="auto", messages=[], max_tokens=2)


def test_prompt_longer_than_n_ctx_is_400(sdk):
    with pytest.raises(openai.BadRequestError) as info:
        sdk.completions.create(model="tiny", prompt="word " * 400, max_tokens=2)
    assert info.value.code == "context_length_exceeded"


def test_admin_models_and_unload(engine):
    with engine.client() as c:
        c.post("/admin/models/tiny/load").raise_for_status()
        models = c.get("/admin/models").json()["models"]
        assert models[0]["name"] == "tiny" and models[0]["state"] in ("ready", "busy")
        pid = models[0]["pid"]
        assert pid in engine.runner_pids()
        c.post("/v1/completions", json={"model": "tiny", "prompt": "a", "max_tokens": 2})
        deadline = time.monotonic() + 10   # the runner's stats come once it goes idle
        while (row := c.get("/admin/models").json()["models"][0])["n_threads_now"] is None:
            assert time.monotonic() < deadline, row
            time.sleep(0.05)
        from laya_desktop.runners.llama_cpp_backend import default_n_threads
        assert 1 <= row["n_threads_now"] <= default_n_threads()   # the governor's choice
        r = c.post("/admin/models/tiny/unload").json()
        assert r["unloaded"] is True and r["state"] == "unloaded"
        assert pid not in engine.runner_pids()
        kinds = [e["kind"] for e in c.get("/admin/events?since=0").json()["events"]]
        assert "model_unloaded" in kinds
        assert c.post("/admin/models/nope/load").status_code == 404


def test_request_log(engine, sdk):
    with engine.client() as c:
        seq = c.get("/admin/requests?since=0").json()["seq"]
        sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": "hi"}],
                                    max_tokens=3)
        log = c.get(f"/admin/requests?since={seq}").json()
    assert [r["status"] for r in log["requests"]] == [200]
    entry = log["requests"][0]
    assert entry["rule"] == "default" and entry["model"] == "tiny"
    assert entry["completion_tokens"] == 3 and entry["ttft_ms"] is not None


def test_explain(engine):
    with engine.client() as c:
        r = c.post("/admin/route/explain",
                   json={"messages": [{"role": "user", "content": "hi"}], "tags": []}).json()
    assert r["rule"] == "default" and r["target"] == "tiny"
    first = r["explanation"][0]
    assert first["rule"] == "code" and first["matched"] is False and first["reasons"]


def test_unknown_model_without_catch_all_is_404(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf)
    config["routes"] = [{"name": "code", "match": {"tags": ["code"]}, "target": "tiny"}]
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        r = c.post("/v1/chat/completions",
                   json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "model_not_found"


def test_config_put_refused_changes_nothing(engine):
    before = engine.config_path.read_text()
    with engine.client() as c:
        bad = c.get("/admin/config").json()
        bad["routes"][0]["target"] = "qwen"
        bad["models"][0]["backend"] = "warp-drive"
        r = c.put("/admin/config", json=bad)
        assert r.status_code == 400
        error = r.json()["error"]
        assert error["type"] == "invalid_config"
        paths = {e["path"] for e in error["errors"]}
        assert {"routes[0].target", "models[0].backend"} <= paths
        assert c.get("/admin/config").json()["routes"][0]["target"] == "tiny"
    assert engine.config_path.read_text() == before


def test_config_put_applies_and_persists(tiny_gguf, tmp_path):
    with running_engine(tiny_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        config = c.get("/admin/config").json()
        config["routes"].insert(0, {"name": "greet", "match": {"keywords": ["hello"]},
                                    "target": "tiny"})
        r = c.put("/admin/config", json=config)
        assert r.status_code == 200, r.text
        on_disk = yaml.safe_load(eng.config_path.read_text())
        assert [r["name"] for r in on_disk["routes"]] == ["greet", "code", "default"]
        r = c.post("/v1/chat/completions",
                   json={"messages": [{"role": "user", "content": "well HELLO"}], "max_tokens": 1})
        assert r.headers["x-laya-route"] == "greet"
        assert "config_applied" in [e["kind"] for e in c.get("/admin/events").json()["events"]]


def test_hand_edit_applied_and_broken_edit_kept(tiny_gguf, tmp_path):
    with running_engine(tiny_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        config = yaml.safe_load(eng.config_path.read_text())
        config["routes"][0]["match"] = {"tags": ["python"]}
        eng.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        deadline = time.monotonic() + 10
        while c.get("/admin/config").json()["routes"][0]["match"] != {"tags": ["python"]}:
            assert time.monotonic() < deadline, "hand edit not applied"
            time.sleep(0.2)
        eng.config_path.write_text("models: [oops\n")
        deadline = time.monotonic() + 10
        while "config_rejected" not in [e["kind"] for e in c.get("/admin/events").json()["events"]]:
            assert time.monotonic() < deadline, "broken edit not reported"
            time.sleep(0.2)
        assert c.get("/admin/config").json()["routes"][0]["match"] == {"tags": ["python"]}
        assert c.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "x"}], "max_tokens": 1}).status_code == 200
        # valid YAML that breaks the schema: refused with the path of each error, config kept
        running = c.get("/admin/config").json()
        for n, (change, path) in enumerate([
                (lambda cfg: cfg["routes"][0].update(target="no-such-model"), "routes[0].target"),
                (lambda cfg: cfg["models"][0].update(n_ctx="lots"), "models[0].n_ctx"),
                (lambda cfg: cfg.update(schedular={"max_queue": 1}), "schedular")]):
            seq = c.get("/admin/events").json()["seq"]
            broken = copy.deepcopy(config)
            change(broken)
            eng.config_path.write_text(yaml.safe_dump(broken, sort_keys=False) + "#" * n)
            deadline = time.monotonic() + 10
            while not (rejected := [e for e in c.get(f"/admin/events?since={seq}").json()["events"]
                                    if e["kind"] == "config_rejected"]):
                assert time.monotonic() < deadline, f"schema-breaking edit of {path} not reported"
                time.sleep(0.2)
            assert path in rejected[0]["reason"], rejected
            assert c.get("/admin/config").json() == running
        assert c.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "x"}], "max_tokens": 1}).status_code == 200


def test_api_key_required_everywhere_but_healthz(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf)
    config["server"] = {"api_key": "s3cret"}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        assert c.get("/healthz").status_code == 200
        for method, path in [("GET", "/v1/models"), ("GET", "/admin/config"),
                             ("GET", "/admin/models"), ("POST", "/v1/chat/completions")]:
            r = c.request(method, path)
            assert r.status_code == 401, path
            assert r.json()["error"]["code"] == "invalid_api_key"
        ok = c.get("/v1/models", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        sdk = openai.OpenAI(base_url=eng.url + "/v1", api_key="s3cret", max_retries=0)
        assert sdk.chat.completions.create(model="auto", max_tokens=2,
                                           messages=[{"role": "user", "content": "x"}]).choices


def test_non_loopback_without_key_refused_at_start(tiny_gguf, tmp_path):
    import subprocess
    import sys
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(tiny_config(tiny_gguf)))
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "serve", "--config", str(path),
                        "--host", "0.0.0.0", "--port", "0"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    assert "api_key" in r.stderr


def test_corrupt_gguf_fails_its_own_load_only(tiny_gguf, tmp_path):
    from gguf_factory import write_corrupt_gguf
    broken = write_corrupt_gguf(tmp_path / "broken.gguf")
    config = tiny_config(tiny_gguf)
    config["models"].append({"name": "broken", "backend": "llama_cpp", "path": str(broken),
                             "n_ctx": 256, "parallel": 1})
    config["models"].append({"name": "missing", "backend": "llama_cpp",
                             "path": str(tmp_path / "nowhere.gguf")})
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        for name in ("broken", "missing"):
            r = c.post("/v1/chat/completions", json={
                "model": name, "messages": [{"role": "user", "content": "x"}], "max_tokens": 2})
            assert r.status_code == 503, r.text
            assert name in r.json()["error"]["message"]
        state = {m["name"]: m for m in c.get("/admin/models").json()["models"]}
        assert state["broken"]["state"] == "error" and state["broken"]["error"]
        r = c.post("/v1/chat/completions", json={
            "model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2})
        assert r.status_code == 200


def _stream_lines(client: httpx.Client, body: dict):
    return client.stream("POST", "/v1/chat/completions", json={**body, "stream": True})


def test_runner_crash_mid_stream_ends_stream_and_restarts(tiny_gguf, tmp_path):
    import os
    import signal
    with running_engine(tiny_config(tiny_gguf, n_ctx=32768), tmp_path) as eng, eng.client() as c:
        body = {"model": "tiny", **LONG}
        with _stream_lines(c, body) as r:
            lines = r.iter_lines()
            assert next(lines).startswith("data:")
            pid = c.get("/admin/models").json()["models"][0]["pid"]
            os.kill(pid, signal.SIGKILL)
            killed_at = time.monotonic()
            rest = list(lines)
        assert time.monotonic() - killed_at < 5
        errors = [json.loads(l[5:]) for l in rest if l.startswith("data: {\"error")]
        assert errors and errors[0]["error"]["code"] == "runner_crashed"
        events = c.get("/admin/events").json()["events"]
        assert "runner_crashed" in [e["kind"] for e in events]
        again = c.post("/v1/chat/completions", json={**body, "max_tokens": 2})
        assert again.status_code == 200
        assert c.get("/admin/models").json()["models"][0]["pid"] != pid


def test_disconnect_frees_the_slot(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf, n_ctx=32768, parallel=1)
    config["scheduler"] = {"max_queue": 4, "queue_timeout_ms": 20000}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        body = {"model": "tiny", **LONG}
        with _stream_lines(c, body) as r:
            next(r.iter_lines())
        started = time.monotonic()
        r = c.post("/v1/chat/completions", json={**body, "max_tokens": 2})
        assert r.status_code == 200
        assert time.monotonic() - started < 5
        deadline = time.monotonic() + 5
        while c.get("/admin/models").json()["models"][0]["active"] != 0:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_queue_full_falls_back_then_429(tiny_gguf, tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    config = tiny_config(tiny_gguf, n_ctx=32768, parallel=1)
    config["models"].append({"name": "spare", "backend": "llama_cpp", "path": str(tiny_gguf),
                             "n_ctx": 256, "parallel": 1, "idle_ttl_s": 0})
    config["routes"] = [
        {"name": "with-fallback", "match": {"tags": ["fb"]}, "target": "tiny", "fallback": ["spare"]},
        {"name": "default", "target": "tiny"},
    ]
    config["scheduler"] = {"max_queue": 1, "queue_timeout_ms": 30000}
    with running_engine(config, tmp_path) as eng, eng.client() as c, \
            ThreadPoolExecutor(1) as pool:
        with _stream_lines(c, LONG) as first:
            lines = first.iter_lines()  # keep a reference: a collected iterator closes the stream
            next(lines)
            queued = pool.submit(lambda: eng.client().post("/v1/chat/completions",
                                                           json={**LONG, "max_tokens": 2}))
            deadline = time.monotonic() + 5
            while c.get("/admin/models").json()["models"][0]["queued"] != 1:
                assert time.monotonic() < deadline, "second request never queued"
                time.sleep(0.05)
            r = c.post("/v1/chat/completions", json={**LONG, "max_tokens": 2, "tags": ["fb"]})
            assert r.status_code == 200
            assert r.headers["x-laya-model"] == "spare"
            assert r.headers["x-laya-fallback-from"] == "tiny"
            r = c.post("/v1/chat/completions", json={**LONG, "max_tokens": 2})
            assert r.status_code == 429
            assert int(r.headers["retry-after"]) >= 1
            assert r.json()["error"]["code"] == "queue_full"
        assert queued.result(timeout=30).status_code == 200


def test_queue_timeout_is_503(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf, n_ctx=32768, parallel=1)
    config["scheduler"] = {"max_queue": 4, "queue_timeout_ms": 300}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        with _stream_lines(c, LONG) as first:
            lines = first.iter_lines()  # keep a reference: a collected iterator closes the stream
            next(lines)
            r = eng.client().post("/v1/chat/completions", json={**LONG, "max_tokens": 2})
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "queue_timeout"


@pytest.fixture
def strict_upstream():
    upstream = StrictUpstream("upstream-name-7", "k-123", free_port()).start()
    yield upstream
    upstream.stop()


def test_remote_backend_sends_its_model_name_and_key_and_no_tags(strict_upstream, tmp_path):
    remote = {"backend": "openai", "base_url": strict_upstream.url}
    config = {
        "models": [
            {"name": "cloud", **remote, "api_key_env": "LAYA_TEST_REMOTE_KEY",
             "remote_model": "upstream-name-7"},
            {"name": "dead", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"},
            # controls: the upstream refuses what a wrong remote_model or api_key_env would send
            {"name": "no-remote-name", **remote, "api_key_env": "LAYA_TEST_REMOTE_KEY"},
            {"name": "other-key", **remote, "api_key_env": "LAYA_TEST_OTHER_KEY",
             "remote_model": "upstream-name-7"},
        ],
        "routes": [
            {"name": "flaky", "match": {"tags": ["flaky"]}, "target": "dead", "fallback": ["cloud"]},
            {"name": "default", "target": "cloud"},
        ],
    }
    env = {"LAYA_TEST_REMOTE_KEY": "k-123", "LAYA_TEST_OTHER_KEY": "not-the-key"}
    with running_engine(config, tmp_path, env=env) as front:
        sdk = openai.OpenAI(base_url=front.url + "/v1", api_key="unused", max_retries=0)
        hi = [{"role": "user", "content": "hi"}]
        raw = sdk.chat.completions.with_raw_response.create(
            model="auto", messages=hi, max_tokens=4, extra_body={"tags": ["chat"]},
            extra_headers={"X-Laya-Tags": "header-tag"})
        assert raw.headers["x-laya-model"] == "cloud"
        assert raw.parse().usage.completion_tokens == 4
        chunks = list(sdk.chat.completions.create(model="auto", messages=hi, max_tokens=4,
                                                  stream=True, extra_body={"tags": ["chat"]}))
        assert chunks[-1].choices[0].finish_reason == "length"
        raw = sdk.chat.completions.with_raw_response.create(
            model="auto", messages=hi, max_tokens=2, extra_body={"tags": ["flaky"]})
        assert raw.headers["x-laya-model"] == "cloud"
        assert raw.headers["x-laya-fallback-from"] == "dead"
        assert strict_upstream.counts == {"served": 3, "refused": 0, "failed_on_purpose": 0}
        assert {(s["authorization"], s["model"]) for s in strict_upstream.seen} == \
            {("Bearer k-123", "upstream-name-7")}
        assert all("tags" not in s["fields"] for s in strict_upstream.seen)
        with pytest.raises(openai.APIStatusError) as info:
            sdk.chat.completions.create(model="dead", messages=[{"role": "user", "content": "x"}])
        assert info.value.status_code == 502
        for name, why in (("no-remote-name", "wrong model: 'no-remote-name'"),
                          ("other-key", "wrong key: 'Bearer not-the-key'")):
            with pytest.raises(openai.APIStatusError):
                sdk.chat.completions.create(model=name, messages=hi, max_tokens=2)
            assert strict_upstream.refusals[-1] == why


@pytest.mark.parametrize("status", [429, 500, 503])
def test_fallback_after_a_remote_429_or_5xx(strict_upstream, tiny_gguf, tmp_path, status):
    strict_upstream.fail_every, strict_upstream.fail_status = 1, status   # every request fails
    local = tiny_config(tiny_gguf)["models"][0]
    config = {
        "models": [{"name": "cloud", "backend": "openai", "base_url": strict_upstream.url,
                    "api_key_env": "LAYA_TEST_REMOTE_KEY", "remote_model": "upstream-name-7"},
                   local],
        "routes": [{"name": "out", "match": {"tags": ["out"]}, "target": "cloud",
                    "fallback": ["tiny"]},
                   {"name": "default", "target": "cloud"}],
    }
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    with running_engine(config, tmp_path, env={"LAYA_TEST_REMOTE_KEY": "k-123"}) as front, \
            front.client() as c:
        r = c.post("/v1/chat/completions", json={**chat, "tags": ["out"]})
        assert r.status_code == 200, r.text
        assert r.headers["x-laya-model"] == "tiny" and r.headers["x-laya-fallback-from"] == "cloud"
        with c.stream("POST", "/v1/chat/completions",
                      json={**chat, "tags": ["out"], "stream": True}) as s:
            lines = [line for line in s.iter_lines() if line]
            assert s.headers["x-laya-model"] == "tiny"
        assert lines[-1] == "data: [DONE]" and not [l for l in lines if '"error"' in l]
        assert strict_upstream.counts["failed_on_purpose"] == 2
        r = c.post("/v1/chat/completions", json=chat)        # no fallback: the upstream's answer
        assert r.status_code == (429 if status == 429 else 502), r.text
        assert r.json()["error"]["code"] == "remote_error"
        if status in (429, 503):                              # its Retry-After passed on
            assert r.headers["retry-after"] == "1"


def test_remote_that_breaks_off_mid_stream_ends_in_an_error_event(tiny_gguf, tmp_path):
    import os
    import signal
    remote_dir, front_dir = tmp_path / "remote", tmp_path / "front"
    remote_dir.mkdir(), front_dir.mkdir()
    with running_engine(tiny_config(tiny_gguf, n_ctx=32768), remote_dir) as remote:
        config = {"models": [{"name": "cloud", "backend": "openai", "base_url": remote.url + "/v1",
                              "remote_model": "tiny"}],
                  "routes": [{"name": "default", "target": "cloud"}]}
        with running_engine(config, front_dir) as front, front.client() as c:
            with _stream_lines(c, LONG) as r:
                lines = r.iter_lines()
                assert next(lines).startswith("data:")
                os.kill(remote.proc.pid, signal.SIGKILL)
                killed_at = time.monotonic()
                rest = [line for line in lines if line]
            assert time.monotonic() - killed_at < 5
            assert rest[-1] == "data: [DONE]"
            errors = [json.loads(l[5:]) for l in rest if l.startswith('data: {"error"')]
            assert errors and errors[0]["error"]["code"] == "remote_error"
            logged = c.get("/admin/requests").json()["requests"]
            assert logged[-1]["status"] == 502


def test_oversized_bodies_are_413_with_or_without_a_length(engine):
    from laya_desktop.engine.serving import MAX_BODY_BYTES
    big = b'{"prompt": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'

    def chunks():
        for i in range(0, len(big), 1 << 20):
            yield big[i:i + (1 << 20)]

    with engine.client() as c:
        sized = c.post("/v1/completions", content=big, headers={"Content-Type": "application/json"})
        chunked = c.post("/v1/completions", content=chunks(),
                         headers={"Content-Type": "application/json"})
    for r in (sized, chunked):
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "request_too_large"


def test_reapplying_config_does_not_reload_an_unloaded_warmup_model(tiny_gguf, tmp_path):
    with running_engine(tiny_config(tiny_gguf, warmup=True), tmp_path) as eng, eng.client() as c:
        deadline = time.monotonic() + 15
        while c.get("/admin/models").json()["models"][0]["state"] != "ready":
            assert time.monotonic() < deadline, "warm-up did not load the model"
            time.sleep(0.1)
        c.post("/admin/models/tiny/unload").raise_for_status()
        seq = c.get("/admin/events").json()["seq"]
        config = c.get("/admin/config").json()
        config["routes"][0]["match"] = {"tags": ["other"]}
        assert c.put("/admin/config", json=config).status_code == 200
        config["models"].append({**config["models"][0], "name": "tiny2"})
        assert c.put("/admin/config", json=config).status_code == 200
        deadline = time.monotonic() + 15
        while {m["name"]: m["state"] for m in c.get("/admin/models").json()["models"]}.get("tiny2") != "ready":
            assert time.monotonic() < deadline, "a new warm-up model was not loaded"
            time.sleep(0.1)
        # the second apply's warm-up is done, so the first one's would have been seen by now
        assert c.get("/admin/models").json()["models"][0]["state"] == "unloaded"
        loading = [e["model"] for e in c.get(f"/admin/events?since={seq}").json()["events"]
                   if e["kind"] == "model_loading"]
        assert loading == ["tiny2"]
