"""Monitor panel: live memory, swap, VRAM, KV, request and throughput curves with the guard's
thresholds and the engine's events, and the current figures.

Pulled, not pushed: the poller writes samples into a SampleRing (numpy columns); one QTimer on the
GUI thread reads the window shown and calls setData, only while the tab is visible and not paused,
only when something new arrived, with peak downsampling and clip-to-view. The y axes follow the
data (never 0..total), so a change of a few hundred MiB shows.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from types import MappingProxyType

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox, QGraphicsItem, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QPushButton, QSizePolicy, QSplitter, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from laya_desktop.gui.monitor.legend import list_in_legend
from laya_desktop.gui.monitor.series import (
    Series, gpu_series, model_series, system_series, write_csv, y_range,
)
from laya_desktop.gui.palette import theme
from laya_desktop.gui.registry_model import state_text
from laya_desktop.gui.ring_buffer import GIB, SampleRing
from laya_desktop.gui.units import fmt_bytes
from laya_desktop.telemetry.events import EventKind
from laya_desktop.telemetry.model_sample import ModelSample

MODEL_COLUMNS = (QT_TRANSLATE_NOOP("MonitorPanel", "Model"), QT_TRANSLATE_NOOP("MonitorPanel", "State"),
                 "RSS", QT_TRANSLATE_NOOP("MonitorPanel", "private"),
                 QT_TRANSLATE_NOOP("MonitorPanel", "mapped"), "VRAM",
                 QT_TRANSLATE_NOOP("MonitorPanel", "KV used"),
                 QT_TRANSLATE_NOOP("MonitorPanel", "KV bytes"), QT_TRANSLATE_NOOP("MonitorPanel", "Active"),
                 QT_TRANSLATE_NOOP("MonitorPanel", "Queued"), "tok/s")
EVENT_NAMES = MappingProxyType({
    EventKind.MODEL_LOADING: QT_TRANSLATE_NOOP("MonitorPanel", "loading"),
    EventKind.MODEL_LOADED: QT_TRANSLATE_NOOP("MonitorPanel", "loaded"),
    EventKind.MODEL_UNLOADED: QT_TRANSLATE_NOOP("MonitorPanel", "unloaded"),
    EventKind.IDLE_UNLOAD: QT_TRANSLATE_NOOP("MonitorPanel", "idle unload"),
    EventKind.EMERGENCY_UNLOAD: QT_TRANSLATE_NOOP("MonitorPanel", "emergency unload"),
    EventKind.LOAD_REFUSED: QT_TRANSLATE_NOOP("MonitorPanel", "load refused"),
    EventKind.LOAD_FAILED: QT_TRANSLATE_NOOP("MonitorPanel", "load failed"),
    EventKind.RUNNER_CRASHED: QT_TRANSLATE_NOOP("MonitorPanel", "runner crashed"),
    EventKind.RUNNER_UNRESPONSIVE: QT_TRANSLATE_NOOP("MonitorPanel", "runner killed, not answering"),
    EventKind.CONFIG_APPLIED: QT_TRANSLATE_NOOP("MonitorPanel", "config applied"),
    EventKind.CONFIG_REJECTED: QT_TRANSLATE_NOOP("MonitorPanel", "config rejected"),
    EventKind.CONFIG_SAVE_FAILED: QT_TRANSLATE_NOOP("MonitorPanel", "config not saved"),
    EventKind.UPSTREAM_EJECTED: QT_TRANSLATE_NOOP("MonitorPanel", "upstream down, skipped"),
    EventKind.UPSTREAM_RESTORED: QT_TRANSLATE_NOOP("MonitorPanel", "upstream back"),
})
# Loading is not marked (its "loaded" follows within seconds); every other kind is, those of a
# newer engine too, under their own name and in grey.
UNMARKED = frozenset({EventKind.MODEL_LOADING})
PALETTE = ("#1f4f9a", "#3cb44b", "#e6194b", "#f58231", "#911eb4", "#00a0a0", "#f032e6", "#9a6324")
LOST, REFUSED, NEWS = "#d00000", "#d07000", "#777777"   # a runner or its memory lost; refused; news
EVENT_COLORS = MappingProxyType({
    EventKind.MODEL_LOADING: NEWS, EventKind.MODEL_LOADED: NEWS, EventKind.MODEL_UNLOADED: NEWS,
    EventKind.IDLE_UNLOAD: NEWS, EventKind.CONFIG_APPLIED: "#2060c0",
    EventKind.EMERGENCY_UNLOAD: LOST, EventKind.RUNNER_CRASHED: LOST,
    EventKind.RUNNER_UNRESPONSIVE: LOST, EventKind.LOAD_REFUSED: REFUSED,
    EventKind.LOAD_FAILED: REFUSED, EventKind.CONFIG_REJECTED: REFUSED,
    EventKind.CONFIG_SAVE_FAILED: REFUSED, EventKind.UPSTREAM_EJECTED: LOST,
    EventKind.UPSTREAM_RESTORED: NEWS,
})
WINDOWS_MIN = (1, 5, 15, 60)
MIN_DRAW_S, MAX_DRAW_S = 0.5, 2.0
AXIS_WIDTH = 58
# RAM used and available get a plot each: on one axis they span 0..total again, and a change of
# a few hundred MiB is a pixel or two.
PLOT_GRID = (("ram_used", 0, 0), ("ram_available", 0, 1), ("runners", 1, 0), ("vram", 1, 1),
             ("swap", 2, 0), ("swap_io", 2, 1), ("kv_pct", 3, 0), ("kv_bytes", 3, 1),
             ("requests", 4, 0), ("tokens", 4, 1))
VRAM_CELL = (1, 1)
PLOT_TITLES = MappingProxyType({
    "ram_used": (QT_TRANSLATE_NOOP("MonitorPanel", "RAM used"), "GiB"),
    "ram_available": (QT_TRANSLATE_NOOP("MonitorPanel", "RAM available"), "GiB"),
    "runners": (QT_TRANSLATE_NOOP("MonitorPanel", "Runners: private and mapped"), "MiB"),
    "swap": (QT_TRANSLATE_NOOP("MonitorPanel", "Swap used"), "GiB"),
    "vram": (QT_TRANSLATE_NOOP("MonitorPanel", "VRAM"), "GiB"),
    "swap_io": (QT_TRANSLATE_NOOP("MonitorPanel", "Swap in/out"), "MiB/s"),
    "kv_pct": (QT_TRANSLATE_NOOP("MonitorPanel", "KV cache used"), "%"),
    "kv_bytes": (QT_TRANSLATE_NOOP("MonitorPanel", "KV cache"), "MiB"),
    "requests": (QT_TRANSLATE_NOOP("MonitorPanel", "Requests active / queued"), ""),
    "tokens": (QT_TRANSLATE_NOOP("MonitorPanel", "Tokens per second"), "tok/s"),
})


def _tr(text: str) -> str:
    return QCoreApplication.translate("MonitorPanel", text)


def event_text(event: dict) -> str:
    """A marker's tooltip: what happened, to which model, why, and the memory it freed."""
    kind = event.get("kind", "")
    parts = [_tr(EVENT_NAMES[kind]) if kind in EVENT_NAMES else kind]
    if event.get("model"):
        parts.append(str(event["model"]))
    text = " ".join(parts)
    if event.get("reason"):
        text += f" — {event['reason']}"
    if event.get("freed_bytes"):
        text += " " + _tr("(freed {size})").format(size=fmt_bytes(event["freed_bytes"]))
    return text


