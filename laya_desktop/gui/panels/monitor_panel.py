"""Monitor panel: live RAM, swap and KV curves with event markers, and the current figures.

Samples land in a SampleRing (from the poller); one QTimer on the GUI thread pulls the ring and
calls setData, with peak downsampling and clip-to-view so long histories stay cheap.
"""
from __future__ import annotations

from types import MappingProxyType

import pyqtgraph as pg
from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QTimer
from PySide6.QtWidgets import (
    QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)
from PySide6.QtCore import Qt

from laya_desktop.gui.registry_model import state_text
from laya_desktop.gui.units import fmt_bytes
from laya_desktop.gui.ring_buffer import GIB, SampleRing

MODEL_COLUMNS = (QT_TRANSLATE_NOOP("MonitorPanel", "Model"), QT_TRANSLATE_NOOP("MonitorPanel", "State"),
                 "RSS", "VRAM", QT_TRANSLATE_NOOP("MonitorPanel", "KV used"),
                 QT_TRANSLATE_NOOP("MonitorPanel", "KV bytes"), QT_TRANSLATE_NOOP("MonitorPanel", "Active"),
                 QT_TRANSLATE_NOOP("MonitorPanel", "Queued"), "tok/s")
EVENT_NAMES = MappingProxyType({
    "model_loading": QT_TRANSLATE_NOOP("MonitorPanel", "loading"),
    "model_loaded": QT_TRANSLATE_NOOP("MonitorPanel", "loaded"),
    "model_unloaded": QT_TRANSLATE_NOOP("MonitorPanel", "unloaded"),
    "emergency_unload": QT_TRANSLATE_NOOP("MonitorPanel", "emergency unload"),
    "runner_crashed": QT_TRANSLATE_NOOP("MonitorPanel", "runner crashed"),
    "load_refused": QT_TRANSLATE_NOOP("MonitorPanel", "load refused"),
    "load_failed": QT_TRANSLATE_NOOP("MonitorPanel", "load failed"),
    "config_applied": QT_TRANSLATE_NOOP("MonitorPanel", "config applied"),
    "config_rejected": QT_TRANSLATE_NOOP("MonitorPanel", "config rejected"),
})
PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#46f0f0", "#f032e6", "#9a6324")
EVENT_COLORS = MappingProxyType({"emergency_unload": "#d00000", "runner_crashed": "#d00000",
                                 "load_refused": "#d07000"})


def _tr(text: str) -> str:
    return QCoreApplication.translate("MonitorPanel", text)


def _plot(title: str, units: str) -> pg.PlotWidget:
    w = pg.PlotWidget(background="w")
    w.setTitle(title, color="#222", size="10pt")
    w.setLabel("left", units)
    w.setLabel("bottom", QCoreApplication.translate("MonitorPanel", "time (s)"))
    w.showGrid(x=True, y=True, alpha=0.25)
    w.addLegend(offset=(8, 8))
    return w


