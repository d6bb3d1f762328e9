"""How much memory a runner will need for a model at given settings: a GGUF in detail (below),
an MLX folder from its weights and config.json (`estimate_model_bytes`, what the guard admits with).

The estimate is what the runner process will hold once loaded and serving, in the currency the
memory policy uses (private memory + the mapped weights it needs):

- weights: the tensor data, memory-mapped (page cache). With `cpu_repack` the tensors ggml
  repacks for faster kernels (runners/repacked_weights.py: Q4_0, Q4_K, IQ4_NL on x86-64 with
  AVX2) are copied into the process's own memory; on Linux the runner
  gives back the mapped originals, so the copy replaces them, elsewhere it comes on top. Layers
  offloaded to a GPU move to VRAM (the input embeddings always stay in RAM).
- KV cache: bytes per token = sum over layers of n_head_kv x (head_dim_k + head_dim_v) x element
  size (f16 2 bytes, q8_0 34/32, q4_0 18/32), times n_ctx x parallel cells (llama.cpp pads each
  sequence's share to 256 cells). Sliding-window layers (Gemma 2/3, Cohere 2) hold only
  n_swa x parallel + n_ubatch cells (the runner turns `swa_full` off, as llama-server does; see
  runners/sliding_window.py); a slot also keeps a checkpoint of its window cells, which grows
  with its prompt to a window and a micro-batch (`checkpoint_bytes`, not in the
  total: a short prompt's are small, and the guard watches what the runner really holds); `estimate_memory(..., swa_full=True)` models full-size caches. llama.cpp writes the whole cache when
  it clears it, so all of it is resident from the start (tests/test_memory_estimate.py holds a
  real Gemma runner's RSS against the estimate).
- compute: llama.cpp *reserves* a compute buffer sized for the worst graph, dominated by the
  logits of a full micro-batch (n_vocab x n_ubatch x 4 bytes: 512 MiB for Gemma's 262k vocabulary)
  — but that is virtual memory; only the parts a step touches become resident. The runner asks
  for logits of the last position of each sequence only, so the estimate counts logits for
  `parallel` outputs (twice: graph tensor and output buffer), the activations of one micro-batch,
  and, without flash attention, the attention scores of a micro-batch against one sequence's
  context (2 x n_head x n_ubatch x n_ctx x 4 bytes). `compute_reserved_bytes` reports the virtual
  reservation separately; it is not in the total.
- overhead: the runner process itself (Python + the llama.cpp libraries, RUNTIME_BYTES: the RSS
  after `import llama_cpp`), llama.cpp's model and context bookkeeping (CONTEXT_FIXED_BYTES, from
  a tiny model) and the vocabulary (token strings, scores, piece cache: VOCAB_BYTES_PER_TOKEN,
  from vocabularies of hundreds to 262k tokens).

Calibrated on Gemma 3 270M Q4_K_M (Linux x86-64, CPU, llama-cpp-python 0.3.36, n_ctx 1024 x 4)
against a fresh process with llama.cpp configured as the runner does it, after a warm-up
completion: tests/test_memory_estimate.py re-measures the estimate against that RSS.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from laya_desktop.runners.builtin import resolve_model_path
from laya_desktop.runners.gguf_info import GgufError, GgufInfo, read_gguf_info
from laya_desktop.runners.repacked_weights import ORIGINALS_GIVEN_BACK, repacked_tensors
from laya_desktop.runners.swa_layout import window_cells

MIB = 1 << 20
KV_ELEMENT_BYTES = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
RUNTIME_BYTES = 50 * MIB          # python + llama_cpp libraries in a runner process
CONTEXT_FIXED_BYTES = 8 * MIB     # llama.cpp model + context bookkeeping, graph metadata
VOCAB_BYTES_PER_TOKEN = 200
N_UBATCH = 512                    # the runner's micro-batch (llama_cpp_backend.N_BATCH)
KV_PAD = 256                      # llama.cpp pads each sequence's cells to this


@dataclass
class MemoryEstimate:
    weights_bytes: int          # in RAM: mapped tensor data (+ repacked copies where kept beside)
    kv_bytes: int               # in RAM
    kv_bytes_per_token: int     # all layers at full size, at this kv_cache_type
    compute_bytes: int          # resident part of the compute and output buffers, in RAM
    overhead_bytes: int         # runtime + llama.cpp bookkeeping + vocabulary
    total_bytes: int            # RAM: weights + kv + compute + overhead
    vram_bytes: int             # offloaded layers' weights, their KV and a GPU compute buffer
    runtime_bytes: int = RUNTIME_BYTES  # the part of overhead a bare runner process holds
    kv_tokens: int = 0          # cells allocated: parallel x n_ctx (padded)
    compute_reserved_bytes: int = 0     # what llama.cpp reserves (virtual; mostly never touched)
    checkpoint_bytes: int = 0   # at most, the slots' sliding-window checkpoints (not in the total)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def kv_bytes_per_token_of(n_head_kv_per_layer, head_dim_k: int, head_dim_v: int,
                          element_bytes: float) -> int:
    """The one KV formula (GGUF, a loaded llama.cpp model, an MLX config.json): the sum over
    layers of n_head_kv x (head_dim_k + head_dim_v) x element size."""
    return math.ceil(sum(n_head_kv_per_layer) * (head_dim_k + head_dim_v) * element_bytes)


def kv_bytes_per_token(info: GgufInfo, kv_cache_type: str = "f16") -> int:
    """KV bytes per token of a GGUF at a kv_cache_type."""
    return kv_bytes_per_token_of(info.n_head_kv_per_layer, info.head_dim_k, info.head_dim_v,
                                 _element_bytes(kv_cache_type))


def mlx_kv_bytes_per_token(config: dict, dtype_bytes: int) -> int:
    """KV bytes per token of an MLX model from its config.json (KeyError when a size is missing)."""
    cfg = {**config, **config.get("text_config", {})}
    heads = int(cfg["num_attention_heads"])
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or cfg["hidden_size"] // heads)
    return kv_bytes_per_token_of([kv_heads] * int(cfg["num_hidden_layers"]), head_dim, head_dim,
                                 dtype_bytes)


def _element_bytes(kv_cache_type: str) -> float:
    try:
        return KV_ELEMENT_BYTES[kv_cache_type]
    except KeyError:
        raise ValueError(f"unknown kv_cache_type {kv_cache_type!r} "
                         f"(valid: {', '.join(KV_ELEMENT_BYTES)})") from None


def _pad(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def estimate_memory(info: GgufInfo, n_ctx: int, parallel: int, kv_cache_type: str = "f16",
                    n_gpu_layers: int = 0, *, swa_full: bool = False, flash_attn: bool = True,
                    n_ubatch: int = N_UBATCH, cpu_repack: bool = True) -> MemoryEstimate:
    """Memory a runner needs for `info` with `n_ctx` tokens per sequence and `parallel` sequences."""
    if n_ctx < 1 or parallel < 1:
        raise ValueError("n_ctx and parallel must be at least 1")
    elem = _element_bytes(kv_cache_type)
    notes: list[str] = []
    n_layer = max(info.n_layer, 1)

    # -- KV cache ---------------------------------------------------------------------------
    cells = parallel * _pad(n_ctx, KV_PAD)
    swa = set(info.swa_layers)
    swa_cells = cells
    if swa and not swa_full and info.sliding_window:
        swa_cells = window_cells(info.sliding_window, parallel, n_ubatch, cells)
    layer_bytes = [h * (info.head_dim_k + info.head_dim_v) * elem for h in info.n_head_kv_per_layer]
    kv_layer_total = [b * (swa_cells if i in swa else cells) for i, b in enumerate(layer_bytes)]
    checkpoints = 0
    if swa:
        if not swa_full:   # each slot's prompt checkpoint: at most a window and a micro-batch
            per_slot = min(info.sliding_window + n_ubatch, _pad(n_ctx, KV_PAD))
            checkpoints = parallel * per_slot * sum(layer_bytes[i] for i in swa if i < len(layer_bytes))
        notes.append(f"{len(swa)} of {info.n_layer} layers use sliding-window attention "
                     f"(window {info.sliding_window}); "
                     + ("counted at full size (swa_full)" if swa_full
                        else f"counted at {swa_cells} cells, as the runner configures llama.cpp; "
                             f"long prompts add up to {checkpoints / MIB:.1f} MiB of checkpoints"))

    # -- GPU offload ------------------------------------------------------------------------
    if n_gpu_layers < 0 or n_gpu_layers > info.n_layer:
        gpu_layers = info.n_layer
    else:
        gpu_layers = n_gpu_layers
    frac = gpu_layers / n_layer
    all_on_gpu = gpu_layers >= info.n_layer and info.n_layer > 0

    repacked = repacked_tensors(info) if cpu_repack else []
    repack = sum(t.nbytes for t in repacked)
    offloadable = info.tensor_bytes - info.token_embd_bytes
    weights_vram = int(offloadable * frac)
    copy_on_top = 0 if ORIGINALS_GIVEN_BACK else int(repack * (1 - frac))
    weights_ram = info.tensor_bytes - weights_vram + copy_on_top
    kv_total = int(sum(kv_layer_total))
    gpu_kv_layers = range(info.n_layer - gpu_layers, info.n_layer)  # llama.cpp offloads the last layers
    kv_vram = int(sum(kv_layer_total[i] for i in gpu_kv_layers if i < len(kv_layer_total)))
    kv_ram = kv_total - kv_vram

    # -- compute buffers ----------------------------------------------------------------------
    logits = 2 * info.n_vocab * 4 * parallel
    n_ff = info.n_ff or 4 * info.n_embd
    activations = n_ubatch * (4 * info.n_embd + 2 * n_ff) * 4
    attention = 0 if flash_attn else 2 * info.n_head * n_ubatch * _pad(n_ctx, KV_PAD) * 4
    compute = logits + activations + attention
    reserved = max(info.n_vocab * n_ubatch * 4,
                   2 * info.n_head * n_ubatch * cells * 4 if not flash_attn else 0) + activations
    compute_vram = 0
    if gpu_layers > 0:
        # the GPU holds its own compute buffer (reserved and touched: no lazy paging in VRAM)
        compute_vram = activations + attention + (info.n_vocab * n_ubatch * 4 if all_on_gpu else 0)
        notes.append(f"{gpu_layers} of {info.n_layer} layers on the GPU; VRAM figure is rougher than RAM")
    if not flash_attn:
        notes.append("without flash attention the attention scores of a micro-batch count too")

    overhead = RUNTIME_BYTES + CONTEXT_FIXED_BYTES + VOCAB_BYTES_PER_TOKEN * info.n_vocab
    if repack and frac < 1:
        types = "/".join(sorted({t.type for t in repacked}))
        notes.append(f"cpu_repack copies {repack / MIB:.1f} MiB of {types} weights into the "
                     + ("runner's memory, which gives back their mapped originals" if ORIGINALS_GIVEN_BACK
                        else "runner's memory, beside their mapped originals"))
    notes.append(f"llama.cpp reserves a {reserved / MIB:.0f} MiB compute buffer; only the touched "
                 f"part ({compute / MIB:.0f} MiB estimated) becomes resident")

    total = weights_ram + kv_ram + compute + overhead
    return MemoryEstimate(
        weights_bytes=int(weights_ram), kv_bytes=int(kv_ram),
        kv_bytes_per_token=kv_bytes_per_token(info, kv_cache_type), compute_bytes=int(compute),
        overhead_bytes=int(overhead), total_bytes=int(total),
        vram_bytes=int(weights_vram + kv_vram + compute_vram), runtime_bytes=RUNTIME_BYTES,
        kv_tokens=cells, compute_reserved_bytes=int(reserved), checkpoint_bytes=int(checkpoints),
        notes=notes,
    )


def estimate_model_bytes(model) -> tuple[int, int] | None:
    """(RAM, VRAM) a model needs to run well, or None when it cannot be estimated."""
    try:
        path = resolve_model_path(model.path or "")
    except (OSError, ValueError):
        return None  # the load itself will fail with the clear message
    if model.backend == "llama_cpp":
        try:
            info = read_gguf_info(path)
        except (GgufError, OSError, ValueError):
            return None
        est = estimate_memory(info, model.n_ctx, model.effective_parallel, model.kv_cache_type,
                              model.n_gpu_layers, cpu_repack=model.cpu_repack)
        return est.total_bytes, est.vram_bytes
    if model.backend == "mlx":
        return _estimate_mlx(Path(path), model.n_ctx * model.effective_parallel), 0
    return None


def _estimate_mlx(folder: Path, kv_tokens: int) -> int:
    weights = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    try:
        cfg = json.loads((folder / "config.json").read_text())
        dtype = {**cfg, **cfg.get("text_config", {})}.get("torch_dtype")
        per_token = mlx_kv_bytes_per_token(cfg, {"float32": 4, "float16": 2,
                                                 "bfloat16": 2}.get(dtype, 2))
    except (OSError, ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError):
        per_token = 0
    return int(weights * 1.1) + per_token * kv_tokens + 200 * 1024 * 1024
