"""One app per config (a second launch raises the first), Help > About, Engine > Open log folder."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QPlainTextEdit

from conftest import engine_processes, free_port, gui_config, write_config
from laya_desktop.gui.main_window import MainWindow
from laya_desktop.gui.single_instance import SingleInstance, instance_key


def test_second_instance_asks_the_first_to_raise(qtbot, tmp_path):
    key = instance_key(str(tmp_path / "models.yaml"))
    first, second = SingleInstance(key), SingleInstance(key)
    assert first.acquire()
    try:
        assert not second.acquire()
        with qtbot.waitSignal(first.raise_requested, timeout=5000):
            assert second.ask_first_to_raise()
    finally:
        first.release()
    assert second.acquire()       # the lock is free again once the first let go
    second.release()
    assert instance_key(str(tmp_path / "a.yaml")) != key


def test_second_launch_raises_the_running_app_and_exits(tmp_path, gui_tiny_gguf):
    port = free_port()
    config = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    cmd = [sys.executable, "-m", "laya_desktop", "gui", "--config", str(config), "--quit-after", "90"]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    first = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:   # up once its engine answers
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
        assert second.returncode == 0, second.stderr
        assert "already running" in second.stderr
        assert len(engine_processes(config)) == 1          # no second engine was started
    finally:
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=40)
    assert first.returncode == 0, err
    assert "another launch asked for this window" in err
    assert engine_processes(config) == []


def test_about_box_shows_version_and_licences(qtbot, tmp_path):
    from laya_desktop import __version__
    window = MainWindow(str(tmp_path / "models.yaml"), "127.0.0.1", 9)
    qtbot.addWidget(window)
    about = window.show_about()
    text = about.text.text()
    assert f"Laya Desktop {__version__}" in text and "MIT" in text and "Gemma Terms of Use" in text
    assert about.notices_button.isEnabled() and about.licence_button.isEnabled()
    about.notices_button.click()
    shown = about.findChildren(QDialog)[-1]
    assert "Apache License" in shown.findChild(QPlainTextEdit).toPlainText()
    window.shutdown(grace_s=1)


def test_open_log_folder(qtbot, tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    window = MainWindow(str(tmp_path / "models.yaml"), "127.0.0.1", 9)
    qtbot.addWidget(window)
    window.open_logs_action.trigger()
    folder = window.engine.process.log_dir
    assert [u.toLocalFile() for u in opened] == [str(folder)]
    assert folder.is_dir() and str(folder).startswith(os.environ["XDG_STATE_HOME"])
    window.shutdown(grace_s=1)
