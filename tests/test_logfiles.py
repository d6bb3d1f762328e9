"""The app's log folder, per platform, and the engine's rotating logs there (a real engine)."""
from __future__ import annotations

import sys

import httpx

from laya_desktop import logfiles
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_process import EngineProcess


def test_log_folder_per_platform(monkeypatch, tmp_path):
    monkeypatch.setattr(logfiles.Path, "home", lambda: tmp_path)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert logfiles.user_log_dir() == tmp_path / ".local/state/laya/logs"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert logfiles.user_log_dir() == tmp_path / "state/laya/logs"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the XDG spec: absolute paths only
    assert logfiles.user_log_dir() == tmp_path / ".local/state/laya/logs"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert logfiles.user_log_dir() == tmp_path / "Library/Logs/Laya"


def test_rotate_by_run_keeps_the_last_runs(tmp_path):
    log = tmp_path / "engine-stderr.log"
    for run in range(5):
        logfiles.rotate_by_run(log, keep=3)
        log.write_text(f"run {run}")
    assert [p.name for p in sorted(tmp_path.iterdir())] == [
        "engine-stderr.log", "engine-stderr.log.1", "engine-stderr.log.2", "engine-stderr.log.3"]
    assert log.read_text() == "run 4" and (tmp_path / "engine-stderr.log.3").read_text() == "run 1"


def test_app_engine_writes_engine_and_runner_logs(tmp_path, tiny_gguf):
    from engine_harness import free_port
    port = free_port()
    config = tmp_path / "models.yaml"
    config.write_text(
        f"server: {{host: 127.0.0.1, port: {port}}}\n"
        f"models:\n  - {{name: tiny, backend: llama_cpp, path: '{tiny_gguf}', n_ctx: 256}}\n"
        "routes:\n  - {name: default, target: tiny}\n")
    logs = tmp_path / "logs"
    (logs).mkdir()
    (logs / logfiles.ENGINE_STDERR_LOG).write_text("the previous run\n")
    engine = EngineProcess(config, "127.0.0.1", port, log_dir=logs)
    client = EngineClient(f"http://127.0.0.1:{port}")
    engine.start()
    try:
        assert engine.wait_healthy(client, timeout=45), engine.log_tail()
        httpx.post(f"http://127.0.0.1:{port}/admin/models/tiny/load", timeout=60).raise_for_status()
    finally:
        engine.stop()
        client.close()
    assert (logs / "engine-stderr.log.1").read_text() == "the previous run\n"
    assert "laya serve:" in (logs / logfiles.ENGINE_STDERR_LOG).read_text()
    engine_log = (logs / logfiles.ENGINE_LOG).read_text()
    runners_log = (logs / logfiles.RUNNERS_LOG).read_text()
    assert " INFO " in engine_log and "DEBUG" not in engine_log
    assert "[tiny]" in runners_log
