"""The start-up library check runs once, then again only when something it reads changed."""
from __future__ import annotations

import os
import sys

import pytest

from laya_desktop.gui import system_libs, system_libs_stamp

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the check is Linux-only")


@pytest.fixture
def runs(monkeypatch, tmp_path):
    """The real check, counted; the stamp in a cache folder of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = []
    real = system_libs.problem_report

    def counted(env=None):
        calls.append(env)
        return real(env)
    monkeypatch.setattr(system_libs, "problem_report", counted)
    return calls


def test_a_clean_check_is_remembered_until_the_environment_changes(runs, tmp_path):
    env = {**os.environ, "DISPLAY": ":5", "QT_QPA_PLATFORM": "xcb"}
    first = system_libs_stamp.problem_report(env)
    if first is not None:
        pytest.skip(f"this machine misses libraries: {first}")
    assert len(runs) == 1 and (tmp_path / "cache" / "laya-desktop" / "system-libs-ok").is_file()
    assert system_libs_stamp.problem_report(env) is None
    assert len(runs) == 1                                    # skipped: nothing changed
    assert system_libs_stamp.problem_report({**env, "DISPLAY": ":6"}) is None
    assert len(runs) == 2                                    # another display: checked again
    assert system_libs_stamp.problem_report({**env, "LD_LIBRARY_PATH": str(tmp_path)}) is None
    assert len(runs) == 3


def test_a_changed_library_runs_the_check_again(runs, tmp_path, monkeypatch):
    lib = tmp_path / "libllama.so"
    lib.write_bytes(b"\x7fELF")
    monkeypatch.setattr(system_libs, "llama_libs", lambda: [lib])
    monkeypatch.setattr(system_libs, "unresolved", lambda files: [])
    env = {"DISPLAY": ":5", "QT_QPA_PLATFORM": "offscreen"}
    assert system_libs_stamp.problem_report(env) is None
    assert system_libs_stamp.problem_report(env) is None
    assert len(runs) == 1
    os.utime(lib, ns=(1, 1))                                 # an upgraded wheel's library
    assert system_libs_stamp.problem_report(env) is None
    assert len(runs) == 2


def test_a_problem_is_never_remembered(runs, tmp_path, monkeypatch):
    monkeypatch.setattr(system_libs, "missing_libraries", lambda plugin: ["libEGL.so.1"])
    env = {"DISPLAY": ":5", "QT_QPA_PLATFORM": "xcb"}
    for expected_runs in (1, 2):
        assert "libEGL.so.1" in system_libs_stamp.problem_report(env)
        assert len(runs) == expected_runs
    assert not (tmp_path / "cache" / "laya-desktop" / "system-libs-ok").exists()
