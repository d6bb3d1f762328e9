"""models.yaml's cpu_repack (ggml's repacked CPU kernels, off by default) reaches the weights' load."""
from __future__ import annotations

import pytest

from gguf_factory import write_tiny_gguf
import laya_desktop.runners.llama_cpp_backend as backend_module
from laya_desktop.config.validate import validate_config
from laya_desktop.engine.runner_handle import runner_spec


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("repack") / "tiny.gguf", n_layer=2, n_embd=64)


def test_cpu_repack_reaches_llama_cpps_model_params(gguf, monkeypatch):
    """It travels in the runner's spec, and the spec sets llama.cpp's use_extra_bufts."""
    config, errors = validate_config({"models": [
        {"name": "r", "backend": "llama_cpp", "path": str(gguf), "cpu_repack": True},
        {"name": "p", "backend": "llama_cpp", "path": str(gguf)}],
        "routes": [{"name": "all", "target": "p"}]})
    assert errors == []
    repacked, plain = (runner_spec(m, str(gguf)) for m in config.models)
    assert repacked["cpu_repack"] is True and plain["cpu_repack"] is False
    seen = []
    load = backend_module.L.llama_model_load_from_file

    def recording_load(path, params):
        seen.append(params.use_extra_bufts)
        return load(path, params)

    monkeypatch.setattr(backend_module.L, "llama_model_load_from_file", recording_load)
    for spec in (repacked, plain):
        backend = backend_module.LlamaCppBackend({**spec, "n_ctx": 64, "parallel": 1, "n_threads": 1})
        backend.close()
    assert seen == [True, False]
