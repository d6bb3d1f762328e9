"""The window attaches to an engine that already answers at the configured address, and leaves it
running on exit (it is not ours to stop)."""
from __future__ import annotations

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
