"""The plots in the system's dark or light palette, following a change of scheme at run time.

pyqtgraph paints with its own colours (a fixed background, axis and text pens), not with the
widget palette, so a dark desktop got white plots, and a curve colour picked for white paper is
hard to see on a dark one. `PlotTheme` gives every plot it follows the palette's base as its
background and the palette's text colour for axes, titles and legends, and shifts each curve's,
line's and marker's colour (remembered as drawn) just enough to stand out from that background.
It repaints them when the palette changes (ApplicationPaletteChange) and, when the system switches
its colour scheme (QStyleHints.colorSchemeChanged, Qt 6.5+) on a platform whose palette does not
follow by itself, sets a palette of that scheme.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget
from shiboken6 import isValid

MIN_TEXT_CONTRAST = 4.5    # WCAG AA for text
MIN_LINE_CONTRAST = 3.0    # WCAG AA for graphics (a curve, a marker) against its background
_BASE_COLOR = "_laya_base_color"   # an item's colour as drawn, before any shift


@dataclass(frozen=True)
class PlotColors:
    background: QColor
    foreground: QColor    # axes, tick labels, titles, legend text
    dark: bool


def plot_colors(palette: QPalette | None = None) -> PlotColors:
    palette = palette or QGuiApplication.palette()
    background = palette.color(QPalette.ColorRole.Base)
    foreground = palette.color(QPalette.ColorRole.Text)
    if contrast_ratio(background, foreground) < MIN_TEXT_CONTRAST:   # a palette that says little
        foreground = QColor("white") if is_dark(background) else QColor("black")
    return PlotColors(background, foreground, is_dark(background))


def is_dark(color: QColor) -> bool:
    return _luminance(color) < 0.18


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio, 1 (the same) to 21 (black on white)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def legible(color: QColor, background: QColor, minimum: float = MIN_LINE_CONTRAST) -> QColor:
    """`color` with its hue kept, made lighter (on a dark background) or darker (on a light one)
    until it reaches `minimum` contrast; unchanged when it already does."""
    if contrast_ratio(color, background) >= minimum:
        return QColor(color)
    toward_light = is_dark(background)
    h, s, lightness, a = color.getHslF()
    h = max(h, 0.0)   # -1 for a grey
    for step in range(1, 21):
        shift = step / 20
        value = lightness + (1 - lightness) * shift if toward_light else lightness * (1 - shift)
        candidate = QColor.fromHslF(h, s, value, a)
        if contrast_ratio(candidate, background) >= minimum:
            return candidate
    return QColor("white") if toward_light else QColor("black")


def _luminance(color: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    return (0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF())
            + 0.0722 * channel(color.blueF()))


def dark_palette() -> QPalette:
    """A dark palette for a platform that reports a dark scheme but keeps a light palette."""
    p = QPalette()
    window, base, text = QColor(45, 45, 48), QColor(30, 30, 32), QColor(230, 230, 230)
    for role, color in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.Base, base),
                        (QPalette.ColorRole.AlternateBase, window),
                        (QPalette.ColorRole.WindowText, text), (QPalette.ColorRole.Text, text),
                        (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.Button, window),
                        (QPalette.ColorRole.ToolTipBase, base),
                        (QPalette.ColorRole.ToolTipText, text),
                        (QPalette.ColorRole.PlaceholderText, QColor(150, 150, 150)),
                        (QPalette.ColorRole.Highlight, QColor(42, 130, 218)),
                        (QPalette.ColorRole.HighlightedText, QColor("white")),
                        (QPalette.ColorRole.Link, QColor(90, 160, 240)),
                        (QPalette.ColorRole.BrightText, QColor(255, 90, 90))):
        p.setColor(role, color)
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(127, 127, 127))
    return p


class PlotTheme(QObject):
    """One per application (`theme()`); `follow(widget)` keeps a pyqtgraph widget in the
    palette's colours, `restyle(widget)` again after items were added to it."""
    changed = Signal(object)   # PlotColors, after every followed plot was repainted

    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        self._app = app
        self._widgets: weakref.WeakSet[QWidget] = weakref.WeakSet()
        self.colors = plot_colors()
        self._shifted: dict[tuple, QColor] = {}
        app.installEventFilter(self)
        hints = app.styleHints()
        if hasattr(hints, "colorSchemeChanged"):   # Qt 6.5+
            hints.colorSchemeChanged.connect(self.scheme_changed)
            self.scheme_changed(hints.colorScheme())

    def follow(self, widget: QWidget) -> None:
        self._widgets.add(widget)
        self.restyle(widget)

    def scheme_changed(self, scheme: Qt.ColorScheme) -> None:
        """The system's scheme: where the palette did not follow it, set one that does."""
        if scheme not in (Qt.ColorScheme.Dark, Qt.ColorScheme.Light):
            return
        want_dark = scheme == Qt.ColorScheme.Dark
        if plot_colors(self._app.palette()).dark != want_dark:
            light = self._app.style().standardPalette()
            self._app.setPalette(dark_palette() if want_dark else light)
        self.repaint()   # also when the palette was right already: its change may have come first

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt name
        if watched is self._app and event.type() == QEvent.Type.ApplicationPaletteChange:
            self.repaint()
        return False

    def repaint(self) -> None:
        self.colors = plot_colors(self._app.palette())
        self._shifted.clear()
        for widget in list(self._widgets):
            if isValid(widget):   # a Python wrapper may outlive its widget
                self.restyle(widget)
            else:
                self._widgets.discard(widget)
        self.changed.emit(self.colors)

    def restyle(self, widget: QWidget) -> None:
        colors = self.colors
        if hasattr(widget, "setBackground"):
            widget.setBackground(colors.background)
        scene = widget.scene() if hasattr(widget, "scene") else None
        for item in scene.items() if scene is not None else ():
            _restyle_item(item, colors)
        widget.update()

    def style(self, item) -> None:
        """One item added to a followed plot after it was styled (a new model's curve)."""
        _restyle_item(item, self.colors)

    def pen_color(self, color) -> QColor:
        """A colour as it should be drawn now, for brushes made on each redraw (markers)."""
        key = (str(color), self.colors.background.rgba())
        found = self._shifted.get(key)
        if found is None:
            found = self._shifted[key] = legible(pg.mkColor(color), self.colors.background)
        return found


