"""Files that live beside the package rather than in it: LICENSE, THIRD_PARTY_NOTICES, resources/.

A source checkout has them at the repository root; a PyInstaller bundle at its data root
(sys._MEIPASS); a wheel install has the two licence files in its dist-info and no resources/, and
callers show what they can without. Also the user's folders for derived files (cache) and for
a running engine's own files (runtime).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

LICENSE = "LICENSE"
THIRD_PARTY_NOTICES = "THIRD_PARTY_NOTICES"
ICON_SVG = "resources/icons/laya.svg"


def _roots() -> list[Path]:
    roots = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        roots.append(Path(bundle))
    roots.append(Path(__file__).resolve().parents[1])  # the checkout holding laya_desktop/
    return roots


def find_app_file(relative: str) -> Path | None:
    for root in _roots():
        candidate = root / relative
        if candidate.is_file():
            return candidate
    return None


def read_app_file(relative: str) -> str | None:
    path = find_app_file(relative)
    try:
        if path:
            return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    return _from_metadata(relative)


def _from_metadata(relative: str) -> str | None:
    """A wheel install keeps LICENSE and THIRD_PARTY_NOTICES in its dist-info (PEP 639)."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution
        return distribution("laya-desktop").read_text(f"licenses/{relative}")
    except (PackageNotFoundError, OSError, UnicodeDecodeError):
        return None


def cache_dir() -> Path:
    """The user's cache folder for files derived from installed packages (may not exist yet)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "laya-desktop"


def runtime_dir() -> Path:
    """The user's own folder for files of a running engine (its app token): XDG_RUNTIME_DIR
    (per-user, 0700, cleared at logout) where there is one, else the user's state folder."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Laya" / "run"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
        return Path(local) / "Laya" / "run"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / "laya"
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "laya" / "run"


def prompt_cache_dir() -> Path:
    """The folder of the models' saved prompt states (runners/prompt_cache.py), one subfolder
    per model; LAYA_PROMPT_CACHE_DIR puts it elsewhere (a larger disk, or a test's tmp folder)."""
    override = os.environ.get("LAYA_PROMPT_CACHE_DIR", "")
    return Path(override) if override else cache_dir() / "prompt-cache"


PROMPT_CACHE_SUFFIX = ".lpkv"   # a saved state's file (runners/prompt_cache_file.py)


def prompt_cache_folder(model_name: str) -> Path:
    """One model's folder in prompt_cache_dir(), named after the model."""
    return prompt_cache_dir() / (re.sub(r"[^A-Za-z0-9._-]", "_", str(model_name or "model"))[:80])
