"""The runner's OpenMP threads spin briefly at a barrier and then sleep (bench/threads.py shows
why): libgomp itself reports the setting it read when llama.cpp loaded it, and a user's own
setting wins."""
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


def _libgomp_read(gguf, **env) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    run = subprocess.run([sys.executable, "-c", LOAD, str(gguf)], capture_output=True, text=True,
                         timeout=120, env={**clean, "OMP_DISPLAY_ENV": "verbose", **env})
    assert run.returncode == 0, run.stderr[-2000:]
    read = {}
    for line in run.stderr.splitlines():
        name, _, value = line.strip().partition(" = ")
        if name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
            read[name] = value.strip("'")
    assert len(read) == 2, run.stderr[-2000:]   # the wheel's ggml is built with OpenMP
    return read


def test_a_runner_loads_libgomp_spinning_briefly_before_it_sleeps(tmp_path):
    gguf = write_tiny_gguf(tmp_path / "tiny.gguf")
    assert _libgomp_read(gguf)["GOMP_SPINCOUNT"] == "1000"            # not libgomp's 300000
    assert _libgomp_read(gguf, OMP_WAIT_POLICY="active")["OMP_WAIT_POLICY"] == "ACTIVE"
    assert _libgomp_read(gguf, GOMP_SPINCOUNT="5")["GOMP_SPINCOUNT"] == "5"
