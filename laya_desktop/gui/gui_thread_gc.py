"""Python's cyclic garbage collector, run on the GUI thread only.

CPython collects cycles in whichever thread's allocation crosses the threshold, and the load
tester's generator, the engine client and the probes allocate in worker threads. A collection
there frees every unreachable cycle, Qt wrappers included, so a QObject made on the GUI thread
could be destroyed from a worker (undefined behaviour in Qt: a load-test sweep once crashed in
a worker thread's asyncio lookup while the GUI thread waited). As in calibre, nexpy and the PyQt
mailing list's recipe (github.com/napari/napari/issues/1029), automatic collection is off while
the app runs, and a GUI-thread timer collects the generations whose counts passed their
thresholds.

A full collection walks every tracked object, and with the main window built that is a stall
the user can see on the GUI thread. Once the start-up is over, what it built is frozen out of the
collector's sight (gc.freeze(), as the engine does), so the later full collections walk only
what came after.
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500
FREEZE_AFTER_MS = 3000   # the window and its panels are built by then


class GuiThreadCollector(QObject):
    def __init__(self, parent: QObject, interval_ms: int = INTERVAL_MS,
                 freeze_after_ms: int | None = FREEZE_AFTER_MS):
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self.was_enabled = gc.isenabled()
        self.froze = False
        gc.disable()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.collect_due)
        self.timer.start()
        if freeze_after_ms is not None:
            QTimer.singleShot(freeze_after_ms, self, self.freeze_startup)

    def freeze_startup(self) -> None:
        """Everything alive now is the app's start-up: out of the later collections' sight."""
        gc.collect()
        gc.freeze()
        self.froze = True

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
        if self.froze:
            gc.unfreeze()
            self.froze = False
        if self.was_enabled:
            gc.enable()


def collect_on_gui_thread(app: QObject) -> GuiThreadCollector:
    """Call once the QApplication exists; the collector lives as long as `app`."""
    return GuiThreadCollector(app)
