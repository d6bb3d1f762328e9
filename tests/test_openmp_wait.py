"""The runner's OpenMP threads sleep at a barrier instead of spinning (bench/threads.py shows why):
libgomp itself reports the policy it read when llama.cpp loaded it, and a user's own value wins."""
from __future__ import annotations

import os
import subprocess
import sys

from gguf_factory import write_tiny_gguf

LOAD = """
import sys
from laya_desktop.runners.runner_main import make_backend
assert "llama_cpp" not in sys.modules   # libgomp has not read its environment yet
make_backend("llama_cpp", {"name": "t", "path": sys.argv[1], "n_ctx": 64, "parallel": 1})
"""


def _policy_libgomp_read(gguf, **env) -> str:
    run = subprocess.run([sys.executable, "-c", LOAD, str(gguf)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "OMP_DISPLAY_ENV": "true", **env})
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if "OMP_WAIT_POLICY" in line]
    assert lines, run.stderr[-2000:]   # the wheel's ggml is built with OpenMP
    return lines[0].split("=", 1)[1].strip().strip("'")


def test_a_runner_loads_libgomp_with_the_passive_wait_policy(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    gguf = write_tiny_gguf(tmp_path / "tiny.gguf")
    assert _policy_libgomp_read(gguf) == "PASSIVE"
    assert _policy_libgomp_read(gguf, OMP_WAIT_POLICY="active") == "ACTIVE"
