"""The desktop app proves it is the user's own: the engine it starts gets its per-launch
token, and an engine it attaches to is opened by the token that engine wrote for its user."""
from __future__ import annotations

import json

import httpx
import yaml

from engine_harness import free_port, running_engine
from laya_desktop.admin_api import calls
from laya_desktop.config import app_token
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_process import EngineProcess

ADMIN_KEY = "k-admin-gui-29"
REMOTE = {"name": "cloud", "backend": "openai", "base_url": "http://127.0.0.1:9/v1",
          "api_key_env": "OPENAI_API_KEY"}


def _config(gguf, port: int | None = None, **server) -> dict:
    return {"server": {"host": "127.0.0.1", **({"port": port} if port else {}), **server},
            "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 128,
                        "parallel": 1}],
            "routes": [{"name": "default", "target": "tiny"}]}


def _answer(qtbot, client, call):
    answers = []
    client.send(call, returned=answers.append, errored=answers.append)
    qtbot.waitUntil(lambda: len(answers) == 1, timeout=30000)
    return answers[0]


def test_the_engine_the_app_starts_takes_its_changes(gui_tiny_gguf, tmp_path, qtbot):
    port = free_port()
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(_config(gui_tiny_gguf, port)))
    process = EngineProcess(path, "127.0.0.1", port, log_dir=tmp_path / "logs")
    client = EngineClient(f"http://127.0.0.1:{port}", app_token=process.app_token)
    try:
        process.start()
        assert process.wait_healthy(client, timeout=45)
        assert app_token.read_token(port) == process.app_token == client.app_token
        config = _answer(qtbot, client, calls.config()).config
        config["models"].append(REMOTE)
        config["server"]["cors_origins"] = ["https://app.example"]
        answer = _answer(qtbot, client, calls.put_config(config))
        assert answer.status == "applied", answer
        # the same change without the token: refused
        config["server"]["cors_origins"] = ["*"]
        r = httpx.put(f"http://127.0.0.1:{port}/admin/config", json=config, timeout=30)
        assert r.status_code == 403 and "server.cors_origins" in r.text
    finally:
        client.close()
        process.stop()
    assert app_token.read_token(port) is None


def test_an_engine_the_app_attaches_to_is_opened_by_its_token_file(gui_tiny_gguf, tmp_path, qtbot):
    with running_engine(_config(gui_tiny_gguf, admin_api_key=ADMIN_KEY), tmp_path) as eng:
        client = EngineClient(eng.url)   # no key: the app's config holds none
        try:
            refused = _answer(qtbot, client, calls.models())
            assert getattr(refused, "status", None) == 401
            assert client.healthy()       # attaching: the probe finds the engine's token
            assert client.app_token == app_token.read_token(eng.port)
            assert [m["name"] for m in _answer(qtbot, client, calls.models())] == ["tiny"]
            config = _answer(qtbot, client, calls.config()).config
            config["models"].append(REMOTE)
            assert _answer(qtbot, client, calls.put_config(config)).status == "applied"
            assert "cloud" in json.dumps(yaml.safe_load(eng.config_path.read_text()))
        finally:
            client.close()
