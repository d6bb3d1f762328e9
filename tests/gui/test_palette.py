"""The plots follow the system's light or dark palette: background, axes, titles, legends, curves
and lines stay legible in both (WCAG contrast), and a switch of the system's colour scheme at run
time (QStyleHints.colorSchemeChanged) repaints plots that already exist."""
from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette

from laya_desktop.gui.loadtest.live_curves import LiveCurves
from laya_desktop.gui.loadtest.results_view import ResultsView
from laya_desktop.gui.loadtest.sweep_view import SweepView
from laya_desktop.gui.palette import (
    MIN_LINE_CONTRAST, MIN_TEXT_CONTRAST, contrast_ratio, is_dark, legible, theme,
)
from laya_desktop.gui.panels.monitor_panel import MonitorPanel

SUMMARY = {"requests": 3, "ok": 3, "errors": 0, "wall_s": 1.0, "requests_per_s": 3.0,
           "tokens_per_s": 10.0, "completion_tokens": 10}


@pytest.fixture
def plots(qapp, qtbot):
    """Every kind of plot the app draws, as the panels build them, and the app's palette put
    back afterwards (the QApplication outlives this test)."""
    before = QPalette(qapp.palette())
    monitor, live, sweep, results = MonitorPanel(), LiveCurves(), SweepView(), ResultsView()
    results.show_report(SUMMARY, [10.0, 20.0, 30.0])
    for w in (monitor, live, sweep, results):
        qtbot.addWidget(w)
    yield {"monitor": monitor.plots, "live": live.view, "sweep": sweep.plots,
           "histogram": results.histogram}
    monitor.stop()
    qapp.setPalette(before)


def drawn_colours(widget) -> tuple[QColor, list[tuple[str, QColor]], list[tuple[str, QColor]]]:
    """(background, text colours, line colours) of a pyqtgraph widget as it would paint now."""
    texts, lines = [], []
    for item in widget.scene().items():
        name = type(item).__name__
        if isinstance(item, pg.AxisItem):
            texts.append((f"{name} text", item.textPen().color()))
            lines.append((f"{name} line", item.pen().color()))
        elif isinstance(item, pg.LabelItem) and item.text:
            texts.append((f"label {item.text!r}", pg.mkColor(item.opts["color"])))
        elif isinstance(item, pg.PlotDataItem) and item.opts.get("pen") is not None:
            lines.append((f"curve {item.name()}", pg.mkPen(item.opts["pen"]).color()))
        elif isinstance(item, pg.InfiniteLine):
            lines.append(("threshold", item.pen.color()))
        elif isinstance(item, pg.BarGraphItem):
            lines.append(("bars", pg.mkBrush(item.opts["brush"]).color()))
    return widget.backgroundBrush().color(), texts, lines


def assert_legible(plots: dict, dark: bool) -> None:
    for key, widget in plots.items():
        background, texts, lines = drawn_colours(widget)
        assert is_dark(background) == dark, (key, background.name())
        assert texts and lines, key
        for what, colour in texts:
            ratio = contrast_ratio(colour, background)
            assert ratio >= MIN_TEXT_CONTRAST, (key, what, colour.name(), ratio)
        for what, colour in lines:
            ratio = contrast_ratio(colour, background)
            assert ratio >= MIN_LINE_CONTRAST, (key, what, colour.name(), ratio)


def test_plots_are_legible_in_both_schemes_and_follow_a_switch(qapp, plots, qtbot):
    hints = qapp.styleHints()
    qapp.setPalette(qapp.style().standardPalette())   # a light desktop
    assert_legible(plots, dark=False)
    with qtbot.waitSignal(theme().changed, timeout=2000):
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)   # what the platform sends
    assert is_dark(qapp.palette().color(QPalette.ColorRole.Base))
    assert_legible(plots, dark=True)
    with qtbot.waitSignal(theme().changed, timeout=2000):
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert_legible(plots, dark=False)


def test_a_palette_set_by_the_platform_repaints_the_plots(qapp, plots, qtbot):
    """A desktop whose palette follows its scheme by itself: the palette change is enough."""
    from laya_desktop.gui.palette import dark_palette
    with qtbot.waitSignal(theme().changed, timeout=2000):
        qapp.setPalette(dark_palette())
    assert_legible(plots, dark=True)


def test_a_curve_colour_is_shifted_only_as_far_as_needed():
    white, dark = QColor("white"), QColor(30, 30, 32)
    navy = QColor("#1f4f9a")
    assert legible(navy, white) == navy                      # already fine on white
    lifted = legible(navy, dark)
    assert contrast_ratio(lifted, dark) >= MIN_LINE_CONTRAST > contrast_ratio(navy, dark)
    assert abs(lifted.hslHueF() - navy.hslHueF()) < 0.02     # still the same blue
    assert contrast_ratio(legible(QColor("#ffff60"), white), white) >= MIN_LINE_CONTRAST