class MonitorPanel(QWidget):
    def __init__(self, parent: QWidget | None = None, refresh_ms: int = 250) -> None:
        super().__init__(parent)
        self.ring = SampleRing()
        self._drawn_version = -1
        self.summary = QLabel(self.tr("waiting for telemetry…"))
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.mem_plot = _plot(self.tr("Memory"), "GiB")
        self.kv_plot = _plot(self.tr("KV cache per model"), self.tr("tokens"))
        self.mem_curves = {
            "ram_used": self._curve(self.mem_plot, self.tr("RAM used"), "#1f4f9a"),
            "ram_available": self._curve(self.mem_plot, self.tr("RAM available"), "#3cb44b"),
            "swap_used": self._curve(self.mem_plot, self.tr("swap used"), "#d00000"),
        }
        self.kv_curves: dict[str, pg.PlotDataItem] = {}
        self.markers: list[pg.InfiniteLine] = []
        self._marked = 0
        self.table = QTableWidget(0, len(MODEL_COLUMNS))
        self.table.setHorizontalHeaderLabels([_tr(c) for c in MODEL_COLUMNS])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.mem_plot)
        split.addWidget(self.kv_plot)
        split.addWidget(self.table)
        split.setSizes([300, 220, 140])
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(refresh_ms)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()

    @staticmethod
    def _curve(plot: pg.PlotWidget, name: str, color: str) -> pg.PlotDataItem:
        curve = plot.plot(name=name, pen=pg.mkPen(color, width=2))
        curve.setDownsampling(auto=True, method="peak")
        curve.setClipToView(True)
        return curve

    # --- input (GUI thread, from the poller) ----------------------------------------------------
    def add_samples(self, samples: list[dict]) -> None:
        self.ring.extend(samples)

    def add_events(self, events: list[dict]) -> None:
        self.ring.add_events(events)

    def show_problem(self, text: str) -> None:
        """Until the first sample arrives, say why there is none (say, no telemetry endpoint)."""
        if not self.ring.samples and "telemetry" in text:
            self.summary.setText(self.tr("no telemetry from the engine yet ({reason})").format(reason=text))

    # --- output (the one timer) ----------------------------------------------------------------
    def redraw(self) -> None:
        if self.ring.version == self._drawn_version or not self.ring.samples:
            return
        self._drawn_version = self.ring.version
        x = self.ring.x()
        for key, curve in self.mem_curves.items():
            curve.setData(x, self.ring.series(key, GIB))
        for i, name in enumerate(self.ring.model_names()):
            curve = self.kv_curves.get(name)
            if curve is None:
                curve = self._curve(self.kv_plot, name, PALETTE[i % len(PALETTE)])
                self.kv_curves[name] = curve
            curve.setData(x, self.ring.model_series(name, "kv_used_tokens"), connect="finite")
        self._add_markers()
        self._update_figures(self.ring.latest() or {})

    def _add_markers(self) -> None:
        events = list(self.ring.events)
        for event in events[self._marked:]:
            kind = event.get("kind", "")
            label = f"{_tr(EVENT_NAMES[kind]) if kind in EVENT_NAMES else kind} {event.get('model') or ''}".strip()
            color = EVENT_COLORS.get(event.get("kind", ""), "#777777")
            for plot in (self.mem_plot, self.kv_plot):
                line = pg.InfiniteLine(pos=self.ring.event_x(event), angle=90,
                                       pen=pg.mkPen(color, style=Qt.PenStyle.DashLine),
                                       label=label if plot is self.mem_plot else None,
                                       labelOpts={"position": 0.55, "color": color, "rotateAxis": (1, 0)})
                plot.addItem(line)
                self.markers.append(line)
        self._marked = len(events)

    def _update_figures(self, s: dict) -> None:
        gpus = s.get("gpus") or []
        gpu_text = ", ".join(f"GPU{i} {fmt_bytes(g.get('used'))}/{fmt_bytes(g.get('total'))}"
                             for i, g in enumerate(gpus)) or self.tr("no GPU")
        ram = self.tr("<b>RAM</b> {used} used of {total}, {available} available").format(
            used=fmt_bytes(s.get("ram_used")), total=fmt_bytes(s.get("ram_total")),
            available=fmt_bytes(s.get("ram_available")))
        swap = self.tr("<b>Swap</b> {used} of {total} (in {rate_in}/s, out {rate_out}/s)").format(
            used=fmt_bytes(s.get("swap_used")), total=fmt_bytes(s.get("swap_total")),
            rate_in=fmt_bytes(s.get("swap_in_bps")), rate_out=fmt_bytes(s.get("swap_out_bps")))
        cpu = f"<b>CPU</b> {float(s.get('cpu_pct') or 0):.0f}%"
        self.summary.setText(" &nbsp; ".join((ram, swap, cpu, f"<b>GPU</b> {gpu_text}")))
        models = s.get("models") or {}
        self.table.setRowCount(len(models))
        for row, (name, m) in enumerate(sorted(models.items())):
            cap = m.get("kv_capacity_tokens")
            values = (name, state_text(m.get("state", "")), fmt_bytes(m.get("rss")), fmt_bytes(m.get("vram")),
                      f"{m.get('kv_used_tokens') or 0} / {cap}" if cap else "—",
                      fmt_bytes(m.get("kv_bytes")), str(m.get("active", 0)), str(m.get("queued", 0)),
                      f"{float(m.get('tokens_per_s') or 0):.1f}")
            for col, value in enumerate(values):
                self.table.setItem(row, col, QTableWidgetItem(str(value)))

    def stop(self) -> None:
        self.timer.stop()
