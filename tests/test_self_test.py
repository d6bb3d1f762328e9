"""`laya --self-test` from source: it passes on a working install and names the failing step."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}


@pytest.mark.slow
def test_self_test_passes():
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "--self-test"], env=ENV,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for step in ("app files", "built-in models", "engine start", "chat", "main window"):
        assert f"self-test: {step} ok" in r.stderr
    assert "self-test passed" in r.stderr


def test_self_test_names_the_failing_step(tmp_path):
    code = ("from laya_desktop.self_test import run_self_test\n"
            f"raise SystemExit(run_self_test(model_path={str(tmp_path / 'missing.gguf')!r}))\n")
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 1
    assert "self-test FAILED at " in r.stderr
    assert "missing.gguf" in r.stderr
