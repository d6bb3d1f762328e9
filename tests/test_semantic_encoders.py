"""The all-MiniLM-L6-v2 encoders of the semantic condition agree: numpy fp32 from the
safetensors, llama.cpp from the GGUF that minilm_gguf writes, and onnxruntime from the graph that
minilm_onnx_graph builds (int8: the default)."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from laya_desktop.routing.minilm import MiniLM
from laya_desktop.routing.minilm_files import model_files
from laya_desktop.routing.minilm_gguf import write_gguf
from laya_desktop.routing.minilm_llama import MiniLMLlama
from laya_desktop.routing.minilm_onnx import MiniLMOnnx
from laya_desktop.routing.semantic import ENCODER_ENV, make_encoder

TEXTS = ["a man is eating food.", "Fix the bug in my JavaScript code that retries an HTTP request",
         "hi", "wie geht es dir? " * 40,  # past 128 tokens: both keep the last 126 pieces
         "I was charged twice for my annual subscriptiion"]
# what routing sees: short asks and long ones, code, numbers, other languages, typos, emoji
VARIED = TEXTS + [
    "Write a haiku about autumn leaves falling on a quiet pond",
    "SELECT name, count(*) FROM orders GROUP BY name HAVING count(*) > 3; why is this slow?",
    "what's 17% of 2,340?", "Résumé en français, s'il vous plaît : la réunion est reportée à lundi.",
    "¿Cómo se dice 'thank you very much' en japonés?", "ok", "thanks!! 🙏🙏",
    "def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)  # make this iterative",
    "My package never arrived and the tracking number says delivered. I want a refund.",
    "Summarize the following paragraph in two sentences: The committee met on Tuesday to discuss "
    "the budget for next year. After a long debate, they agreed to increase spending on schools "
    "and roads while cutting administrative costs by ten percent.",
    "prove that the square root of 2 is irrational", "integrate x * e^x dx from 0 to 1",
    "Tell me a joke about a penguin who walks into a bar", "rust borrow checker error E0502 help",
    "How do I cancel my subscription before the next billing cycle?", "translate to German: where is the station",
    "can u explain recursion like im five", "Compose a sonnet in the style of Shakespeare about coffee",
    "docker compose up fails with 'port is already allocated' on 5432",
    "The quick brown fox jumps over the lazy dog. " * 6,
    "2 + 2 = ?", "Was ist der Unterschied zwischen einer Liste und einem Tupel in Python?",
    "please write a migration that adds a non-null column with a default to a table of 50M rows",
    "I can't log in, it says my password is wrong but I just reset it",
    "Give me three bullet points on the causes of the French Revolution",
    "x" * 300, "1234567890 " * 10, "中文怎么说 'good morning'？",
]


@pytest.fixture(scope="module")
def numpy_encoder():
    return MiniLM(model_files())


@pytest.fixture(scope="module")
def llama_encoder():
    files = model_files()
    encoder = MiniLMLlama(files.gguf, files.tokenizer)
    yield encoder
    encoder.close()


@pytest.fixture(scope="module")
def onnx_encoder():
    encoder = MiniLMOnnx(model_files().onnx, model_files().tokenizer)
    yield encoder
    encoder.close()


def test_the_install_step_writes_the_gguf_and_the_onnx_graph_once():
    files = model_files()
    assert files.gguf.is_file() and files.gguf.stat().st_size > 40_000_000
    assert files.onnx.is_file() and 40_000_000 < files.onnx.stat().st_size < files.weights.stat().st_size
    written = files.gguf.stat().st_mtime_ns, files.onnx.stat().st_mtime_ns
    again = model_files()  # a second call keeps both
    assert (again.gguf.stat().st_mtime_ns, again.onnx.stat().st_mtime_ns) == written
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


def test_onnxruntime_fp32_matches_numpy(numpy_encoder, tmp_path):
    from laya_desktop.routing.minilm_onnx_graph import write_onnx  # onnx is slow to import
    files = model_files()
    encoder = MiniLMOnnx(write_onnx(files.weights, tmp_path / "minilm-fp32.onnx", "fp32"), files.tokenizer)
    try:
        assert encoder.runtime == "onnxruntime fp32"
        for text in VARIED:
            a, b = numpy_encoder.encode(text), encoder.encode(text)
            assert b.shape == (384,) and b.dtype == np.float32
            assert float(a @ b) > 0.99999, text
        pair = [encoder.encode(t) for t in ("a man is eating food.", "a man is eating a piece of bread.")]
        assert float(pair[0] @ pair[1]) == pytest.approx(0.7553, abs=0.002)
    finally:
        encoder.close()


def test_onnxruntime_int8_stays_close(numpy_encoder, onnx_encoder):
    assert onnx_encoder.runtime == "onnxruntime int8"
    cosines = [float(numpy_encoder.encode(t) @ onnx_encoder.encode(t)) for t in VARIED]
    print(f"int8 against numpy fp32 on {len(VARIED)} texts: cosine min {min(cosines):.4f} "
          f"mean {np.mean(cosines):.4f}")
    # the shortest texts ("ok", emoji) are the farthest (printed above); routing's top-1 on the
    # labelled set stays that of fp32 (bench/results/semantic/latest.json, `by_encoder`)
    assert min(cosines) > 0.95 and np.mean(cosines) > 0.985
    assert float(np.linalg.norm(onnx_encoder.encode("hi"))) == pytest.approx(1.0, abs=1e-5)
    pair = [onnx_encoder.encode(t) for t in ("a man is eating food.", "a man is eating a piece of bread.")]
    assert float(pair[0] @ pair[1]) == pytest.approx(0.7553, abs=0.03)


@pytest.mark.slow   # quantises the whole graph again with onnxruntime.quantization (seconds)
def test_the_int8_graph_is_what_onnxruntime_quantize_dynamic_makes(onnx_encoder, tmp_path):
    from laya_desktop.routing.minilm_onnx_graph import write_onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = write_onnx(model_files().weights, tmp_path / "minilm-fp32.onnx", "fp32")
    quantize_dynamic(str(fp32), str(tmp_path / "minilm-int8.onnx"), op_types_to_quantize=["MatMul"],
                     weight_type=QuantType.QInt8, per_channel=True)
    theirs = MiniLMOnnx(tmp_path / "minilm-int8.onnx", model_files().tokenizer)
    try:
        assert min(float(onnx_encoder.encode(t) @ theirs.encode(t)) for t in VARIED) > 0.99999
    finally:
        theirs.close()


def test_onnxruntime_encodes_from_several_threads(onnx_encoder):
    expected = {t: onnx_encoder.encode(t) for t in TEXTS}
    before = onnx_encoder.encoded
    got: list[tuple[str, np.ndarray]] = []

    def work():
        got.extend((t, onnx_encoder.encode(t)) for t in TEXTS * 3)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 4 * 3 * len(TEXTS) == onnx_encoder.encoded - before
    assert all(np.array_equal(vector, expected[t]) for t, vector in got)


def test_a_closed_onnxruntime_encoder_says_so():
    encoder = MiniLMOnnx(model_files().onnx, model_files().tokenizer)
    encoder.close()
    with pytest.raises(RuntimeError, match="closed"):
        encoder.encode("hi")


def test_encoder_choice(monkeypatch):
    monkeypatch.delenv(ENCODER_ENV, raising=False)
    assert isinstance(make_encoder(), MiniLMOnnx)
    monkeypatch.setenv(ENCODER_ENV, "llama")
    assert isinstance(make_encoder(), MiniLMLlama)
    monkeypatch.setenv(ENCODER_ENV, "numpy")
    assert isinstance(make_encoder(), MiniLM)
    monkeypatch.setenv(ENCODER_ENV, "torch")
    with pytest.raises(ValueError, match="valid are onnx, llama, numpy"):
        make_encoder()


def test_without_onnxruntime_the_default_is_llama_cpp(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what an install without it imports
    monkeypatch.delenv(ENCODER_ENV, raising=False)
    encoder = make_encoder()
    assert isinstance(encoder, MiniLMLlama)
    assert "onnxruntime encoder unavailable" in caplog.text


def test_no_onnx_graph_nor_gguf_falls_back_to_numpy(monkeypatch, tmp_path, caplog):
    import dataclasses

    from laya_desktop.routing import minilm_files

    files = model_files()
    missing = dataclasses.replace(files, gguf=tmp_path / "not-written.gguf",  # e.g. a full disk
                                  onnx=tmp_path / "not-written.onnx")
    monkeypatch.setattr(minilm_files, "model_files", lambda: missing)
    monkeypatch.delenv(ENCODER_ENV, raising=False)
    encoder = make_encoder()
    assert isinstance(encoder, MiniLM)
    assert "onnxruntime encoder unavailable" in caplog.text
    assert "llama.cpp encoder unavailable" in caplog.text
    assert float(encoder.encode("hi") @ encoder.encode("hi")) == pytest.approx(1.0, abs=1e-5)
