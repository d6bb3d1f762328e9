"""all-MiniLM-L6-v2's safetensors as an ONNX graph, built with the `onnx` package's helper API.

Exporting through torch would pull torch into the install for one 22 M-parameter model; the
network is a plain 6-layer BERT, so its graph is written here, op by op, for one unpadded text:
input `ids` (n,) int64, output `pooled` (384,), the mean over tokens (the caller normalises it).
No attention mask: a single text has no padding to hide. The query weights carry the 1/sqrt(32)
score scale, so no Mul runs per layer. GELU is the erf form, as in BERT, written in the order
onnxruntime fuses into one Gelu.

The int8 graph quantises the four matrices of each layer as onnxruntime's quantize_dynamic does
(int8 weights with one symmetric scale per output channel; activations quantised as each text
runs: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul, which onnxruntime fuses), but
written here: onnxruntime.quantization imports its modules by bare name from its own folder,
which a PyInstaller bundle does not have. The attention products, the embeddings (gathered, not
multiplied) and the norms stay fp32.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from laya_desktop.routing.minilm import HEADS, HIDDEN, LAYERS, MAX_TOKENS, read_safetensors

OPSET = 17  # LayerNormalization
KINDS = ("fp32", "int8")
_HEAD = HIDDEN // HEADS


class _Graph:
    def __init__(self, kind: str):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._int8 = kind == "int8"
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        array = np.asarray(array)  # not ascontiguousarray: it makes a 0-d index 1-d
        self.initializers.append(numpy_helper.from_array(array if array.flags.c_contiguous else array.copy(), name))
        return name

    def op(self, op_type: str, *inputs: str, name: str = "", outputs: int = 1, **attrs):
        self._count += 1
        out = name or f"{op_type.lower()}_{self._count}"
        names = [out] if outputs == 1 else [f"{out}:{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=out, **attrs))
        return out if outputs == 1 else names

    def linear(self, x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        """x @ weight.T + bias, weight as torch stores it (out, in)."""
        w = np.asarray(weight, np.float32).T
        b = self.const(name + ".b", np.asarray(bias, np.float32))
        if not self._int8:
            return self.op("Add", self.op("MatMul", x, self.const(name + ".w", w), name=name), b)
        scale = (np.maximum(np.abs(w).max(axis=0), 1e-12) / 127).astype(np.float32)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        xq, x_scale, x_zero = self.op("DynamicQuantizeLinear", x, name=name + ".x_q", outputs=3)
        product = self.op("MatMulInteger", xq, self.const(name + ".w_q", q), x_zero,
                          self.const(name + ".w_zero", np.zeros(q.shape[1], np.int8)), name=name)
        scales = self.op("Mul", x_scale, self.const(name + ".w_scale", scale))
        return self.op("Add", self.op("Mul", self.op("Cast", product, to=TensorProto.FLOAT), scales), b)

    def layer_norm(self, x: str, name: str, t: dict, prefix: str) -> str:
        return self.op("LayerNormalization", x, self.const(name + ".g", np.array(t[prefix + ".weight"])),
                       self.const(name + ".beta", np.array(t[prefix + ".bias"])), axis=-1, epsilon=1e-12)


def _attention(g: _Graph, x: str, t: dict, i: int) -> str:
    a = f"encoder.layer.{i}.attention."
    scale = 1.0 / math.sqrt(_HEAD)
    weights = [t[a + f"self.{n}.weight"] for n in ("query", "key", "value")]
    biases = [t[a + f"self.{n}.bias"] for n in ("query", "key", "value")]
    weights[0], biases[0] = weights[0] * scale, biases[0] * scale
    qkv = g.linear(x, f"l{i}.qkv", np.concatenate(weights), np.concatenate(biases))  # (n, 1152)
    heads = g.op("Transpose", g.op("Reshape", qkv, g.const(f"l{i}.qkv_shape", np.array([-1, 3, HEADS, _HEAD]))),
                 perm=[1, 2, 0, 3])  # (3, heads, n, head)
    q, k, v = (g.op("Gather", heads, g.const(f"l{i}.pick{j}", np.array(j)), axis=0) for j in range(3))
    probs = g.op("Softmax", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 2, 1])), axis=-1)
    context = g.op("Reshape", g.op("Transpose", g.op("MatMul", probs, v), perm=[1, 0, 2]),
                   g.const(f"l{i}.merge", np.array([-1, HIDDEN])))
    out = g.linear(context, f"l{i}.out", t[a + "output.dense.weight"], t[a + "output.dense.bias"])
    return g.layer_norm(g.op("Add", out, x), f"l{i}.ln1", t, a + "output.LayerNorm")


def _feed_forward(g: _Graph, x: str, t: dict, i: int) -> str:
    p = f"encoder.layer.{i}."
    up = g.linear(x, f"l{i}.up", t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"])
    # x * (1 + erf(x / sqrt 2)) * 0.5, in the order onnxruntime recognises as one Gelu
    erf = g.op("Erf", g.op("Div", up, g.const(f"l{i}.sqrt2", np.float32(math.sqrt(2)))))
    gelu = g.op("Mul", g.op("Mul", up, g.op("Add", erf, g.const(f"l{i}.one", np.float32(1.0)))),
                g.const(f"l{i}.half", np.float32(0.5)))
    down = g.linear(gelu, f"l{i}.down", t[p + "output.dense.weight"], t[p + "output.dense.bias"])
    return g.layer_norm(g.op("Add", down, x), f"l{i}.ln2", t, p + "output.LayerNorm")


def build_model(weights: Path, kind: str = "int8") -> onnx.ModelProto:
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: valid are {', '.join(KINDS)}")
    t = read_safetensors(weights)
    g = _Graph(kind)
    words = g.const("word_embeddings", np.array(t["embeddings.word_embeddings.weight"]))
    # every text is one segment: token type 0's row is added to the positions once, here
    positions = np.array(t["embeddings.position_embeddings.weight"][:MAX_TOKENS])
    positions += t["embeddings.token_type_embeddings.weight"][0]
    n = g.op("Shape", "ids")
    first = g.op("Slice", g.const("positions", positions), g.const("zero", np.array([0])), n,
                 g.const("axis0", np.array([0])))
    x = g.layer_norm(g.op("Add", g.op("Gather", words, "ids", axis=0), first), "emb.ln", t,
                     "embeddings.LayerNorm")
    for i in range(LAYERS):
        x = _feed_forward(g, _attention(g, x, t, i), t, i)
    g.nodes.append(helper.make_node("ReduceMean", [x], ["pooled"], axes=[0], keepdims=0))
    graph = helper.make_graph(
        g.nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [HIDDEN])], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="laya_desktop.routing.minilm_onnx_graph")
    model.ir_version = 8  # what onnxruntime releases of the last three years all read
    onnx.checker.check_model(model)
    return model


def write_onnx(weights: Path, out: Path, kind: str = "int8") -> Path:
    """Write the graph to `out` through a temporary name, so no reader sees half a file."""
    model = build_model(weights, kind)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    try:
        onnx.save(model, str(tmp))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
