"""all-MiniLM-L6-v2 under onnxruntime (its graph from minilm_onnx_graph), one thread, in the engine.

Why beside numpy and llama.cpp: onnxruntime's MLAS kernels multiply the int8 graph's matrices
with integer instructions, where numpy and ggml stay near 40 GFLOP/s in fp32/fp16 on one core,
so a 64-token prompt takes about half their CPU time (bench/semantic_route.py measures them side
by side). The token ids come from the model's own tokenizer (minilm.MiniLMTokens), as for the
others.

onnxruntime's run is thread-safe, but texts are encoded under a lock as with llama.cpp: the
engine stays a one-core neighbour whatever the number of its worker threads, and close() cannot
free the session under a running text.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from laya_desktop.routing.minilm import MiniLMTokens, unit


class MiniLMOnnx:
    """encode(text) -> unit vector (384,) float32, mean-pooled in the graph."""

    def __init__(self, onnx_path: Path, tokenizer_json: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: its warnings would flood the engine log
        if not Path(onnx_path).is_file():
            raise FileNotFoundError(f"no ONNX graph at {onnx_path}")
        self.token_ids = MiniLMTokens(tokenizer_json)
        try:
            self._session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own errors derive from Exception only
            raise RuntimeError(f"onnxruntime cannot load {onnx_path}: {exc}") from exc
        self._lock = threading.Lock()
        self.runtime = f"onnxruntime {Path(onnx_path).stem.rsplit('-', 1)[-1]}"
        self.encoded = 0

    def encode(self, text: str) -> np.ndarray:
        ids = np.array(self.token_ids(text), dtype=np.int64)
        with self._lock:
            if self._session is None:
                raise RuntimeError("the onnxruntime encoder is closed")
            (pooled,) = self._session.run(["pooled"], {"ids": ids})
            self.encoded += 1
        return unit(pooled)

    def close(self) -> None:
        with self._lock:
            self._session = None
