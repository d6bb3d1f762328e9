"""Fixtures for the GUI tests: a tiny GGUF, a models.yaml on a free loopback port, process checks."""
from __future__ import annotations

import atexit
import os
import shutil
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
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)  # each test process made its own
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


@pytest.fixture(autouse=True)
def gc_on_gui_thread(qapp):
    """As in the app (laya_desktop/gui/gui_thread_gc.py): cycles are collected on the GUI
    thread only, never in a worker that happens to allocate. Per test, so that the tests of
    other folders that an xdist worker runs next keep the automatic collector."""
    from laya_desktop.gui.gui_thread_gc import GuiThreadCollector
    collector = GuiThreadCollector(qapp, freeze_after_ms=None)   # a test's objects are not start-up's
    yield collector
    collector.stop()
    collector.deleteLater()


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


class StalledServer:
    """Accepts connections and never answers; tells how many its clients still hold open."""

    def __init__(self) -> None:
        self._srv = socket.socket()
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(16)
        self.url = f"http://127.0.0.1:{self._srv.getsockname()[1]}"
        self._conns: list[socket.socket] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self._srv.settimeout(0.2)
        while not self._done.is_set():
            try:
                self._conns.append(self._srv.accept()[0])
            except OSError:
                continue

    def open_connections(self) -> int:
        """Connections whose client has not closed its end: what it sent is read and dropped
        until the read would wait (open) or comes back empty (closed)."""
        count = 0
        for conn in list(self._conns):
            try:
                while conn.recv(65536, socket.MSG_DONTWAIT):
                    pass
            except BlockingIOError:
                count += 1
            except OSError:
                pass
        return count

    def close(self) -> None:
        self._done.set()
        self._thread.join(2)
        for conn in self._conns:
            conn.close()
        self._srv.close()


@pytest.fixture
def stalled():
    server = StalledServer()
    yield server
    server.close()


@pytest.fixture
def stalled_server(stalled):
    return stalled.url
