"""`laya gui --screenshot DIR`: fill each panel with real content, save one PNG per panel, quit.

Steps, each bounded in time: wait for the engine and its config; one chat exchange; a two-step
capacity sweep; a small load test (its live view is the picture); a routing explanation; then grab every panel (the load test twice:
its live split view, and the sweep's result as loadtest-sweep.png). A "shoot now" timer takes the pictures anyway
when the deadline approaches, so a stuck step never costs the pictures.
"""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from laya_desktop.gui.engine_controller import DOWN, UP
from laya_desktop.gui.main_window import PANELS, MainWindow

# A Markdown reply with a code box: SmolLM2 (the shipped default) answers this one, at temperature 0,
# with a fenced Python block. A base model such as gemma-270m loops instead, and the chat stops it.
CHAT_PROMPT = "Python code to reverse a list, in a Markdown code block:"


class ScreenshotDirector(QObject):
    def __init__(self, window: MainWindow, out_dir: str, deadline: float | None,
                 reserve_s: float = 15.0) -> None:
        super().__init__(window)
        self.window, self.out_dir = window, Path(out_dir)
        self.deadline = deadline            # time.monotonic() value, or None
        self.saved: list[str] = []
        self.engine_was_up = False
        self._step = "wait-engine"
        self._shot = False
        self._step_timer = QTimer(self)
        self._step_timer.setSingleShot(True)
        self._step_timer.timeout.connect(self._advance)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        window.engine.state_changed.connect(self._on_state)
        window.doc.applied_changed.connect(self._on_config)
        if deadline is not None:
            left_ms = int((deadline - time.monotonic() - reserve_s) * 1000)
            QTimer.singleShot(max(left_ms, 0), self.shoot)

    @property
    def complete(self) -> bool:
        return set(PANELS) <= set(self.saved) and self.engine_was_up

    def _left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def _bounded(self, seconds: float) -> int:
        return int(max(0.5, min(seconds, self._left() - 20)) * 1000)

    # --- steps ---------------------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        if state == UP:
            self.engine_was_up = True
            self.window.statusBar().showMessage(self.tr("screenshot mode: preparing panels…"))
        elif state == DOWN and self._step == "wait-engine":
            self._step = "shoot"
            QTimer.singleShot(1000, self.shoot)  # the engine failed: pictures of what there is

    def _on_config(self, _config: dict) -> None:
        if self._step == "wait-engine":
            self._step = "chat"
            self._step_timer.start(500)  # let the first telemetry and model rows arrive

    def _advance(self) -> None:
        if self._shot:
            return
        if self._step == "chat":
            chat = self.window.panel("chat")
            chat.max_tokens.setValue(160)
            chat.sampling.temperature.setValue(0.0)   # the same picture each run
            chat.reply_finished.connect(self._after_chat)
            self.window.tabs.setCurrentWidget(chat)
            chat.send(CHAT_PROMPT)
            self._step = "chat-wait"
            self._step_timer.start(self._bounded(45))
        elif self._step == "chat-wait":           # the reply took too long: stop it, go on
            self.window.panel("chat").stop()
            self._step = "sweep"
            self._step_timer.start(500)
        elif self._step == "loadtest":
            lt = self.window.panel("loadtest")
            lt.concurrency.setValue(2)
            lt.limit.setCurrentIndex(lt.limit.findData("duration"))   # long enough for curves
            lt.duration.setValue(6)
            lt.max_tokens.setValue(16)
            lt.finished.connect(self._after_loadtest)
            self.window.tabs.setCurrentWidget(lt)
            lt.start()
            self._step = "loadtest-wait"
            self._step_timer.start(self._bounded(30))
        elif self._step == "loadtest-wait":
            self.window.panel("loadtest").stop()
            self._step = "explain"
            self._step_timer.start(500)
        elif self._step == "sweep":
            lt = self.window.panel("loadtest")
            lt.sweep_max.setValue(2)
            lt.sweep_requests.setValue(4)
            lt.sweep_finished.connect(self._after_sweep)
            self.window.tabs.setCurrentWidget(lt)
            if not lt.start_sweep():
                self._step = "loadtest"
                self._advance()
                return
            self._step = "sweep-wait"
            self._step_timer.start(self._bounded(30))
        elif self._step == "sweep-wait":
            self.window.panel("loadtest").stop()
            self._step = "loadtest"
            self._step_timer.start(3500)     # Stop's grace, then the load test can start
        elif self._step == "explain":
            routes = self.window.panel("routes")
            routes.try_prompt.setPlainText("Write a Python function that reverses a list.")
            routes.try_tags.setText("code")
            routes.explain("Write a Python function that reverses a list.", ["code"], None)
            models = self.window.panel("models")
            if models.model.rowCount():
                models.table.selectRow(0)
            self.window.panel("requests").select_latest()  # its detail shows why it went there
            self._step = "shoot"
            self._step_timer.start(1500)  # the explanation and a few more samples arrive
        elif self._step == "shoot":
            self.shoot()

    def _after_chat(self, _result: dict) -> None:
        if self._step == "chat-wait":
            self._step = "sweep"
            self._step_timer.start(300)

    def _after_loadtest(self, _ok: bool, _result) -> None:
        if self._step == "loadtest-wait":
            self._step = "explain"
            self._step_timer.start(300)

    def _after_sweep(self, _ok: bool, _result) -> None:
        if self._step == "sweep-wait":
            self._step = "loadtest"
            self._step_timer.start(300)

    # --- pictures ------------------------------------------------------------------------------
    def shoot(self) -> None:
        if self._shot:
            return
        self._shot = True
        self._step_timer.stop()
        self._shoot_next(0)

    def _shoot_next(self, i: int) -> None:
        if i == len(PANELS):
            self.window.statusBar().showMessage(self.tr("saved {n} pictures in {folder}").format(
                n=len(self.saved), folder=self.out_dir))
            QTimer.singleShot(0, self.window.close)
            return
        key = PANELS[i]
        self.window.tabs.setCurrentWidget(self.window.panel(key))
        if key == "monitor":
            self.window.panel("monitor").redraw()
        if key == "loadtest":
            self.window.panel("loadtest").views.setCurrentIndex(0)    # the live split view

        def save(name: str) -> None:
            path = self.out_dir / f"{name}.png"
            if self.window.grab().save(str(path)) and path.stat().st_size > 0:
                self.saved.append(name)

        def grab() -> None:
            save(key)
            if key == "loadtest":       # and the sweep's result on its own picture
                self.window.panel("loadtest").views.setCurrentIndex(2)
                QTimer.singleShot(400, lambda: (save("loadtest-sweep"), self._shoot_next(i + 1)))
                return
            self._shoot_next(i + 1)
        QTimer.singleShot(400, grab)  # one layout and paint pass, and the plot timer's redraw
