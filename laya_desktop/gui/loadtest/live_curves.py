"""Live curves of a running load test: latency, TTFT and inter-token latency of each finished
request, and the throughput, against seconds since the start.

Fed in batches by the panel's timer (never a call per request): `add` appends plain numbers,
`redraw` sets the data at most once a REDRAW_S. Painting is the cost (bench/gui_cost.py
--loadtest): lines, not symbols, and axes that change range in steps, not on every batch, so
their text is rendered again only now and then.
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from laya_desktop.gui.palette import theme

PLOTS = (("latency", QT_TRANSLATE_NOOP("LiveCurves", "Latency"), "ms", 0, 0),
         ("ttft", QT_TRANSLATE_NOOP("LiveCurves", "Time to first token"), "ms", 0, 1),
         ("itl", QT_TRANSLATE_NOOP("LiveCurves", "Inter-token latency"), "ms", 1, 0),
         ("tokens", QT_TRANSLATE_NOOP("LiveCurves", "Throughput"), "tok/s", 1, 1))
THROUGHPUT_WINDOW_S = 2.0
REDRAW_S = 1.0
X_STEP_S = 10.0


def steady_top(current: float | None, highest: float) -> float:
    """The y axis' top: kept while the data fits and fills a third of it, else 1.5 × the data."""
    if current is not None and highest <= current and highest >= current / 3:
        return current
    return max(highest * 1.5, 1e-3)


def throughput(finished_s: np.ndarray, tokens: np.ndarray, window_s: float = THROUGHPUT_WINDOW_S,
               step_s: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Tokens/s over a sliding window, every `step_s` from the first finish to the last."""
    if not finished_s.size:
        return np.array([]), np.array([])
    order = np.argsort(finished_s)
    t, tok = finished_s[order], np.cumsum(tokens[order])
    xs = np.arange(step_s, float(t[-1]) + step_s, step_s)
    upto = np.searchsorted(t, xs, side="right")
    before = np.searchsorted(t, xs - window_s, side="right")
    total = np.concatenate([[0.0], tok])
    return xs, (total[upto] - total[before]) / window_s


class LiveCurves(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = pg.GraphicsLayoutWidget()
        self.plot: dict[str, pg.PlotItem] = {}
        self.curve: dict[str, pg.PlotDataItem] = {}
        first = None
        for key, title, units, row, col in PLOTS:
            p = self.view.addPlot(row=row, col=col)
            p.setTitle(QCoreApplication.translate("LiveCurves", title), color="#222", size="9pt")
            p.setLabel("left", units)
            p.setLabel("bottom", "s")
            p.getAxis("left").enableAutoSIPrefix(False)
            p.getAxis("left").setWidth(52)
            p.showGrid(x=False, y=True, alpha=0.25)
            p.setMenuEnabled(False)
            p.disableAutoRange()
            for item in (p.titleLabel, p.getAxis("left"), p.getAxis("bottom")):
                item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            if first is None:
                first = p
            else:
                p.setXLink(first)
            self.curve[key] = p.plot(pen=pg.mkPen("#1f4f9a", width=1))
            self.plot[key] = p
        theme().follow(self.view)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.clear()

    def clear(self) -> None:
        self._tops: dict[str, float | None] = {k: None for k in self.plot}
        self._right: float | None = None
        self._next_draw_at = 0.0
        self._cols: dict[str, list[float]] = {k: [] for k in ("finished", "latency", "ttft", "itl", "tokens")}
        for c in self.curve.values():
            c.setData([], [])

    @property
    def count(self) -> int:
        return len(self._cols["finished"])

    def add(self, results) -> None:
        cols = self._cols
        for r in results:
            cols["finished"].append(r.finished_s)
            cols["latency"].append(r.latency_ms if r.ok else np.nan)
            cols["ttft"].append(r.ttft_ms if r.ok and r.ttft_ms is not None else np.nan)
            cols["itl"].append(r.itl_ms if r.ok and r.itl_ms is not None else np.nan)
            cols["tokens"].append(r.completion_tokens if r.ok else 0)

    def points(self, key: str) -> int:
        """How many points a curve shows (for tests and the screenshot's check)."""
        x, _y = self.curve[key].getData()
        return 0 if x is None else len(x)

    def redraw(self, force: bool = False) -> bool:
        """Draw what was added; False when the last draw was under REDRAW_S ago (unless forced)."""
        now = time.monotonic()
        if not force and now < self._next_draw_at:
            return False
        self._next_draw_at = now + REDRAW_S
        t = np.asarray(self._cols["finished"], float)
        order = np.argsort(t, kind="stable")      # a line in the order requests finished
        t = t[order]
        data = {}
        for key in ("latency", "ttft", "itl"):
            y = np.asarray(self._cols[key], float)[order]
            keep = np.isfinite(y)
            data[key] = (t[keep], y[keep])
        data["tokens"] = throughput(t, np.asarray(self._cols["tokens"], float)[order])
        right = max(X_STEP_S, X_STEP_S * np.ceil(float(t[-1]) / X_STEP_S)) if t.size else X_STEP_S
        if right != self._right:
            self._right = right
            self.plot["latency"].setXRange(0, right, padding=0)
        for key, (x, y) in data.items():
            self.curve[key].setData(x, y)
            if y.size:
                top = steady_top(self._tops[key], float(np.nanmax(y)))
                if top != self._tops[key]:
                    self._tops[key] = top
                    self.plot[key].setYRange(0, top, padding=0)
        return True
