"""What the Monitor plots, as plain data: the series of each plot, their y ranges, the CSV.

Qt-free but for QT_TRANSLATE_NOOP, an identity function that marks the labels for lupdate (the
panel passes its translate function as `tr`).

A Series names ring columns and how to turn them into the plotted values, so the panel's redraw
is one loop: for each curve, `values(ring, rows)` then setData.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from PySide6.QtCore import QT_TRANSLATE_NOOP

from laya_desktop.gui.ring_buffer import (
    GIB, GPU_FIELDS, MIB, MODEL_FIELDS, SYSTEM_FIELDS, SampleRing, gpu_key, model_key,
)



# The smallest y span a plot shows, in its own units: a change of a few hundred MiB must be visible
# on a machine with tens of GiB, so the axis follows the data, not 0..total.
MIN_SPAN = {"ram_used": 0.25, "ram_available": 0.25, "runners": 256.0, "swap": 0.25, "vram": 0.25, "swap_io": 1.0, "kv_pct": 5.0,
            "kv_bytes": 1.0, "requests": 2.0, "tokens": 5.0}


@dataclass(frozen=True)
class Series:
    plot: str                 # ram_used | ram_available | runners | swap | swap_io | vram | kv_pct | kv_bytes | requests | tokens
    key: str                  # ring column (the numerator)
    label: str
    scale: float = 1.0        # divide by this (GIB, MIB)
    per: str | None = None    # divide by this column too, ×100 (a percentage)
    dashed: bool = False
    color_index: int = 0

    def values(self, ring: SampleRing, rows: slice) -> np.ndarray:
        y = ring.column(self.key, rows)
        if self.per is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                return y * 100.0 / ring.column(self.per, rows)
        return y / self.scale if self.scale != 1.0 else y


def system_series(tr) -> list[Series]:
    return [
        Series("ram_used", "ram_used", tr(QT_TRANSLATE_NOOP("MonitorPanel", "RAM used")), GIB, color_index=0),
        Series("ram_available", "ram_available", tr(QT_TRANSLATE_NOOP("MonitorPanel", "RAM available")), GIB, color_index=1),
        Series("swap", "swap_used", tr(QT_TRANSLATE_NOOP("MonitorPanel", "swap used")), GIB, color_index=0),
        Series("swap_io", "swap_in_bps", tr(QT_TRANSLATE_NOOP("MonitorPanel", "swap in")), MIB, color_index=0),
        Series("swap_io", "swap_out_bps", tr(QT_TRANSLATE_NOOP("MonitorPanel", "swap out")), MIB, color_index=1),
    ]


def model_series(name: str, index: int, tr) -> list[Series]:
    """Curves of one model's runner; the colour index keeps a model's colour across plots."""
    c = index + 2
    k = lambda field: model_key(name, field)  # noqa: E731
    return [
        Series("runners", k("private"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} private")).format(model=name), MIB, color_index=c),
        Series("runners", k("shared"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} mapped")).format(model=name), MIB, dashed=True,
               color_index=c),
        # MLX on Apple Silicon reports its own (unified) memory; absent elsewhere, so not drawn.
        Series("runners", k("mlx_active_memory"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} MLX active")).format(
            model=name), MIB, dashed=True, color_index=c + 1),
        Series("vram", k("vram"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} VRAM")).format(model=name), GIB, dashed=True, color_index=c),
        Series("kv_pct", k("kv_used_tokens"), name, per=k("kv_capacity_tokens"), color_index=c),
        Series("kv_bytes", k("kv_bytes"), name, MIB, color_index=c),
        # saved prompt states beyond the slots (runners/prompt_cache.py); absent without a cache
        Series("kv_bytes", k("prompt_cache_ram_bytes"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} prompt cache, RAM")).format(
            model=name), MIB, dashed=True, color_index=c),
        Series("kv_bytes", k("prompt_cache_disk_bytes"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} prompt cache, disk")).format(
            model=name), MIB, dashed=True, color_index=c + 1),
        Series("requests", k("active"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} active")).format(model=name), color_index=c),
        Series("requests", k("queued"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "{model} queued")).format(model=name), dashed=True,
               color_index=c),
        Series("tokens", k("tokens_per_s"), name, color_index=c),
    ]


def gpu_series(index: int, tr) -> list[Series]:
    return [Series("vram", gpu_key(index, "used"), tr(QT_TRANSLATE_NOOP("MonitorPanel", "GPU {index} used")).format(index=index), GIB,
                   color_index=index)]


def y_range(plot: str, arrays: list[np.ndarray], extra: list[float] = ()) -> tuple[float, float] | None:
    """The data's min/max with padding (at least MIN_SPAN wide); a threshold in `extra` is taken
    in when it is near the data (two spans, or a tenth of its level), so the guard's line shows
    when the guard is close, without squashing the curve when it is far."""
    lo, hi = math.inf, -math.inf
    for y in arrays:
        if y.size:
            finite = y[np.isfinite(y)]
            if finite.size:
                lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
    if not math.isfinite(lo):
        return None
    data_lo = lo
    span = max(hi - lo, MIN_SPAN.get(plot, 1.0))
    near = max(2 * span, 0.1 * max(abs(lo), abs(hi)))
    for value in extra:
        if value is not None and math.isfinite(value) and lo - near <= value <= hi + near:
            lo, hi = min(lo, value), max(hi, value)
    span = max(hi - lo, MIN_SPAN.get(plot, 1.0))
    mid = (hi + lo) / 2
    pad = span * 0.12
    bottom, top = mid - span / 2 - pad, mid + span / 2 + pad
    if data_lo >= 0 > bottom:          # figures that cannot be negative: start the axis at 0
        bottom, top = 0.0, top - bottom
    return bottom, top


def csv_columns(ring: SampleRing) -> list[str]:
    keys = list(SYSTEM_FIELDS)
    keys += [gpu_key(i, f) for i in ring.gpus for f in GPU_FIELDS]
    keys += [model_key(m, f) for m in ring.models for f in MODEL_FIELDS if model_key(m, f) in ring.columns]
    return keys


def write_csv(ring: SampleRing, rows: slice, path: str | Path) -> int:
    """The samples in `rows` as CSV (raw units: bytes, bytes/s, tokens, %); returns the row count.
    Empty cells are figures the engine did not report."""
    keys = csv_columns(ring)
    t = ring.times(rows)
    columns = [ring.column(k, rows) for k in keys]
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["time_utc", "t"] + keys)
        for i, ti in enumerate(t):
            stamp = datetime.fromtimestamp(float(ti), tz=timezone.utc).isoformat(timespec="milliseconds")
            out.writerow([stamp, f"{ti:.3f}"] + [_cell(c[i]) for c in columns])
    return len(t)


def _cell(value: float) -> str:
    if not math.isfinite(value):
        return ""
    return str(int(value)) if value == int(value) else f"{value:.6f}"
