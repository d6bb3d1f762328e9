"""Where the app's logs live, and the engine's rotating log files there. Qt-free.

engine.log   the engine's own log (INFO and up), rotated by size
runners.log  every line the runner processes write to stderr (llama.cpp's output included)
engine-stderr.log  what the engine process printed outside logging (startup line, tracebacks,
             uvicorn's errors); the GUI writes it and keeps the previous runs' copies
"""
from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

ENGINE_LOG = "engine.log"
RUNNERS_LOG = "runners.log"
ENGINE_STDERR_LOG = "engine-stderr.log"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3
FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
RUNNER_LOGGER = "laya.runner"   # engine/runner_handle.py logs each runner stderr line at DEBUG


def user_log_dir() -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Logs" / "Laya"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "Laya" / "Logs"
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "state"
    return base / "laya" / "logs"


def log_to_folder(folder: str | os.PathLike) -> Path:
    """Send the engine's logging to rotating files in `folder`; stderr keeps warnings and errors."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    formatter = logging.Formatter(FORMAT)
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler, level in ((_rotating(folder / ENGINE_LOG), logging.INFO),
                           (logging.StreamHandler(sys.stderr), logging.WARNING)):
        handler.setLevel(level)
        handler.setFormatter(formatter)
        root.addHandler(handler)
    runners = _rotating(folder / RUNNERS_LOG)
    runners.setFormatter(logging.Formatter("%(asctime)s %(message)s"))  # lines carry "[model]"
    runner_logger = logging.getLogger(RUNNER_LOGGER)
    runner_logger.setLevel(logging.DEBUG)  # the root handlers above still drop its DEBUG lines
    runner_logger.addHandler(runners)
    return folder


def rotate_by_run(path: Path, keep: int = BACKUPS) -> None:
    """Before a new run writes `path`: path -> path.1 -> path.2 ..., dropping the oldest."""
    for n in range(keep, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        newer = path.with_name(f"{path.name}.{n - 1}") if n > 1 else path
        if newer.exists():
            os.replace(newer, older)


def _rotating(path: Path) -> RotatingFileHandler:
    return RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
