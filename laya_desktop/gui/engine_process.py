"""The engine as the GUI's child process ("embedded server"). Qt-free; blocking calls run in workers.

The child gets its own session so that a last-resort kill can take the whole process group (the
engine and any runner it started) and so a terminal's Ctrl-C reaches only the GUI, which then stops
the engine in order: the parent pipe closed (the engine stops its runners), a bounded wait, then
SIGKILL to the group.

The engine writes its logs into the user's log folder (laya_desktop/logfiles.py); what it prints
outside logging goes to engine-stderr.log there, which each start rotates.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from laya_desktop.config import app_token
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.logfiles import ENGINE_STDERR_LOG, rotate_by_run, user_log_dir


def engine_command(config_path: str | os.PathLike, host: str | None = None,
                   port: int | None = None, log_dir: str | os.PathLike | None = None,
                   parent_pipe: int | None = None) -> list[str]:
    if getattr(sys, "frozen", False):
        cmd = [sys.executable, "serve"]  # the one frozen executable dispatches by subcommand
    else:
        cmd = [sys.executable, "-m", "laya_desktop", "serve"]
    cmd += ["--config", str(config_path)]
    if host:
        cmd += ["--host", host]
    if port:
        cmd += ["--port", str(port)]
    if log_dir:
        cmd += ["--log-dir", str(log_dir)]
    if parent_pipe is not None:
        cmd += ["--parent-pipe", str(parent_pipe)]
    return cmd


class EngineProcess:
    """Starts, watches and stops one engine child. Thread-safe: start/stop may run in workers."""

    def __init__(self, config_path: str | os.PathLike, host: str, port: int,
                 log_dir: str | os.PathLike | None = None) -> None:
        self.config_path = Path(config_path)
        self.host, self.port = host, port
        self._proc: subprocess.Popen | None = None
        self._pipe_w: int | None = None  # the write end of the engine's parent pipe, never written
        self._lock = threading.Lock()
        self._pipe_lock = threading.Lock()
        self.log_dir = Path(log_dir) if log_dir else user_log_dir()
        self.log_path = self.log_dir / ENGINE_STDERR_LOG
        # One per launch of the app, passed to each engine it starts: the GUI can prove it is the
        # user's own even where the engine cannot write its token file (config/app_token.py).
        self.app_token = app_token.new_token()

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None

    def running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None

    def start(self) -> int:
        with self._lock:
            if self.running():
                return self._proc.pid  # type: ignore[union-attr]
            try:
                self.log_dir.mkdir(parents=True, exist_ok=True)
            except OSError:  # a read-only home must not keep the engine from starting
                self.log_dir = Path(tempfile.mkdtemp(prefix="laya-logs-"))
                self.log_path = self.log_dir / ENGINE_STDERR_LOG
            rotate_by_run(self.log_path)
            log = open(self.log_path, "ab")
            # The engine exits when this pipe's write end closes: when we stop it, and when this
            # process dies in any way (SIGKILL, a crash), so it never lives on as an orphan holding
            # the port and the models' memory. Only the read end is passed on; the write end is
            # not inheritable, so no other child of ours keeps the pipe open.
            read_end, write_end = os.pipe()
            try:
                self._proc = subprocess.Popen(
                    engine_command(self.config_path, self.host, self.port, self.log_dir,
                                   parent_pipe=read_end),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, pass_fds=(read_end,),
                    env={**os.environ, app_token.ENV: self.app_token})
            except BaseException:
                os.close(write_end)
                raise
            finally:
                log.close()
                os.close(read_end)
            self._close_pipe()
            with self._pipe_lock:
                self._pipe_w = write_end
            return self._proc.pid

    def _close_pipe(self) -> None:
        # Its own lock: ask_to_stop() runs beside a start or stop holding self._lock, and a
        # descriptor closed twice could close one that another thread has just opened.
        with self._pipe_lock:
            fd, self._pipe_w = self._pipe_w, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def wait_healthy(self, client: EngineClient, timeout: float = 45.0,
                     cancelled: threading.Event | None = None) -> bool:
        """Poll /healthz until it answers, the child dies, or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cancelled is not None and cancelled.is_set():
                return False
            if client.healthy(timeout=1.0):
                return True
            if self._proc is not None and self._proc.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    def ask_to_stop(self) -> None:
        """Start the engine's stop without waiting: close the pipe's write end. Any thread."""
        self._close_pipe()

    def stop(self, grace_s: float = 10.0) -> int | None:
        """Stop the engine and every runner it started; returns its exit code.

        Closing the parent pipe, not SIGTERM, asks it to stop: SIGTERM is `laya serve`'s signal
        for a service manager and drains open streams for up to 5 s, while a closed pipe means
        nobody is left to wait on them (0.3 s drain, runners stopped, the engine's own 1.5 s
        backstop). After `grace_s` the whole group is killed; it is killed in any case, so that a
        runner the engine failed to stop cannot outlive it."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return None
            self._close_pipe()
            if proc.poll() is None:
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    self._kill_group(proc)
                    proc.wait(timeout=5)
            self._kill_group(proc)
            return proc.returncode

    def kill_now(self) -> None:
        """Last resort at a hard deadline: no waiting on anything but the reap."""
        proc = self._proc
        if proc is not None:
            self._kill_group(proc)
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass

    @staticmethod
    def _kill_group(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def log_tail(self, max_bytes: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-max_bytes:].decode("utf-8", "replace")
