"""The engine's side of one runner process: the single owner of its state machine.

Callers never read the state and then act on it; they ask `ensure_ready()` (concurrent callers
share one start) and `open_stream()`. Unloading ends the process: ask, wait a bounded grace
period, terminate, then kill; only then is the memory certainly back.
"""
from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import signal
import sys
import time
from enum import StrEnum
from typing import Any, Callable

from laya_desktop.config.schema import ModelConfig

log = logging.getLogger("laya.runner")

READY_TIMEOUT_S = 180.0
STOP_GRACE_S = 3.0
KILL_WAIT_S = 2.0
STREAM_LIMIT = 16 * 1024 * 1024
SEND_TIMEOUT_S = 5.0         # a runner that stopped reading its stdin must not block the caller
SILENCE_S = 30.0             # default for `silence_s`: the scheduler's queue_timeout_ms
MIN_SILENCE_S = 2.0          # the runner beats every 0.5 s (runner_main.HEARTBEAT_S)
WATCH_PERIOD_S = 0.25


class RunnerState(StrEnum):
    """One runner's lifecycle. The values are the wire's (`state` in GET /admin/models)."""
    UNLOADED = "unloaded"
    LOADING = "loading"
    READY = "ready"
    STOPPING = "stopping"
    ERROR = "error"


class RunnerError(Exception):
    """The runner could not be started or died; `code` says which. The message goes to clients:
    it names the model and the problem, never a path or a log line (those go to the engine log,
    the events and GET /admin/models)."""

    def __init__(self, message: str, code: str = "runner_failed"):
        super().__init__(message)
        self.code = code


def runner_command(backend: str, spec: dict) -> list[str]:
    args = ["_runner", "--backend", backend, "--spec", json.dumps(spec)]
    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-m", "laya_desktop", *args]


def runner_spec(model: ModelConfig, resolved_path: str) -> dict:
    return {
        "name": model.name,
        "path": resolved_path,
        "n_ctx": model.n_ctx,
        "parallel": model.effective_parallel,
        "n_gpu_layers": model.n_gpu_layers,
        "n_threads": model.n_threads,
        "kv_cache_type": model.kv_cache_type,
        "cpu_repack": model.cpu_repack,
        "chat_format": model.chat_format,
        "embedding": model.embedding,
        "prompt_cache": {"ram_mb": model.prompt_cache.ram_mb, "disk_mb": model.prompt_cache.disk_mb},
    }


def resolve_path(path: str) -> str:
    from laya_desktop.runners.builtin import resolve_model_path
    return str(resolve_model_path(path))


def check_gguf(path: str) -> None:
    """Raises GgufError for a GGUF whose header this engine cannot read: refused here with its
    reason, rather than by llama.cpp with a message that quotes the path (or by a crash)."""
    from laya_desktop.runners.gguf_info import read_gguf_info
    read_gguf_info(path)


