"""A second view of the Monitor's ring buffers: a few of its plots (RAM used, KV cache) drawn
elsewhere, say beside the load test's curves, from the same samples — nothing is polled twice.

Pulled like the Monitor: its own timer draws only while it is visible and when the ring has news,
at most once a second, and the y axes keep their range while the data still fits it well.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from laya_desktop.gui.monitor.legend import list_in_legend
from laya_desktop.gui.monitor.series import model_series, system_series, y_range
from laya_desktop.gui.palette import theme
from laya_desktop.gui.ring_buffer import SampleRing

DEFAULT_PLOTS = ("ram_used", "kv_pct")


def _tr(text: str) -> str:
    return QCoreApplication.translate("MonitorPanel", text)


def _fits(current: tuple[float, float] | None, wanted: tuple[float, float]) -> bool:
    """The range shown still suits the data: it holds it and is under 1.5 × as wide."""
    if current is None:
        return False
    lo, hi = wanted
    span = hi - lo
    return current[0] <= lo + span * 0.1 and hi - span * 0.1 <= current[1] and current[1] - current[0] <= 1.5 * span


class MonitorMirror(QWidget):
    def __init__(self, ring: SampleRing, titles: dict, plots: tuple[str, ...] = DEFAULT_PLOTS,
                 window_s: float = 2 * 60.0, refresh_ms: int = 1000, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ring, self.keys, self.window_s = ring, tuple(plots), window_s
        self.view = pg.GraphicsLayoutWidget()
        self.plot: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, tuple[pg.PlotDataItem, object]] = {}
        self._columns_seen = 0
        self._drawn_version = -1
        self._ranges: dict[str, tuple[float, float]] = {}
        first = None
        for row, key in enumerate(self.keys):
            title, units = titles[key]
            p = self.view.addPlot(row=row, col=0, axisItems={"bottom": pg.DateAxisItem()})
            p.setTitle(_tr(title), color="#222", size="9pt")
            p.setLabel("left", units)
            p.getAxis("left").enableAutoSIPrefix(False)
            p.getAxis("left").setWidth(52)
            p.showGrid(x=False, y=True, alpha=0.25)
            p.addLegend(offset=(6, 4), labelTextSize="8pt", brush=(255, 255, 255, 190))
            p.setMenuEnabled(False)
            p.disableAutoRange()
            for item in (p.titleLabel, p.getAxis("left")):
                item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            if first is None:
                first = p
            else:
                p.setXLink(first)
            self.plot[key] = p
        for s in system_series(_tr):
            self._add(s)
        theme().follow(self.view)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.timer = QTimer(self)
        self.timer.setInterval(refresh_ms)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()

    def _add(self, s) -> None:
        if s.plot not in self.plot or s.key in self.curves:
            return
        from laya_desktop.gui.panels.monitor_panel import PALETTE
        curve = self.plot[s.plot].plot(pen=pg.mkPen(PALETTE[s.color_index % len(PALETTE)], width=1))
        curve.setVisible(False)   # and out of the legend until it has data (legend.py)
        theme().style(curve)
        curve.setDownsampling(auto=True, method="peak")
        curve.setClipToView(True)
        self.curves[s.key] = (curve, s)

    def redraw(self, force: bool = False) -> bool:
        if not force and not self.isVisible():
            return False
        if not self.ring.count or (self.ring.version == self._drawn_version and not force):
            return False
        self._drawn_version = self.ring.version
        if len(self.ring.columns) != self._columns_seen:
            self._columns_seen = len(self.ring.columns)
            for i, name in enumerate(self.ring.models):
                for s in model_series(name, i, _tr):
                    if s.key in self.ring.columns:
                        self._add(s)
        rows = self.ring.window(self.window_s)
        t = self.ring.times(rows)
        t_end = float(t[-1])
        self.plot[self.keys[0]].setXRange(t_end - self.window_s, t_end, padding=0)
        per_plot: dict[str, list[np.ndarray]] = {k: [] for k in self.plot}
        for curve, s in self.curves.values():
            y = s.values(self.ring, rows)
            shown = bool(np.isfinite(y).any())
            if shown:
                curve.setData(t, y, connect="finite")
                per_plot[s.plot].append(y)
            elif curve.isVisible():
                curve.setData([], [])
            if shown != curve.isVisible():
                curve.setVisible(shown)
                list_in_legend(self.plot[s.plot], curve, s.label, shown)
        for key, p in self.plot.items():
            r = y_range(key, per_plot[key])
            if r is not None and not _fits(self._ranges.get(key), r):
                self._ranges[key] = r
                p.setYRange(*r, padding=0)
        return True

    def points(self, key: str) -> int:
        """Points drawn on one plot, all curves together (for tests)."""
        total = 0
        for curve, s in self.curves.values():
            if s.plot == key:
                x, _y = curve.getData()
                total += 0 if x is None else len(x)
        return total
