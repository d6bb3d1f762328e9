"""Load test panel: settings, live curves beside the Monitor's memory and KV plots, the results,
the capacity sweep, and the exports. The work is laya_desktop.loadtest's, in a worker.

The worker thread runs the asyncio load generator with its own event loop. Finished requests go
into a deque (thread-safe appends) that one GUI timer drains every FLUSH_MS: the table, progress
and curves change once a batch, never once a request (a row per request stalled the event loop,
bench/gui_cost.py --loadtest).
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QFrame, QHBoxLayout, QLabel,
    QLineEdit, QProgressBar, QPushButton, QScrollArea, QSizePolicy, QSpinBox, QSplitter, QTabWidget,
    QVBoxLayout, QWidget,
)

from laya_desktop.gui.loadtest.live_curves import LiveCurves
from laya_desktop.gui.loadtest.replica_table import ReplicaTable
from laya_desktop.gui.loadtest.results_view import ResultsView
from laya_desktop.gui.loadtest.sweep_view import SweepView
from laya_desktop.gui.workers import WorkerPool
from laya_desktop.loadtest.export import write_csv, write_json
from laya_desktop.loadtest.prompts import Prompt, builtin, read_jsonl
from laya_desktop.loadtest.report import LoadTestReport

STOP_GRACE_MS = 3000   # after Stop, requests still in flight this long are aborted
FLUSH_MS = 250
MIXES = (("short", QT_TRANSLATE_NOOP("LoadTestPanel", "short chat")),
         ("long", QT_TRANSLATE_NOOP("LoadTestPanel", "long context")),
         ("code", QT_TRANSLATE_NOOP("LoadTestPanel", "code (tag: code)")),
         ("mixed", QT_TRANSLATE_NOOP("LoadTestPanel", "mixed")),
         ("jsonl", QT_TRANSLATE_NOOP("LoadTestPanel", "from a JSONL file…")))


def _tr(text: str) -> str:
    return QCoreApplication.translate("LoadTestPanel", text)


async def _until_aborted(coro, abort: threading.Event):
    task = asyncio.ensure_future(coro)
    while not task.done():
        await asyncio.wait({task}, timeout=0.1)
        if abort.is_set() and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise RuntimeError(QCoreApplication.translate("LoadTestPanel", "load test aborted: the engine did not answer in time"))
    return task.result()


def run_blocking(coro_factory, abort: threading.Event):
    """A worker's body: the coroutine on a fresh event loop, cut short when `abort` is set."""
    return asyncio.run(_until_aborted(coro_factory(), abort))


