"""The capacity sweep's result: one row a step, throughput and TTFT against concurrency with the
peak RAM, and the recommendation."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from laya_desktop.gui.palette import theme
from laya_desktop.gui.units import fmt_bytes

COLUMNS = (QT_TRANSLATE_NOOP("SweepView", "Clients"), QT_TRANSLATE_NOOP("SweepView", "Prompt chars"),
           "tok/s", QT_TRANSLATE_NOOP("SweepView", "TTFT p50"), QT_TRANSLATE_NOOP("SweepView", "TTFT p95"),
           QT_TRANSLATE_NOOP("SweepView", "Peak RAM"), QT_TRANSLATE_NOOP("SweepView", "Swap moved"),
           QT_TRANSLATE_NOOP("SweepView", "KV peak"), QT_TRANSLATE_NOOP("SweepView", "Errors"),
           QT_TRANSLATE_NOOP("SweepView", "Stopped by"))
STOPS = {"guard": QT_TRANSLATE_NOOP("SweepView", "memory guard"), "swap": QT_TRANSLATE_NOOP("SweepView", "swap"),
         "errors": QT_TRANSLATE_NOOP("SweepView", "errors")}


def _tr(text: str) -> str:
    return QCoreApplication.translate("SweepView", text)


def _ms(v) -> str:
    return "—" if v is None else f"{v:,.0f} ms"


class SweepView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.steps: list[dict] = []
        self.recommendation = QLabel("")
        self.recommendation.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels([_tr(c) for c in COLUMNS])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.plots = pg.GraphicsLayoutWidget()
        self.tput, self.tput_curve = self._new_plot(0, QCoreApplication.translate("SweepView", "Throughput against clients"), "tok/s", "#1f4f9a", "o")
        self.ttft, self.ttft_curve = self._new_plot(1, QCoreApplication.translate("SweepView", "TTFT p95 against clients"), "ms", "#e6194b", "t")
        self.mem, self.mem_curve = self._new_plot(2, QCoreApplication.translate("SweepView", "Peak RAM used against clients"), "GiB", "#3cb44b", "s")
        theme().follow(self.plots)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.plots)
        split.setSizes([560, 440])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.recommendation)
        layout.addWidget(split, 1)

    def _new_plot(self, row: int, title: str, units: str, color: str, symbol: str):
        """A plot against clients on a log axis (1, 2, 4, 8 … evenly spaced) and its curve."""
        p = self.plots.addPlot(row=row, col=0)
        p.setTitle(title, color="#222", size="9pt")
        p.setLabel("left", units)
        p.setLabel("bottom", QCoreApplication.translate("SweepView", "clients"))
        p.setLogMode(x=True, y=False)
        p.setMenuEnabled(False)
        return p, p.plot(pen=pg.mkPen(color, width=2), symbol=symbol, symbolBrush=color)

    def clear(self) -> None:
        self.steps = []
        self.table.setRowCount(0)
        self.recommendation.setText("")
        for c in (self.tput_curve, self.ttft_curve, self.mem_curve):
            c.setData([], [])

    def add_step(self, step: dict) -> None:
        self.steps.append(step)
        row = self.table.rowCount()
        self.table.insertRow(row)
        kv = "—" if step.get("peak_kv_pct") is None else f"{step['peak_kv_pct']:.0f} %"
        stop = _tr(STOPS[step["stop"]]) if step.get("stop") in STOPS else ""
        values = (step["concurrency"], step["prompt_chars"], f"{step['tokens_per_s']:.1f}",
                  _ms(step.get("ttft_p50_ms")), _ms(step.get("ttft_p95_ms")), fmt_bytes(step.get("peak_ram_used")),
                  fmt_bytes(step.get("swap_moved")), kv, step["errors"], stop)
        for col, value in enumerate(values):
            self.table.setItem(row, col, QTableWidgetItem(str(value)))
        self._replot()

    def _replot(self) -> None:
        # the longest prompt length's steps: one curve a length would crowd a small plot
        chars = max(s["prompt_chars"] for s in self.steps)
        steps = [s for s in self.steps if s["prompt_chars"] == chars]
        x = [float(s["concurrency"]) for s in steps]
        self.tput_curve.setData(x, [s["tokens_per_s"] for s in steps])
        ttft = [(c, s["ttft_p95_ms"]) for c, s in zip(x, steps) if s.get("ttft_p95_ms") is not None]
        self.ttft_curve.setData([c for c, _v in ttft], [v for _c, v in ttft])
        mem = [(c, s["peak_ram_used"] / (1 << 30)) for c, s in zip(x, steps) if s.get("peak_ram_used")]
        self.mem_curve.setData([c for c, _ in mem], [v for _, v in mem])

    def show_result(self, sweep: dict) -> None:
        rec = sweep.get("recommendation") or {}
        if rec.get("concurrency") is None:
            self.recommendation.setText(QCoreApplication.translate("SweepView", "No recommendation: {reason}").format(reason=rec.get("reason", "")))
        else:
            self.recommendation.setText(QCoreApplication.translate("SweepView",
                "<b>Recommended: {n} clients</b> at {chars} prompt characters — {tps:.1f} tokens/s, "
                "TTFT p95 {ttft:.0f} ms (target {target:g} ms), within the memory limits").format(
                n=rec["concurrency"], chars=rec["prompt_chars"], tps=rec["tokens_per_s"],
                ttft=rec["ttft_p95_ms"], target=sweep.get("ttft_target_ms", 0)))