def theme() -> PlotTheme:
    """The application's PlotTheme (made on first use)."""
    app = QApplication.instance()
    found = app.findChild(PlotTheme)
    return found if found is not None else PlotTheme(app)


def _base_color(item, slot: str, current: QColor) -> QColor:
    """The colour `item` had in `slot` when first styled: every shift starts from it."""
    bases = getattr(item, _BASE_COLOR, None)
    if bases is None:
        bases = {}
        setattr(item, _BASE_COLOR, bases)
    return bases.setdefault(slot, QColor(current))


def _shifted_pen(item, slot: str, pen, background: QColor):
    pen = pg.mkPen(pen)
    pen.setColor(legible(_base_color(item, slot, pen.color()), background))
    return pen


def _shifted_brush(item, slot: str, brush, background: QColor):
    color = pg.mkBrush(brush).color()
    return pg.mkBrush(legible(_base_color(item, slot, color), background))


def _restyle_item(item, colors: PlotColors) -> None:
    fg, bg = colors.foreground, colors.background
    if isinstance(item, pg.AxisItem):
        item.setPen(fg)
        item.setTextPen(fg)
    elif isinstance(item, pg.LegendItem):
        item.setLabelTextColor(fg)
        fill = QColor(bg)
        fill.setAlpha(190)
        item.setBrush(fill)
    elif isinstance(item, pg.LabelItem):
        item.setText(item.text, color=fg)
    elif isinstance(item, pg.PlotDataItem):
        opts = item.opts
        if opts.get("pen") is not None:
            item.setPen(_shifted_pen(item, "pen", opts["pen"], bg))
        if opts.get("symbol") is not None and opts.get("symbolBrush") is not None:
            item.setSymbolBrush(_shifted_brush(item, "symbolBrush", opts["symbolBrush"], bg))
        if opts.get("fillLevel") is not None and opts.get("fillBrush") is not None:
            item.setFillBrush(_shifted_brush(item, "fillBrush", opts["fillBrush"], bg))
    elif isinstance(item, pg.InfiniteLine):
        item.setPen(_shifted_pen(item, "pen", item.pen, bg))
        label = getattr(item, "label", None)
        if label is not None:
            label.setColor(item.pen.color())
    elif isinstance(item, pg.BarGraphItem):
        if item.opts.get("brush") is not None:
            item.setOpts(brush=_shifted_brush(item, "brush", item.opts["brush"], bg))
