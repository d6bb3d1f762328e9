"""`laya --self-test` from source: it passes on a working install and names the failing step."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}


@pytest.mark.slow
def test_self_test_passes():
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "--self-test"], env=ENV,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for step in ("app files", "built-in models", "keyword scanner", "engine start", "chat",
                 "main window"):
        assert f"self-test: {step} ok" in r.stderr
    assert "self-test passed" in r.stderr
    assert "engine start ok" in r.stderr and " event loop" in r.stderr


def test_the_engine_runs_on_uvloop_where_it_is_installed(tmp_path):
    """uvloop is a dependency on Linux and macOS (the gateway's overhead: pyproject.toml)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from engine_harness import EngineProcess
    from laya_desktop.self_test import event_loop_of

    pytest.importorskip("uvloop")
    config = {"models": [{"name": "remote", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
              "routes": [{"name": "default", "target": "remote"}]}
    engine = EngineProcess(config, tmp_path).start()
    plain = subprocess.Popen([sys.executable, "-c", "import asyncio, time; time.sleep(30)"])
    try:
        assert event_loop_of(engine.proc.pid) == "uvloop"
        time.sleep(0.5)   # the plain process has imported asyncio by now
        assert event_loop_of(plain.pid) == "asyncio"
    finally:
        plain.kill()
        plain.wait()
        engine.stop()


def test_self_test_names_the_failing_step(tmp_path):
    code = ("from laya_desktop.self_test import run_self_test\n"
            f"raise SystemExit(run_self_test(model_path={str(tmp_path / 'missing.gguf')!r}))\n")
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 1
    assert "self-test FAILED at " in r.stderr
    assert "missing.gguf" in r.stderr
