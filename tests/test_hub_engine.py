"""POST /admin/models/pull on a real engine: a download from a local hub, streamed progress, the
model registered in the running config and served by a real runner."""
from __future__ import annotations

import json

import pytest

from engine_harness import free_port, running_engine
from fake_hub import ONLINE_ENV, FakeHub
from gguf_factory import write_tiny_gguf
from laya_desktop.config import app_token

TOKEN = "pull-token-" + "t" * 24
REPO = "acme/Tiny-Chat-GGUF"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    data = write_tiny_gguf(tmp_path_factory.mktemp("hub") / "c.gguf").read_bytes()
    with FakeHub() as hub:
        hub.add_repo(REPO, {"tiny-chat-Q8_0.gguf": data, "tiny-chat-F32.gguf": data + b""})
        hub.add_repo("meta/Gated-GGUF", {"g-Q8_0.gguf": data}, gated=True, token="hf_yes")
        yield hub


def _config(gguf) -> dict:
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 128,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


def _lines(response) -> list[dict]:
    return [json.loads(line) for line in response.iter_lines() if line.strip()]


def test_a_pulled_model_is_registered_and_served(hub, tmp_path, tiny_gguf):
    env = {**ONLINE_ENV, "HF_ENDPOINT": hub.url, "LAYA_MODELS_DIR": str(tmp_path / "models"),
           app_token.ENV: TOKEN}
    auth = {app_token.HEADER: TOKEN}
    with running_engine(_config(tiny_gguf), tmp_path, env=env) as engine, engine.client() as c:
        body = {"repo": f"{REPO}:Q8_0", "rule": "chat", "n_ctx": 256, "parallel": 2}
        assert c.post("/admin/models/pull", json=body).status_code == 403  # no token
        with c.stream("POST", "/admin/models/pull", json=body, headers=auth) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
            lines = _lines(r)
        last = lines[-1]
        assert last["state"] == "done", last
        assert last["model_name"] == "tiny-chat-q8_0" and last["done_bytes"] == last["total_bytes"]
        assert all(line["state"] in ("queued", "downloading", "verifying", "done") for line in lines)

        config = c.get("/admin/config").json()
        model = next(m for m in config["models"] if m["name"] == "tiny-chat-q8_0")
        assert (model["n_ctx"], model["parallel"]) == (256, 2)
        assert {"name": "chat", "target": "tiny-chat-q8_0"}.items() <= \
            next(r for r in config["routes"] if r["name"] == "chat").items()
        assert "tiny-chat-q8_0" in engine.config_path.read_text()  # persisted too

        answer = c.post("/v1/chat/completions", json={
            "model": "auto", "tags": ["chat"], "max_tokens": 4,
            "messages": [{"role": "user", "content": "hello"}]})
        assert answer.status_code == 200, answer.text
        assert answer.headers["X-Laya-Model"] == "tiny-chat-q8_0"
        assert answer.headers["X-Laya-Route"] == "chat"
        assert answer.json()["usage"]["completion_tokens"] >= 1

        pulls = c.get("/admin/models/pulls").json()["pulls"]
        assert [p["state"] for p in pulls] == ["done"]


def test_pull_requests_are_checked_and_hub_failures_named(hub, tmp_path, tiny_gguf):
    env = {**ONLINE_ENV, "HF_ENDPOINT": hub.url, "LAYA_MODELS_DIR": str(tmp_path / "models"),
           app_token.ENV: TOKEN}
    auth = {app_token.HEADER: TOKEN}
    with running_engine(_config(tiny_gguf), tmp_path, env=env) as engine, engine.client() as c:
        r = c.post("/admin/models/pull", json={"repo": REPO, "quantization": "Q8_0"}, headers=auth)
        assert r.status_code == 400 and "'quantization'" in r.json()["error"]["message"]
        r = c.post("/admin/models/pull", json={"repo": REPO}, headers=auth)  # two choices
        assert r.status_code == 400 and r.json()["error"]["code"] == "choice_needed"
        assert "F32, Q8_0" in r.json()["error"]["message"]
        r = c.post("/admin/models/pull", json={"repo": f"{REPO}:Q2_K"}, headers=auth)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "no_such_file")
        r = c.post("/admin/models/pull", json={"repo": "meta/Gated-GGUF", "stream": False},
                   headers=auth)
        assert r.status_code == 202
        job = r.json()["job"]["job_id"]
        with c.stream("POST", "/admin/models/pull", json={"repo": "meta/Gated-GGUF"},
                      headers=auth) as s:
            last = _lines(s)[-1]
        assert (last["state"], last["error_code"]) == ("failed", "gated_repo")
        assert "HF_TOKEN" in last["error"]
        assert any(p["job_id"] == job for p in c.get("/admin/models/pulls").json()["pulls"])


def test_an_unreachable_hub_answers_503(tmp_path, tiny_gguf):
    env = {**ONLINE_ENV, "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}",
           "LAYA_MODELS_DIR": str(tmp_path / "models"), app_token.ENV: TOKEN}
    with running_engine(_config(tiny_gguf), tmp_path, env=env) as engine, engine.client() as c:
        r = c.post("/admin/models/pull", json={"repo": REPO}, headers={app_token.HEADER: TOKEN})
        assert (r.status_code, r.json()["error"]["code"]) == (503, "hub_unreachable")
        assert "cannot be reached" in r.json()["error"]["message"]
        # everything else goes on without the hub
        assert c.post("/v1/chat/completions", json={
            "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}).status_code == 200