class MonitorPanel(QWidget):
    exported = Signal(str)      # the path of a PNG or CSV just written

    def __init__(self, parent: QWidget | None = None, refresh_ms: int = 250) -> None:
        super().__init__(parent)
        self.ring = SampleRing()
        self._drawn_version = -1
        self.window_s = 15 * 60.0
        self.paused = False
        self.thresholds: dict[str, float | None] = {"reserved_system_gb": None, "ram_high_pct": None,
                                                    "vram_high_pct": None}
        self.gpu_present: bool | None = None
        self._y_ranges: dict[str, tuple[float, float]] = {}
        self._dirty = True            # something other than new samples changed: draw at once
        self._next_draw_at = 0.0
        self._markers_drawn: tuple = ()
        self.marked_events: list[dict] = []
        self.summary = QLabel(self.tr("waiting for telemetry…"))
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        # A fixed box: a label that grows or shrinks with its text re-lays out (and repaints) the
        # whole panel on every redraw.
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.summary.setFixedHeight(self.summary.fontMetrics().lineSpacing() * 2 + 6)

        self.plots = pg.GraphicsLayoutWidget()
        self.plot: dict[str, pg.PlotItem] = {}
        first = None
        last_row = max(row for _k, row, _c in PLOT_GRID)
        for key, row, col in PLOT_GRID:
            title, units = PLOT_TITLES[key]
            p = self.plots.addPlot(row=row, col=col, axisItems={"bottom": pg.DateAxisItem()})
            p.setTitle(_tr(title), color="#222", size="9pt")
            p.setLabel("left", units)
            p.getAxis("left").enableAutoSIPrefix(False)   # "GiB (x0.001)" reads badly
            # A fixed axis width: one sized to its tick labels re-lays out the plots (a second
            # full paint) whenever the labels change width.
            p.getAxis("left").setWidth(AXIS_WIDTH)
            # Painting dominates the cost (bench/gui_cost.py): the x axes are linked, so only the
            # bottom row draws time labels; no vertical grid (it is redrawn on every slide).
            p.showGrid(x=False, y=True, alpha=0.25)
            if row != last_row:
                p.hideAxis("bottom")
            legend = p.addLegend(offset=(6, 4), labelTextSize="8pt", brush=(255, 255, 255, 190))
            for item in (legend, p.titleLabel, p.getAxis("left")):
                item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            p.setDownsampling(auto=True, mode="peak")
            p.setClipToView(True)
            p.disableAutoRange()
            p.setMenuEnabled(False)
            if first is None:
                first = p
            else:
                p.setXLink(first)
            self.plot[key] = p
        self.vram_notice = pg.LabelItem(self.tr("No NVIDIA GPU: VRAM is not measured on this machine"),
                                        color="#555", size="11pt")

        self.curves: dict[str, pg.PlotDataItem] = {}
        self.series: dict[str, Series] = {}
        for s in system_series(_tr):
            self._add_series(s)
        self.mem_curves = {k: self.curves[k] for k in ("ram_used", "ram_available")}
        self._columns_seen = 0
        self._gpus_seen = 0

        self.marker_lines: dict[str, pg.PlotDataItem] = {}
        for key, p in self.plot.items():
            lines = pg.PlotDataItem(pen=pg.mkPen("#888888", width=1, style=Qt.PenStyle.DashLine),
                                    connect="pairs")
            lines.setZValue(-5)
            p.addItem(lines)
            self.marker_lines[key] = lines
        self.marker_spots = pg.ScatterPlotItem(size=11, symbol="t", hoverable=True, tip=self._spot_tip,
                                               hoverSize=14)
        self.marker_spots.setZValue(10)
        self.plot["ram_used"].addItem(self.marker_spots)

        self.reserved_line = self._threshold(self.plot["ram_available"], "#d00000", above=True)
        self.ram_high_line = self._threshold(self.plot["ram_used"], "#d07000", above=False)
        self.vram_high_line = self._threshold(self.plot["vram"], "#d07000", above=False)
        theme().follow(self.plots)
        theme().changed.connect(self._on_theme)

        self.window_box = QComboBox()
        for minutes in WINDOWS_MIN:
            self.window_box.addItem(self.tr("{n} min").format(n=minutes), minutes * 60.0)
        self.window_box.setCurrentIndex(WINDOWS_MIN.index(15))
        self.window_box.currentIndexChanged.connect(lambda _i: self.set_window(self.window_box.currentData()))
        self.pause_button = QPushButton(self.tr("Pause"))
        self.pause_button.setCheckable(True)
        self.pause_button.toggled.connect(self.set_paused)
        png = QPushButton(self.tr("Export PNG…"))
        png.clicked.connect(lambda: self._ask_export("png"))
        csv_button = QPushButton(self.tr("Export CSV…"))
        csv_button.clicked.connect(lambda: self._ask_export("csv"))
        bar = QHBoxLayout()
        bar.addWidget(QLabel(self.tr("Window:")))
        bar.addWidget(self.window_box)
        bar.addWidget(self.pause_button)
        bar.addStretch(1)
        bar.addWidget(png)
        bar.addWidget(csv_button)

        self.table = QTableWidget(0, len(MODEL_COLUMNS))
        self.table.setHorizontalHeaderLabels([_tr(c) for c in MODEL_COLUMNS])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.plots)
        split.addWidget(self.table)
        split.setChildrenCollapsible(False)
        split.setStretchFactor(0, 1)   # a taller window gives its height to the plots
        split.setSizes([620, 120])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(refresh_ms)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()

    def second_view(self, plots: tuple[str, ...] = ("ram_used", "kv_pct"), parent: QWidget | None = None):
        """Another view of some of these plots on the same ring buffers (the load test's split
        view): it draws what this panel's poller delivered, and polls nothing itself."""
        from laya_desktop.gui.monitor.mirror import MonitorMirror
        return MonitorMirror(self.ring, PLOT_TITLES, plots, parent=parent)

    # --- building ------------------------------------------------------------------------------
    def _add_series(self, s: Series) -> None:
        key = s.key                       # each ring column is drawn on one plot only
        if key in self.curves:
            return
        style = Qt.PenStyle.DashLine if s.dashed else Qt.PenStyle.SolidLine
        # No name: the legend lists a curve only while it has data (monitor/legend.py).
        curve = self.plot[s.plot].plot(pen=pg.mkPen(PALETTE[s.color_index % len(PALETTE)],
                                                    width=1, style=style),
                                       autoDownsampleFactor=1.0)
        curve.setVisible(False)
        theme().style(curve)
        # pyqtgraph's default factor (5 samples a pixel) leaves 3,600 points unreduced on a
        # 500-pixel plot; with peak mode one bin a pixel still keeps every spike (min and max).
        curve.setDownsampling(auto=True, method="peak")
        curve.setClipToView(True)
        self.curves[key] = curve
        self.series[key] = s

    def _on_theme(self, _colors) -> None:
        """The palette changed: the notice may be out of the scene; the markers take their
        colours on a redraw."""
        theme().style(self.vram_notice)
        self._drawn_version = -1
        self.redraw(force=True)

    @staticmethod
    def _threshold(plot: pg.PlotItem, color: str, above: bool) -> pg.InfiniteLine:
        """A guard limit; its label sits on the side the data should stay on (above a floor,
        below a ceiling), where it is never clipped by the plot's edge."""
        anchor = (1, 1) if above else (1, 0)
        line = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DashLine),
                               label="", labelOpts={"position": 0.97, "color": color, "anchors": [anchor, anchor]})
        line.setVisible(False)
        plot.addItem(line, ignoreBounds=True)
        return line

    def _sync_curves(self) -> None:
        """A model's curves come with the first sample that has their figures: none for the
        figures its backend never reports (MLX memory for a GGUF model). GPUs with theirs."""
        if len(self.ring.columns) != self._columns_seen:
            self._columns_seen = len(self.ring.columns)
            for i, name in enumerate(self.ring.models):
                for s in model_series(name, i, _tr):
                    if s.key in self.ring.columns:
                        self._add_series(s)
        for index in self.ring.gpus[self._gpus_seen:]:
            for s in gpu_series(index, _tr):
                self._add_series(s)
        self._gpus_seen = len(self.ring.gpus)

    # --- input (GUI thread, from the poller) ---------------------------------------------------
    def add_samples(self, samples: list[dict]) -> None:
        self.ring.extend(samples)

    def add_events(self, events: list[dict]) -> None:
        self.ring.add_events(events)
        self._dirty = True

    def reset(self) -> None:
        """A new engine: its samples and events number from 1 again."""
        self.ring.reset()
        self._columns_seen = self._gpus_seen = 0
        self._drawn_version = -1
        self._dirty = True

    def set_config(self, config: dict) -> None:
        """The guard's limits from GET /admin/config; the threshold lines follow them."""
        memory = config.get("memory") or {}
        for key in self.thresholds:
            value = memory.get(key)
            self.thresholds[key] = float(value) if isinstance(value, (int, float)) else None
        self._drawn_version = -1          # redraw the lines on the next tick
        self._dirty = True

    def show_problem(self, text: str) -> None:
        """Until the first sample arrives, say why there is none (say, no telemetry endpoint)."""
        if not self.ring.count and "telemetry" in text:
            self.summary.setText(self.tr("no telemetry from the engine yet ({reason})").format(reason=text))

    def set_window(self, seconds: float) -> None:
        self.window_s = float(seconds)
        self._drawn_version = -1
        self._dirty = True
        self.redraw()

    def set_paused(self, paused: bool) -> None:
        self.paused = bool(paused)
        self.pause_button.setText(self.tr("Resume") if self.paused else self.tr("Pause"))
        if self.pause_button.isChecked() != self.paused:
            self.pause_button.setChecked(self.paused)
        if not self.paused:
            self._drawn_version = -1
            self._dirty = True
            self.redraw()

    # --- output (the one timer) ----------------------------------------------------------------
    def showEvent(self, event) -> None:  # noqa: N802 - Qt name
        super().showEvent(event)
        self._dirty = True
        QTimer.singleShot(0, self.redraw)   # the tab was hidden: catch up at once

    def redraw(self, force: bool = False) -> bool:
        """Draw the window shown; False when there was nothing to do (hidden, paused, no news)."""
        if not force and (self.paused or not self.isVisible()):
            return False
        if self.ring.version == self._drawn_version or not self.ring.count:
            return False
        now = time.monotonic()
        if not (force or self._dirty) and now < self._next_draw_at:
            return False          # the newest sample would move the curves by less than a pixel
        self._dirty = False
        self._next_draw_at = now + self._draw_period()
        self._drawn_version = self.ring.version
        self._sync_curves()
        rows = self.ring.window(self.window_s)
        t = self.ring.times(rows)
        t_end = float(t[-1])
        latest = self.ring.latest or {}
        x0 = t_end - self.window_s
        # The x range first: clip-to-view and downsampling then work on the new view once.
        self.plot["ram_used"].setXRange(x0, t_end, padding=0)
        per_plot: dict[str, list[np.ndarray]] = {k: [] for k in self.plot}
        for key, curve in self.curves.items():
            s = self.series[key]
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
        lines = self._update_thresholds(latest)
        ranges = {}
        for key, p in self.plot.items():
            r = y_range(key, per_plot[key], lines.get(key, ()))
            if r is not None:
                ranges[key] = self._steady_y(key, p, r)
        self._update_gpu_notice(bool(latest.get("gpus")))
        self._draw_markers(x0, t_end, ranges)
        self._update_figures(latest)
        return True

    def _draw_period(self) -> float:
        """Seconds per pixel of the plots' width, within 0.5..2 s: a 15-minute window on a
        550-pixel plot moves one pixel every 1.6 s, so redrawing at every poll (2 Hz) is wasted."""
        width = max(100.0, self.plot["ram_used"].vb.width())
        return min(MAX_DRAW_S, max(MIN_DRAW_S, self.window_s / width))

    def _steady_y(self, key: str, plot: pg.PlotItem, wanted: tuple[float, float]) -> tuple[float, float]:
        """Keep the y range while the data still fits it well: a range that changes on every
        redraw re-renders the axis (text) each time, the costliest part of a frame."""
        current = self._y_ranges.get(key)
        lo, hi = wanted
        span = hi - lo
        if current is not None:
            c_lo, c_hi = current
            inner_lo, inner_hi = lo + span * 0.1, hi - span * 0.1    # the data, without its padding
            if c_lo <= inner_lo and inner_hi <= c_hi and (c_hi - c_lo) <= 1.5 * span:
                return current
        plot.setYRange(lo, hi, padding=0)
        self._y_ranges[key] = wanted
        return wanted

    def _update_thresholds(self, s: dict) -> dict[str, list[float]]:
        th = self.thresholds
        total = s.get("ram_total")
        out: dict[str, list[float]] = {"ram_used": [], "ram_available": [], "vram": []}
        reserved = th["reserved_system_gb"]
        self.reserved_line.setVisible(reserved is not None)
        if reserved is not None:
            self.reserved_line.setValue(reserved)
            self.reserved_line.label.setFormat(
                self.tr("guard: keep {gb:g} GiB available").format(gb=reserved))
            out["ram_available"].append(reserved)
        high = th["ram_high_pct"]
        show = high is not None and bool(total)
        self.ram_high_line.setVisible(show)
        if show:
            value = float(total) * high / 100.0 / GIB
            self.ram_high_line.setValue(value)
            self.ram_high_line.label.setFormat(self.tr("guard: RAM used {pct:g} %").format(pct=high))
            out["ram_used"].append(value)
        vram = th["vram_high_pct"]
        gpu_total = max((float(g.get("total") or 0) for g in s.get("gpus") or []), default=0.0)
        show = vram is not None and gpu_total > 0
        self.vram_high_line.setVisible(show)
        if show:
            value = gpu_total * vram / 100.0 / GIB
            self.vram_high_line.setValue(value)
            self.vram_high_line.label.setFormat(self.tr("guard: VRAM {pct:g} %").format(pct=vram))
            out["vram"].append(value)
        return out

    def _update_gpu_notice(self, present: bool) -> None:
        """With no NVIDIA GPU the VRAM plot's place says so instead of drawing an empty plot."""
        if present == self.gpu_present:
            return
        self.gpu_present = present
        layout = self.plots.ci
        row, col = VRAM_CELL
        if present:
            if self.vram_notice in layout.items:
                layout.removeItem(self.vram_notice)
            self.vram_notice.setVisible(False)
            layout.addItem(self.plot["vram"], row=row, col=col)
            self.plot["vram"].setVisible(True)
        else:
            if self.plot["vram"] in layout.items:
                layout.removeItem(self.plot["vram"])
            self.plot["vram"].setVisible(False)
            layout.addItem(self.vram_notice, row=row, col=col)
            self.vram_notice.setVisible(True)

    def _draw_markers(self, x0: float, x1: float, ranges: dict[str, tuple[float, float]]) -> None:
        events = [e for e in self.ring.events.between(x0, x1) if e.get("kind") not in UNMARKED]
        drawn = (len(events), events[-1].get("seq") if events else None, events[0].get("seq") if events else None,
                 tuple(sorted(ranges.items())))
        if drawn == self._markers_drawn:
            return                  # the same markers on the same ranges: nothing to redo
        self._markers_drawn = drawn
        self.marked_events = events
        xs = np.array([float(e["t"]) for e in events], float)
        for key, lines in self.marker_lines.items():
            r = ranges.get(key)
            if r is None or not len(xs):
                lines.setData([], [])
                continue
            lines.setData(np.repeat(xs, 2), np.tile(np.array(r, float), len(xs)), connect="pairs")
        top = ranges.get("ram_used", (0.0, 1.0))
        y = top[1] - (top[1] - top[0]) * 0.03
        self.marker_spots.setData(
            x=xs, y=np.full(len(xs), y), data=list(range(len(events))),
            brush=[pg.mkBrush(theme().pen_color(EVENT_COLORS.get(e.get("kind"), NEWS)))
                   for e in events],
            pen=None)

    def _spot_tip(self, x: float, y: float, data) -> str:
        if isinstance(data, (int, np.integer)) and 0 <= data < len(self.marked_events):
            return self.marker_tooltip(int(data))
        return ""

    def marker_tooltip(self, i: int) -> str:
        event = self.marked_events[i]
        stamp = datetime.fromtimestamp(float(event["t"])).strftime("%H:%M:%S")   # local, like the axis
        return f"{stamp} {event_text(event)}"

    def _update_figures(self, s: dict) -> None:
        gpus = s.get("gpus") or []
        gpu_text = ", ".join(f"GPU{g.get('index', i)} {fmt_bytes(g.get('used'))}/{fmt_bytes(g.get('total'))}"
                             for i, g in enumerate(gpus)) or self.tr("no NVIDIA GPU")
        ram = self.tr("<b>RAM</b> {used} used of {total}, {available} available").format(
            used=fmt_bytes(s.get("ram_used")), total=fmt_bytes(s.get("ram_total")),
            available=fmt_bytes(s.get("ram_available")))
        swap = self.tr("<b>Swap</b> {used} of {total} (in {rate_in}/s, out {rate_out}/s)").format(
            used=fmt_bytes(s.get("swap_used")), total=fmt_bytes(s.get("swap_total")),
            rate_in=fmt_bytes(s.get("swap_in_bps")), rate_out=fmt_bytes(s.get("swap_out_bps")))
        cpu = f"<b>CPU</b> {float(s.get('cpu_pct') or 0):.0f}%"
        parts = [ram, swap, cpu, f"<b>GPU</b> {gpu_text}"]
        reserved, available = self.thresholds["reserved_system_gb"], s.get("ram_available")
        if reserved is not None and isinstance(available, (int, float)):
            parts.append(self.tr("<b>Guard</b> {left} above the floor").format(
                left=fmt_bytes(max(0.0, available - reserved * GIB))))
        text = " &nbsp; ".join(parts)
        if text != self.summary.text():
            self.summary.setText(text)
        models = s.get("models") or {}
        self.table.setRowCount(len(models))
        for row, (name, entry) in enumerate(sorted(models.items())):
            m = ModelSample.from_json(entry)
            cap = m.kv_capacity_tokens
            values = (name, state_text(m.state), fmt_bytes(m.rss),
                      fmt_bytes(m.private), fmt_bytes(m.shared), fmt_bytes(m.vram),
                      f"{m.kv_used_tokens or 0} / {cap}" if cap else "—",
                      fmt_bytes(m.kv_bytes), str(m.active), str(m.queued),
                      f"{m.tokens_per_s or 0:.1f}")
            for col, value in enumerate(values):
                item = self.table.item(row, col)
                if item is None:
                    self.table.setItem(row, col, QTableWidgetItem(str(value)))
                elif item.text() != value:
                    item.setText(str(value))

    # --- export --------------------------------------------------------------------------------
    def export_png(self, path: str | Path) -> bool:
        self.redraw(force=True)
        ok = self.plots.grab().save(str(path), "PNG")
        if ok:
            self.exported.emit(str(path))
        return ok

    def export_csv(self, path: str | Path) -> int:
        """The samples of the window shown; returns the number of rows written."""
        n = write_csv(self.ring, self.ring.window(self.window_s), path)
        self.exported.emit(str(path))
        return n

    def _ask_export(self, kind: str) -> None:
        caption = self.tr("Export the plots as PNG") if kind == "png" else self.tr("Export the samples as CSV")
        filt = self.tr("PNG images (*.png)") if kind == "png" else self.tr("CSV files (*.csv)")
        path, _ = QFileDialog.getSaveFileName(self, caption, f"laya-monitor.{kind}", filt)
        if path:
            self.export_png(path) if kind == "png" else self.export_csv(path)

    def stop(self) -> None:
        self.timer.stop()

