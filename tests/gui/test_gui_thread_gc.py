"""Cycles are collected on the GUI thread only while the app's collector runs."""
from __future__ import annotations

import gc
import threading


class Recorder:
    """Part of a reference cycle; notes the thread that frees it."""

    def __init__(self, freed_on: list):
        self.freed_on = freed_on
        self.me = self   # only the cyclic collector can free it

    def __del__(self):
        self.freed_on.append(threading.get_ident())


# One tracked container each (3.11 keeps a small instance's attributes inline, without a dict
# object), so well past generation 0's threshold whatever else the process allocated or freed.
CYCLES = 3 * gc.get_threshold()[0]


def _cycles(freed_on: list, n: int = CYCLES) -> None:
    for _ in range(n):
        Recorder(freed_on)


def _allocate_in_a_worker() -> None:
    def churn():   # far past generation 0's threshold of new containers
        keep = [[i] for i in range(20 * gc.get_threshold()[0])]
        del keep
    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()


def test_a_worker_thread_never_collects_while_the_collector_runs(gc_on_gui_thread, qtbot):
    assert not gc.isenabled()
    freed_on: list[int] = []
    gc.collect()
    _cycles(freed_on)
    _allocate_in_a_worker()
    assert freed_on == []   # the worker crossed the threshold, but collected nothing
    # Objects made before the test and freed during it lower generation 0's count too (an earlier
    # test's threads winding down), so the count can sink back under the threshold with the
    # cycles still there; a live GUI keeps allocating, and so does the wait, until a tick is due.
    gui_allocations: list = []

    def collected_on_a_tick() -> bool:
        gui_allocations.append([[] for _ in range(50)])
        return len(freed_on) == CYCLES
    qtbot.waitUntil(collected_on_a_tick, timeout=10000)   # the GUI timer's collection
    assert set(freed_on) == {threading.get_ident()}


def test_without_it_the_worker_that_allocates_collects(gc_on_gui_thread):
    """The hazard itself, so that the test above shows the collector at work: with automatic
    collection on, the worker frees cycles made on the GUI thread."""
    gc.enable()   # the test's collector turned it off
    try:
        freed_on: list[int] = []
        gc.collect()
        _cycles(freed_on, gc.get_threshold()[0] // 3)   # too few to start a collection here
        _allocate_in_a_worker()
        assert freed_on and threading.get_ident() not in freed_on
    finally:
        gc.disable()


def test_collect_due_follows_the_thresholds(gc_on_gui_thread):
    gc.collect()
    assert gc_on_gui_thread.collect_due() is None   # nothing allocated since
    keep = [[i] for i in range(2 * gc_on_gui_thread.threshold[0])]
    assert gc_on_gui_thread.collect_due() == 0
    del keep


def test_start_up_objects_are_frozen_out_of_later_collections(qapp, qtbot):
    from PySide6.QtCore import QObject

    from laya_desktop.gui.gui_thread_gc import GuiThreadCollector
    parent = QObject()
    collector = GuiThreadCollector(parent, freeze_after_ms=0)
    try:
        qtbot.waitUntil(lambda: collector.froze, timeout=5000)
        assert gc.get_freeze_count() > 0
    finally:
        collector.stop()
    assert gc.get_freeze_count() == 0 and not collector.froze
