"""llama.cpp's server tests against `laya serve`: `ServerProcess.start` writes a models.yaml
serving one built-in model under the test's alias and starts the engine instead of llama-server.

Which model stands in for a test file's hub model: SmolLM2 135M Instruct for chat, tools,
Anthropic and Responses (the tests' `tinyllama2`), Gemma 3 270M for completions, and a tiny
random-weight GGUF with mean pooling (tests/gguf_factory.py) for embeddings (bge-small is a hub
model).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import requests
import yaml

import utils

REPO = Path(__file__).resolve().parents[2]
CHAT, COMPLETION, EMBEDDING = "builtin:smollm2-135m-instruct", "builtin:gemma-3-270m", "embedding"
# test file -> the model that stands in for its hub model
MODEL_FOR_FILE = {"test_completion": COMPLETION, "test_embedding": EMBEDDING}
state = {"model": CHAT, "folder": None}


def model_path(which: str) -> str:
    if which == EMBEDDING:
        path = Path(state["folder"]) / "embedding.gguf"
        if not path.exists():
            import gguf
            sys.path.insert(0, str(REPO / "tests"))
            from gguf_factory import write_tiny_gguf
            write_tiny_gguf(path, pooling_type=gguf.PoolingType.MEAN)
        return str(path)
    return which


def laya_config(server: utils.ServerProcess) -> dict:
    slots = server.n_slots or 1
    # llama-server splits n_ctx over its slots; Laya's n_ctx is per sequence
    n_ctx = max((server.n_ctx or 4096 * slots) // slots, 256)
    name = server.model_alias or "tinyllama-2"
    model = {"name": name, "backend": "llama_cpp", "path": model_path(state["model"]),
             "n_ctx": n_ctx, "parallel": slots, "idle_ttl_s": 0,
             "sampling": {"temperature": float(server.temperature)}}
    if server.n_predict and server.n_predict > 0:
        model["max_output_tokens"] = server.n_predict
    if state["model"] == EMBEDDING:
        model["embedding"] = True
    config = {"server": {"host": server.server_host, "port": int(server.server_port)},
              "models": [model], "routes": [{"name": "default", "target": name}]}
    if server.api_key:
        config["server"]["api_key"] = server.api_key
    if server.cors_origins:
        config["server"]["cors_origins"] = [o.strip() for o in server.cors_origins.split(",")]
    return config


def start(self: utils.ServerProcess, timeout_seconds: int = utils.DEFAULT_HTTP_TIMEOUT) -> None:
    folder = Path(state["folder"])
    config = folder / f"models-{self.server_port}.yaml"
    config.write_text(yaml.safe_dump(laya_config(self), sort_keys=False))
    self._log = open(folder / f"engine-{self.server_port}.log", "w")
    self.process = subprocess.Popen(
        [sys.executable, "-m", "laya_desktop", "serve", "--config", str(config),
         "--port", str(self.server_port)], stdout=self._log, stderr=subprocess.STDOUT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    utils.server_instances.add(self)
    deadline = time.time() + timeout_seconds
    while time.time() < deadline:
        if self.process.poll() is not None:
            raise RuntimeError(f"laya serve exited with {self.process.returncode}")
        try:
            if requests.get(self.make_url("/healthz"), timeout=1).status_code == 200:
                self.ready = True
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"laya serve not healthy within {timeout_seconds} s")


_llama_server_start = utils.ServerProcess.start


def start_llama_server(self: utils.ServerProcess,
                       timeout_seconds: int = utils.DEFAULT_HTTP_TIMEOUT) -> None:
    """The real llama-server (LLAMA_SERVER_BIN_PATH) on the same stand-in model file as Laya,
    for bench/llama_cpp_suite.py's side-by-side count."""
    sys.path.insert(0, str(REPO))
    from laya_desktop.runners.builtin import resolve_model_path
    which = model_path(state["model"])
    self.model_file = str(resolve_model_path(which)) if which.startswith("builtin:") else which
    self.model_hf_repo = self.model_hf_file = None
    self.model_url = None
    _llama_server_start(self, timeout_seconds)


def install() -> None:
    """LAYA_SUITE_SERVER=llama-server runs the same tests on llama-server itself."""
    if os.environ.get("LAYA_SUITE_SERVER") == "llama-server":
        utils.ServerProcess.start = start_llama_server
    else:
        utils.ServerProcess.start = start
    utils.ServerPreset.load_all = staticmethod(lambda: None)   # nothing to download
