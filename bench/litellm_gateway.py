"""LiteLLM's proxy (its Router behind an OpenAI-compatible server), as the other gateway in
bench/replicas.py, in front of the same replicas.

LiteLLM lives in a virtual environment of its own under the bench cache, not in the project's
.venv: `litellm[proxy]` pins an older `rich` and brings dozens of packages (fastapi, boto3,
azure, redis clients, …) that Laya does not use, and installing it there would change the
environment every test runs in. Made once with:

    python -m venv ~/.cache/laya-desktop/bench/litellm-venv
    ~/.cache/laya-desktop/bench/litellm-venv/bin/pip install 'litellm[proxy]'
"""
from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import yaml

# Laya's strategy -> LiteLLM's routing_strategy that means the same
STRATEGY = {"least_loaded": "least-busy", "min_latency": "latency-based-routing",
            "weighted": "simple-shuffle"}
MODEL = "replicas"


def venv() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "laya-desktop" / "bench" / "litellm-venv"


def executable() -> Path | None:
    exe = venv() / "bin" / "litellm"
    return exe if exe.is_file() else None


def version() -> str | None:
    python = venv() / "bin" / "python"
    if not python.is_file():
        return None
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or None


def config(urls: dict[str, str], strategy: str, key: str) -> dict:
    """Every replica a deployment of one model group; no retries, so that an error is counted as
    one, as Laya counts it (its targets are tried in order only when one cannot serve)."""
    return {"model_list": [{"model_name": MODEL,
                            "litellm_params": {"model": f"openai/{name}", "api_base": url,
                                               "api_key": "none"}}
                           for name, url in urls.items()],
            "router_settings": {"routing_strategy": STRATEGY[strategy], "num_retries": 0},
            "litellm_settings": {"telemetry": False, "num_retries": 0},
            "general_settings": {"master_key": key}}   # it refuses to start without one


@contextlib.contextmanager
def litellm_proxy(urls: dict[str, str], strategy: str, port: int, log: Path, timeout: float = 180):
    """(root URL, the key a client sends) while the proxy serves the replicas with the
    strategy's LiteLLM twin."""
    exe = executable()
    if exe is None:
        raise RuntimeError(f"no LiteLLM at {venv()} (see bench/litellm_gateway.py)")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "litellm.yaml"
        key = "sk-bench-" + secrets.token_hex(16)
        path.write_text(yaml.safe_dump(config(urls, strategy, key), sort_keys=False))
        # the model price list from the package, not fetched; no telemetry; quiet logs
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
               "LITELLM_TELEMETRY": "False", "NO_DOCS": "True"}
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(exe), "--config", str(path), "--host", "127.0.0.1",
                                     "--port", str(port), "--num_workers", "1"],
                                    stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"litellm exited with {proc.returncode}: "
                                       f"{log.read_text(errors='replace')[-2000:]}")
                try:
                    if httpx.get(url + "/health/liveliness", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"litellm not up within {timeout} s")
                time.sleep(0.5)
            yield url, key
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
