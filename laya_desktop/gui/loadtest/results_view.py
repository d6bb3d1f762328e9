"""A finished load test's results: percentiles with units, a latency histogram, where the requests
went (per rule, per model, rule → model, fallbacks) and the errors grouped by cause."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt
from PySide6.QtWidgets import (
    QGridLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QWidget,
)

from laya_desktop.gui.palette import theme
from laya_desktop.loadtest.report import histogram

FIGURES = (("latency_ms", QT_TRANSLATE_NOOP("ResultsView", "Latency"), "ms"),
           ("ttft_ms", QT_TRANSLATE_NOOP("ResultsView", "Time to first token"), "ms"),
           ("itl_ms", QT_TRANSLATE_NOOP("ResultsView", "Inter-token latency"), "ms"))
STATS = ("p50", "p95", "p99", "mean", "max")
ROUTE_KINDS = (("routes", QT_TRANSLATE_NOOP("ResultsView", "rule")),
               ("models", QT_TRANSLATE_NOOP("ResultsView", "model")),
               ("route_models", QT_TRANSLATE_NOOP("ResultsView", "rule → model")),
               ("fallbacks", QT_TRANSLATE_NOOP("ResultsView", "fallback")))


def _tr(text: str) -> str:
    return QCoreApplication.translate("ResultsView", text)


def _table(columns: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(columns))
    t.setHorizontalHeaderLabels(columns)
    t.verticalHeader().setVisible(False)
    t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    return t


def _fill(table: QTableWidget, rows: list[tuple]) -> None:
    table.setRowCount(len(rows))
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            item = QTableWidgetItem(str(value))
            if j:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(i, j, item)


def _ms(v) -> str:
    return "—" if v is None else f"{v:,.1f} ms"


class ResultsView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.headline = QLabel("")
        self.headline.setWordWrap(True)
        self.percentiles = _table([QCoreApplication.translate("ResultsView", "Figure")] + list(STATS))
        self.routes = _table([QCoreApplication.translate("ResultsView", "Kind"), QCoreApplication.translate("ResultsView", "Name"), QCoreApplication.translate("ResultsView", "Requests"), QCoreApplication.translate("ResultsView", "Share")])
        self.errors = _table([QCoreApplication.translate("ResultsView", "Cause"), QCoreApplication.translate("ResultsView", "Requests")])
        self.histogram = pg.PlotWidget()
        self.histogram.setTitle(QCoreApplication.translate("ResultsView", "Latency histogram"), color="#222", size="9pt")
        self.histogram.setLabel("bottom", "ms")
        self.histogram.setLabel("left", QCoreApplication.translate("ResultsView", "requests"))
        self.histogram.setMenuEnabled(False)
        self.bars: pg.BarGraphItem | None = None
        theme().follow(self.histogram)
        grid = QGridLayout(self)
        grid.addWidget(self.headline, 0, 0, 1, 2)
        grid.addWidget(self.percentiles, 1, 0)
        grid.addWidget(self.histogram, 1, 1)
        grid.addWidget(self.routes, 2, 0)
        grid.addWidget(self.errors, 2, 1)
        grid.setRowStretch(1, 1)
        grid.setRowStretch(2, 1)

    def show_report(self, summary: dict, latencies: list[float]) -> None:
        self.headline.setText(QCoreApplication.translate("ResultsView",
            "{n} requests, {ok} ok, {errors} failed in {wall:.1f} s — {rps:.2f} requests/s, "
            "{tps:.1f} tokens/s ({tokens} completion tokens)").format(
            n=summary["requests"], ok=summary["ok"], errors=summary["errors"], wall=summary["wall_s"],
            rps=summary["requests_per_s"], tps=summary["tokens_per_s"], tokens=summary["completion_tokens"]))
        _fill(self.percentiles, [(_tr(title),) + tuple(_ms((summary.get(key) or {}).get(s)) for s in STATS)
                                 for key, title, _u in FIGURES])
        total = max(summary["requests"], 1)
        rows = []
        for key, kind in ROUTE_KINDS:
            for name, n in (summary.get(key) or {}).items():
                rows.append((_tr(kind), name, n, f"{100 * n / total:.0f} %"))
        _fill(self.routes, rows)
        _fill(self.errors, list((summary.get("errors_by_cause") or {}).items()))
        edges, counts = histogram(latencies, bins=20)
        if self.bars is not None:
            self.histogram.removeItem(self.bars)
            self.bars = None
        if counts:
            width = edges[1] - edges[0]
            self.bars = pg.BarGraphItem(x0=edges[:-1], width=width, height=counts, brush="#1f4f9a", pen="w")
            self.histogram.addItem(self.bars)
            theme().style(self.bars)
            self.histogram.autoRange()

    def clear(self) -> None:
        for t in (self.percentiles, self.routes, self.errors):
            t.setRowCount(0)
        self.headline.setText("")
        if self.bars is not None:
            self.histogram.removeItem(self.bars)
            self.bars = None
