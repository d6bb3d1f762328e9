"""`laya launch codex|claude`: the real npm clients started against a real engine, and the
settings --write-config puts into their own files without losing the user's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

from agent_clients import AGENTS_BIN, agent_binary
from laya_desktop.control import launch

API_KEY = "launch-test-key"


def laya_launch(*argv: str, home: Path, timeout: float = 300, env_extra: dict | None = None):
    env = {**os.environ, "HOME": str(home), "PATH": f"{AGENTS_BIN}{os.pathsep}{os.environ['PATH']}",
           **(env_extra or {})}
    env.pop("CODEX_HOME", None)
    return subprocess.run([sys.executable, "-m", "laya_desktop", "launch", *argv], cwd=home, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from engine_harness import running_engine
    config = {"server": {"api_key": API_KEY},
              "models": [{"name": "smol", "backend": "llama_cpp", "path": "builtin:smollm2-135m-instruct",
                          "n_ctx": 4096, "parallel": 1}],
              "routes": [{"name": "agents", "target": "smol", "sampling": {"temperature": 0}}]}
    with running_engine(config, tmp_path_factory.mktemp("launch")) as eng:
        yield eng


def engine_requests(engine, path: str) -> list[dict]:
    answer = httpx.get(engine.url + "/admin/requests", headers={"Authorization": f"Bearer {API_KEY}"},
                       timeout=10).json()
    return [r for r in answer["requests"] if r["path"] == path]


# --- the command lines ------------------------------------------------------------------------

def test_codex_overrides_are_toml_and_name_the_engine():
    plan = launch.codex_plan("/bin/codex", "http://127.0.0.1:9000", "k1", "auto", 16384, ["exec", "hi"])
    assert plan.argv[-2:] == ["exec", "hi"]
    overrides = dict(a.split("=", 1) for a in plan.argv[2:-2:2])
    assert plan.argv[1:-2:2] == ["-c"] * len(overrides)
    values = {k: tomllib.loads(f"v = {v}")["v"] for k, v in overrides.items()}
    assert values["model_provider"] == "laya"
    assert values["model_providers.laya.base_url"] == "http://127.0.0.1:9000/v1"
    assert values["model_providers.laya.wire_api"] == "responses"
    assert values["model_providers.laya.env_key"] == "LAYA_API_KEY" and plan.env == {"LAYA_API_KEY": "k1"}
    assert values["model_context_window"] == 16384


def test_codex_without_a_key_sends_none():
    plan = launch.codex_plan("/bin/codex", "http://h:1", None, "auto", None, [])
    assert not any("env_key" in a or "model_context_window" in a for a in plan.argv) and plan.env == {}


def test_claude_env_keeps_the_prompt_stable_and_routes_every_tier():
    env = launch.claude_env("http://127.0.0.1:9000", None, "smol")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9000"
    assert env["CLAUDE_CODE_ATTRIBUTION_HEADER"] == "0" and env["ANTHROPIC_AUTH_TOKEN"] == "laya"
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == env["CLAUDE_CODE_SUBAGENT_MODEL"] == "smol"
    assert "ANTHROPIC_DEFAULT_OPUS_MODEL" not in launch.claude_env("http://h:1", "k", None)
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in env
    assert launch.claude_env("http://h:1", None, None, auto_memory=False)["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"


def test_a_missing_client_says_how_to_install_it(tmp_path):
    done = laya_launch("codex", "--url", "http://127.0.0.1:9", home=tmp_path,
                       env_extra={"PATH": str(tmp_path)})
    assert done.returncode == 1
    assert "codex was not found on PATH" in done.stderr and "npm install -g @openai/codex" in done.stderr


def test_no_engine_is_a_clear_error(tmp_path):
    agent_binary("codex")
    done = laya_launch("codex", "--url", "http://127.0.0.1:9", home=tmp_path)
    assert done.returncode == 1 and "no engine answers at http://127.0.0.1:9" in done.stderr


def test_the_agents_rule_gives_codex_its_context_window(tmp_path):
    config = tmp_path / "models.yaml"
    config.write_text("models:\n- {name: a, backend: llama_cpp, path: x.gguf, n_ctx: 12000}\n"
                      "- {name: b, backend: llama_cpp, path: y.gguf, n_ctx: 3000}\n"
                      "routes:\n- {name: default, target: b}\n- {name: agents, target: a}\n")
    assert launch.agents_context_window(config) == 12000
    config.write_text("routes: [\n")
    assert launch.agents_context_window(config) is None


# --- --write-config ---------------------------------------------------------------------------

def test_write_codex_config_keeps_the_users_lines(tmp_path):
    path = tmp_path / "config.toml"
    user = ('model = "gpt-5"  # mine\nmodel_provider = "openai"\n\n[model_providers.laya]\n'
            'base_url = "http://old/v1"\nname = "Old"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    path.write_text(user)
    pairs = launch.codex_settings("http://127.0.0.1:8555", None, "auto", 16384)
    launch.write_codex_config(path, pairs)
    text = path.read_text()
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5" and parsed["model_provider"] == "openai"   # root untouched
    assert "# mine" in text and parsed["mcp_servers"]["docs"]["command"] == "docs-mcp"
    assert parsed["model_providers"]["laya"]["base_url"] == "http://127.0.0.1:8555/v1"
    assert "Old" not in text
    assert parsed["profiles"]["laya"] == {"model": "auto", "model_provider": "laya",
                                          "model_context_window": 16384}
    assert (tmp_path / "config.toml.before-laya").read_text() == user
    launch.write_codex_config(path, pairs)   # again: the same file, not a second table
    assert path.read_text() == text


def test_write_claude_settings_merges_env(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]},
                                "env": {"ANTHROPIC_API_KEY": "mine", "FOO": "1"}}))
    launch.write_claude_settings(path, launch.claude_env("http://127.0.0.1:8555", None, None))
    settings = json.loads(path.read_text())
    assert settings["permissions"] == {"allow": ["Bash(ls)"]}
    assert settings["env"]["FOO"] == "1" and settings["env"]["ANTHROPIC_API_KEY"] == "mine"
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8555"
    assert settings["env"]["CLAUDE_CODE_ATTRIBUTION_HEADER"] == "0"


def test_broken_claude_settings_are_left_alone(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{not json")
    with pytest.raises(launch.LaunchError, match="not valid JSON"):
        launch.write_claude_settings(path, {"ANTHROPIC_BASE_URL": "http://x"})
    assert path.read_text() == "{not json"


# --- the real clients -------------------------------------------------------------------------

@pytest.mark.timeout(400)
def test_claude_code_answers_through_laya_launch(engine, tmp_path):
    agent_binary("claude")
    done = laya_launch("claude", "--url", engine.url, "--api-key", API_KEY, "--",
                       "-p", "--bare", "--system-prompt", "You answer in one short sentence.",
                       "--tools", "", "--", "In one sentence, what is the sea?", home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "sea" in done.stdout.lower()
    assert any(r["status"] == 200 for r in engine_requests(engine, "/v1/messages"))
    assert not (tmp_path / ".claude" / "settings.json").exists()   # nothing written without asking


@pytest.mark.timeout(400)
def test_codex_reaches_the_engine_through_laya_launch(engine, tmp_path):
    """Codex's own turn (~9k tokens) does not fit the 4k context, so the engine refuses it at
    once: what is tested is that the provider, the API and the key reached the engine."""
    agent_binary("codex")
    before = len(engine_requests(engine, "/v1/responses"))
    done = laya_launch("codex", "--url", engine.url, "--api-key", API_KEY, "--",
                       "exec", "--skip-git-repo-check", "Say hi.", home=tmp_path, timeout=300)
    turns = engine_requests(engine, "/v1/responses")[before:]
    assert turns, done.stderr[-2000:]
    assert all(t["status"] == 400 for t in turns)          # too long: refused, not 401
    assert "context" in done.stderr.lower() or "context" in done.stdout.lower(), done.stderr[-2000:]
    assert not (tmp_path / ".codex" / "config.toml").exists()
