"""The MiniLM files are extracted from the installed package once per model, not once per install."""
from __future__ import annotations

import os
import shutil

from laya_desktop.routing import minilm_files


def test_a_reinstalled_package_finds_its_extracted_files_again(tmp_path, monkeypatch):
    archive = tmp_path / "model.zip"
    shutil.copy(minilm_files.package_zip(), archive)
    monkeypatch.setattr(minilm_files, "package_zip", lambda: archive)
    monkeypatch.setattr(minilm_files, "cache_dir", lambda: tmp_path / "cache")
    first = minilm_files.model_files()
    extracted_at = first.weights.stat().st_mtime_ns
    os.utime(archive, (1_900_000_000, 1_900_000_000))   # what a fresh venv's install does
    again = minilm_files.model_files()
    assert again == first and again.weights.stat().st_mtime_ns == extracted_at
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.weights.parent.name]
