"""The main window: six panels in tabs, the menus and the status bar. Wiring only."""
from __future__ import annotations

from PySide6.QtCore import QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QDesktopServices
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QTabWidget

from laya_desktop.gui import translations
from laya_desktop.gui.about_dialog import AboutDialog, app_icon

from laya_desktop.gui.engine_controller import QUIT_GRACE_S, UP, EngineController
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.single_instance import bring_to_front
from laya_desktop.gui.tray import Tray, keeps_serving, save_keeps_serving
from laya_desktop.gui.units import fmt_bytes
from laya_desktop.gui.workers import WorkerPool
from laya_desktop.telemetry.model_sample import ModelState

PANELS = ("models", "routes", "monitor", "requests", "chat", "loadtest")
WORKER_WAIT_MS = 3000   # every worker is woken first, so this bound is only reached by a bug

LOADED_STATES = frozenset(state.value for state in ModelState if state.loaded)


class MainWindow(QMainWindow):
    closed = Signal()   # the window closed for good (not into the tray): the app may quit

    def __init__(self, config_path: str, host: str, port: int, api_key: str | None = None,
                 *, panels_later: bool = False, tray: bool = True) -> None:
        """panels_later: build the panels on the event loop's first turn, after the window is
        on screen; their modules (pyqtgraph, numpy, the editors) are then imported there too,
        so a launch shows the window in about half the time. tray: a tray icon (where the
        desktop has a tray), and closing the window may leave the engine serving there."""
        super().__init__()
        self.setWindowTitle(self.tr("Laya Desktop — {path}").format(path=config_path))
        self.setWindowIcon(app_icon())
        self.restore_geometry()
        self.pool = WorkerPool(self)
        self._api_key = api_key
        self.engine = EngineController(self.pool, config_path, host, port, api_key, self)
        self.state = EngineState(self.engine.client, self)
        self.doc = self.state   # the panels' name for it: the config they edit
        self.panels: dict = {}
        self.tabs = QTabWidget()
        self.setCentralWidget(self.tabs)
        self.tray = Tray(app_icon(), self) if tray else None
        self._quitting = False
        self._build_menu()
        self._build_status()
        self._closed = False
        self._start_when_built = False
        self.workers_ended = True
        self.engine.state_changed.connect(self._on_engine_state)
        self.engine.child_died.connect(self._offer_restart)
        self.restart_offer: QMessageBox | None = None
        self.engine.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.state.failed.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.state.samples.connect(self._on_samples)
        self.state.models.connect(self._on_models)
        if self.tray is not None:
            self._wire_tray(self.tray)
        if panels_later:
            QTimer.singleShot(0, self._build_panels)
        else:
            self._build_panels()

    def _build_panels(self) -> None:
        from laya_desktop.gui.panels.chat_panel import ChatPanel
        from laya_desktop.gui.panels.loadtest_panel import LoadTestPanel
        from laya_desktop.gui.panels.models_panel import ModelsPanel
        from laya_desktop.gui.panels.monitor_panel import MonitorPanel
        from laya_desktop.gui.panels.requests_panel import RequestsPanel
        from laya_desktop.gui.panels.routes_panel import RoutesPanel

        if self._closed:
            return
        client = self.engine.client
        self.panels = {
            "models": ModelsPanel(self.pool, self.doc),
            "routes": RoutesPanel(self.pool, self.doc),
            "monitor": MonitorPanel(),
            "requests": RequestsPanel(self.state),
            "chat": ChatPanel(self.pool, client),
        }
        self.panels["loadtest"] = LoadTestPanel(self.pool, self.engine.address, self._api_key,
                                                monitor=self.panels["monitor"])
        titles = (self.tr("Models"), self.tr("Routes"), self.tr("Monitor"), self.tr("Requests"),
                  self.tr("Chat"), self.tr("Load test"))
        for key, title in zip(PANELS, titles):
            self.tabs.addTab(self.panels[key], title)

        self.state.applied_changed.connect(
            lambda cfg: self.panels["chat"].set_models([m.get("name", "") for m in cfg.get("models", [])]))
        self.state.applied_changed.connect(
            lambda cfg: self.panels["loadtest"].set_models([m.get("name", "") for m in cfg.get("models", [])]))
        self.state.samples.connect(self.panels["monitor"].add_samples)
        self.state.events.connect(self.panels["monitor"].add_events)
        self.state.poll_failed.connect(self.panels["monitor"].show_problem)
        self.state.applied_changed.connect(self.panels["monitor"].set_config)
        self.state.changed_elsewhere.connect(lambda _: self.statusBar().showMessage(
            self.tr("The config was changed outside this window (models.yaml edited, or another "
                    "client); the panels show it now."), 8000))
        self.state.restarted.connect(self.panels["monitor"].reset)
        self.state.models.connect(self.panels["models"].set_live)
        if self._start_when_built:
            self.engine.start()

    def panel(self, key: str):
        return self.panels[key]

    def restore_geometry(self) -> None:
        from laya_desktop.gui import window_geometry
        window_geometry.restore(self)

    def save_geometry(self) -> None:
        from laya_desktop.gui import window_geometry
        window_geometry.save(self)

    def _build_menu(self) -> None:
        engine_menu = self.menuBar().addMenu(self.tr("&Engine"))
        restart = QAction(self.tr("&Restart engine"), self)
        restart.triggered.connect(self.engine.restart)
        engine_menu.addAction(restart)
        self.open_logs_action = QAction(self.tr("Open &log folder"), self)
        self.open_logs_action.triggered.connect(self.open_log_folder)
        engine_menu.addAction(self.open_logs_action)
        engine_menu.addSeparator()
        self.keep_serving_action = QAction(
            self.tr("&Keep serving in the tray when the window closes"), self, checkable=True)
        self.keep_serving_action.setChecked(keeps_serving())
        self.keep_serving_action.toggled.connect(save_keeps_serving)
        if self.tray is None or not self.tray.shown:
            self.keep_serving_action.setEnabled(False)
            self.keep_serving_action.setToolTip(self.tr("This desktop has no system tray"))
        engine_menu.addAction(self.keep_serving_action)
        quit_action = QAction(self.tr("&Quit"), self)
        quit_action.setShortcut("Ctrl+Q")
        quit_action.triggered.connect(self.quit_app)
        engine_menu.addAction(quit_action)

        view_menu = self.menuBar().addMenu(self.tr("&View"))
        self.language_menu = view_menu.addMenu(self.tr("&Language"))
        self.language_actions = QActionGroup(self)
        saved = translations.saved_language()
        choices = [(translations.SYSTEM, self.tr("System default"))] + list(translations.LANGUAGES.items())
        for code, label in choices:
            action = QAction(label, self, checkable=True)
            action.setData(code)
            action.setChecked(code == saved)
            action.triggered.connect(lambda _c=False, c=code: self.choose_language(c))
            self.language_actions.addAction(action)
            self.language_menu.addAction(action)

        help_menu = self.menuBar().addMenu(self.tr("&Help"))
        about = QAction(self.tr("&About Laya Desktop"), self)
        about.triggered.connect(self.show_about)
        help_menu.addAction(about)

    def _wire_tray(self, tray: Tray) -> None:
        self.engine.state_changed.connect(tray.set_engine_state)
        self.state.models.connect(tray.set_models)
        tray.menu.open_requested.connect(lambda: bring_to_front(self))
        tray.menu.quit_requested.connect(self.quit_app)
        tray.menu.load_requested.connect(lambda name: self._model_action("load", name))
        tray.menu.unload_requested.connect(lambda name: self._model_action("unload", name))

    def _model_action(self, action: str, name: str) -> None:
        """From the tray: the Models panel's own load or unload (a worker, its status line)."""
        models = self.panels.get("models")
        if models is not None and not self._closed:
            getattr(models, action)(name)

    def show_about(self) -> AboutDialog:
        dialog = AboutDialog(self)
        dialog.open()
        return dialog

    def open_log_folder(self) -> bool:
        folder = self.engine.process.log_dir
        folder.mkdir(parents=True, exist_ok=True)
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def choose_language(self, code: str) -> None:
        translations.save_language(code)
        self.statusBar().showMessage(
            self.tr("The language changes the next time Laya Desktop starts."), 8000)

    def _build_status(self) -> None:
        self.status_address = QLabel(self.engine.address)
        self.status_state = QLabel(self._state_text("down"))
        self.status_models = QLabel(self.tr("models loaded: {loaded}/{total}").format(loaded=0, total=0))
        self.status_ram = QLabel(self.tr("RAM: {used} / {total}").format(used="—", total="—"))
        for w in (self.status_address, self.status_state, self.status_models, self.status_ram):
            self.statusBar().addPermanentWidget(w)

    # --- reactions -----------------------------------------------------------------------------
    def _on_engine_state(self, state: str) -> None:
        self.status_state.setText(self._state_text(state))
        self.status_state.setStyleSheet("color: #1f7a1f" if state == UP else "color: #b00020")
        if not self.panels:   # panels_later: nothing to tell yet (the engine starts after them)
            return
        if state == UP:
            self.state.start()   # its first tick reads the config
            self.panels["requests"].start()
        else:
            self.state.stop()
            self.panels["requests"].stop()

    def _offer_restart(self, log_tail: str) -> None:
        """The engine this window started has died (a crash, a kill, the OOM killer): say so and
        offer to start it again; modeless, so the window stays usable until the user answers."""
        if self._closed:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Engine stopped"),
                          self.tr("The engine that Laya Desktop started has stopped unexpectedly. "
                                  "Start it again?"), QMessageBox.StandardButton.NoButton, self)
        restart = box.addButton(self.tr("Restart engine"), QMessageBox.ButtonRole.AcceptRole)
        box.addButton(self.tr("Not now"), QMessageBox.ButtonRole.RejectRole)
        if log_tail.strip():
            box.setDetailedText(log_tail)
        restart.clicked.connect(self.engine.restart)
        box.finished.connect(lambda _: setattr(self, "restart_offer", None))
        self.restart_offer = box
        box.setModal(False)
        box.show()

    def _on_models(self, rows: list[dict]) -> None:
        loaded = sum(1 for r in rows if r.get("state") in LOADED_STATES)
        self.status_models.setText(self.tr("models loaded: {loaded}/{total}").format(
            loaded=loaded, total=len(rows)))

    def _on_samples(self, samples: list[dict]) -> None:
        s = samples[-1]
        self.status_ram.setText(self.tr("RAM: {used} / {total}").format(
            used=fmt_bytes(s.get("ram_used")), total=fmt_bytes(s.get("ram_total"))))

    def _state_text(self, state: str) -> str:
        names = {"up": self.tr("up"), "down": self.tr("down"), "starting": self.tr("starting")}
        return self.tr("engine: {state}").format(state=names.get(state, state))

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start (or attach to) the engine; with panels_later, once the panels exist, so that
        everything that reacts to the engine coming up is there to see it."""
        if not self.panels:
            self._start_when_built = True
            return
        self.engine.start()

    def shutdown(self, grace_s: float = QUIT_GRACE_S) -> bool:
        """Stop polling and streams, wait (bounded) for the workers, then stop our engine, which
        was asked to stop first so that both run at once. Idempotent; False when a worker was
        still running at the bound."""
        if self._closed:
            return self.workers_ended
        self._closed = True
        self.engine.begin_shutdown()
        self.state.stop()
        if self.panels:
            self.panels["monitor"].stop()
            self.panels["requests"].stop()
            self.panels["chat"].shutdown()
        self.engine.abort_pending()
        self.workers_ended = self.pool.shutdown(timeout_ms=WORKER_WAIT_MS)
        self.engine.shutdown(grace_s=grace_s)
        return self.workers_ended

    def keeps_serving_in_tray(self) -> bool:
        return self.tray is not None and self.tray.shown and self.keep_serving_action.isChecked()

    def quit_app(self) -> None:
        """Quit, whatever the tray setting: Engine > Quit, the tray's Quit, SIGTERM, a deadline."""
        self._quitting = True
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt name
        if not self._quitting and not self._closed and self.keeps_serving_in_tray():
            event.ignore()
            self.hide()
            self.tray.tell_still_serving()
            return
        self.hide()
        if self.tray is not None:
            self.tray.hide()
        self.shutdown()
        event.accept()
        self.closed.emit()
