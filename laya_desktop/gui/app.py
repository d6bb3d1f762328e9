"""`laya gui`: build the QApplication and the main window, enforce --quit-after, return the exit code.

--quit-after S is a hard deadline counted from process launch. A QTimer starts an orderly shutdown
a little before it; a watchdog thread ends the process at the deadline in any case (killing the
engine's process group first), because a hung Qt event loop would never run that timer.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

SHUTDOWN_RESERVE_S = 8.0   # orderly shutdown starts this long before the deadline


def _seconds_since_launch() -> float:
    try:
        import psutil
        return max(0.0, time.time() - psutil.Process().create_time())
    except Exception:  # noqa: BLE001 - without psutil, count from here
        return 0.0


def run_gui(args) -> int:
    elapsed = _seconds_since_launch()
    quit_after = getattr(args, "quit_after", None)
    screenshot_dir = getattr(args, "screenshot", None)
    deadline = time.monotonic() + quit_after - elapsed if quit_after else None
    if screenshot_dir and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from laya_desktop.config.address import server_address
    from laya_desktop.config.store import app_config_path
    config_path = app_config_path(getattr(args, "config", None)).resolve()
    _note_ignored_local_config(config_path)
    host, port, api_key = server_address(config_path)

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from laya_desktop.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Laya Desktop")
    window = MainWindow(str(config_path), host, port, api_key)
    director = None
    if screenshot_dir:
        from laya_desktop.gui.screenshot import ScreenshotDirector
        director = ScreenshotDirector(window, screenshot_dir, deadline)

    def exit_code() -> int:
        return 1 if director is not None and not director.complete else 0

    if deadline is not None:
        _start_watchdog(deadline, window, exit_code)
        left_ms = int((deadline - time.monotonic() - SHUTDOWN_RESERVE_S) * 1000)
        QTimer.singleShot(max(left_ms, 0), window.close)
    app.setQuitOnLastWindowClosed(True)
    _close_on_signals(window)
    window.show()
    window.start()
    app.exec()
    if not window.shutdown(grace_s=_grace(deadline)):
        # QThreadPool's destructor would wait for the stuck worker without a bound; our engine
        # is already stopped, so leave without running destructors.
        sys.stderr.write("laya gui: a worker did not stop; exiting without waiting for it\n")
        sys.stderr.flush()
        os._exit(exit_code())
    return exit_code()


def _note_ignored_local_config(used: Path) -> None:
    local = (Path.cwd() / "models.yaml").resolve()
    if local.is_file() and local != used:
        sys.stderr.write(f"laya gui: using {used}; {local} is not read by the app "
                         f"(open it with `laya gui --config {local}`)\n")


def _close_on_signals(window) -> None:
    """Ctrl-C or SIGTERM close the window, so the engine child is stopped in order. Python runs
    signal handlers only between bytecodes, so a light timer gives it a chance while Qt waits."""
    from PySide6.QtCore import QTimer

    def handler(_signum, _frame) -> None:
        QTimer.singleShot(0, window.close)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    window._signal_timer = QTimer(window)
    window._signal_timer.timeout.connect(lambda: None)
    window._signal_timer.start(250)


def _grace(deadline: float | None) -> float:
    if deadline is None:
        return 10.0
    return max(1.0, min(10.0, deadline - time.monotonic() - 3.0))


def _start_watchdog(deadline: float, window, exit_code) -> None:
    def watch() -> None:
        time.sleep(max(0.0, deadline - time.monotonic() - 1.0))
        sys.stderr.write("laya gui: --quit-after deadline reached, ending now\n")
        window.engine.process.kill_now()
        sys.stderr.flush()
        os._exit(exit_code() or 0)
    threading.Thread(target=watch, name="quit-after-watchdog", daemon=True).start()
