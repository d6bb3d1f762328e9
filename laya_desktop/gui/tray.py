"""The tray icon: the engine's state and the loaded models at a glance, with open, load/unload and
quit in its menu; and the setting that keeps the engine serving there when the window closes.

TrayMenu is the menu and the tooltip built from plain state (the engine's, GET /admin/models'
rows); it asks for actions by signals and does none itself, so the window routes load and unload
through the Models panel's workers, and tests drive it where there is no system tray (offscreen).
Tray adds the QSystemTrayIcon, shown only where the desktop has a tray.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from laya_desktop.gui.registry_model import state_text
from laya_desktop.gui.translations import settings
from laya_desktop.telemetry.model_sample import ModelState

KEEP_SERVING_KEY = "tray/keep_serving"
ENGINE_UP = "up"
# A model that can be loaded has a runner to start; remote ones have none.
LOADABLE = frozenset({ModelState.UNLOADED, ModelState.ERROR})
UNLOADABLE = frozenset({ModelState.LOADING, ModelState.READY, ModelState.BUSY})


def keeps_serving() -> bool:
    """The user's choice: closing the window leaves the engine serving in the tray (off by default)."""
    return str(settings().value(KEEP_SERVING_KEY, "false")).lower() == "true"


def save_keeps_serving(on: bool) -> None:
    s = settings()
    s.setValue(KEEP_SERVING_KEY, "true" if on else "false")
    s.sync()


def system_tray_available() -> bool:
    return QSystemTrayIcon.isSystemTrayAvailable()


def _state(row: dict) -> ModelState | None:
    try:
        return ModelState(row.get("state"))
    except ValueError:
        return None


class TrayMenu(QObject):
    open_requested = Signal()
    load_requested = Signal(str)
    unload_requested = Signal(str)
    quit_requested = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.menu = QMenu()
        self.engine_state = "down"
        self.rows: list[dict] = []
        self.model_actions: dict[str, QAction] = {}
        self._shown: tuple = ()
        self._rebuild()

    def set_engine_state(self, state: str) -> None:
        if state != self.engine_state:
            self.engine_state = state
            self._rebuild()

    def set_models(self, rows: list[dict]) -> None:
        self.rows = [r for r in rows if r.get("name")]
        self._rebuild()

    def loaded_names(self) -> list[str]:
        return [r["name"] for r in self.rows if (_state(r) or ModelState.UNLOADED).loaded]

    def tooltip(self) -> str:
        names = {"up": self.tr("up"), "down": self.tr("down"), "starting": self.tr("starting")}
        lines = [self.tr("Laya Desktop — engine {state}").format(
            state=names.get(self.engine_state, self.engine_state))]
        loaded = self.loaded_names()
        if self.engine_state == ENGINE_UP:
            lines.append(self.tr("loaded: {names}").format(names=", ".join(loaded)) if loaded
                         else self.tr("no model loaded"))
        return "\n".join(lines)

    def _rebuild(self) -> None:
        shown = (self.engine_state, tuple((r["name"], r.get("state")) for r in self.rows))
        if shown == self._shown:
            return   # the poller repeats itself twice a second; an open menu must not flicker
        self._shown = shown
        self.menu.clear()
        self.model_actions = {}
        self.menu.addAction(self.tr("Open Laya Desktop"), self.open_requested.emit)
        status = self.menu.addAction(self.tooltip().splitlines()[0])
        status.setEnabled(False)
        self.menu.addSeparator()
        up = self.engine_state == ENGINE_UP
        for row in self.rows if up else ():
            self._add_model(row)
        if up and not self.rows:
            self.menu.addAction(self.tr("no models")).setEnabled(False)
        self.menu.addSeparator()
        self.menu.addAction(self.tr("Quit"), self.quit_requested.emit)

    def _add_model(self, row: dict) -> None:
        name, state = row["name"], _state(row)
        label = f"{name} — {state_text(row.get('state') or '')}"
        if state in LOADABLE:
            action = self.menu.addAction(self.tr("Load {model}").format(model=label))
            action.triggered.connect(lambda _c=False, n=name: self.load_requested.emit(n))
        elif state in UNLOADABLE:
            action = self.menu.addAction(self.tr("Unload {model}").format(model=label))
            action.triggered.connect(lambda _c=False, n=name: self.unload_requested.emit(n))
        else:   # remote, or on its way out: nothing to do from here
            action = self.menu.addAction(label)
            action.setEnabled(False)
        self.model_actions[name] = action


class Tray(QObject):
    """The system tray's icon over a TrayMenu; `shown` is False where the desktop has no tray."""

    def __init__(self, icon: QIcon, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.menu = TrayMenu(self)
        self.icon = QSystemTrayIcon(icon, self)
        self._icon, self._told = icon, False
        self.icon.setContextMenu(self.menu.menu)
        self.icon.setToolTip(self.menu.tooltip())
        self.icon.activated.connect(self._on_activated)
        self.shown = system_tray_available()
        if self.shown:
            self.icon.show()

    def set_engine_state(self, state: str) -> None:
        self.menu.set_engine_state(state)
        mode = QIcon.Mode.Normal if state == ENGINE_UP else QIcon.Mode.Disabled
        self.icon.setIcon(QIcon(self._icon.pixmap(64, 64, mode)))   # grey while the engine is down
        self.icon.setToolTip(self.menu.tooltip())

    def set_models(self, rows: list[dict]) -> None:
        self.menu.set_models(rows)
        self.icon.setToolTip(self.menu.tooltip())

    def tell_still_serving(self) -> None:
        """Once a run: closing the window did not stop the engine; say where it went."""
        if self.shown and not self._told:
            self._told = True
            self.icon.showMessage(self.tr("Laya Desktop is still serving"),
                                  self.tr("The engine keeps running in the tray. Quit from the "
                                          "tray's menu to stop it."))

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger,
                      QSystemTrayIcon.ActivationReason.DoubleClick):
            self.menu.open_requested.emit()

    def hide(self) -> None:
        self.icon.hide()
