"""Workers that keep blocking work off the GUI thread (after superqt's `utils/_qthreading.py`).

A worker runs in a QThreadPool and reports through signals (`started`, `yielded`, `returned`,
`errored`, `finished`) that Qt delivers on the receiver's thread, so slots connected from GUI objects
run on the GUI thread. `WorkerPool` owns one QThreadPool per window (no module-level state), keeps
the Python workers alive until they finish, and stops them all on close.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class WorkerSignals(QObject):
    started = Signal()
    yielded = Signal(object)
    returned = Signal(object)
    errored = Signal(object)
    finished = Signal()


class FunctionWorker(QRunnable):
    """Calls fn(*args, **kwargs) once; emits `returned` with its result or `errored` with the exception."""

    def __init__(self, fn: Callable[..., Any], *args: Any,
                 on_quit: Callable[[], None] | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.signals = WorkerSignals()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._quit = threading.Event()
        self._on_quit = on_quit

    def quit(self) -> None:
        """Ask the work to stop; `on_quit` lets blocking work notice (cut a connection, set an event)."""
        self._quit.set()
        if self._on_quit is not None:
            try:
                self._on_quit()
            except Exception:  # noqa: BLE001 - closing an already closed stream is fine
                pass

    @property
    def abort_requested(self) -> bool:
        return self._quit.is_set()

    def run(self) -> None:
        self.signals.started.emit()
        try:
            result = self._fn(*self._args, **self._kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the GUI
            self.signals.errored.emit(exc)
        else:
            self.signals.returned.emit(result)
        finally:
            self.signals.finished.emit()


class GeneratorWorker(FunctionWorker):
    """Iterates a generator, emitting `yielded` per item; `quit()` stops it between items.

    A generator blocked inside a read cannot see the flag, so `quit()` also calls the optional
    `on_quit` hook, which must wake the read (close what it reads from).
    """


    def run(self) -> None:
        self.signals.started.emit()
        gen = None
        try:
            gen = self._fn(*self._args, **self._kwargs)
            result = None
            while not self._quit.is_set():
                try:
                    item = next(gen)
                except StopIteration as stop:
                    result = stop.value
                    break
                self.signals.yielded.emit(item)
        except Exception as exc:  # noqa: BLE001
            if self._quit.is_set():
                self.signals.returned.emit(None)  # an abort, not an error
            else:
                self.signals.errored.emit(exc)
        else:
            self.signals.returned.emit(result)
        finally:
            if gen is not None:
                try:
                    gen.close()
                except Exception:  # noqa: BLE001
                    pass
            self.signals.finished.emit()


class WorkerPool(QObject):
    """Starts workers, keeps them referenced while they run, and stops them on shutdown."""

    def __init__(self, parent: QObject | None = None, max_threads: int = 8) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._active: set[FunctionWorker] = set()
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any,
               returned: Callable[[Any], None] | None = None,
               errored: Callable[[Exception], None] | None = None,
               finished: Callable[[], None] | None = None,
               on_quit: Callable[[], None] | None = None, **kwargs: Any) -> FunctionWorker:
        worker = FunctionWorker(fn, *args, on_quit=on_quit, **kwargs)
        return self._start(worker, None, returned, errored, finished)

    def stream(self, fn: Callable[..., Iterator[Any]], *args: Any,
               yielded: Callable[[Any], None] | None = None,
               returned: Callable[[Any], None] | None = None,
               errored: Callable[[Exception], None] | None = None,
               finished: Callable[[], None] | None = None,
               on_quit: Callable[[], None] | None = None, **kwargs: Any) -> GeneratorWorker:
        worker = GeneratorWorker(fn, *args, on_quit=on_quit, **kwargs)
        return self._start(worker, yielded, returned, errored, finished)  # type: ignore[return-value]

    def _start(self, worker, yielded, returned, errored, finished):
        if yielded is not None:
            worker.signals.yielded.connect(yielded)
        if returned is not None:
            worker.signals.returned.connect(returned)
        if errored is not None:
            worker.signals.errored.connect(errored)
        if finished is not None:
            worker.signals.finished.connect(finished)
        worker.signals.finished.connect(lambda w=worker: self._active.discard(w))
        self._active.add(worker)
        if self._closed:
            worker.quit()
        self._pool.start(worker)
        return worker

    @property
    def active_count(self) -> int:
        return len(self._active)

    @property
    def running_threads(self) -> int:
        return self._pool.activeThreadCount()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Ask every worker to stop and wait for the pool; True when all ended in time. Work that
        blocks on something `quit()` cannot reach must be woken first (`EngineClient.abort()`)."""
        self._closed = True
        for worker in list(self._active):
            worker.quit()
        self._pool.clear()
        return self._pool.waitForDone(timeout_ms)
