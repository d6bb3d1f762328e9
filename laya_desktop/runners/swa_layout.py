"""Which layers of a model attend over a sliding window, and how many cells their cache holds:
llama.cpp's layout, shared by the GGUF reader, the memory estimate and the runner."""
from __future__ import annotations

# Sliding-window attention layouts llama.cpp uses: layer il is a sliding-window layer when
# il % pattern < pattern - 1 (gemma3: five local layers, then one global).
SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "cohere2": 4}
KV_PAD = 256  # llama.cpp pads its caches' cell counts to this


def sliding_window_layers(arch: str, n_layer: int, window, pattern_meta=None) -> list[int]:
    """The sliding-window layers of a model, as llama.cpp lays them out (the GGUF's own
    `attention.sliding_window_pattern` when it has one)."""
    if not isinstance(window, int) or window <= 0:
        return []
    if isinstance(pattern_meta, list) and len(pattern_meta) >= n_layer:
        return [i for i in range(n_layer) if pattern_meta[i]]
    pattern = pattern_meta if isinstance(pattern_meta, int) and pattern_meta > 0 else SWA_PATTERNS.get(arch)
    if not pattern:
        return []  # unknown layout: treat every layer as global (the larger, safer estimate)
    return [i for i in range(n_layer) if i % pattern < pattern - 1]


def window_cells(window: int, parallel: int, n_ubatch: int, cells: int) -> int:
    """Cells of the sliding-window layers' cache: one window per sequence plus a micro-batch,
    at most the full cache's, padded (llama.cpp's iSWA cache with one KV stream)."""
    return (min(cells, window * parallel + n_ubatch) + KV_PAD - 1) // KV_PAD * KV_PAD
