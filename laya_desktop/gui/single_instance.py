"""One app per config: a second launch asks the first to raise its window, then exits.

A QLockFile decides who is first (it notices a crashed holder by its pid, so a stale lock never
blocks a start); the first then listens on a QLocalServer named after the same key, and a later
launch connects there and writes "raise". The key is the user plus the resolved models.yaml path,
so a second app on another config (and a test's temporary config) is not affected.
"""
from __future__ import annotations

import getpass
import hashlib
import os
import tempfile
import time

from PySide6.QtCore import QByteArray, QLockFile, QObject, QStandardPaths, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

RAISE = b"raise\n"
CONNECT_TIMEOUT_MS = 1000
PRIMARY_WAIT_S = 3.0   # the first instance holds the lock a moment before it listens


def instance_key(config_path: str) -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    digest = hashlib.sha256(f"{user}\0{os.path.realpath(config_path)}".encode()).hexdigest()
    return f"laya-{digest[:20]}"


class SingleInstance(QObject):
    raise_requested = Signal()

    def __init__(self, key: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.key = key
        folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.RuntimeLocation) \
            or tempfile.gettempdir()
        self._lock = QLockFile(os.path.join(folder, f"{key}.lock"))
        self._lock.setStaleLockTime(0)  # only a dead holder makes it stale, never its age
        self._server: QLocalServer | None = None

    def acquire(self) -> bool:
        """True: we are the first and now listen for later launches. False: another holds it."""
        if not self._lock.tryLock(0):
            return False
        QLocalServer.removeServer(self.key)  # a socket file left behind by a crash
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._on_connection)
        self._server.listen(self.key)
        return True

    def ask_first_to_raise(self) -> bool:
        deadline = time.monotonic() + PRIMARY_WAIT_S
        while True:
            socket = QLocalSocket()
            socket.connectToServer(self.key)
            if socket.waitForConnected(CONNECT_TIMEOUT_MS):
                socket.write(QByteArray(RAISE))
                sent = socket.waitForBytesWritten(CONNECT_TIMEOUT_MS)
                socket.disconnectFromServer()
                return sent
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

    def stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def release(self) -> None:
        self.stop_listening()
        self._lock.unlock()

    def _on_connection(self) -> None:
        while self._server is not None and self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.setParent(self)  # outlives the server's close(); deleted once read
            socket.readyRead.connect(self._on_message)

    def _on_message(self) -> None:
        socket = self.sender()
        if not isinstance(socket, QLocalSocket):
            return
        if RAISE.strip() in bytes(socket.readAll().data()):
            self.raise_requested.emit()
        socket.readyRead.disconnect(self._on_message)
        socket.abort()
        socket.deleteLater()


def bring_to_front(window) -> None:
    window.showNormal() if window.isMinimized() else window.show()
    window.raise_()
    window.activateWindow()
