"""Workers, signals and a stalled engine: the GUI thread keeps running while the client waits."""
from __future__ import annotations

import threading
import time

from laya_desktop.admin_api import calls
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.workers import WorkerPool


def test_ten_thousand_signal_emits(qtbot):
    """PySide6 6.12.0 on Python 3.11 leaked a reference per emit and aborted; we pin <6.12."""
    from PySide6.QtCore import QObject, Signal

    class Source(QObject):
        value = Signal(object)
        flag = Signal(bool)

    source = Source()
    got = []
    source.value.connect(got.append)
    source.flag.connect(got.append)
    for i in range(10_000):
        source.value.emit(None)
        source.flag.emit(i % 2 == 0)
    assert len(got) == 20_000


def test_function_and_generator_workers(qtbot):
    pool = WorkerPool()
    results = []
    pool.submit(lambda a, b: a + b, 2, 3, returned=results.append)  # connected before it starts
    qtbot.waitUntil(lambda: results == [5])

    items, errors = [], []
    worker = pool.stream(lambda: iter(range(5)), yielded=items.append)
    qtbot.waitUntil(lambda: items == [0, 1, 2, 3, 4])

    def boom():
        raise ValueError("no")
    w = pool.submit(boom, errored=errors.append)
    qtbot.waitUntil(lambda: len(errors) == 1)
    assert isinstance(errors[0], ValueError)
    assert pool.shutdown(2000)


def test_generator_worker_stops_between_items(qtbot):
    pool = WorkerPool()
    stop = threading.Event()

    def slow():
        for i in range(1000):
            yield i
            time.sleep(0.01)
    items = []
    worker = pool.stream(slow, yielded=items.append, on_quit=stop.set)
    qtbot.waitUntil(lambda: len(items) >= 3)
    with qtbot.waitSignal(worker.signals.finished, timeout=2000):
        worker.quit()
    assert stop.is_set() and len(items) < 1000
    assert pool.shutdown(2000)


def test_gui_stays_responsive_when_engine_stalls(qtbot, stalled):
    from PySide6.QtCore import QTimer

    client = EngineClient(stalled.url)
    ticks = []
    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    outcome = []
    started = time.monotonic()
    client.send(calls.config(), returned=outcome.append, errored=outcome.append)
    assert time.monotonic() - started < 0.2          # send did not wait for the answer
    qtbot.wait(1500)                                 # the engine is still not answering ...
    assert outcome == []
    assert len(ticks) >= 40                          # ... and the GUI thread kept running
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert max(gaps) < 0.5
    timer.stop()
    started = time.monotonic()
    client.abort()                                   # from the GUI thread: the read ends now
    qtbot.waitUntil(lambda: len(outcome) == 1, timeout=1000)
    assert time.monotonic() - started < 1
    assert isinstance(outcome[0], Exception)         # reported as a failed call, not a hang
    qtbot.waitUntil(lambda: stalled.open_connections() == 0, timeout=1000)   # and cut
    client.close()


def test_chat_stop_returns_at_once_when_engine_stalls(qtbot, stalled):
    from laya_desktop.gui.panels.chat_panel import ChatPanel

    client = EngineClient(stalled.url)
    pool = WorkerPool()
    chat = ChatPanel(pool, client)
    qtbot.addWidget(chat)
    assert chat.send("hello")
    qtbot.wait(300)
    assert chat.busy and stalled.open_connections() == 1
    with qtbot.waitSignal(chat.reply_finished, timeout=1000) as blocker:
        chat.stop()
    assert blocker.args[0]["stats"].stopped
    assert not chat.busy and chat.send_btn.isEnabled()
    assert chat.history == []          # an unanswered question leaves the history as it was
    qtbot.waitUntil(lambda: stalled.open_connections() == 0, timeout=1000)   # cut before any
    qtbot.waitUntil(lambda: pool.running_threads == 0, timeout=1000)        # headers came
    assert pool.shutdown(100)
    client.close()


def test_load_test_ends_when_engine_stalls(qtbot, stalled_server, monkeypatch):
    from laya_desktop.gui.panels import loadtest_panel

    monkeypatch.setattr(loadtest_panel, "STOP_GRACE_MS", 300)
    pool = WorkerPool()
    panel = loadtest_panel.LoadTestPanel(pool, stalled_server)
    qtbot.addWidget(panel)
    panel.requests.setValue(4)
    assert panel.start()
    qtbot.wait(300)
    with qtbot.waitSignal(panel.finished, timeout=2000) as blocker:   # Stop: no answer comes,
        panel.stop()                                                  # so the grace runs out
    assert blocker.args[0] is False and "aborted" in panel.status.text()
    assert not panel.running and panel.run_btn.isEnabled()

    assert panel.start()                                  # at exit there is no grace at all
    qtbot.wait(300)
    started = time.monotonic()
    assert pool.shutdown(2000) and time.monotonic() - started < 1


def test_closing_the_model_dialog_ends_its_connection_test(qtbot, stalled):
    from laya_desktop.gui.panels.model_dialog import ModelDialog

    pool = WorkerPool()
    dialog = ModelDialog(pool, "openai")
    qtbot.addWidget(dialog)
    dialog.base_url.setText(stalled.url + "/v1")
    tested = []
    dialog.connection_tested.connect(lambda *args: tested.append(args))
    dialog.test_connection()
    qtbot.waitUntil(lambda: stalled.open_connections() == 1, timeout=5000)
    assert dialog.probing and tested == []                # connected, no answer yet
    dialog.reject()
    assert not dialog.probing
    qtbot.waitUntil(lambda: stalled.open_connections() == 0, timeout=1000)   # the request is cut
    qtbot.wait(50)
    assert tested == []                                   # a closed dialog reports nothing
    assert pool.running_threads == 0 and pool.shutdown(100)
