"""`laya check`: exit codes and output, run as a real process."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laya_desktop.routing import check
from laya_desktop.routing.check import run_check

REPO = Path(__file__).resolve().parents[1]

VALID = """
models:
  - {name: gemma, backend: llama_cpp, path: builtin:gemma-3-270m}
routes:
  - {name: default, target: gemma}
"""
INVALID = """
models:
  - {name: gemma, backend: warp-drive, path: builtin:gemma-3-270m}
routes:
  - {name: code, match: {tags: code}, target: qwen}
  - {name: default, target: gemma, fallback: [cloud]}
"""
NO_CATCH_ALL = """
models:
  - {name: gemma, backend: llama_cpp, path: builtin:gemma-3-270m}
routes:
  - {name: code, match: {tags: [code]}, target: gemma}
"""


def laya_check(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    return subprocess.run([sys.executable, "-m", "laya_desktop", "check", *args], cwd=cwd or tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def write(tmp_path: Path, text: str, name: str = "models.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, code, expected_lines", [
    (VALID, 0, []),
    (INVALID, 1, [
        "error: models[0].backend: unknown backend 'warp-drive' (valid: llama_cpp, mlx, openai, anthropic)",
        "error: routes[0].target: no model named 'qwen'",
        "error: routes[1].fallback[0]: no model named 'cloud'",
    ]),
    ("models: [\n", 1, []),
    ("", 1, ["error: the config is empty: it needs at least 'models' and 'routes'"]),
])
def test_exit_code_and_errors(tmp_path, text, code, expected_lines):
    path = write(tmp_path, text, "given.yaml")
    result = laya_check(tmp_path, "--config", str(path))
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[:len(expected_lines)] == expected_lines
    assert lines[-1].startswith(f"{path}: ")
    if code:
        assert lines[-1].endswith("error" if len(lines) == 2 else "errors")
        assert all(line.startswith("error: ") for line in lines[:-1])
    else:
        assert " ok " in lines[-1]


def test_yaml_error_names_the_line(tmp_path):
    path = write(tmp_path, "models:\n  - name: a\n    backend: [llama_cpp\n")
    result = laya_check(tmp_path, "--config", str(path))
    assert result.returncode == 1
    assert result.stdout.startswith("error: YAML syntax error at line 4")


def test_missing_file(tmp_path):
    result = laya_check(tmp_path, "--config", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1 and "cannot read" in result.stdout


def test_defaults_to_models_yaml_in_the_current_folder(tmp_path):
    write(tmp_path, INVALID)
    result = laya_check(tmp_path)
    assert result.returncode == 1 and "warp-drive" in result.stdout


def test_repo_models_yaml_passes(tmp_path):
    result = laya_check(tmp_path, "--config", str(REPO / "models.yaml"))
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].endswith("ok (2 models, 4 routes), 0 warnings")


def test_warnings_alone_exit_zero(tmp_path):
    result = laya_check(tmp_path, "--config", str(write(tmp_path, NO_CATCH_ALL)))
    assert result.returncode == 0, result.stdout
    assert any(line.startswith("warning: ") for line in result.stdout.splitlines())


def test_lint_warnings_are_printed_after_validation(tmp_path, monkeypatch, capsys):
    class Warning_:
        path, message = "routes[0]", "no catch-all rule"

    monkeypatch.setattr(check, "lint", lambda config: [Warning_()])
    code = run_check(argparse.Namespace(config=str(write(tmp_path, NO_CATCH_ALL))))
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0] == "warning: routes[0]: no catch-all rule"
    assert lines[-1].endswith("1 warning")
