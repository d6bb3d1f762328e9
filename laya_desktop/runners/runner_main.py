"""The runner process: one model, commands on stdin, events on a private copy of fd 1.

fd 1 is pointed at stderr before anything loads, so whatever llama.cpp or a library prints lands
in the runner's log and cannot corrupt the event stream. A reader thread turns stdin lines into a
queue; the main loop alone drives the backend: take commands, run one step while there is work,
otherwise wait for the next command. stdin closing means the engine is gone: exit.
"""
from __future__ import annotations

import json
import logging
import os
import queue
import signal
import sys
import threading
import time
import traceback

from laya_desktop.runners import protocol as P
from laya_desktop.runners.cadence import STATS_PUSH_S
from laya_desktop.runners.contract import RunnerBackend

log = logging.getLogger("laya.runner")

IDLE_WAIT_S = 1.0
HEARTBEAT_S = 0.5           # the engine takes a runner silent for 2 s or more (with work) as hung
_EOF = None
_WAKE = object()            # a backend's worker finished something (a grammar): look now


class EventWriter:
    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "wb", buffering=0)
        self._lock = threading.Lock()  # the main loop and the heartbeat write whole lines

    def write(self, events: list[dict]) -> None:
        if events:
            data = b"".join(P.encode(e) for e in events)
            with self._lock:
                self._file.write(data)


def _heartbeat(out: EventWriter) -> None:
    # Its own thread: llama.cpp releases the GIL while it computes, so a long step still beats,
    # and a stopped or deadlocked process does not.
    while True:
        time.sleep(HEARTBEAT_S)
        try:
            out.write([P.alive()])
        except OSError:  # the engine is gone; the main loop ends on stdin EOF
            return


def _take_protocol_fd() -> int:
    """A private duplicate of fd 1 for the protocol; fd 1 itself now goes to stderr."""
    sys.stdout.flush()
    proto = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _read_stdin(commands: queue.Queue) -> None:
    # os.read on fd 0, not sys.stdin: a daemon thread blocked inside a buffered reader holds its
    # lock, and the interpreter aborts at exit when it cannot take that lock.
    # A bytearray, split only when a newline arrives: re-joining `pending + data` for every
    # 64 KiB chunk made a long prompt quadratic (seconds under the GIL for a line of megabytes).
    pending = bytearray()
    while True:
        try:
            data = os.read(0, 1 << 16)
        except OSError:
            data = b""
        if not data:
            break
        pending += data
        if b"\n" not in data:
            continue
        *lines, rest = pending.split(b"\n")
        pending = bytearray(rest)
        for line in lines:
            if line.strip():
                commands.put(bytes(line))
    if pending.strip():
        commands.put(bytes(pending))
    commands.put(_EOF)


def make_backend(kind: str, spec: dict) -> RunnerBackend:
    if kind == "llama_cpp" and spec.get("embedding"):
        from laya_desktop.runners.llama_embedding import LlamaEmbeddingBackend
        return LlamaEmbeddingBackend(spec)
    if kind == "llama_cpp":
        from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend
        return LlamaCppBackend(spec)
    if kind == "mlx":
        from laya_desktop.runners.mlx_backend import MlxBackend
        return MlxBackend(spec)
    raise ValueError(f"unknown backend {kind!r} (valid: llama_cpp, mlx)")


def run_runner(args) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s runner %(levelname)s %(message)s")
    out = EventWriter(_take_protocol_fd())
    # Ctrl-C in a terminal reaches the whole process group; the engine decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        spec = json.loads(args.spec)
        if not isinstance(spec, dict):
            raise ValueError("--spec must be a JSON object")
        backend = make_backend(args.backend, spec)
    except Exception as exc:  # anything that stops the load is reported, then exit 1
        traceback.print_exc()
        out.write([P.load_failed(str(exc) or type(exc).__name__)])
        return 1
    info = backend.info()
    log.info("ready: %s", json.dumps(info))
    out.write([P.ready(info)])
    commands: queue.Queue = queue.Queue()
    if hasattr(backend, "set_wake"):
        backend.set_wake(lambda: commands.put(_WAKE))
    threading.Thread(target=_read_stdin, args=(commands,), name="stdin", daemon=True).start()
    threading.Thread(target=_heartbeat, args=(out,), name="heartbeat", daemon=True).start()
    try:
        return Runner(backend, out, commands).run()
    except BrokenPipeError:   # the engine closed our stdout: it is gone
        return 0
    finally:
        backend.close()


class Runner:
    def __init__(self, backend: RunnerBackend, out: EventWriter, commands: queue.Queue):
        self.backend = backend
        self.out = out
        self.commands = commands
        self._last_stats = 0.0
        self._was_busy = False

    def run(self) -> int:
        while True:
            busy = self.backend.has_work()
            try:
                line = self.commands.get(block=not busy, timeout=None if busy else IDLE_WAIT_S)
            except queue.Empty:
                line = ...
            while line is not ...:
                if line is _WAKE:
                    pass   # has_work() is true now; the step below takes the worker's results
                elif line is _EOF:
                    log.info("stdin closed: the engine is gone, exiting")
                    return 0
                elif self._handle(line) == "shutdown":
                    log.info("shutdown")
                    return 0
                try:
                    line = self.commands.get_nowait()
                except queue.Empty:
                    line = ...
            if self.backend.has_work():
                self.out.write(self.backend.step())
                self._was_busy = True
                self._push_stats(force=False)
            elif self._was_busy:   # one last sample shows the slots free again
                self._was_busy = False
                self._push_stats(force=True)

    def _handle(self, line: bytes) -> str | None:
        try:
            cmd = P.decode(line)
        except ValueError as exc:
            log.warning("ignoring a malformed command (%s): %r", exc, line[:200])
            return None
        op = cmd.get("op")
        if op == "generate":
            events = self.backend.submit(cmd)
        elif op == "cancel":
            events = self.backend.cancel(str(cmd.get("id")))
        elif op == "stats":
            events = [P.stats(self.backend.stats())]
            self._last_stats = time.monotonic()
        elif op == "clear_prompt_cache":
            clear = getattr(self.backend, "clear_prompt_cache", None)
            freed = clear() if clear is not None else 0
            log.info("prompt cache cleared: %d bytes", freed)
            events = [P.stats(self.backend.stats())]
            self._last_stats = time.monotonic()
        elif op == "shutdown":
            return "shutdown"
        else:
            log.warning("ignoring unknown op %r", op)
            events = []
        self.out.write(events)
        return None

    def _push_stats(self, force: bool) -> None:
        now = time.monotonic()
        if force or now - self._last_stats >= STATS_PUSH_S:
            self._last_stats = now
            self.out.write([P.stats(self.backend.stats())])
