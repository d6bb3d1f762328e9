"""Fixtures for the GUI tests: a tiny GGUF, a models.yaml on a free loopback port, process checks."""
from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The app under test keeps its user config, settings and engine logs here, not in the real home.
_HOME = Path(tempfile.mkdtemp(prefix="laya-gui-tests-"))
os.environ["XDG_CONFIG_HOME"] = str(_HOME / "config")
os.environ["XDG_STATE_HOME"] = str(_HOME / "state")
os.environ.pop("LAYA_LANG", None)
TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # gguf_factory and engine_harness live in tests/


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gui_tiny_gguf(tmp_path_factory) -> Path:
    from gguf_factory import write_tiny_gguf
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def gui_config(gguf_path, port: int) -> dict:
    return {
        "server": {"host": "127.0.0.1", "port": port},
        "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf_path), "n_ctx": 2048,
                    "parallel": 2, "idle_ttl_s": 0}],
        "routes": [
            {"name": "code", "match": {"tags": ["code"]}, "target": "tiny"},
            {"name": "long", "match": {"min_prompt_chars": 5000}, "target": "tiny"},
            {"name": "default", "target": "tiny"},
        ],
        "memory": {"sample_hz": 4},
    }


def write_config(folder: Path, config: dict) -> Path:
    path = folder / "models.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def start_window(qapp, config_path: Path, port: int, timeout: float = 60.0):
    """A MainWindow that started its own engine and holds the applied config."""
    from laya_desktop.gui.engine_controller import UP
    from laya_desktop.gui.main_window import MainWindow

    window = MainWindow(str(config_path), "127.0.0.1", port)
    window.show()
    window.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (window.engine.state == UP and window.doc.applied):
        qapp.processEvents()
        time.sleep(0.02)
    assert window.engine.state == UP, window.engine.process.log_tail()
    return window


def engine_processes(config_path: Path) -> list[psutil.Process]:
    """Live processes started with this config: the engine (runners are checked via the group)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = proc.info["cmdline"] or []
            if str(config_path) in cmd and "serve" in cmd and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def group_processes(pgid: int) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return out


@pytest.fixture
def stalled_server():
    """Accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns, done = [], threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not done.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                continue
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    done.set()
    t.join(2)
    for c in conns:
        c.close()
    srv.close()
