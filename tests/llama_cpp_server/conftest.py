"""Runs llama.cpp's own server tests (vendored under unit/, see README.md) against Laya through
laya_shim.py. All of them are `slow` (make test-slow): each test starts an engine and a model."""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.modules.setdefault("wget", types.ModuleType("wget"))   # utils imports it to download models

import laya_shim  # noqa: E402
from expected_failures import expected_failure  # noqa: E402
from not_run import reason  # noqa: E402

laya_shim.install()
from llama_conftest import *  # noqa: E402,F401,F403  (llama.cpp's fixtures)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.slow)
            why = reason(item)
            if why:
                item.add_marker(pytest.mark.skip(reason=why))
            elif (differs := expected_failure(item.nodeid)) is not None:
                item.add_marker(pytest.mark.xfail(reason=differs, strict=False))


@pytest.fixture(autouse=True)
def laya_model_for_file(request, tmp_path_factory):
    laya_shim.state["model"] = laya_shim.MODEL_FOR_FILE.get(request.module.__name__.rsplit(".", 1)[-1],
                                                            laya_shim.CHAT)
    if laya_shim.state["folder"] is None:
        laya_shim.state["folder"] = str(tmp_path_factory.mktemp("laya-llama-tests"))
