"""Faults against a real engine and real runners: the app killed, a runner that hangs, a kill
during a config save."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

from engine_harness import free_port, running_engine

# Stands in for the desktop app: starts the engine exactly as the GUI does (gui/engine_process.py),
# loads a model so that a runner exists, reports the pids, then waits to be killed.
APP = r"""
import json, sys, time
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_process import EngineProcess
config, port, log_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
proc = EngineProcess(config, "127.0.0.1", port, log_dir=log_dir)
proc.start()
client = EngineClient(f"http://127.0.0.1:{port}")
assert proc.wait_healthy(client, timeout=60), proc.log_tail()
import httpx
httpx.post(f"http://127.0.0.1:{port}/admin/models/tiny/load", timeout=60).raise_for_status()
models = httpx.get(f"http://127.0.0.1:{port}/admin/models", timeout=10).json()["models"]
print(json.dumps({"engine": proc.pid, "runners": [m["pid"] for m in models if m.get("pid")]}),
      flush=True)
time.sleep(600)
"""


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def tiny_config(gguf, **extra) -> dict:
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 256,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}], **extra}


@pytest.mark.timeout(120)
def test_engine_exits_when_the_app_is_killed(tiny_gguf, tmp_path):
    config = tmp_path / "models.yaml"
    config.write_text(yaml.safe_dump(tiny_config(tiny_gguf)))
    port = free_port()
    app = subprocess.Popen([sys.executable, "-c", APP, str(config), str(port), str(tmp_path / "logs")],
                           stdout=subprocess.PIPE, text=True)
    engine = runners = None
    try:
        line = app.stdout.readline()
        assert line, "the app did not start the engine"
        pids = json.loads(line)
        engine, runners = pids["engine"], pids["runners"]
        assert runners and not gone(engine) and not port_free(port)
        killed_at = time.monotonic()
        app.send_signal(signal.SIGKILL)
        app.wait(timeout=10)
        while not (gone(engine) and all(gone(p) for p in runners) and port_free(port)):
            assert time.monotonic() - killed_at < 2.0, \
                f"engine {engine} or runners {runners} outlived the app by 2 s"
            time.sleep(0.02)
        took = time.monotonic() - killed_at
        print(f"engine, runners and port gone {took:.2f} s after the app's SIGKILL")
        log = (tmp_path / "logs").glob("engine*.log")
        text = "".join(p.read_text(errors="replace") for p in log)
        assert "the app that started this engine is gone" in text
        assert "killing the runners" not in text  # the clean path did it, not the backstop
    finally:
        if app.poll() is None:
            app.kill()
        for pid in [engine, *(runners or [])]:
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)
