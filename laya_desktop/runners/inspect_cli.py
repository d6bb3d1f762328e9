"""`laya models inspect FILE`: GGUF metadata and the memory estimate, as a table or one JSON object."""
from __future__ import annotations

import json
import sys

from laya_desktop.runners.memory_estimate import estimate_memory
from laya_desktop.runners.gguf_info import GgufError, read_gguf_info


def _size(n: int | float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _count(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:.1f} M"
    return str(n)


def render_inspect(info, estimate, n_ctx: int, parallel: int, kv_cache_type: str) -> str:
    head_dims = (str(info.head_dim_k) if info.head_dim_k == info.head_dim_v
                 else f"k {info.head_dim_k} / v {info.head_dim_v}")
    swa = (f"{len(info.swa_layers)} of {info.n_layer} layers, window {info.sliding_window}"
           if info.swa_layers else ("window " + str(info.sliding_window) if info.sliding_window else "no"))
    meta_rows = [
        ("file", info.path),
        ("file size", _size(info.file_size)),
        ("architecture", info.architecture),
        ("name", info.name or "-"),
        ("parameters", _count(info.parameters)),
        ("quantization", info.quantization),
        ("layers", str(info.n_layer)),
        ("embedding", str(info.n_embd)),
        ("heads / KV heads", f"{info.n_head} / {info.n_head_kv}"),
        ("head size", head_dims),
        ("vocabulary", str(info.n_vocab)),
        ("trained context", str(info.context_length)),
        ("sliding window", swa),
        ("chat template", "yes" if info.has_chat_template else "no"),
    ]
    est_rows = [
        ("settings", f"n_ctx {n_ctx} x parallel {parallel} = {estimate.kv_tokens} KV cells, "
                     f"kv_cache_type {kv_cache_type}"),
        ("KV per token", _size(estimate.kv_bytes_per_token)),
        ("weights", _size(estimate.weights_bytes)),
        ("KV cache", _size(estimate.kv_bytes)),
        ("compute buffers", _size(estimate.compute_bytes)),
        ("runtime + overhead", _size(estimate.overhead_bytes)),
        ("total RAM", _size(estimate.total_bytes)),
    ]
    if estimate.vram_bytes:
        est_rows.append(("VRAM", _size(estimate.vram_bytes)))
    width = max(len(k) for k, _ in meta_rows + est_rows)
    lines = ["GGUF metadata"]
    lines += [f"  {k:<{width}}  {v}" for k, v in meta_rows]
    lines += ["", "Memory estimate"]
    lines += [f"  {k:<{width}}  {v}" for k, v in est_rows]
    lines += [f"  note: {n}" for n in estimate.notes]
    return "\n".join(lines)


def run_inspect(args) -> int:
    n_ctx = getattr(args, "n_ctx", 4096)
    parallel = getattr(args, "parallel", 4)
    kv_type = getattr(args, "kv_cache_type", "f16")
    as_json = getattr(args, "json", False)
    try:
        path = args.file
        if str(path).startswith("builtin:"):
            from laya_desktop.runners.builtin import resolve_model_path
            path = resolve_model_path(path)
        info = read_gguf_info(path)
        estimate = estimate_memory(info, n_ctx, parallel, kv_type)
    except Exception as exc:   # a file this reader trips on is one line and exit 1, never a traceback
        if isinstance(exc, GgufError):
            message = str(exc)
        elif isinstance(exc, OSError):
            message = f"{args.file}: {exc.strerror or exc}"
        elif isinstance(exc, ValueError):
            message = f"{args.file}: {exc}"
        else:
            message = f"{args.file}: damaged GGUF file ({type(exc).__name__})"
        if as_json:
            print(json.dumps({"error": {"message": message, "file": str(args.file)}}))
        print(f"laya models inspect: {message}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"file": info.path, "metadata": info.to_dict(),
                          "settings": {"n_ctx": n_ctx, "parallel": parallel, "kv_cache_type": kv_type},
                          "estimate": estimate.to_dict()}))
    else:
        print(render_inspect(info, estimate, n_ctx, parallel, kv_type))
    return 0
