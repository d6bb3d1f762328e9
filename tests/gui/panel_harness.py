"""A Routes panel wired to a real engine, as the main window wires it (pool, client, state)."""
from __future__ import annotations

import contextlib

from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.panels.routes_panel import RoutesPanel
from laya_desktop.gui.workers import WorkerPool


@contextlib.contextmanager
def routes_panel(qtbot, url: str):
    pool = WorkerPool()
    client = EngineClient(url)
    doc = EngineState(client)
    panel = RoutesPanel(pool, doc)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(doc.applied_changed, timeout=10000):   # read as the window does
        doc.refresh()
    try:
        yield panel
    finally:
        client.abort()  # as the window does: a probe still in flight ends now, not after 5 s
        assert pool.shutdown(5000)
        client.close()
