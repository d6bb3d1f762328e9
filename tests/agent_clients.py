"""The real agent clients from npm (Codex CLI, Claude Code), as `make test` installs them.

`make test` puts them in .agents/ (npm `--prefix`); LAYA_AGENTS_BIN points elsewhere. Without
npm on a developer's machine their tests are skipped; under CI (CI=true) a missing client fails.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AGENTS_BIN = Path(os.environ.get("LAYA_AGENTS_BIN") or ROOT / ".agents" / "node_modules" / ".bin")
CODEX_VERSION = "0.169.0"
CLAUDE_CODE_VERSION = "2.1.332"


def agent_binary(name: str) -> str:
    path = AGENTS_BIN / name
    if not path.exists():
        message = f"{path} is missing: `make test` installs it from npm ({name})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


def codex_config(base_url: str, model: str) -> str:
    """What a user puts in ~/.codex/config.toml for Laya (the README shows the same)."""
    return (f'model = "{model}"\nmodel_provider = "laya"\n\n[model_providers.laya]\nname = "Laya"\n'
            f'base_url = "{base_url}"\nwire_api = "responses"\n'
            # a long prompt on a CPU can take minutes before its first token
            'stream_idle_timeout_ms = 900000\nrequest_max_retries = 0\nstream_max_retries = 0\n')


def codex_env(home: Path, base_url: str, model: str) -> dict:
    codex_home = home / "codex-home"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(base_url, model))
    return {**os.environ, "HOME": str(home), "CODEX_HOME": str(codex_home)}


def claude_env(home: Path, base_url: str, api_key: str = "unused") -> dict:
    return {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": api_key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1"}
