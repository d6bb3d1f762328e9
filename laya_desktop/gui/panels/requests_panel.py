"""Requests panel: the engine's request log, newest first, filtered by rule, model and status, with
where the selected request went and why.

The log comes from EngineState's poll while the panel follows it; rows are inserted above the ones
shown, so the selection stays on the request the user picked, and it is restored by `seq` when a
filter hides and shows it again.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QPlainTextEdit, QSplitter,
    QTableView, QVBoxLayout, QWidget,
)

from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.request_log_model import ENTRY_ROLE, RequestFilter, RequestLogModel
from laya_desktop.gui.request_why import why_text

FILTER_KEYS = ("rule", "model", "status")


class RequestsPanel(QWidget):
    refreshed = Signal()   # new entries were shown (tests and the screenshot run wait on it)

    def __init__(self, state: EngineState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = RequestLogModel(self)
        self.proxy = RequestFilter(self)
        self.proxy.setSourceModel(self.model)
        self.state = state
        self.selected_seq: int | None = None

        self.filters: dict[str, QComboBox] = {}
        bar = QHBoxLayout()
        labels = (self.tr("Rule:"), self.tr("Model:"), self.tr("Status:"))
        for key, label in zip(FILTER_KEYS, labels):
            combo = QComboBox()
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            combo.addItem(self.tr("all"), None)
            combo.currentIndexChanged.connect(lambda _i, k=key: self._on_filter(k))
            self.filters[key] = combo
            bar.addWidget(QLabel(label))
            bar.addWidget(combo)
        bar.addStretch(1)
        self.count = QLabel("")
        bar.addWidget(self.count)

        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.table.selectionModel().currentRowChanged.connect(
            lambda current, _previous: self._on_current(current))
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText(self.tr("Select a request to see where it went and why."))
        self.status = QLabel("")
        self.status.setWordWrap(True)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)

        state.requests.connect(self.add_entries)
        state.restarted.connect(self.reset)
        state.requests_failed.connect(self.show_problem)
        self._update_count()

    # --- engine ----------------------------------------------------------------------------------
    def start(self) -> None:
        self.state.follow_requests(True)

    def stop(self) -> None:
        self.state.follow_requests(False)

    def add_entries(self, items: list[dict]) -> None:
        self.status.setText("")
        self.model.add(items)
        for key, combo in self.filters.items():
            known = {combo.itemData(i) for i in range(1, combo.count())}
            for value in self.model.values(key):
                if value not in known:
                    combo.addItem(value, value)
        self._update_count()
        self.refreshed.emit()

    def reset(self) -> None:
        self.model.clear()
        self.selected_seq = None
        self.detail.clear()
        self._update_count()

    def show_problem(self, text: str) -> None:
        self.status.setText(self.tr("Cannot read the request log: {error}").format(error=text))

    # --- choices ---------------------------------------------------------------------------------
    def set_filter(self, key: str, value: str | None) -> None:
        """Choose a filter value as the user would (None: all); an unknown value is added."""
        combo = self.filters[key]
        index = combo.findData(value) if value is not None else 0
        if index < 0:
            combo.addItem(value, value)
            index = combo.count() - 1
        combo.setCurrentIndex(index)

    def select_seq(self, seq: int) -> bool:
        row = self.model.row_of(seq)
        if row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if not index.isValid():
            return False
        self.table.selectRow(index.row())
        self.table.setCurrentIndex(index)
        return True

    def select_latest(self) -> bool:
        if self.proxy.rowCount() == 0:
            return False
        self.table.selectRow(0)
        self.table.setCurrentIndex(self.proxy.index(0, 0))
        return True

    def visible_entries(self) -> list[dict]:
        return [self.proxy.index(r, 0).data(ENTRY_ROLE) for r in range(self.proxy.rowCount())]

    def _on_filter(self, key: str) -> None:
        self.proxy.set_filter(key, self.filters[key].currentData())
        if self.selected_seq is not None and not self.select_seq(self.selected_seq):
            self.table.clearSelection()
        self._update_count()

    def _on_current(self, index) -> None:
        entry = index.data(ENTRY_ROLE) if index.isValid() else None
        if entry is None:
            return   # the row was filtered away: keep showing it until another is picked
        self.selected_seq = entry.get("seq")
        self.detail.setPlainText(why_text(entry))

    def _update_count(self) -> None:
        self.count.setText(self.tr("{shown} of {total} requests").format(
            shown=self.proxy.rowCount(), total=self.model.rowCount()))
