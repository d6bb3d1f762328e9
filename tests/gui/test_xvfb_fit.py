"""The window on a real X server (Xvfb, Qt's xcb platform, the one a Linux desktop uses) at a
laptop's 1366x768 and 1280x720: the first window fits the screen, and no tab squeezes a visible
widget below its minimum size hint once the window fills the screen. The offscreen platform
(test_window_fits.py) lays out the same widgets without a real display's fonts and metrics.
Skipped where Xvfb is not installed, except under CI, where .ci/run installs it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCREENS = ((1366, 768), (1280, 720))

PROBE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from squeeze import squeezed
    from laya_desktop.gui.main_window import MainWindow
    window = MainWindow(sys.argv[1], "127.0.0.1", 1)   # no engine: the layout alone
    window.show()
    for _ in range(5):
        app.processEvents()
    screen = app.primaryScreen().availableGeometry()
    first = window.frameGeometry()
    out = {"platform": app.platformName(), "screen": screen.getRect(), "first": first.getRect(),
           "tabs": {}}
    window.setGeometry(screen)   # filling the screen, as a maximised window on a laptop
    for _ in range(5):
        app.processEvents()
    out["filled"] = window.geometry().getRect()
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        for _ in range(3):
            app.processEvents()
        out["tabs"][window.tabs.tabText(i)] = squeezed(window)
    routes = window.panel("routes")
    window.tabs.setCurrentWidget(routes)
    routes.add_rule()   # a rule in the editor: every field enabled and laid out
    for _ in range(3):
        app.processEvents()
    out["tabs"]["routes, editing a rule"] = squeezed(window)
    window.shutdown(grace_s=0.5)
    print(json.dumps(out))
""")


def xvfb_binary() -> str:
    found = shutil.which("Xvfb")
    if found is None:
        message = "Xvfb is not installed (apt-get install xvfb)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def start_xvfb(size: tuple[int, int]) -> tuple[subprocess.Popen, str]:
    binary = xvfb_binary()
    # -displayfd: Xvfb picks a free display number and writes it once it accepts clients
    read, write = os.pipe()
    proc = subprocess.Popen([binary, "-displayfd", str(write), "-screen", "0",
                             f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    deadline = time.monotonic() + 20
    number = b""
    with os.fdopen(read, "rb") as pipe:
        while time.monotonic() < deadline and not number.endswith(b"\n"):
            chunk = pipe.read(1)
            if not chunk:
                break
            number += chunk
    if not number.strip():
        proc.kill()
        pytest.fail("Xvfb did not start")
    return proc, f":{number.decode().strip()}"


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_on_a_real_x_server_every_tab_fits_a_laptop_screen(tmp_path, size):
    xvfb, display = start_xvfb(size)
    try:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb",
               "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
        done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "models.yaml"), str(HERE)],
                              env=env, capture_output=True, text=True, timeout=120)
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=10)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["platform"] == "xcb"
    sx, sy, sw, sh = out["screen"]
    assert (sw, sh) == size
    x, y, w, h = out["first"]
    assert x >= sx and y >= sy and x + w <= sx + sw and y + h <= sy + sh, out   # inside the screen
    assert out["filled"][2:] == [sw, sh]
    assert {tab: found for tab, found in out["tabs"].items() if found} == {}
    assert len(out["tabs"]) >= 7
