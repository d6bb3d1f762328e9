"""The window fits the screens people have: every tab at 1366x768 and 1280x720 with no visible
widget squeezed below its minimum size hint, a first window of at most 90 % of the screen, centred,
and a size and place remembered and brought back inside the screen of the next launch."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QRect, QSize

from conftest import free_port, gui_config, write_config
from squeeze import squeezed

LAPTOPS = ((1366, 768), (1280, 720))


@pytest.fixture
def window(qapp, tmp_path):
    from laya_desktop.gui.main_window import MainWindow
    win = MainWindow(str(tmp_path / "models.yaml"), "127.0.0.1", free_port())   # no engine started
    yield win
    win.shutdown(grace_s=0.5)
    win.deleteLater()


def settle(qapp, rounds: int = 3) -> None:
    for _ in range(rounds):
        qapp.processEvents()


def test_the_panels_do_not_force_the_window_past_a_laptop_screen(window):
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 720, hint
    for key, panel in window.panels.items():
        assert panel.minimumSizeHint().width() <= 1240, (key, panel.minimumSizeHint())


@pytest.mark.parametrize("size", LAPTOPS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_tab_at_laptop_size_squeezes_nothing(qapp, window, size):
    window.show()
    window.resize(*size)
    settle(qapp)
    assert window.size() == QSize(*size)
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        settle(qapp)
        assert squeezed(window) == [], window.tabs.tabText(i)
    routes = window.panel("routes")
    window.tabs.setCurrentWidget(routes)
    routes.add_rule()   # a rule in the editor: every field enabled and laid out
    settle(qapp)
    assert routes.editor.isEnabled() and squeezed(window) == []
    assert routes.editor_scroll.widget() is routes.editor   # the long form scrolls


@pytest.mark.parametrize("backend", ["llama_cpp", "mlx", "openai"])
def test_the_model_dialog_fits_a_laptop_screen(qapp, window, backend):
    from laya_desktop.gui.panels.model_dialog import ModelDialog
    dialog = ModelDialog(window.pool, backend, parent=window)
    try:
        dialog.show()
        settle(qapp)
        available = dialog.screen().availableGeometry()
        assert dialog.width() <= available.width() * 0.9 + 1
        assert dialog.height() <= available.height() * 0.9 + 1
        assert dialog.minimumSizeHint().height() <= 400
        dialog.resize(dialog.minimumSizeHint())
        settle(qapp)
        assert squeezed(dialog) == []
    finally:
        dialog.done(0)
        dialog.deleteLater()


def test_geometry_arithmetic():
    from laya_desktop.gui.window_geometry import clamp_rect, first_rect
    screen = QRect(0, 0, 1366, 768)
    first = first_rect(screen)
    assert first.width() <= 1229 and first.height() <= 691 and first.center() == screen.center()
    assert first_rect(QRect(0, 0, 3840, 2160)).size() == QSize(1280, 800)
    assert clamp_rect(QRect(1500, 900, 1920, 1000), screen) == QRect(0, 0, 1366, 768)
    assert clamp_rect(QRect(-50, 700, 800, 600), screen) == QRect(0, 168, 800, 600)
    assert clamp_rect(QRect(100, 50, 800, 600), QRect(1366, 0, 1920, 1080)) == QRect(1366, 50, 800, 600)


# --- a launch on a given screen, in its own process (the offscreen screen is set at start) ----
LAUNCH = textwrap.dedent("""
    import json, sys
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from laya_desktop.gui.main_window import MainWindow
    window = MainWindow(sys.argv[1], "127.0.0.1", 1)
    window.show()
    for _ in range(3):
        app.processEvents()
    screen = app.primaryScreen().availableGeometry()
    out = {"screen": screen.getRect(), "window": [window.x(), window.y(), window.width(), window.height()]}
    if len(sys.argv) > 2:
        window.move(int(sys.argv[2]), int(sys.argv[3]))
        window.resize(int(sys.argv[4]), int(sys.argv[5]))
        app.processEvents()
    window.save_geometry()
    window.shutdown(grace_s=0.5)
    print(json.dumps(out))
""")


def launch(tmp_path: Path, screen: tuple[int, int], *move_resize: int) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / f"screen-{screen[0]}x{screen[1]}.json"
    config.write_text(json.dumps({"screens": [{"name": "s", "x": 0, "y": 0, "width": screen[0],
                                               "height": screen[1], "logicalDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-c", LAUNCH, str(tmp_path / "models.yaml"),
                           *map(str, move_resize)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_first_window_fits_then_its_place_is_remembered_and_clamped(tmp_path):
    first = launch(tmp_path, (1920, 1080), 300, 200, 1100, 700)
    x, y, w, h = first["window"]
    assert first["screen"] == [0, 0, 1920, 1080]
    assert w <= 1920 * 0.9 and h <= 1080 * 0.9 and (w, h) == (1280, 800)
    assert abs((x + w / 2) - 960) <= 1 and abs((y + h / 2) - 540) <= 1          # centred

    again = launch(tmp_path, (1920, 1080))
    assert again["window"] == [300, 200, 1100, 700]                            # as left

    launch(tmp_path, (1920, 1080), 1500, 700, 1400, 900)                       # far corner, big
    small = launch(tmp_path, (1366, 768))
    x, y, w, h = small["window"]
    assert (w, h) == (1366, 768) and (x, y) == (0, 0)                           # inside the screen



def test_the_app_brings_back_its_place_inside_the_screen_and_keeps_it_on_quit(tmp_path, gui_tiny_gguf):
    """`laya gui` itself: a place saved on a bigger screen opens clamped to this one, and the
    place it had is what it saves when SIGTERM ends it."""
    port = free_port()
    config = write_config(tmp_path, gui_config(gui_tiny_gguf, port))
    ini = tmp_path / "config" / "laya" / "app.ini"
    ini.parent.mkdir(parents=True)
    ini.write_text("[window]\ngeometry=\"2500,1400,1600,1000\"\nmaximized=false\n")
    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({"screens": [{"name": "s", "x": 0, "y": 0, "width": 1366,
                                               "height": 768, "logicalDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={screen}",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    app = subprocess.Popen([sys.executable, "-m", "laya_desktop", "gui", "--config", str(config),
                            "--quit-after", "90"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:   # up once its engine answers
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
    finally:
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=40)
    assert app.returncode == 0, err
    assert 'geometry="0,0,1366,768"' in ini.read_text() or "geometry=0,0,1366,768" in ini.read_text(), \
        ini.read_text()
