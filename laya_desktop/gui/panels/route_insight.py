"""The Routes panel's two views of real traffic: what an edited rule list would change (the
engine's POST /admin/route/replay) and where requests go now (GET /admin/stats).

Both only show answers; the Routes panel asks the engine and hands the answer over here.
The distribution refreshes itself only while it is shown, one request at a time.
"""
from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from laya_desktop.admin_api import calls

REFRESH_MS = 5000
DOMINANT_SHARE = 0.8   # one model with this share of the window's requests is pointed out
DOMINANT_MIN_REQUESTS = 10


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _fill(table: QTableWidget, rows: list[list]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem("" if value is None else str(value)))


def _side(side: dict) -> str:
    model = side.get("model") or "—"
    targets = side.get("targets") or []
    if len(targets) > 1:
        model = " | ".join(targets)
    return f"{side.get('rule')} → {model}"


class WhatIfView(QWidget):
    """The replay's answer: how many requests move, counts per rule and model, the movers."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel(self.tr("Edit the rules, then press “What if…” to replay recent "
                                      "requests against them before applying."))
        self.summary.setWordWrap(True)
        self.counts = _table([self.tr("Rule or model"), self.tr("Before"), self.tr("After"),
                              self.tr("Change")])
        self.moved = _table([self.tr("Request"), self.tr("Before"), self.tr("After")])
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.counts, 1)
        layout.addWidget(QLabel(self.tr("Requests that would move")))
        layout.addWidget(self.moved, 1)

    def show_busy(self) -> None:
        self.summary.setText(self.tr("replaying recent requests…"))

    def show_error(self, text: str) -> None:
        self.summary.setText(self.tr("what-if failed:") + "\n" + text)
        _fill(self.counts, [])
        _fill(self.moved, [])

    def show_result(self, answer: dict) -> None:
        replayed, changed = answer.get("replayed", 0), answer.get("changed", 0)
        if not replayed:
            self.summary.setText(self.tr("No requests logged yet: nothing to replay."))
        else:
            self.summary.setText(self.tr("{changed} of {replayed} recent requests would change "
                                         "route.").format(changed=changed, replayed=replayed))
        rows = []
        for kind, label in (("rules", self.tr("rule")), ("models", self.tr("model"))):
            before = answer.get(kind, {}).get("before", {})
            after = answer.get(kind, {}).get("after", {})
            for name in sorted(set(before) | set(after), key=lambda n: -max(before.get(n, 0),
                                                                             after.get(n, 0))):
                b, a = before.get(name, 0), after.get(name, 0)
                rows.append([f"{label}: {name}", b, a, f"{a - b:+d}" if a != b else ""])
        _fill(self.counts, rows)
        _fill(self.moved, [[m.get("preview") or m.get("path"), _side(m.get("before", {})),
                            _side(m.get("after", {}))] for m in answer.get("moved", [])])


class DistributionView(QWidget):
    """Requests per rule and per model over a window, refreshed while shown."""

    def __init__(self, client_of, parent: QWidget | None = None) -> None:
        """`client_of()`: the EngineClient to ask (QtNetwork, on this thread), or None."""
        super().__init__(parent)
        self._client_of = client_of
        self._pending = False
        self.window = QComboBox()
        self.window.addItem(self.tr("last 5 minutes"), 300)
        self.window.addItem(self.tr("last hour"), 3600)
        self.window.addItem(self.tr("last 24 hours"), 86400)
        self.window.setCurrentIndex(1)
        self.window.currentIndexChanged.connect(lambda _i: self.refresh())
        self.refresh_btn = QPushButton(self.tr("Refresh"))
        self.refresh_btn.clicked.connect(self.refresh)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.rules = _table([self.tr("Rule"), self.tr("Requests"), self.tr("Share")])
        self.models = _table([self.tr("Model"), self.tr("Requests"), self.tr("Share")])
        top = QHBoxLayout()
        top.addWidget(self.window)
        top.addWidget(self.refresh_btn)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.rules, 1)
        layout.addWidget(self.models, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh()
        self.timer.start()

    def hideEvent(self, event) -> None:
        self.timer.stop()
        super().hideEvent(event)

    def refresh(self) -> None:
        if self._pending:
            return   # one request at a time: a slow engine must not pile them up
        client = self._client_of()
        if client is None:
            return
        self._pending = True
        client.send(calls.route_stats(self.window.currentData()),
                    returned=self.show_stats, errored=self._failed)

    def _failed(self, exc: Exception) -> None:
        self._pending = False
        self.summary.setText(self.tr("could not read the distribution: {error}").format(error=exc))

    def show_stats(self, stats: dict) -> None:
        self._pending = False
        total = stats.get("requests", 0)
        models = stats.get("models", [])
        text = self.tr("{total} requests in the window.").format(total=total)
        if not stats.get("complete", True):
            text += " " + self.tr("(The request log holds less than the window.)")
        top = models[0] if models else None
        if top and total >= DOMINANT_MIN_REQUESTS and top.get("share", 0) >= DOMINANT_SHARE:
            text += " " + self.tr("<b>{share:.0%} of them went to model {model}.</b>").format(
                share=top["share"], model=top["name"])
        self.summary.setText(text)
        for table, rows in ((self.rules, stats.get("rules", [])), (self.models, models)):
            _fill(table, [[r.get("name"), r.get("requests"), _bar(r.get("share", 0.0))]
                          for r in rows])


def _bar(share: float) -> str:
    return f"{'█' * round(share * 20):<20} {share:.0%}"
