"""The window attaches to an engine that already answers at the configured address, and leaves it
running on exit (it is not ours to stop); an attached engine that stops answering cannot hold the
app open."""
from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conftest import engine_processes, free_port, gui_config, write_config
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_process import EngineProcess
from laya_desktop.gui.main_window import MainWindow


def test_attach_to_running_engine(qtbot, tmp_path, gui_tiny_gguf):
    port = free_port()
    path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    external = EngineProcess(path, "127.0.0.1", port)
    external.start()
    client = EngineClient(f"http://127.0.0.1:{port}")
    try:
        assert external.wait_healthy(client, timeout=45)
        window = MainWindow(str(path), "127.0.0.1", port)
        qtbot.addWidget(window)
        window.start()
        qtbot.waitUntil(lambda: window.engine.state == "up", timeout=15000)
        assert not window.engine.owns_child
        assert not window.engine.process.running()
        window.close()
        assert client.healthy()                      # the external engine still runs
        assert len(engine_processes(path)) == 1
    finally:
        external.stop()
        client.close()
    assert engine_processes(path) == []


@contextlib.contextmanager
def stalled_engine():
    """Answers /healthz, so the window attaches; accepts every other request and never answers."""
    release, seen = threading.Event(), []

    class Handler(BaseHTTPRequestHandler):
        def _stall(self) -> None:
            seen.append(self.path.split("?")[0])
            if self.path == "/healthz":
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            else:
                release.wait(60)

        do_GET = do_POST = do_PUT = _stall

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_exit_is_bounded_when_the_attached_engine_stalls(qtbot, tmp_path, gui_tiny_gguf):
    with stalled_engine() as (port, seen):
        path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
        window = MainWindow(str(path), "127.0.0.1", port)
        qtbot.addWidget(window)
        window.start()
        qtbot.waitUntil(lambda: window.engine.state == "up", timeout=15000)
        assert window.panel("chat").send("hello")
        qtbot.waitUntil(lambda: {"/v1/chat/completions", "/admin/config"} <= set(seen), timeout=5000)
        # the chat and the config read wait on the stalled engine (on QtNetwork, not in workers)
        started = time.monotonic()
        window.close()
        assert time.monotonic() - started < 3
        assert window.workers_ended and window.pool.running_threads == 0
        assert not window.engine.owns_child and engine_processes(path) == []
