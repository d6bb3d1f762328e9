"""Where a window opens: at most 90 % of the screen's available area, centred, the first time;
afterwards where the user left it (QSettings, app.ini beside the language choice), clamped to the
screen it lands on now (a laptop undocked from a big monitor must not open off screen)."""
from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from laya_desktop.gui.translations import settings

SCREEN_SHARE = 0.9
PREFERRED = QSize(1280, 800)
GEOMETRY_KEY = "window/geometry"
MAXIMIZED_KEY = "window/maximized"


def fit_size(want: QSize, available: QRect, share: float = SCREEN_SHARE) -> QSize:
    """`want`, made no larger than `share` of `available` in either direction."""
    return QSize(min(want.width(), int(available.width() * share)),
                 min(want.height(), int(available.height() * share)))


def first_rect(available: QRect, preferred: QSize = PREFERRED) -> QRect:
    rect = QRect(QPoint(0, 0), fit_size(preferred, available))
    rect.moveCenter(available.center())
    return rect


def clamp_rect(rect: QRect, available: QRect) -> QRect:
    """`rect` no larger than `available` and moved (not shrunk further) to lie inside it."""
    size = QSize(min(rect.width(), available.width()), min(rect.height(), available.height()))
    x = min(max(rect.x(), available.left()), available.left() + available.width() - size.width())
    y = min(max(rect.y(), available.top()), available.top() + available.height() - size.height())
    return QRect(x, y, size.width(), size.height())


def _saved_rect() -> QRect | None:
    value = settings().value(GEOMETRY_KEY)
    if isinstance(value, (list, tuple)):   # an ini value edited by hand without its quotes
        value = ",".join(map(str, value))
    try:
        x, y, w, h = (int(part) for part in str(value).split(","))
    except (TypeError, ValueError):
        return None
    return QRect(x, y, w, h) if w > 0 and h > 0 else None


def _available_for(rect: QRect | None) -> QRect:
    screen = QGuiApplication.screenAt(rect.center()) if rect is not None else None
    return (screen or QGuiApplication.primaryScreen()).availableGeometry()


def restore(window: QWidget) -> None:
    """Give `window` its saved place, or its first one; call before it is shown."""
    saved = _saved_rect()
    available = _available_for(saved)
    rect = clamp_rect(saved, available) if saved is not None else first_rect(available)
    window.resize(rect.size())
    window.move(rect.topLeft())
    if saved is not None and str(settings().value(MAXIMIZED_KEY, "false")).lower() == "true":
        window.setWindowState(window.windowState() | Qt.WindowState.WindowMaximized)


def save(window: QWidget) -> None:
    """Remember the window's normal (not maximized) place and whether it was maximized."""
    # pos() is the frame's corner, as move() takes it: the window does not creep by its title bar
    rect = window.normalGeometry() if window.isMaximized() else QRect(window.pos(), window.size())
    if rect.width() <= 0 or rect.height() <= 0:
        return
    s = settings()
    s.setValue(GEOMETRY_KEY, f"{rect.x()},{rect.y()},{rect.width()},{rect.height()}")
    s.setValue(MAXIMIZED_KEY, "true" if window.isMaximized() else "false")
    s.sync()
