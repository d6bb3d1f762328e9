"""Load test panel: runs laya_desktop.loadtest against the engine in a worker; a table of results.

The load generator is asyncio code; the worker thread runs its own event loop with asyncio.run, and
each finished request comes back to the GUI thread through a signal (on_result is called on the
worker thread, so it only emits).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QObject, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QFormLayout, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPlainTextEdit,
    QPushButton, QSpinBox, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)
from PySide6.QtCore import Qt

from laya_desktop.gui.workers import WorkerPool

DEFAULT_PROMPTS = ("Write a haiku about memory.\nExplain what a KV cache is in one sentence.\n"
                   "List three colors.\nSay hello in French.")
STOP_GRACE_MS = 3000   # after Stop, requests still in flight this long are aborted
RESULT_COLUMNS = ("#", QT_TRANSLATE_NOOP("LoadTestPanel", "Status"),
                  QT_TRANSLATE_NOOP("LoadTestPanel", "Model"), QT_TRANSLATE_NOOP("LoadTestPanel", "Rule"),
                  QT_TRANSLATE_NOOP("LoadTestPanel", "Latency ms"),
                  QT_TRANSLATE_NOOP("LoadTestPanel", "TTFT ms"),
                  QT_TRANSLATE_NOOP("LoadTestPanel", "Tokens"), QT_TRANSLATE_NOOP("LoadTestPanel", "Error"))


def plain(obj) -> dict:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "summary"):     # LoadTestReport: the aggregated figures, not the raw list
        return obj.summary()
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def flatten(d: dict, prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += flatten(value, name + ".")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            rows.append((name, QCoreApplication.translate("LoadTestPanel", "{n} items").format(n=len(value))))
        elif isinstance(value, float):
            rows.append((name, f"{value:.3f}"))
        else:
            rows.append((name, str(value)))
    return rows


def _first(d: dict, *keys, default=""):
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return default


def _ms(r: dict, name: str) -> str:
    """`<name>_ms`, or `<name>_s` converted, as whole milliseconds."""
    if r.get(f"{name}_ms") is not None:
        return f"{float(r[f'{name}_ms']):.0f}"
    if r.get(f"{name}_s") is not None:
        return f"{float(r[f'{name}_s']) * 1000:.0f}"
    return ""


class _Relay(QObject):
    result = Signal(object)


def run_loadtest_blocking(relay: _Relay, url: str, concurrency: int, requests: int,
                          max_tokens: int, prompts: list[str], tags: list[str], model: str,
                          api_key: str | None, stream: bool, cancel: threading.Event,
                          abort: threading.Event):
    """`cancel` lets requests in flight finish (a report comes back); `abort` cancels them, for
    an engine that does not answer at all."""
    from laya_desktop.loadtest.generator import run_loadtest

    return asyncio.run(_until_aborted(
        run_loadtest(url, concurrency, requests, max_tokens, prompts, tags, model, api_key=api_key,
                     stream=stream, cancel=cancel, on_result=lambda r: relay.result.emit(r)),
        abort))


async def _until_aborted(coro, abort: threading.Event):
    task = asyncio.ensure_future(coro)
    while not task.done():
        await asyncio.wait({task}, timeout=0.1)
        if abort.is_set() and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise RuntimeError(QCoreApplication.translate(
                "LoadTestPanel", "load test aborted: the engine did not answer in time"))
    return task.result()


class LoadTestPanel(QWidget):
    finished = Signal(bool, object)

    def __init__(self, pool: WorkerPool, url: str, api_key: str | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pool, self.url, self.api_key = pool, url, api_key
        self.relay = _Relay(self)
        self.relay.result.connect(self._add_result)
        self.running = False
        self.concurrency = _spin(1, 256, 4)
        self.requests = _spin(1, 100000, 40)
        self.max_tokens = _spin(1, 8192, 16)
        self.model = QLineEdit("auto")
        self.tags = QLineEdit()
        self.tags.setPlaceholderText(self.tr("tags, comma-separated"))
        self.stream = QCheckBox(self.tr("stream"))
        self.stream.setChecked(True)
        self.prompts = QPlainTextEdit(DEFAULT_PROMPTS)
        self.prompts.setMaximumHeight(90)
        self.run_btn = QPushButton(self.tr("Run load test"))
        self.run_btn.clicked.connect(self.start)
        self.stop_btn = QPushButton(self.tr("Stop"))
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop)
        self._cancel = threading.Event()
        self._abort = threading.Event()
        self.status = QLabel("")
        form = QFormLayout()
        row = QHBoxLayout()
        for label, w in ((self.tr("Concurrency"), self.concurrency), (self.tr("Requests"), self.requests),
                         (self.tr("Max tokens"), self.max_tokens)):
            row.addWidget(QLabel(label))
            row.addWidget(w)
        row.addWidget(self.stream)
        row.addStretch(1)
        form.addRow(row)
        form.addRow(self.tr("Model"), self.model)
        form.addRow(self.tr("Tags"), self.tags)
        form.addRow(self.tr("Prompts (one per line)"), self.prompts)
        runrow = QHBoxLayout()
        runrow.addWidget(self.run_btn)
        runrow.addWidget(self.stop_btn)
        runrow.addWidget(self.status, 1)
        form.addRow(runrow)

        self.results = QTableWidget(0, len(RESULT_COLUMNS))
        self.results.setHorizontalHeaderLabels(
            [QCoreApplication.translate("LoadTestPanel", c) for c in RESULT_COLUMNS])
        self.results.verticalHeader().setVisible(False)
        self.results.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.results.horizontalHeader().setStretchLastSection(True)
        self.summary = QTableWidget(0, 2)
        self.summary.setHorizontalHeaderLabels((self.tr("Figure"), self.tr("Value")))
        self.summary.verticalHeader().setVisible(False)
        self.summary.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.summary)
        split.addWidget(self.results)
        split.setSizes([380, 620])
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(split, 1)

    def start(self) -> bool:
        if self.running:
            return False
        self.running = True
        self._cancel, self._abort = threading.Event(), threading.Event()
        self.run_btn.setEnabled(False)
        self.stop_btn.setEnabled(True)
        self.results.setRowCount(0)
        self.summary.setRowCount(0)
        self.status.setText(self.tr("running…"))
        prompts = [p for p in self.prompts.toPlainText().splitlines() if p.strip()] or ["Hello"]
        tags = [t.strip() for t in self.tags.text().split(",") if t.strip()]
        self.pool.submit(run_loadtest_blocking, self.relay, self.url, self.concurrency.value(),
                         self.requests.value(), self.max_tokens.value(), prompts, tags,
                         self.model.text().strip() or "auto", self.api_key, self.stream.isChecked(),
                         self._cancel, self._abort, returned=self._on_report,
                         errored=self._on_error, on_quit=self._abort.set)
        return True

    def stop(self) -> None:
        self._cancel.set()
        QTimer.singleShot(STOP_GRACE_MS, self._abort.set)   # this run's event: a later run has its own
        self.status.setText(self.tr("stopping…"))

    def _add_result(self, result) -> None:
        r = plain(result)
        row = self.results.rowCount()
        self.results.insertRow(row)
        values = (row + 1, _first(r, "status", "status_code"), _first(r, "model"),
                  _first(r, "rule", "route"), _ms(r, "latency"), _ms(r, "ttft"),
                  _first(r, "completion_tokens", "tokens"), _first(r, "error"))
        for col, value in enumerate(values):
            self.results.setItem(row, col, QTableWidgetItem(str(value)))
        self.status.setText(self.tr("running… {done}/{total}").format(done=row + 1, total=self.requests.value()))

    def _on_report(self, report) -> None:
        rows = flatten(plain(report))
        self.summary.setRowCount(len(rows))
        for i, (k, v) in enumerate(rows):
            self.summary.setItem(i, 0, QTableWidgetItem(k))
            self.summary.setItem(i, 1, QTableWidgetItem(v))
        self._end(True, report, self.tr("done: {n} requests").format(n=self.results.rowCount()))

    def _on_error(self, exc: Exception) -> None:
        self._end(False, exc, self.tr("load test failed: {error}").format(error=exc))

    def _end(self, ok: bool, result, text: str) -> None:
        self.running = False
        self.run_btn.setEnabled(True)
        self.stop_btn.setEnabled(False)
        self.status.setText(text)
        self.finished.emit(ok, result)


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box
