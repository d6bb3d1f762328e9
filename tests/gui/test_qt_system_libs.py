"""Before Qt starts, the app names the system libraries its display plugin lacks and the command
that installs them (this machine, a bare Debian container, is a real case of it)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from laya_desktop.gui import qt_system_libs as libs

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


def test_offscreen_needs_nothing_more_here():
    assert libs.problem_report({"QT_QPA_PLATFORM": "offscreen"}) is None


def test_no_display_is_named():
    report = libs.problem_report({"QT_QPA_PLATFORM": "xcb"})
    if libs.missing_libraries("xcb"):
        assert "apt-get install" in report
    else:
        assert "DISPLAY is not set" in report


@pytest.mark.skipif(not sys.platform.startswith("linux") or not libs.missing_libraries("xcb"),
                    reason="this machine has every library the xcb plugin needs")
def test_launch_without_the_libraries_says_what_to_install(tmp_path):
    """What `make run` does on a fresh Debian: no Qt traceback or abort, a command to run."""
    env = {**os.environ, "DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb",
           "XDG_CONFIG_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "laya_desktop", "gui"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "sudo apt-get install" in proc.stderr and "Traceback" not in proc.stderr
    for name in libs.missing_libraries("xcb"):
        assert name in proc.stderr
