"""When the engine the window started dies, the window says so and offers to start it again."""
from __future__ import annotations

import os
import signal

import httpx

from conftest import engine_processes, free_port, gui_config, start_window, write_config


def test_a_killed_engine_is_offered_a_restart(qapp, qtbot, gui_tiny_gguf, tmp_path):
    from laya_desktop.gui.engine_controller import DOWN, UP

    port = free_port()
    path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    window = start_window(qapp, path, port)
    try:
        assert window.engine.owns_child and window.restart_offer is None
        first_pid = window.engine.process.pid
        os.kill(first_pid, signal.SIGKILL)
        qtbot.waitUntil(lambda: window.restart_offer is not None, timeout=15000)
        offer = window.restart_offer
        assert window.engine.state == DOWN
        assert offer.isVisible() and not offer.isModal()   # the plots stay usable meanwhile
        buttons = {b.text(): b for b in offer.buttons()}
        assert set(buttons) >= {"Restart engine", "Not now"}, list(buttons)

        buttons["Restart engine"].click()
        qtbot.waitUntil(lambda: window.engine.state == UP, timeout=45000)
        assert window.engine.process.pid != first_pid
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        qtbot.waitUntil(lambda: window.restart_offer is None, timeout=5000)
    finally:
        window.close()
    assert engine_processes(path) == []


def test_an_engine_stopped_on_purpose_is_not_offered(qapp, qtbot, gui_tiny_gguf, tmp_path):
    port = free_port()
    path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    window = start_window(qapp, path, port)
    window.close()                      # the window stops its own engine on the way out
    qtbot.wait(2500)                    # longer than one health probe
    assert window.restart_offer is None
    assert engine_processes(path) == []
