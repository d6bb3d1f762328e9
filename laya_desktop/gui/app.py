"""`laya gui`: build the QApplication and the main window, enforce --quit-after, return the exit code.

--quit-after S is a hard deadline counted from process launch. A QTimer starts an orderly shutdown
a little before it; a watchdog thread ends the process at the deadline in any case (killing the
engine's process group first), because a hung Qt event loop would never run that timer.

One app runs per config: a second `laya gui` on the same models.yaml raises the first window and
exits 0. Screenshot runs skip that lock: they are batch jobs that must make their own pictures,
and a test's temporary config never matches the user's anyway.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil

SHUTDOWN_RESERVE_S = 8.0   # orderly shutdown starts this long before the deadline


def _seconds_since_launch() -> float:
    return max(0.0, time.time() - psutil.Process().create_time())


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

    from laya_desktop.gui.system_libs_stamp import problem_report
    problem = problem_report()
    if problem:
        sys.stderr.write(f"laya gui: {problem}\n")
        return 1

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from laya_desktop.gui import translations
    from laya_desktop.gui.about_dialog import app_icon
    from laya_desktop.gui.single_instance import SingleInstance, instance_key

    app = QApplication.instance() or QApplication(sys.argv[:1])
    from laya_desktop.gui.gui_thread_gc import collect_on_gui_thread
    collector = collect_on_gui_thread(app)
    app.setApplicationName("Laya Desktop")
    app.setDesktopFileName("org.laya.Desktop")  # Wayland matches the window to the .desktop file
    app.setWindowIcon(app_icon())
    language = translations.resolve_language(getattr(args, "lang", None))
    if not translations.install_translators(app, language):
        sys.stderr.write(f"laya gui: no compiled translation for {language} "
                         "(run `make translations`); the window stays in English\n")
    instance = None
    if not screenshot_dir:
        instance = SingleInstance(instance_key(str(config_path)))
        if not instance.acquire():
            if instance.ask_first_to_raise():
                sys.stderr.write(f"laya gui: already running for {config_path}; "
                                 "raised its window\n")
                return 0
            sys.stderr.write(f"laya gui: another Laya Desktop holds {config_path} "
                             "but does not answer\n")
            return 1

    from laya_desktop.gui.main_window import MainWindow
    # A launch shows the window first and fills it on the first turn of the event loop; a
    # screenshot run keeps the one-step build its director expects.
    window = MainWindow(str(config_path), host, port, api_key, panels_later=not screenshot_dir,
                        tray=not screenshot_dir)
    if instance is not None:
        instance.raise_requested.connect(lambda: _raise(window))
    director = None
    if screenshot_dir:
        from laya_desktop.gui.screenshot import ScreenshotDirector
        window.resize(1366, 768)   # pictures of one size, a laptop's, whatever the user's screen
        director = ScreenshotDirector(window, screenshot_dir, deadline)

    def exit_code() -> int:
        return 1 if director is not None and not director.complete else 0

    if deadline is not None:
        _start_watchdog(deadline, window, exit_code)
        left_ms = int((deadline - time.monotonic() - SHUTDOWN_RESERVE_S) * 1000)
        QTimer.singleShot(max(left_ms, 0), window.quit_app)
    # The window says when the app ends: a window hidden in the tray is no reason to quit, nor
    # is the last dialog or tray menu closing while it is hidden (Qt's default would quit then).
    app.setQuitOnLastWindowClosed(False)
    window.closed.connect(app.quit)
    _close_on_signals(window)
    window.show()
    window.start()
    app.exec()
    if not screenshot_dir:   # a picture run's size is not the user's
        window.save_geometry()   # hidden by now, its place still known
    collector.stop()   # the workers stop next, on the usual collector
    if instance is not None:
        instance.stop_listening()  # the window is going: nothing left to raise
    ended = window.shutdown(grace_s=_grace(deadline))
    if instance is not None:
        instance.release()  # only now: a new launch must not meet our engine still stopping
    if not ended:
        # QThreadPool's destructor would wait for the stuck worker without a bound; our engine
        # is already stopped, so leave without running destructors.
        sys.stderr.write("laya gui: a worker did not stop; exiting without waiting for it\n")
        sys.stderr.flush()
        os._exit(exit_code())
    return exit_code()


def _raise(window) -> None:
    from laya_desktop.gui.single_instance import bring_to_front
    sys.stderr.write("laya gui: another launch asked for this window\n")
    bring_to_front(window)


def _note_ignored_local_config(used: Path) -> None:
    local = (Path.cwd() / "models.yaml").resolve()
    if local.is_file() and local != used:
        sys.stderr.write(f"laya gui: using {used}; {local} is not read by the app "
                         f"(open it with `laya gui --config {local}`)\n")


def _close_on_signals(window) -> None:
    """Ctrl-C or SIGTERM close the window, so the engine child is stopped in order.

    Python runs a signal's handler only when the GUI thread next runs Python code, which an idle
    Qt loop may not do for a long time; the C-level handler also writes the signal's number to a
    socket that a QSocketNotifier watches, so the handler runs at once."""
    import socket

    from PySide6.QtCore import QSocketNotifier, QTimer

    def handler(_signum, _frame) -> None:
        QTimer.singleShot(0, window.quit_app)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno())
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, window)

    def drain() -> None:
        try:
            while reader.recv(64):
                pass
        except BlockingIOError:
            pass
    notifier.activated.connect(drain)
    window._signal_wakeup = (reader, writer, notifier)   # kept as long as the window


def _grace(deadline: float | None) -> float:
    from laya_desktop.gui.engine_controller import QUIT_GRACE_S
    if deadline is None:
        return QUIT_GRACE_S
    return max(0.5, min(QUIT_GRACE_S, deadline - time.monotonic() - 3.0))


def _start_watchdog(deadline: float, window, exit_code) -> None:
    def watch() -> None:
        time.sleep(max(0.0, deadline - time.monotonic() - 1.0))
        sys.stderr.write("laya gui: --quit-after deadline reached, ending now\n")
        window.engine.process.kill_now()
        sys.stderr.flush()
        os._exit(exit_code() or 0)
    threading.Thread(target=watch, name="quit-after-watchdog", daemon=True).start()
