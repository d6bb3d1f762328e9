"""Attach to the engine at the configured address, or start it as our child; restart; stop on exit.

Every blocking step (health probes, the child's start and stop) runs in the window's WorkerPool;
the controller only reacts to their signals on the GUI thread.
"""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QTimer, Signal

from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_process import EngineProcess
from laya_desktop.gui.workers import WorkerPool

STARTING, UP, DOWN = "starting", "up", "down"
# At quit our engine stops in about half a second of its closed pipe, runners and all (its own
# backstop kills them at 1.5 s, engine/serve.py); past this bound the GUI kills its group, so the
# app is gone within 2 s of SIGTERM however the engine fares.
QUIT_GRACE_S = 1.2


class EngineController(QObject):
    state_changed = Signal(str)     # starting | up | down
    message = Signal(str)           # human-readable news for the status bar
    child_died = Signal(str)        # the engine we started exited on its own: its log's tail

    def __init__(self, pool: WorkerPool, config_path: str, host: str, port: int,
                 api_key: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = pool
        self.host, self.port = host, port
        self.address = f"http://{host}:{port}"
        self.process = EngineProcess(config_path, host, port)
        self.client = EngineClient(self.address, api_key, app_token=self.process.app_token)
        self.state = DOWN
        self.owns_child = False
        self._cancel = threading.Event()
        self._watch = QTimer(self)
        self._watch.setInterval(2000)
        self._watch.timeout.connect(self._check_alive)
        self._probe_in_flight = False
        self._death_told = False

    # --- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._set_state(STARTING)
        self.pool.submit(self._attach_or_spawn, returned=self._on_started, errored=self._on_failed)

    def _attach_or_spawn(self) -> str:
        if self.client.healthy(timeout=1.0):
            return "attached"
        self.process.start()
        if self.process.wait_healthy(self.client, timeout=45.0, cancelled=self._cancel):
            return "spawned"
        tail = self.process.log_tail()
        raise RuntimeError(self.tr("the engine did not become healthy at {address}").format(
            address=self.address) + "\n" + tail)

    def _on_started(self, how: str) -> None:
        self.owns_child = how == "spawned"
        self._death_told = False
        text = self.tr("started engine at {address}") if self.owns_child \
            else self.tr("attached to engine at {address}")
        self.message.emit(text.format(address=self.address))
        self._set_state(UP)
        self._watch.start()

    def _on_failed(self, exc: Exception) -> None:
        self.message.emit(str(exc).splitlines()[0] if str(exc) else repr(exc))
        self._set_state(DOWN)
        self._watch.start()

    # --- watch ---------------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._probe_in_flight or self.state == STARTING:
            return
        self._probe_in_flight = True
        self.pool.submit(self.client.healthy, 1.5, returned=self._on_probe)

    def _on_probe(self, ok: bool) -> None:
        self._probe_in_flight = False
        if self.state == STARTING:
            return
        new = UP if ok else DOWN
        if new != self.state:
            self._set_state(new)
        if not ok and self.owns_child and not self._death_told and not self.process.running():
            # told once: the offer to restart it stands until the user answers
            self._death_told = True
            self.child_died.emit(self.process.log_tail(2000))

    # --- restart and stop ----------------------------------------------------------------------
    def restart(self) -> None:
        if not self.owns_child and self.state == UP:
            self.message.emit(self.tr("the engine at this address is not ours to restart"))
            return
        self._watch.stop()
        self._set_state(STARTING)
        self.pool.submit(self._restart_blocking, returned=self._on_started, errored=self._on_failed)

    def _restart_blocking(self) -> str:
        self.process.stop(grace_s=10.0)
        self.process.start()
        if self.process.wait_healthy(self.client, timeout=45.0, cancelled=self._cancel):
            return "spawned"
        raise RuntimeError(self.tr("the engine did not come back at {address}").format(address=self.address))

    def abort_pending(self) -> None:
        """End every blocking call on the engine now (any thread): waiting for health, and the
        HTTP calls in flight, which a stalled engine would hold up to their timeouts."""
        self._cancel.set()
        self.client.abort()

    def begin_shutdown(self) -> None:
        """Non-blocking, at exit before the workers are stopped: our engine starts its own stop
        now, so that it runs beside the workers' instead of after them."""
        self._cancel.set()
        self._watch.stop()
        self.process.ask_to_stop()

    def shutdown(self, grace_s: float = QUIT_GRACE_S) -> None:
        """Blocking: called once at exit, after the workers were asked to stop."""
        self.begin_shutdown()
        if self.owns_child or self.process.running():
            self.process.stop(grace_s=grace_s)
        self.client.close()

    def _set_state(self, state: str) -> None:
        self.state = state
        self.state_changed.emit(state)
