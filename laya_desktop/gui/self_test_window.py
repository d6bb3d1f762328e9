"""The window step of `laya --self-test`: the main window, offscreen, attached to a running engine.

It passes once the window is shown and has received the engine's model list through its EngineState,
which exercises the panels, the worker pool and the HTTP client the real app uses.
"""
from __future__ import annotations

import os


def check_main_window(config_path: str, host: str, port: int, timeout_s: float) -> None:
    """Raise RuntimeError with the reason when the window does not come up."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from laya_desktop.gui.gui_thread_gc import collect_on_gui_thread
    from laya_desktop.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(["laya"])
    collector = collect_on_gui_thread(app)
    window = MainWindow(config_path, host, port)
    received: list[list[dict]] = []
    loop = QEventLoop()

    def on_models(rows: list[dict]) -> None:
        received.append(rows)
        loop.quit()

    window.state.models.connect(on_models)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    window.show()
    window.start()
    loop.exec()
    try:
        if not window.isVisible():
            raise RuntimeError("the main window is not visible")
        if window.grab().isNull():
            raise RuntimeError("the main window could not be drawn")
        if not received:
            raise RuntimeError(f"the window had no model list from the engine within {timeout_s:.0f} s")
        if not received[-1]:
            raise RuntimeError("the window's model list from the engine is empty")
    finally:
        window.close()
        window.shutdown()
        app.processEvents()
        collector.stop()
