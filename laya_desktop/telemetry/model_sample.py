"""One model's live figures: the record telemetry samples, the memory guard, /metrics, the admin
API and the GUI all read, and its JSON on the wire (`models` in GET /admin/telemetry samples).

It lives here, below the engine, so that every reader can import it; the engine's ServedState is
ModelState, and a runner's RunnerState holds the same values less "busy" and "remote".
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class ModelState(StrEnum):
    """A served model's state on the wire: its runner's, plus "busy" (ready, requests in flight)
    and "remote" (no runner)."""
    UNLOADED = "unloaded"
    LOADING = "loading"
    READY = "ready"
    BUSY = "busy"
    STOPPING = "stopping"
    ERROR = "error"
    REMOTE = "remote"

    @property
    def loaded(self) -> bool:
        """Its runner answers requests now."""
        return self in (ModelState.READY, ModelState.BUSY)

    @property
    def holds_memory(self) -> bool:
        """A runner process is up (loading, serving or on its way out)."""
        return self in (ModelState.LOADING, ModelState.READY, ModelState.BUSY, ModelState.STOPPING)


# Reported by MLX runners only; on the wire only when the runner reported them.
MLX_FIGURES = ("mlx_active_memory", "mlx_peak_memory", "mlx_cache_memory")
# What GET /admin/models adds to each row from the latest sample.
MEMORY_FIGURES = ("rss", "private", "shared", "vram", "kv_bytes")


@dataclass(frozen=True)
class ModelSample:
    state: ModelState
    pid: int | None = None
    rss: int | None = None              # bytes, of the runner process
    private: int | None = None
    shared: int | None = None
    vram: int | None = None             # bytes on the GPUs, by the runner's pid
    kv_used_tokens: int | None = None
    kv_capacity_tokens: int | None = None
    kv_bytes: int | None = None
    kv_capacity_bytes: int | None = None
    active: int = 0                     # requests being generated
    queued: int = 0                     # requests waiting for a slot
    tokens_per_s: float | None = None
    mlx_active_memory: int | None = None
    mlx_peak_memory: int | None = None
    mlx_cache_memory: int | None = None
    prompt_cache: dict | None = None    # a runner's prompt_cache_* stats, when it has a prompt cache

    @property
    def loaded(self) -> bool:
        return self.state.loaded

    @property
    def memory_bytes(self) -> int:
        """Private and shared resident bytes: what unloading it would give back at most."""
        return (self.private or 0) + (self.shared or 0)

    def to_json(self) -> dict:
        out = {key: getattr(self, key) for key in _FIELDS}  # asdict deep-copies every value
        out["state"] = str(self.state)
        for key in (*MLX_FIGURES, "prompt_cache"):
            if out[key] is None:
                del out[key]
        return out

    def memory_json(self) -> dict:
        return {key: getattr(self, key) for key in MEMORY_FIGURES}

    @classmethod
    def from_json(cls, data: dict) -> ModelSample:
        """The wire's entry; keys it does not know are ignored, a state it does not know raises."""
        values = {key: value for key, value in data.items() if key in _KNOWN}
        values["state"] = ModelState(data["state"])
        return cls(**values)


_FIELDS = tuple(f.name for f in fields(ModelSample))
_KNOWN = frozenset(_FIELDS)
