"""Where a running load test's requests went, model by model: for a rule spread over replicas,
each one's share and latency, beside the Monitor's memory curves of the local models.

Fed in batches by the panel's timer like the live curves; the figures are laya_desktop.loadtest's
(`report.per_model`), recomputed at most once a REFRESH_S. Hidden while a single model answers.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from laya_desktop.loadtest.report import per_model

REFRESH_S = 1.0
COLUMNS = (QT_TRANSLATE_NOOP("ReplicaTable", "Model"), QT_TRANSLATE_NOOP("ReplicaTable", "Requests"),
           QT_TRANSLATE_NOOP("ReplicaTable", "Share"), QT_TRANSLATE_NOOP("ReplicaTable", "Latency p50"),
           QT_TRANSLATE_NOOP("ReplicaTable", "Latency p95"), QT_TRANSLATE_NOOP("ReplicaTable", "TTFT p95"),
           QT_TRANSLATE_NOOP("ReplicaTable", "Errors"))


def _ms(v) -> str:
    return "—" if v is None else f"{v:,.0f} ms"


class ReplicaTable(QTableWidget):
    def __init__(self, parent=None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels([QCoreApplication.translate("ReplicaTable", c) for c in COLUMNS])
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.setToolTip(QCoreApplication.translate(
            "ReplicaTable", "Requests by the model that answered them (after any fallback)"))
        self._results: list = []
        self._drawn_at = 0.0
        self.figures: dict = {}
        self.setVisible(False)

    def clear_results(self) -> None:
        self._results = []
        self.figures = {}
        self.setRowCount(0)
        self.setVisible(False)

    def add(self, batch: list) -> None:
        self._results.extend(batch)

    def redraw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < REFRESH_S:
            return
        self._drawn_at = now
        self.figures = per_model(self._results)
        self.setVisible(len(self.figures) > 1)
        self.setRowCount(len(self.figures))
        for row, (model, m) in enumerate(self.figures.items()):
            cells = (model, str(m["requests"]), f"{m['share_pct']:.0f} %",
                     _ms(m["latency_ms"]["p50"]), _ms(m["latency_ms"]["p95"]),
                     _ms(m["ttft_ms"]["p95"]), str(m["errors"]))
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(row, col, item)
