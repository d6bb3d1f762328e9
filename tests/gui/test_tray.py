"""The tray: its menu and tooltip follow the engine and its models, load and unload go through
the Models panel to the real engine, and the keep-serving setting decides what closing the window
does. Offscreen Qt has no system tray, so the window tests say there is one: what they check is
the app's behaviour around it, with a real engine process."""
from __future__ import annotations

import time

import httpx
import pytest

from conftest import engine_processes, free_port, group_processes, gui_config, start_window, write_config
from laya_desktop.gui import tray as tray_module
from laya_desktop.gui.tray import TrayMenu

ROWS = [{"name": "tiny", "backend": "llama_cpp", "state": "unloaded"},
        {"name": "chat", "backend": "llama_cpp", "state": "ready"},
        {"name": "cloud", "backend": "openai", "state": "remote"}]


def texts(menu: TrayMenu) -> list[str]:
    return [a.text() for a in menu.menu.actions() if not a.isSeparator()]


def test_the_menu_follows_the_engine_and_its_models(qtbot):
    menu = TrayMenu()
    assert texts(menu) == ["Open Laya Desktop", "Laya Desktop — engine down", "Quit"]
    menu.set_models(ROWS)
    assert "Load tiny — unloaded" not in texts(menu)       # no engine: nothing to load on
    menu.set_engine_state("up")
    assert texts(menu) == ["Open Laya Desktop", "Laya Desktop — engine up", "Load tiny — unloaded",
                           "Unload chat — ready", "cloud — remote", "Quit"]
    assert not menu.model_actions["cloud"].isEnabled()
    assert menu.tooltip() == "Laya Desktop — engine up\nloaded: chat"
    with qtbot.waitSignal(menu.load_requested) as load:
        menu.model_actions["tiny"].trigger()
    assert load.args == ["tiny"]
    with qtbot.waitSignal(menu.unload_requested) as unload:
        menu.model_actions["chat"].trigger()
    assert unload.args == ["chat"]
    before = menu.menu.actions()
    menu.set_models([dict(r) for r in ROWS])                 # the same rows again: no rebuild
    assert menu.menu.actions() == before
    menu.set_models([])
    assert "no models" in texts(menu) and menu.tooltip().endswith("no model loaded")
    with qtbot.waitSignal(menu.quit_requested):
        menu.menu.actions()[-1].trigger()


def test_the_setting_is_off_by_default_and_kept_in_app_ini(keep_serving_reset):
    from laya_desktop.gui.translations import settings
    assert tray_module.keeps_serving() is False
    tray_module.save_keeps_serving(True)
    assert tray_module.keeps_serving() is True
    assert settings().fileName().endswith("app.ini")
    assert str(settings().value(tray_module.KEEP_SERVING_KEY)) == "true"


@pytest.fixture
def keep_serving_reset():
    yield
    tray_module.save_keeps_serving(False)


@pytest.fixture
def with_tray(monkeypatch, keep_serving_reset):
    monkeypatch.setattr(tray_module, "system_tray_available", lambda: True)


@pytest.fixture
def engine_window(qapp, tmp_path, gui_tiny_gguf):
    port = free_port()
    path = write_config(tmp_path, gui_config(gui_tiny_gguf, port))

    def make():
        window = start_window(qapp, path, port)
        return window, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10), path
    made = []
    yield lambda: made.append(make()) or made[-1]
    for window, http, _path in made:
        window.quit_app()
        http.close()
    assert engine_processes(path) == []


def state_of(http, name: str) -> str:
    return {m["name"]: m["state"] for m in http.get("/admin/models").json()["models"]}[name]


def test_no_tray_no_setting(qtbot, engine_window):
    window, _http, _path = engine_window()
    assert not window.keep_serving_action.isEnabled()         # offscreen: no system tray
    assert not window.tray.shown


def test_closing_with_the_setting_on_keeps_the_engine_serving(qtbot, with_tray, engine_window):
    window, http, path = engine_window()
    action = window.keep_serving_action
    assert action.isEnabled() and not action.isChecked()      # off by default
    action.setChecked(True)
    assert tray_module.keeps_serving()                         # saved at once
    menu = window.tray.menu
    qtbot.waitUntil(lambda: "tiny" in menu.model_actions, timeout=10000)

    with qtbot.assertNotEmitted(window.closed):
        window.close()
    assert not window.isVisible() and not window._closed
    assert http.get("/healthz").status_code == 200 and len(engine_processes(path)) == 1

    menu.model_actions["tiny"].trigger()                        # Load, from the tray
    qtbot.waitUntil(lambda: state_of(http, "tiny") == "ready", timeout=30000)
    qtbot.waitUntil(lambda: menu.model_actions["tiny"].text() == "Unload tiny — ready", timeout=10000)
    assert "loaded: tiny" in window.tray.icon.toolTip()
    menu.model_actions["tiny"].trigger()                        # and Unload
    qtbot.waitUntil(lambda: state_of(http, "tiny") == "unloaded", timeout=30000)

    menu.open_requested.emit()
    assert window.isVisible()
    window.close()                                              # into the tray again
    assert not window.isVisible() and not window._closed
    pgid = window.engine.process.pid
    with qtbot.waitSignal(window.closed, timeout=5000):
        menu.quit_requested.emit()                              # the tray's Quit quits, hidden too
    assert engine_processes(path) == [] and group_processes(pgid) == []


def test_closing_with_the_setting_off_quits_as_before(qtbot, with_tray, engine_window):
    window, http, path = engine_window()
    assert not window.keep_serving_action.isChecked()
    pgid = window.engine.process.pid
    started = time.monotonic()
    with qtbot.waitSignal(window.closed, timeout=5000):
        window.close()
    assert time.monotonic() - started < 2.0
    assert window._closed and engine_processes(path) == [] and group_processes(pgid) == []
