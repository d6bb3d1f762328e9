"""Shared fixtures: the models tests run on."""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))   # tests import the factories by module name
# Engines in tests keep their saved prompt states (models[].prompt_cache) in a folder of this
# session, never in the user's cache folder, where a state of an earlier run would be restored.
if "LAYA_PROMPT_CACHE_DIR" not in os.environ:
    os.environ["LAYA_PROMPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="laya-test-prompt-cache-")
    atexit.register(shutil.rmtree, os.environ["LAYA_PROMPT_CACHE_DIR"], True)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    """A tiny random-weight llama GGUF (loads in milliseconds, generates real tokens)."""
    from gguf_factory import write_tiny_gguf
    return write_tiny_gguf(tmp_path_factory.mktemp("models") / "tiny.gguf")


@pytest.fixture(scope="session")
def gemma_path() -> Path:
    """The built-in Gemma 3 270M GGUF, assembled once into its cache folder."""
    from laya_desktop.runners.builtin import resolve_model_path
    return resolve_model_path("builtin:gemma-3-270m")
