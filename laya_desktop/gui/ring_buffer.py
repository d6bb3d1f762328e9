"""Telemetry history for the plots: preallocated numpy columns and a write index. Qt-free.

The poller's samples are written here on the GUI thread (a few rows per poll); the plot timer
reads contiguous views of the newest rows. Every value is stored twice, at slot i and i+capacity,
so the newest n rows are always one slice: no copy, no reordering on a redraw.

Events are few (a handful a minute at most), so they stay a list; they are dropped only when they
are older than the largest window the panel shows.
"""
from __future__ import annotations

import math

import numpy as np

GIB = float(1 << 30)
MIB = float(1 << 20)
SYSTEM_FIELDS = ("ram_total", "ram_used", "ram_available", "swap_total", "swap_used",
                 "swap_in_bps", "swap_out_bps", "cpu_pct")
MODEL_FIELDS = ("rss", "private", "shared", "vram", "kv_used_tokens", "kv_capacity_tokens",
                "kv_bytes", "kv_capacity_bytes", "active", "queued", "tokens_per_s",
                "mlx_active_memory")
# a runner's prompt cache (telemetry/model_sample.py's `prompt_cache`), nested in its model entry
PROMPT_CACHE_FIELDS = ("prompt_cache_ram_bytes", "prompt_cache_disk_bytes")
GPU_FIELDS = ("used", "total")
HOUR_S = 3600.0
# An hour at 4 Hz with room to spare; a faster sample_hz keeps a shorter history.
DEFAULT_CAPACITY = 16384


def model_key(name: str, field: str) -> str:
    return f"model:{name}:{field}"


def gpu_key(index: int, field: str) -> str:
    return f"gpu:{index}:{field}"


def _number(value) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _flatten(sample: dict) -> dict[str, float]:
    """One sample as {column key: value}; absent figures are simply not there (NaN later)."""
    row = {key: _number(sample.get(key)) for key in SYSTEM_FIELDS}
    for name, m in (sample.get("models") or {}).items():
        if isinstance(m, dict):
            for field in MODEL_FIELDS:
                if field in m:
                    row[model_key(name, field)] = _number(m[field])
            cache = m.get("prompt_cache")
            if isinstance(cache, dict):
                for field in PROMPT_CACHE_FIELDS:
                    if field in cache:
                        row[model_key(name, field)] = _number(cache[field])
    for i, gpu in enumerate(sample.get("gpus") or []):
        index = int(gpu.get("index", i))
        for field in GPU_FIELDS:
            row[gpu_key(index, field)] = _number(gpu.get(field))
    return row


class SampleRing:
    """Columns of float64 (NaN = no value) indexed by a shared write position."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self.count = 0          # rows held (≤ capacity)
        self.written = 0        # rows ever written; the write slot is written % capacity
        self.version = 0        # bumps on every change, so the plot timer can skip idle ticks
        self.last_seq = 0
        self.t = np.full(2 * capacity, np.nan)
        self.columns: dict[str, np.ndarray] = {}
        self.models: list[str] = []    # in order of first appearance (stable curve colours)
        self.gpus: list[int] = []
        self.latest: dict | None = None
        self.events = EventList()

    def __len__(self) -> int:
        return self.count

    # --- writing -------------------------------------------------------------------------------
    def extend(self, samples: list[dict]) -> None:
        fresh = [s for s in samples if int(s.get("seq", 0) or 0) > self.last_seq or not s.get("seq")]
        if not fresh:
            return
        fresh = fresh[-self.capacity:]
        self.last_seq = max(self.last_seq, max(int(s.get("seq", 0) or 0) for s in fresh))
        rows = [_flatten(s) for s in fresh]
        for s in fresh:
            for name in (s.get("models") or {}):
                if name not in self.models:
                    self.models.append(name)
            for i, gpu in enumerate(s.get("gpus") or []):
                index = int(gpu.get("index", i))
                if index not in self.gpus:
                    self.gpus.append(index)
        keys = set().union(*rows)
        for key in keys:
            if key not in self.columns:
                self.columns[key] = np.full(2 * self.capacity, np.nan)
        n = len(fresh)
        slots = (self.written + np.arange(n)) % self.capacity
        self._put(self.t, slots, np.fromiter((_number(s.get("t")) for s in fresh), float, n))
        for key, column in self.columns.items():
            self._put(column, slots, np.fromiter((r.get(key, math.nan) for r in rows), float, n))
        self.written += n
        self.count = min(self.capacity, self.count + n)
        self.latest = fresh[-1]
        self.version += 1

    def _put(self, column: np.ndarray, slots: np.ndarray, values: np.ndarray) -> None:
        column[slots] = values
        column[slots + self.capacity] = values

    def reset(self) -> None:
        """A new engine numbers its samples from 1 again."""
        self.__init__(self.capacity)

    def add_events(self, events: list[dict]) -> None:
        if self.events.extend(events):
            self.version += 1

    # --- reading -------------------------------------------------------------------------------
    def window(self, seconds: float | None = None) -> slice:
        """The rows of the last `seconds` (by the newest sample's time), as one slice of every
        column; all rows held when seconds is None."""
        end = self.written % self.capacity + self.capacity
        start = end - self.count
        if seconds is not None and self.count:
            t = self.t[start:end]
            start += int(np.searchsorted(t, t[-1] - seconds, side="left"))
        return slice(start, end)

    def column(self, key: str, rows: slice) -> np.ndarray:
        column = self.columns.get(key)
        if column is None:
            return np.full(rows.stop - rows.start, np.nan)
        return column[rows]

    def times(self, rows: slice) -> np.ndarray:
        return self.t[rows]

    def newest_t(self) -> float | None:
        return float(self.t[self.written % self.capacity + self.capacity - 1]) if self.count else None


class EventList:
    """Engine events, oldest first; older than the horizon (the largest window) are dropped."""

    def __init__(self, horizon_s: float = HOUR_S) -> None:
        self.horizon_s = horizon_s
        self.items: list[dict] = []
        self.total = 0            # events ever added (markers keep counting past the horizon)
        self.last_seq = 0

    def __len__(self) -> int:
        return len(self.items)

    def extend(self, events: list[dict]) -> bool:
        fresh = [e for e in events if int(e.get("seq", 0) or 0) > self.last_seq or not e.get("seq")]
        if not fresh:
            return False
        self.last_seq = max(self.last_seq, max(int(e.get("seq", 0) or 0) for e in fresh))
        self.items.extend(fresh)
        self.total += len(fresh)
        newest = max(_number(e.get("t")) for e in fresh)
        if math.isfinite(newest) and _number(self.items[0].get("t")) < newest - self.horizon_s:
            cut = newest - self.horizon_s
            self.items = [e for e in self.items if _number(e.get("t")) >= cut]
        return True

    def between(self, t0: float, t1: float) -> list[dict]:
        return [e for e in self.items if t0 <= _number(e.get("t")) <= t1]
