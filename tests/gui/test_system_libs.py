"""Before Qt starts, the app names the system libraries that Qt's display plugin and llama.cpp lack,
and the one command that installs them (checked by hand in a debootstrap minbase chroot, where the
report listed 26 libraries; after that apt-get command the window opened on an X server)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from laya_desktop.gui import system_libs as libs

LDD = """\
\tlinux-vdso.so.1 (0x00007ffc)
\tlibQt6XcbQpa.so.6 => /x/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibxkbcommon-x11.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
"""


def test_parse_ldd():
    assert libs.parse_ldd(LDD) == ["libxcb-icccm.so.4", "libxkbcommon-x11.so.0"]


def test_install_hint_names_debian_packages_and_one_command():
    hint = libs.install_hint(["libxcb-icccm.so.4", "libEGL.so.1", "libfontconfig.so.1",
                              "libdbus-1.so.3", "libxcb-cursor.so.0"])
    assert "sudo apt-get install libdbus-1-3 libegl1 libfontconfig1 libxcb-cursor0 libxcb-icccm4" in hint
    assert "libfoo.so.9" in libs.install_hint(["libfoo.so.9"])


@pytest.mark.parametrize("env, plugin", [
    ({"QT_QPA_PLATFORM": "offscreen"}, "offscreen"),
    ({"QT_QPA_PLATFORM": "wayland;xcb"}, "wayland"),
    ({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}, "wayland"),
    ({"DISPLAY": ":0"}, "xcb"),
])
def test_platform_plugin(env, plugin):
    assert libs.platform_plugin(env) == plugin


def test_nothing_missing(monkeypatch):
    monkeypatch.setattr(libs, "missing_libraries", lambda plugin: [])
    monkeypatch.setattr(libs, "unresolved", lambda files: [])
    assert libs.problem_report({"QT_QPA_PLATFORM": "offscreen"}) is None
    assert libs.problem_report({"DISPLAY": ":0"}) is None
    assert "DISPLAY is not set" in libs.problem_report({"QT_QPA_PLATFORM": "xcb"})


def test_the_real_check_runs_here():
    """On this machine, whatever it lacks: a report names apt-get, or there is nothing to say."""
    report = libs.problem_report({"DISPLAY": ":0"})
    assert report is None or "apt-get install" in report


def test_report_covers_qt_and_llama_cpp(monkeypatch):
    def fake_unresolved(files):
        return ["libgomp.so.1"] if files == ["libllama.so"] else []
    monkeypatch.setattr(libs, "missing_libraries", lambda plugin: ["libEGL.so.1"])
    monkeypatch.setattr(libs, "llama_libs", lambda: ["libllama.so"])
    monkeypatch.setattr(libs, "unresolved", fake_unresolved)
    report = libs.problem_report({"DISPLAY": ":0"})
    assert "Qt (its 'xcb' display plugin) needs libEGL.so.1" in report
    assert "llama.cpp (every local model) needs libgomp.so.1" in report
    assert "sudo apt-get install libegl1 libgomp1" in report


def _something_missing() -> bool:
    return bool(libs.missing_libraries("xcb") or libs.unresolved(libs.llama_libs()))


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _something_missing(),
                    reason="this machine has every library Qt's xcb plugin and llama.cpp need")
def test_launch_without_the_libraries_says_what_to_install(tmp_path):
    """What `make run` does on a fresh Debian: no Qt traceback or abort, a command to run."""
    env = {**os.environ, "DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb",
           "XDG_CONFIG_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "laya_desktop", "gui"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "sudo apt-get install" in proc.stderr and "Traceback" not in proc.stderr
    for name in libs.missing_libraries("xcb") + libs.unresolved(libs.llama_libs()):
        assert name in proc.stderr