class LoadTestPanel(QWidget):
    finished = Signal(bool, object)          # a load test ended: ok, LoadTestReport or the error
    sweep_finished = Signal(bool, object)    # a sweep ended: ok, its dict or the error
    exported = Signal(str)

    def __init__(self, pool: WorkerPool, url: str, api_key: str | None = None,
                 parent: QWidget | None = None, monitor=None) -> None:
        super().__init__(parent)
        self.pool, self.url, self.api_key = pool, url, api_key
        self.running = False
        self.report: LoadTestReport | None = None
        self.sweep: dict | None = None
        self._inbox: collections.deque = collections.deque()
        self._steps: collections.deque = collections.deque()
        self._all: list = []
        self._total: int | None = None
        self._started = 0.0
        self._duration: float | None = None
        self._cancel, self._abort = threading.Event(), threading.Event()
        self._jsonl: str | None = None
        self._kind = "test"

        # --- settings
        self.mode = QComboBox()
        self.mode.addItem(self.tr("Concurrency"), "concurrency")
        self.mode.addItem(self.tr("Rate (requests/s, Poisson)"), "rate")
        self.concurrency = _spin(1, 256, 4)
        self.rate = QDoubleSpinBox()
        self.rate.setRange(0.1, 1000.0)
        self.rate.setValue(4.0)
        self.rate.setSuffix(" /s")
        self.limit = QComboBox()
        self.limit.addItem(self.tr("Requests"), "requests")
        self.limit.addItem(self.tr("Duration"), "duration")
        self.requests = _spin(1, 100000, 40)
        self.duration = QDoubleSpinBox()
        self.duration.setRange(1.0, 3600.0)
        self.duration.setValue(30.0)
        self.duration.setSuffix(" s")
        self.max_tokens = _spin(1, 8192, 16)
        self.model = QComboBox()
        self.model.addItem("auto")
        self.tags = QLineEdit()
        self.tags.setPlaceholderText(self.tr("tags, comma-separated"))
        self.mix = QComboBox()
        for key, label in MIXES:
            self.mix.addItem(_tr(label), key)
        self.mix.activated.connect(self._on_mix)
        self.stream = QCheckBox(self.tr("stream"))
        self.stream.setChecked(True)
        self.mode.currentIndexChanged.connect(self._sync_inputs)
        self.limit.currentIndexChanged.connect(self._sync_inputs)

        self.run_btn = QPushButton(self.tr("Run load test"))
        self.run_btn.clicked.connect(self.start)
        self.stop_btn = QPushButton(self.tr("Stop"))
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setValue(0)
        self.status = QLabel("")
        # A label sized to its text re-lays out the panel (and repaints every plot) each time the
        # count of done requests changes width; a fixed box does not.
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.export_buttons = []
        for kind, label in (("json", self.tr("Save JSON…")), ("csv", self.tr("Save CSV…")),
                            ("png", self.tr("Save PNG…"))):
            b = QPushButton(label)
            b.setEnabled(False)
            b.clicked.connect(lambda _c=False, k=kind: self._ask_export(k))
            self.export_buttons.append(b)

        form = QFormLayout()
        row = QHBoxLayout()
        for w in (self.mode, self.concurrency, self.rate, self.limit, self.requests, self.duration):
            row.addWidget(w)
        row.addWidget(QLabel(self.tr("Max tokens")))
        row.addWidget(self.max_tokens)
        row.addWidget(self.stream)
        row.addStretch(1)
        form.addRow(self.tr("Load"), row)
        row = QHBoxLayout()
        row.addWidget(self.model, 1)
        row.addWidget(QLabel(self.tr("Tags")))
        row.addWidget(self.tags, 1)
        row.addWidget(QLabel(self.tr("Prompts")))
        row.addWidget(self.mix, 1)
        form.addRow(self.tr("Target"), row)
        runrow = QHBoxLayout()
        runrow.addWidget(self.run_btn)
        runrow.addWidget(self.stop_btn)
        runrow.addWidget(self.progress, 1)
        runrow.addWidget(self.status, 1)
        for b in self.export_buttons:
            runrow.addWidget(b)
        form.addRow(runrow)

        # --- views
        self.live = LiveCurves()
        self.mirror = monitor.second_view() if monitor is not None else None
        self.replicas = ReplicaTable()   # a rule spread over replicas: each one's share and latency
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.live)
        beside = QSplitter(Qt.Orientation.Vertical)
        if self.mirror is not None:
            beside.addWidget(self.mirror)
        beside.addWidget(self.replicas)
        self.split.addWidget(beside)
        self.split.setSizes([640, 360])
        self.results = ResultsView()
        self.sweep_view = SweepView()
        self.sweep_max = _spin(1, 256, 8)
        self.sweep_lengths = QLineEdit("0")
        self.sweep_lengths.setToolTip(self.tr("prompt lengths in characters, comma-separated, say 0, 4000"))
        self.sweep_ttft = _spin(1, 600000, 2000)
        self.sweep_ttft.setSuffix(" ms")
        self.sweep_requests = _spin(0, 10000, 0)
        self.sweep_requests.setSpecialValueText(self.tr("4 × clients"))
        self.sweep_btn = QPushButton(self.tr("Run sweep"))
        self.sweep_btn.clicked.connect(self.start_sweep)
        sweep_bar = QHBoxLayout()
        for label, w in ((self.tr("Up to clients"), self.sweep_max), (self.tr("Prompt lengths"), self.sweep_lengths),
                         (self.tr("TTFT p95 target"), self.sweep_ttft),
                         (self.tr("Requests a step"), self.sweep_requests)):
            sweep_bar.addWidget(QLabel(label))
            sweep_bar.addWidget(w)
        sweep_bar.addWidget(self.sweep_btn)
        sweep_bar.addStretch(1)
        sweep_page = QWidget()
        sweep_layout = QVBoxLayout(sweep_page)
        sweep_layout.addLayout(sweep_bar)
        sweep_layout.addWidget(self.sweep_view, 1)
        self.views = QTabWidget()
        self.views.addTab(self.split, self.tr("Live"))
        self.views.addTab(self.results, self.tr("Results"))
        self.views.addTab(sweep_page, self.tr("Capacity sweep"))

        # The form scrolls and gives way to the plots on a laptop screen: a splitter between them.
        form_box = QWidget()
        form_box.setLayout(form)
        self.form_scroll = QScrollArea()
        self.form_scroll.setWidgetResizable(True)
        self.form_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.form_scroll.setWidget(form_box)
        self.form_split = QSplitter(Qt.Orientation.Vertical)
        self.form_split.addWidget(self.form_scroll)
        self.form_split.addWidget(self.views)
        self.form_split.setChildrenCollapsible(False)
        self.form_split.setStretchFactor(1, 1)
        self.form_split.setSizes([form_box.sizeHint().height(), 10_000])
        layout = QVBoxLayout(self)
        layout.addWidget(self.form_split, 1)
        self.flush_timer = QTimer(self)
        self.flush_timer.setInterval(FLUSH_MS)
        self.flush_timer.timeout.connect(self._flush)
        self._sync_inputs()

    # --- settings ------------------------------------------------------------------------------
    def set_models(self, names: list[str]) -> None:
        """The target list: auto, then the config's models (from the applied config)."""
        current = self.model.currentText()
        self.model.clear()
        self.model.addItem("auto")
        for name in names:
            if name:
                self.model.addItem(name)
        index = self.model.findText(current)
        self.model.setCurrentIndex(max(index, 0))

    def _sync_inputs(self) -> None:
        rate = self.mode.currentData() == "rate"
        self.concurrency.setVisible(not rate)
        self.rate.setVisible(rate)
        by_time = self.limit.currentData() == "duration"
        self.requests.setVisible(not by_time)
        self.duration.setVisible(by_time)

    def _on_mix(self, _index: int) -> None:
        if self.mix.currentData() != "jsonl":
            return
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Prompts, one JSON object a line"), "",
                                              self.tr("JSONL files (*.jsonl);;All files (*)"))
        if path:
            self.set_jsonl(path)
        else:
            self.mix.setCurrentIndex(0)

    def set_jsonl(self, path: str) -> None:
        self._jsonl = path
        self.mix.setCurrentIndex(self.mix.findData("jsonl"))
        self.mix.setToolTip(path)

    def prompts(self) -> list[Prompt]:
        key = self.mix.currentData()
        if key == "jsonl":
            if not self._jsonl:
                raise ValueError(QCoreApplication.translate("LoadTestPanel", "choose a JSONL file of prompts"))
            return read_jsonl(self._jsonl)
        return builtin(key)

    def _common(self) -> dict:
        return {"max_tokens": self.max_tokens.value(), "prompts": self.prompts(),
                "tags": [t.strip() for t in self.tags.text().split(",") if t.strip()],
                "model": self.model.currentText() or "auto", "api_key": self.api_key}

    # --- running -------------------------------------------------------------------------------
    def _begin(self, kind: str, text: str) -> bool:
        if self.running:
            return False
        self.running = True
        self._kind = kind
        self._cancel, self._abort = threading.Event(), threading.Event()
        self._inbox.clear()
        self._all = []
        self.live.clear()
        self.replicas.clear_results()
        self.run_btn.setEnabled(False)
        self.sweep_btn.setEnabled(False)
        self.stop_btn.setEnabled(True)
        for b in self.export_buttons:
            b.setEnabled(False)
        self.progress.setValue(0)
        self.status.setText(text)
        self._started = time.monotonic()
        self.flush_timer.start()
        return True

    def start(self) -> bool:
        try:
            common = self._common()
        except (OSError, ValueError) as exc:
            self.status.setText(QCoreApplication.translate("LoadTestPanel", "load test not started: {error}").format(error=exc))
            return False
        if not self._begin("test", self.tr("running…")):
            return False
        self.results.clear()
        self.sweep = None                 # the JSON export is of this run alone
        self.views.setCurrentWidget(self.split)
        rate = self.rate.value() if self.mode.currentData() == "rate" else None
        by_time = self.limit.currentData() == "duration"
        self._total = None if by_time else self.requests.value()
        self._duration = self.duration.value() if by_time else None
        kwargs = dict(common, concurrency=self.concurrency.value(), requests=self._total, rate=rate,
                      duration_s=self._duration, stream=self.stream.isChecked(), cancel=self._cancel,
                      on_result=self._inbox.append)
        from laya_desktop.loadtest.generator import run_loadtest
        self.pool.submit(run_blocking, lambda: run_loadtest(self.url, **kwargs), self._abort,
                         returned=self._on_report, errored=self._on_error, on_quit=self._abort.set)
        return True

    def start_sweep(self) -> bool:
        try:
            common = self._common()
            lengths = [int(v) for v in self.sweep_lengths.text().replace(" ", "").split(",") if v]
            if any(v < 0 for v in lengths):
                raise ValueError(QCoreApplication.translate("LoadTestPanel", "prompt lengths cannot be negative"))
        except (OSError, ValueError) as exc:
            self.status.setText(QCoreApplication.translate("LoadTestPanel", "sweep not started: {error}").format(error=exc))
            return False
        if not self._begin("sweep", self.tr("sweeping…")):
            return False
        self.sweep_view.clear()
        self._steps.clear()
        self.views.setCurrentIndex(2)
        from laya_desktop.loadtest import sweep_policy
        self._total = len(sweep_policy.steps(self.sweep_max.value(), lengths))
        self._duration = None
        kwargs = dict(common, max_concurrency=self.sweep_max.value(), prompt_lengths=lengths,
                      ttft_target_ms=float(self.sweep_ttft.value()),
                      requests_per_step=self.sweep_requests.value() or None, cancel=self._cancel,
                      on_result=self._inbox.append,
                      on_step=lambda step, _report: self._steps.append(step.to_dict()))
        from laya_desktop.loadtest.sweep import run_sweep
        self.pool.submit(run_blocking, lambda: run_sweep(self.url, **kwargs), self._abort,
                         returned=self._on_sweep, errored=self._on_sweep_error, on_quit=self._abort.set)
        return True

    def stop(self) -> None:
        self._cancel.set()
        QTimer.singleShot(STOP_GRACE_MS, self._abort.set)   # this run's event: a later run has its own
        self.status.setText(self.tr("stopping…"))

    def _flush(self) -> None:
        """One batch of what the worker delivered since the last tick."""
        batch = []
        while self._inbox:
            batch.append(self._inbox.popleft())
        steps = []
        while self._steps:
            steps.append(self._steps.popleft())
        for step in steps:
            self.sweep_view.add_step(step)
        if batch:
            self._all.extend(batch)
            self.live.add(batch)
            self.replicas.add(batch)
        self.live.redraw()              # at most once a second, whatever the batches
        self.replicas.redraw()
        done, errors = len(self._all), sum(1 for r in self._all if not r.ok)
        if self._kind == "sweep":
            self.progress.setValue(int(100 * len(self.sweep_view.steps) / max(self._total or 1, 1)))
        elif self._duration:
            self.progress.setValue(min(100, int(100 * (time.monotonic() - self._started) / self._duration)))
        elif self._total:
            self.progress.setValue(int(100 * done / self._total))
        if batch and self.running:
            self.status.setText(self.tr("running… {done} done, {errors} failed").format(done=done, errors=errors))

    def _flush_last(self) -> None:
        """The run ended: its last results, drawn now (a tick's redraw is rate-limited, so without
        the forced one a sweep's last step could stay off the live curves)."""
        self._flush()
        self.live.redraw(force=True)
        self.replicas.redraw(force=True)

    def _on_report(self, report: LoadTestReport) -> None:
        self._flush_last()
        self.report = report
        summary = report.summary()
        self.results.show_report(summary, [r.latency_ms for r in report.results if r.ok])
        self.progress.setValue(100)
        self._end(QCoreApplication.translate("LoadTestPanel", "done: {n} requests, {errors} failed").format(n=summary["requests"], errors=summary["errors"]))
        self.finished.emit(True, report)

    def _on_error(self, exc: Exception) -> None:
        self._flush_last()
        self._end(QCoreApplication.translate("LoadTestPanel", "load test failed: {error}").format(error=exc))
        self.finished.emit(False, exc)

    def _on_sweep(self, sweep: dict) -> None:
        self._flush_last()
        self.sweep = sweep
        self.sweep_view.show_result(sweep)
        # the results tab shows every request of the sweep together
        self.report = LoadTestReport(results=sorted(self._all, key=lambda r: r.started_s),
                                     wall_s=max(time.monotonic() - self._started, 1e-3), url=self.url)
        self.results.show_report(self.report.summary(), [r.latency_ms for r in self._all if r.ok])
        self.progress.setValue(100)
        self._end(QCoreApplication.translate("LoadTestPanel", "sweep done: {n} steps").format(n=len(sweep.get("steps") or [])))
        self.sweep_finished.emit(True, sweep)

    def _on_sweep_error(self, exc: Exception) -> None:
        self._flush_last()
        self._end(QCoreApplication.translate("LoadTestPanel", "sweep failed: {error}").format(error=exc))
        self.sweep_finished.emit(False, exc)

    def _end(self, text: str) -> None:
        self.flush_timer.stop()
        self.running = False
        self.run_btn.setEnabled(True)
        self.sweep_btn.setEnabled(True)
        self.stop_btn.setEnabled(False)
        for b in self.export_buttons:
            b.setEnabled(self.report is not None)
        self.status.setText(text)

    # --- export --------------------------------------------------------------------------------
    def export(self, kind: str, path: str | Path) -> bool:
        """The last report as JSON (summary, requests, the sweep), CSV (a row a request) or PNG
        (the results and curves as shown)."""
        if self.report is None:
            return False
        if kind == "json":
            write_json(self.report, path, self.sweep)
        elif kind == "csv":
            write_csv(self.report.results, path)
        elif not self.views.grab().save(str(path), "PNG"):
            return False
        self.exported.emit(str(path))
        return True

    def _ask_export(self, kind: str) -> None:
        filters = {"json": self.tr("JSON files (*.json)"), "csv": self.tr("CSV files (*.csv)"),
                   "png": self.tr("PNG images (*.png)")}
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save the load test report"),
                                              f"laya-loadtest.{kind}", filters[kind])
        if path:
            self.export(kind, path)


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box