def public_reason(message: str, path: str) -> str:
    """A runner's load failure as a client may read it: one line, the file's path left out."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    if path:
        first = first.replace(path, "<model file>")
    return first[:300] or "the runner exited while loading (see the engine log)"


def crash_text(model: str) -> str:
    """What every request on a crashed runner is told: the details (exit code, the runner's last
    lines, which may quote another client's prompt or schema) stay in the engine log and events."""
    return f"the runner of model '{model}' crashed; retry"


class RunnerHandle:
    def __init__(self, model: ModelConfig, on_crash: Callable[["RunnerHandle", str], None] | None = None,
                 on_hang: Callable[["RunnerHandle", str], None] | None = None,
                 silence_s: float = SILENCE_S):
        self.model = model
        # A runner writes a heartbeat every 0.5 s from its own thread, even inside a long step;
        # one that said nothing for `silence_s` while requests wait on it is hung (SIGSTOP, a
        # deadlock holding the GIL): those requests get a clean runner_unresponsive error and
        # the process is killed, so its memory comes back and the next request starts afresh.
        self.silence_s = silence_s
        self.last_heard = 0.0
        self._opened: dict[str, float] = {}
        self._on_hang = on_hang
        self._state = RunnerState.UNLOADED
        self.error: str | None = None
        self.info: dict[str, Any] = {}
        self.stats: dict[str, Any] = {}
        self.stats_at = 0.0   # monotonic time of the last stats event
        self.process: asyncio.subprocess.Process | None = None
        self.loaded_at: float | None = None
        self._on_crash = on_crash
        self._starting: asyncio.Future | None = None
        self._streams: dict[str, asyncio.Queue] = {}
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._tasks: list[asyncio.Task] = []
        self._watch: asyncio.Task | None = None
        self._ready_event: asyncio.Future | None = None
        # Starts and stops never overlap: a start asked for while a stop is under way (a request
        # that waited behind an unload) begins once the old process is gone.
        self._lifecycle = asyncio.Lock()
        self.retired = False

    @property
    def state(self) -> RunnerState:
        return self._state

    def reconfigure(self, model: ModelConfig, silence_s: float) -> None:
        """The same runner under an edited config (nothing its process was started with changed)."""
        self.model = model
        self.silence_s = silence_s

    def retire(self) -> None:
        """This handle's model was replaced or removed by a config change: never start again."""
        self.retired = True

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process and self.process.returncode is None else None

    @property
    def is_ready(self) -> bool:
        """Serving: a runner that loaded its model and takes requests."""
        return self.state is RunnerState.READY

    @property
    def is_loading(self) -> bool:
        return self.state is RunnerState.LOADING

    @property
    def live_stats(self) -> dict[str, Any]:
        """The runner's last stats, or {} when they describe no runner that is still up."""
        return self.stats if self.state in (RunnerState.READY, RunnerState.STOPPING) else {}

    async def ensure_ready(self) -> None:
        if self.is_ready:
            return
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        async with self._lifecycle:
            await self._start_locked()

    async def _start_locked(self) -> None:
        if self.retired:
            raise RunnerError(f"model '{self.model.name}' was unloaded: the config changed",
                              "model_unloaded")
        if self.is_ready and self.pid is not None:
            return
        self._state = RunnerState.LOADING
        self.error = None
        name = self.model.name
        try:
            path = await asyncio.to_thread(resolve_path, self.model.path or "")
        except (OSError, ValueError) as exc:
            self._fail(f"cannot load model '{name}': {exc}")
            raise RunnerError(f"cannot load model '{name}': its file is missing or unreadable",
                              "load_failed") from None
        if self.model.backend == "llama_cpp":
            from laya_desktop.runners.gguf_info import GgufError
            try:
                await asyncio.to_thread(check_gguf, path)
            except GgufError as exc:
                self._fail(f"cannot load model '{name}': {exc}")
                raise RunnerError(f"cannot load model '{name}': {exc.reason}", "load_failed") from None
            except OSError as exc:
                self._fail(f"cannot load model '{name}': {exc}")
                raise RunnerError(f"cannot load model '{name}': its file is missing or unreadable",
                                  "load_failed") from None
        cmd = runner_command(self.model.backend, runner_spec(self.model, path))
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            self.process = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=STREAM_LIMIT, env=env)
        except OSError as exc:  # e.g. ENOMEM or EMFILE: a clean load failure, not "loading" forever
            self._fail(f"cannot start the runner of model '{name}': {exc}")
            raise RunnerError(f"cannot start the runner of model '{name}': {exc.strerror or exc}",
                              "load_failed") from None
        self._stderr_tail.clear()
        self._ready_event = asyncio.get_running_loop().create_future()
        self.last_heard = time.monotonic()
        self._tasks = [asyncio.ensure_future(self._read_events(self.process)),
                       asyncio.ensure_future(self._read_stderr(self.process))]
        if self._watch is not None:
            self._watch.cancel()
        self._watch = asyncio.ensure_future(self._watch_silence(self.process))
        try:
            first = await asyncio.wait_for(asyncio.shield(self._ready_event), READY_TIMEOUT_S)
        except asyncio.TimeoutError:
            await self._kill()
            self._fail(f"model '{self.model.name}' did not load within {READY_TIMEOUT_S:.0f} s")
            raise RunnerError(self.error, "load_failed") from None
        if first.get("event") != "ready":
            await self._reap()
            message = first.get("message") or self._exit_message()
            self._fail(f"cannot load model '{name}': {message}")
            reason = public_reason(first.get("message") or "", path)
            raise RunnerError(f"cannot load model '{name}': {reason}", "load_failed")
        self.info = first.get("info", {})
        self.loaded_at = time.time()
        self._state = RunnerState.READY

    def _fail(self, message: str) -> None:
        self._state = RunnerState.ERROR
        self.error = message
        log.warning(message)

    async def _read_events(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not line:
                break
            self.last_heard = time.monotonic()
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                log.warning("runner %s wrote a non-JSON line: %r", self.model.name, line[:200])
                continue
            self._dispatch(event)
        await proc.wait()
        await asyncio.sleep(0)  # let the stderr reader collect the last lines
        self._on_exit(proc)

    async def _watch_silence(self, proc: asyncio.subprocess.Process) -> None:
        while proc.returncode is None:
            await asyncio.sleep(WATCH_PERIOD_S)
            if proc is not self.process or not self.is_ready or not self._opened:
                continue
            # from the last line heard, or from the oldest open request if that came later (an
            # idle runner has nothing to say until it gets work)
            since = max(self.last_heard, min(self._opened.values()))
            if time.monotonic() - since < max(self.silence_s, MIN_SILENCE_S):
                continue
            message = (f"runner of model '{self.model.name}' sent nothing for "
                       f"{max(self.silence_s, MIN_SILENCE_S):g} s "
                       f"while requests waited on it: it is hung, and was stopped")
            log.warning(message)
            self._fail_streams("runner_unresponsive", message)
            if self._on_hang:
                self._on_hang(self, message)
            asyncio.ensure_future(self.stop("unresponsive", grace_s=0))
            return

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            try:
                line = await proc.stderr.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue  # an over-long line: dropped, and the pipe keeps being drained
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            self._stderr_tail.append(text)
            log.debug("[%s] %s", self.model.name, text)

    def _dispatch(self, event: dict) -> None:
        kind = event.get("event")
        if kind in ("ready", "load_failed"):
            if self._ready_event and not self._ready_event.done():
                self._ready_event.set_result(event)
            return
        if kind == "alive":
            return  # last_heard is all a heartbeat is for
        if kind == "stats":
            self.stats, self.stats_at = event, time.monotonic()
            return
        queue = self._streams.get(event.get("id"))
        if queue is not None:
            queue.put_nowait(event)

    def _exit_message(self) -> str:
        code = self.process.returncode if self.process else None
        tail = " | ".join(line for line in list(self._stderr_tail)[-5:] if line.strip())
        return f"runner exited with code {code}" + (f": {tail}" if tail else "")

    def _on_exit(self, proc: asyncio.subprocess.Process) -> None:
        if proc is not self.process:
            return  # an earlier process of this handle: its successor's state is not ours to touch
        if self._ready_event and not self._ready_event.done():
            self._ready_event.set_result({"event": "load_failed", "message": self._exit_message()})
            return
        if self.state in (RunnerState.STOPPING, RunnerState.UNLOADED):
            # a request that slipped in while the stop was under way must not wait forever
            self._fail_streams("model_unloaded", f"model '{self.model.name}' was unloaded")
            return
        self._fail(f"runner of model '{self.model.name}' crashed: {self._exit_message()}")
        if self._on_crash:
            self._on_crash(self, self.error)  # recorded before the requests it hit are answered
        self._fail_streams("runner_crashed", crash_text(self.model.name))

    def _fail_streams(self, code: str, message: str) -> None:
        streams, self._streams = self._streams, {}
        self._opened.clear()
        for queue in streams.values():
            queue.put_nowait({"event": "error", "code": code, "message": message})

    async def send(self, command: dict) -> None:
        proc = self.process
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise RunnerError(f"runner of model '{self.model.name}' is not running", "runner_crashed")
        try:
            proc.stdin.write((json.dumps(command) + "\n").encode())
            await asyncio.wait_for(proc.stdin.drain(), SEND_TIMEOUT_S)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise RunnerError(f"runner of model '{self.model.name}' is gone: {exc}", "runner_crashed")
        except asyncio.TimeoutError:
            raise RunnerError(f"runner of model '{self.model.name}' stopped reading commands",
                              "runner_unresponsive") from None

    async def open_stream(self, req_id: str, command: dict) -> asyncio.Queue:
        if not self.is_ready:  # e.g. an unload began between ensure_ready() and now
            code = "runner_crashed" if self.state is RunnerState.ERROR else "model_unloaded"
            raise RunnerError(f"model '{self.model.name}' is not loaded ({self.state})", code)
        queue: asyncio.Queue = asyncio.Queue()
        self._streams[req_id] = queue
        self._opened[req_id] = time.monotonic()
        try:
            await self.send({**command, "op": "generate", "id": req_id})
        except RunnerError:
            self._streams.pop(req_id, None)
            self._opened.pop(req_id, None)
            raise
        return queue

    async def close_stream(self, req_id: str, cancel: bool) -> None:
        self._streams.pop(req_id, None)
        self._opened.pop(req_id, None)
        if cancel and self.is_ready:
            try:
                await self.send({"op": "cancel", "id": req_id})
            except RunnerError:
                pass

    async def stop(self, reason: str = "unload", grace_s: float | None = None) -> bool:
        """End the runner; returns once the process has exited, True when this call ended it.

        Callers do not check the state first: a runner with no process (never started, already
        stopped, crashed) answers False, and a stop under way makes this one wait for it."""
        if self._starting and not self._starting.done():
            try:
                await asyncio.shield(self._starting)
            except Exception:
                pass
        async with self._lifecycle:
            return await self._stop_locked(reason, grace_s)

    async def _stop_locked(self, reason: str, grace_s: float | None) -> bool:
        proc = self.process
        if proc is None or proc.returncode is not None:
            if self.state is not RunnerState.ERROR:
                self._state = RunnerState.UNLOADED
            return False
        self._state = RunnerState.STOPPING
        self._fail_streams("model_unloaded", f"model '{self.model.name}' was unloaded ({reason})")
        try:
            await self.send({"op": "shutdown"})
        except RunnerError:
            pass
        grace = STOP_GRACE_S if grace_s is None else grace_s
        if _is_stopped(proc.pid):
            grace = 0  # SIGSTOPped: it cannot read the shutdown, so do not wait for it
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except asyncio.TimeoutError:
            await self._kill()
        await self._reap()
        self._state = RunnerState.UNLOADED
        self.info = {}
        self.stats = {}
        self.loaded_at = None
        return True

    async def _kill(self) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            os.kill(proc.pid, signal.SIGCONT)  # a stopped process gets the SIGTERM only once it runs
        except OSError:
            pass
        try:
            await asyncio.wait_for(proc.wait(), KILL_WAIT_S)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()

    async def _reap(self) -> None:
        if self.process is not None and self.process.returncode is None:
            await self.process.wait()
        if self._watch is not None and self._watch is not asyncio.current_task():
            self._watch.cancel()
        self._watch = None
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, 2.0)
            except (asyncio.TimeoutError, Exception):
                task.cancel()
        self._tasks = []

    def kill_now(self) -> None:
        """Synchronous last resort at engine exit."""
        if self.process is not None and self.process.returncode is None:
            try:
                self.process.kill()
            except ProcessLookupError:
                pass


def _is_stopped(pid: int) -> bool:
    try:
        import psutil
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except Exception:
        return False
