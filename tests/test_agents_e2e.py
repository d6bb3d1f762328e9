"""Codex CLI and Claude Code, the real npm clients, against the shipped models.yaml.

A user who only points their agent at Laya gets an answer: each agent's real turn (its full
instructions and tools, 10-20k tokens) is routed by the shipped rules to a built-in model whose
context holds it, and the client exits 0 printing the reply. A turn takes minutes on two CPU
cores; the figures go to bench/results/agent_turns/ (bench/publish.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from agent_clients import ROOT, agent_binary, claude_env, codex_env
from engine_harness import running_engine

# make test-slow: the real Codex CLI and Claude Code, full turns on the built-in model
pytestmark = pytest.mark.slow

PROMPT = "In one sentence, what is the sea?"
LATEST = ROOT / "bench" / "results" / "agent_turns" / "latest.json"


def shipped_config() -> dict:
    return yaml.safe_load((ROOT / "models.yaml").read_text())


@pytest.fixture
def engine(tmp_path):
    with running_engine(shipped_config(), tmp_path) as eng:
        yield eng


def _requests(engine, path: str) -> list[dict]:
    return [r for r in httpx.get(engine.url + "/admin/requests", timeout=10).json()["requests"]
            if r["path"] == path]


def _report(name: str, seconds: float, turns: list[dict]) -> None:
    sys.path.append(str(ROOT / "bench"))
    from publish import write

    results = json.loads(LATEST.read_text()) if LATEST.exists() else {}
    results.pop("run", None)   # the other agent's figures stay; the stamp is this run's
    results[name] = {"seconds": round(seconds, 1),
                     "turns": [{k: t.get(k) for k in ("rule", "model", "prompt_tokens",
                                                       "completion_tokens", "ttft_ms", "duration_ms")}
                               for t in turns]}
    write("agent_turns", results)


def _check_turns(turns: list[dict], api: str) -> None:
    assert turns, "the agent sent no request"
    for turn in turns:
        assert turn["api"] == api and turn["status"] == 200, turn
        assert turn["rule"] == "agents", turn
    assert max(t["prompt_tokens"] or 0 for t in turns) > 8000   # the agent's real prompt


@pytest.mark.timeout(1500)
def test_codex_exec_answers_with_the_shipped_config(engine, tmp_path: Path):
    codex = agent_binary("codex")
    started = time.monotonic()
    done = subprocess.run([codex, "exec", "--skip-git-repo-check", PROMPT], cwd=tmp_path,
                          env=codex_env(tmp_path, engine.url + "/v1", "gpt-5-codex"),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1400)
    took = time.monotonic() - started
    turns = _requests(engine, "/v1/responses")
    _report("codex", took, turns)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), done.stderr[-3000:]   # exec prints the agent's last message
    _check_turns(turns, "responses")


@pytest.mark.timeout(1500)
def test_claude_code_print_mode_answers_with_the_shipped_config(engine, tmp_path: Path):
    claude = agent_binary("claude")
    started = time.monotonic()
    done = subprocess.run([claude, "-p", PROMPT], cwd=tmp_path, env=claude_env(tmp_path, engine.url),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1400)
    took = time.monotonic() - started
    turns = _requests(engine, "/v1/messages")
    _report("claude_code", took, turns)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert done.stdout.strip()
    _check_turns(turns, "messages")
