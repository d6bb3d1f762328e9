"""The two all-MiniLM-L6-v2 encoders of the semantic condition agree: numpy fp32 from the
safetensors, and llama.cpp from the GGUF that minilm_gguf writes (the default)."""
from __future__ import annotations

import numpy as np
import pytest

from laya_desktop.routing.minilm import MiniLM
from laya_desktop.routing.minilm_files import model_files
from laya_desktop.routing.minilm_gguf import write_gguf
from laya_desktop.routing.minilm_llama import MiniLMLlama
from laya_desktop.routing.semantic import ENCODER_ENV, make_encoder

TEXTS = ["a man is eating food.", "Fix the bug in my JavaScript code that retries an HTTP request",
         "hi", "wie geht es dir? " * 40,  # past 128 tokens: both keep the last 126 pieces
         "I was charged twice for my annual subscriptiion"]


@pytest.fixture(scope="module")
def numpy_encoder():
    return MiniLM(model_files())


@pytest.fixture(scope="module")
def llama_encoder():
    files = model_files()
    encoder = MiniLMLlama(files.gguf, files.tokenizer)
    yield encoder
    encoder.close()


def test_the_install_step_writes_the_gguf_once():
    files = model_files()
    assert files.gguf.is_file() and files.gguf.stat().st_size > 40_000_000
    written = files.gguf.stat().st_mtime_ns
    assert model_files().gguf.stat().st_mtime_ns == written  # a second call keeps it
    assert not list(files.gguf.parent.glob("*.tmp"))


def test_llama_cpp_f16_matches_numpy(numpy_encoder, llama_encoder):
    for text in TEXTS:
        a, b = numpy_encoder.encode(text), llama_encoder.encode(text)
        assert a.shape == b.shape == (384,) and a.dtype == b.dtype == np.float32
        assert float(np.linalg.norm(b)) == pytest.approx(1.0, abs=1e-5)
        assert float(a @ b) > 0.99999, text
    pair = [llama_encoder.encode(t) for t in ("a man is eating food.", "a man is eating a piece of bread.")]
    assert float(pair[0] @ pair[1]) == pytest.approx(0.7553, abs=0.002)  # sentence-transformers' value
    assert llama_encoder.encoded >= len(TEXTS) + 2


def test_q8_0_gguf_stays_close(numpy_encoder, tmp_path):
    files = model_files()
    q8 = write_gguf(files.weights, files.tokenizer, tmp_path / "minilm-Q8_0.gguf", "Q8_0")
    assert q8.stat().st_size < files.gguf.stat().st_size
    encoder = MiniLMLlama(q8, files.tokenizer)
    try:
        assert encoder.runtime == "llama.cpp Q8_0"
        assert min(float(numpy_encoder.encode(t) @ encoder.encode(t)) for t in TEXTS) > 0.999
    finally:
        encoder.close()


def test_encoder_choice(monkeypatch):
    monkeypatch.delenv(ENCODER_ENV, raising=False)
    assert isinstance(make_encoder(), MiniLMLlama)
    monkeypatch.setenv(ENCODER_ENV, "numpy")
    assert isinstance(make_encoder(), MiniLM)
    monkeypatch.setenv(ENCODER_ENV, "onnx")
    with pytest.raises(ValueError, match="valid are llama, numpy"):
        make_encoder()


def test_no_gguf_falls_back_to_numpy(monkeypatch, tmp_path, caplog):
    import dataclasses

    from laya_desktop.routing import minilm_files

    files = model_files()
    missing = dataclasses.replace(files, gguf=tmp_path / "not-written.gguf")  # e.g. a full disk
    monkeypatch.setattr(minilm_files, "model_files", lambda: missing)
    monkeypatch.delenv(ENCODER_ENV, raising=False)
    encoder = make_encoder()
    assert isinstance(encoder, MiniLM)
    assert "llama.cpp encoder unavailable" in caplog.text
    assert float(encoder.encode("hi") @ encoder.encode("hi")) == pytest.approx(1.0, abs=1e-5)
