"""Python's cyclic garbage collector, run on the GUI thread only.

CPython collects cycles in whichever thread's allocation crosses the threshold, and the load
tester's generator, the engine client and the probes allocate in worker threads. A collection
there frees every unreachable cycle, Qt wrappers included, so a QObject made on the GUI thread
could be destroyed from a worker (undefined behaviour in Qt: a load-test sweep once crashed in
a worker thread's asyncio lookup while the GUI thread waited). As in calibre, nexpy and the PyQt
mailing list's recipe (napari issue 1029), automatic collection is off while the app runs, and a
GUI-thread timer collects the generations whose counts passed their thresholds.
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    def __init__(self, parent: QObject, interval_ms: int = INTERVAL_MS):
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self.was_enabled = gc.isenabled()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.collect_due)
        self.timer.start()

    def collect_due(self) -> int | None:
        """The oldest generation due, collected as the automatic collector would have (a
        generation is due when its count passed its threshold); None when none was due."""
        counts = gc.get_count()
        due = None
        for generation in range(3):
            if counts[generation] <= self.threshold[generation]:
                break
            due = generation
        if due is not None:
            gc.collect(due)
        return due

    def stop(self) -> None:
        self.timer.stop()
        if self.was_enabled:
            gc.enable()


def collect_on_gui_thread(app: QObject) -> GuiThreadCollector:
    """Call once the QApplication exists; the collector lives as long as `app`."""
    return GuiThreadCollector(app)
