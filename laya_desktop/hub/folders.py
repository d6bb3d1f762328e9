"""Where downloads go: `server.models_dir` when set, else LAYA_MODELS_DIR, else the user's data
folder. Never the config folder: models.yaml's folder is for settings the user backs up and
syncs, not for gigabytes of weights (on macOS the config folder is Application Support/Laya, so
the models get a folder beside it rather than in it)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from laya_desktop.config.store import user_config_dir

ENV = "LAYA_MODELS_DIR"


def default_models_dir() -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Laya Models"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "Laya" / "models"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "share"
    return base / "laya" / "models"


def models_dir(config=None) -> Path:
    """The download folder for `config` (a Config, or None for no config). ValueError when the
    chosen folder lies inside the config folder."""
    chosen = getattr(getattr(config, "server", None), "models_dir", None) or os.environ.get(ENV)
    folder = Path(os.path.expanduser(chosen)).resolve() if chosen else default_models_dir()
    config_folder = user_config_dir().resolve()
    if folder == config_folder or config_folder in folder.parents:
        raise ValueError(f"models folder {folder} is inside the config folder {config_folder}; "
                         f"choose another with server.models_dir or {ENV}")
    return folder


def state_file(folder: Path) -> Path:
    """The download manager's record of unfinished jobs, kept with the downloads it describes."""
    return folder / ".laya-pulls.json"


def repo_folder(folder: Path, repo_id: str) -> Path:
    owner, _, name = repo_id.partition("/")
    return folder / owner / name
