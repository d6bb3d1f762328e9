"""A model file or folder described before it is added: metadata and the memory estimate.

Qt-free but for QCoreApplication.translate (which needs no application object).

`inspect_*` run in workers and return the readers' records as dicts (GgufInfo and
MemoryEstimate, MlxFolderInfo); `describe_*` turn them into the dialog's text.
"""
from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from laya_desktop.gui.units import fmt_bytes, fmt_count


def inspect_gguf(path: str, n_ctx: int, parallel: int, kv_cache_type: str) -> tuple[dict, dict]:
    from laya_desktop.runners.memory_estimate import estimate_memory
    from laya_desktop.runners.builtin import resolve_model_path
    from laya_desktop.runners.gguf_info import read_gguf_info

    info = read_gguf_info(str(resolve_model_path(path)))  # builtin:NAME may assemble its file
    return info.to_dict(), estimate_memory(info, n_ctx, parallel, kv_cache_type).to_dict()


def inspect_mlx(path: str, n_ctx: int, parallel: int) -> tuple[dict, dict]:
    """Raises NotAnMlxModel with the reason, in the user's language, when the folder is not an
    MLX model."""
    from laya_desktop.gui.mlx_folder_text import translated, translated_text
    from laya_desktop.runners.mlx_folder import NotAnMlxModel, read_mlx_folder

    try:
        info = read_mlx_folder(path)
    except NotAnMlxModel as exc:
        raise translated(exc) from exc
    found = info.to_dict()
    found["warnings"] = [translated_text(w) for w in info.warnings]
    return found, estimate_mlx(info.path, info.weights_bytes, n_ctx, parallel)


def estimate_mlx(folder: str, weights_bytes: int, n_ctx: int, parallel: int) -> dict:
    """The figure the engine admits the load with (memory_guard), split into its parts. It is
    linear in the KV tokens, so the KV part is its difference to the same model with no context."""
    from laya_desktop.config.schema import ModelConfig
    from laya_desktop.runners.memory_estimate import estimate_model_bytes

    def ram(ctx: int) -> int:
        found = estimate_model_bytes(ModelConfig(name="preview", backend="mlx", path=folder,
                                                 n_ctx=ctx, parallel=parallel))
        return found[0] if found else 0
    total, bare = ram(n_ctx), ram(0)
    tokens = n_ctx * parallel
    return {"weights_bytes": weights_bytes, "kv_bytes": total - bare, "kv_tokens": tokens,
            "kv_bytes_per_token": (total - bare) // tokens if tokens else 0,
            "overhead_bytes": bare - weights_bytes, "total_bytes": total}


def describe_gguf(info: dict, estimate: dict) -> str:
    lines = [
        QCoreApplication.translate("ModelInspect", "Architecture: {value}").format(
            value=info["architecture"] or "?"),
        QCoreApplication.translate("ModelInspect", "Parameters: {value}").format(
            value=fmt_count(info["parameters"])),
        QCoreApplication.translate("ModelInspect", "Quantization: {value}").format(
            value=info["quantization"] or "?"),
        QCoreApplication.translate("ModelInspect", "Context length: {value}").format(
            value=info["context_length"] or "?"),
    ]
    return "\n".join(lines + estimate_lines(estimate))


def describe_mlx(info: dict, estimate: dict) -> str:
    lines = [
        QCoreApplication.translate("ModelInspect", "Architecture: {value}").format(
            value=info.get("architecture", "?")),
        QCoreApplication.translate("ModelInspect", "Parameters: {value}").format(
            value=fmt_count(info.get("parameters"))),
        QCoreApplication.translate(
            "ModelInspect", "Weights: {size} in {files} safetensors file(s) ({quantization})").format(
            size=fmt_bytes(info.get("weights_bytes")), files=info.get("weight_files", 0),
            quantization=info.get("quantization", "?")),
        QCoreApplication.translate("ModelInspect", "Context length: {value}").format(
            value=info.get("context_length") or "?"),
    ]
    lines += estimate_lines(estimate)
    warning = QCoreApplication.translate("ModelInspect", "Warning: {text}")
    return "\n".join(lines + [warning.format(text=w) for w in info.get("warnings", [])])


def estimate_lines(est: dict) -> list[str]:
    """The parts that add up to the total, then the figures that are not part of it: the runner
    process is a share of the overhead, and the reserved compute buffer is virtual memory."""
    if not isinstance(est.get("total_bytes"), (int, float)):
        return [QCoreApplication.translate("ModelInspect", "Memory estimate: ?")]
    lines = [QCoreApplication.translate("ModelInspect", "Memory estimate: {total} of RAM in total =").format(
        total=fmt_bytes(est["total_bytes"]))]
    sign = "  "
    if isinstance(est.get("weights_bytes"), (int, float)):
        lines.append(sign + QCoreApplication.translate("ModelInspect", "weights {size}").format(
            size=fmt_bytes(est["weights_bytes"])))
        sign = "+ "
    if isinstance(est.get("kv_bytes"), (int, float)):
        per_token = est.get("kv_bytes_per_token")
        tokens = est.get("kv_tokens")
        detail = ""
        if per_token and tokens:
            detail = " " + QCoreApplication.translate(
                "ModelInspect", "({tokens} tokens × {size} per token)").format(
                tokens=f"{tokens:,}", size=fmt_bytes(per_token))
        lines.append(sign + QCoreApplication.translate("ModelInspect", "KV cache {size}").format(
            size=fmt_bytes(est["kv_bytes"])) + detail)
    if isinstance(est.get("compute_bytes"), (int, float)):
        lines.append("+ " + QCoreApplication.translate(
            "ModelInspect", "compute {size} (the resident part)").format(size=fmt_bytes(est["compute_bytes"])))
    if isinstance(est.get("overhead_bytes"), (int, float)):
        runtime = est.get("runtime_bytes")
        text = "+ " + QCoreApplication.translate("ModelInspect", "overhead {size}").format(
            size=fmt_bytes(est["overhead_bytes"]))
        if runtime:
            text += " " + QCoreApplication.translate(
                "ModelInspect", "(the runner process: {size} of it)").format(size=fmt_bytes(runtime))
        lines.append(text)
    if est.get("compute_reserved_bytes"):
        lines.append(QCoreApplication.translate(
            "ModelInspect",
            "Compute buffer reserved (virtual, mostly untouched): {size}, not in the total").format(
            size=fmt_bytes(est["compute_reserved_bytes"])))
    if est.get("vram_bytes"):
        lines.append(QCoreApplication.translate(
            "ModelInspect", "VRAM: {size} (offloaded layers, their KV, GPU compute)").format(
            size=fmt_bytes(est["vram_bytes"])))
    return lines
