"""`laya gui --screenshot DIR --quit-after S` in a subprocess: six pictures, exit 0, no engine left."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import engine_processes, free_port, gui_config, write_config

# make test-slow: the whole app with built-in models under offscreen Qt
pytestmark = pytest.mark.slow

PICTURES = ("models", "routes", "monitor", "requests", "chat", "loadtest")
REPO = Path(__file__).resolve().parents[2]


def run_screenshot(config_path: Path, out: Path, quit_after: int = 90) -> tuple[int, float, str]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "laya_desktop", "gui", "--config", str(config_path),
         "--screenshot", str(out), "--quit-after", str(quit_after)],
        capture_output=True, text=True, timeout=quit_after + 30,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    return proc.returncode, time.monotonic() - started, proc.stdout + proc.stderr


def check_pictures(out: Path) -> None:
    for name in PICTURES:
        png = out / f"{name}.png"
        assert png.is_file(), f"{png} missing"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 5000


def test_screenshot_mode_with_tiny_model(tmp_path, gui_tiny_gguf):
    config = write_config(tmp_path, gui_config(gui_tiny_gguf, free_port()))
    rc, took, output = run_screenshot(config, tmp_path / "shots")
    assert rc == 0, output
    assert took < 90
    check_pictures(tmp_path / "shots")
    sweep = tmp_path / "shots" / "loadtest-sweep.png"      # the load test's second picture
    assert sweep.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and sweep.stat().st_size > 5000
    assert engine_processes(config) == []


@pytest.mark.slow
def test_screenshot_mode_with_builtin_model(tmp_path):
    text = (REPO / "models.yaml").read_text()
    config = tmp_path / "models.yaml"
    config.write_text(re.sub(r"port: \d+", f"port: {free_port()}", text, count=1))
    rc, took, output = run_screenshot(config, tmp_path / "shots")
    assert rc == 0, output
    check_pictures(tmp_path / "shots")
    assert engine_processes(config) == []


def test_quit_after_is_a_hard_deadline_and_fails_without_pictures(tmp_path):
    """No engine can start (the port's config points at a missing model file is fine; here the
    engine port is taken by a server that never answers): the app still ends by the deadline,
    with a non-zero code because not all pictures were saved."""
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    try:
        config = write_config(tmp_path, gui_config(tmp_path / "missing.gguf", port))
        rc, took, output = run_screenshot(config, tmp_path / "shots", quit_after=15)
    finally:
        srv.close()
    assert rc != 0, output
    assert took < 15 + 5, output
    assert engine_processes(config) == []


def test_sigterm_to_the_app_stops_its_engine(tmp_path, gui_tiny_gguf):
    import os
    import signal

    import httpx

    port = free_port()
    config = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    proc = subprocess.Popen([sys.executable, "-m", "laya_desktop", "gui", "--config", str(config)],
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert len(engine_processes(config)) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert engine_processes(config) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
