"""Which models.yaml each command uses: the app its user copy, the CLI tools ./models.yaml first."""
from __future__ import annotations

import sys

import pytest

from laya_desktop.config import store


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "models.yaml").write_text("# a project's own config\n")
    monkeypatch.chdir(project)
    return tmp_path


def test_app_uses_the_user_copy_written_from_the_default(home):
    path = store.app_config_path()
    assert path == home / "xdg" / "laya" / "models.yaml"
    assert path.read_text() == store.default_config_text()
    path.write_text("# edited by the user\n")
    assert store.app_config_path().read_text() == "# edited by the user\n"  # written once only


def test_cli_tools_still_prefer_the_launch_folder(home):
    assert store.find_config_path() == home / "project" / "models.yaml"


def test_explicit_config_wins_everywhere(home):
    chosen = home / "elsewhere.yaml"
    assert store.app_config_path(chosen) == chosen
    assert store.find_config_path(chosen) == chosen
    assert not (home / "xdg").exists()
