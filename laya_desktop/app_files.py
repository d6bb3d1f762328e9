"""Files that live beside the package rather than in it: LICENSE, THIRD_PARTY_NOTICES, resources/.

A source checkout has them at the repository root; a PyInstaller bundle at its data root
(sys._MEIPASS); a plain wheel install has none of them, and callers show what they can without.
"""
from __future__ import annotations

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
        return path.read_text(encoding="utf-8") if path else None
    except (OSError, UnicodeDecodeError):
        return None
