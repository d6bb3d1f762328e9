"""Start a real engine process (`python -m laya_desktop serve`) on a free loopback port."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import yaml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EngineProcess:
    def __init__(self, config: dict, folder: Path, env: dict | None = None):
        self.config_path = folder / "models.yaml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / f"engine-{self.port}.log"
        self._env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "EngineProcess":
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "laya_desktop", "serve", "--config", str(self.config_path),
             "--port", str(self.port)], stdout=self._log, stderr=subprocess.STDOUT, env=self._env)
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=1) as poll:  # one client: each httpx.get builds an SSL context
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"engine exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    if poll.get(self.url + "/healthz").status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.02)  # a short poll: an engine is healthy soon after it starts
        self.stop()
        raise RuntimeError(f"engine not healthy within {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kw.pop("timeout", 120), **kw)

    def runner_pids(self) -> list[int]:
        if self.proc is None:
            return []
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        return [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        gone, alive = psutil.wait_procs(children, timeout=5)
        for child in alive:
            child.kill()
        self._log.close()
        assert not alive, f"runners outlived the engine: {[c.pid for c in alive]}"


@contextlib.contextmanager
def running_engine(config: dict, folder: Path, env: dict | None = None):
    engine = EngineProcess(config, folder, env).start()
    try:
        yield engine
    finally:
        engine.stop()
