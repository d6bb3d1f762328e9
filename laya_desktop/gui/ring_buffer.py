"""Fixed-size history of telemetry samples and events for the plots. Qt-free.

The poller appends on the GUI thread; the plot timer reads arrays from here (pulled, not pushed).
"""
from __future__ import annotations

from collections import deque

import numpy as np

GIB = float(1 << 30)


class SampleRing:
    def __init__(self, capacity: int = 4 * 60 * 15) -> None:
        self.samples: deque[dict] = deque(maxlen=capacity)
        self.events: deque[dict] = deque(maxlen=500)
        self.version = 0          # bumps on every append, so the plot timer can skip idle ticks
        self.t0: float | None = None

    def extend(self, samples: list[dict]) -> None:
        for s in samples:
            if self.t0 is None:
                self.t0 = float(s.get("t", 0.0))
            self.samples.append(s)
        if samples:
            self.version += 1

    def add_events(self, events: list[dict]) -> None:
        self.events.extend(events)
        if events:
            self.version += 1

    def latest(self) -> dict | None:
        return self.samples[-1] if self.samples else None

    def x(self) -> np.ndarray:
        t0 = self.t0 or 0.0
        return np.fromiter((float(s.get("t", 0.0)) - t0 for s in self.samples), float, len(self.samples))

    def series(self, key: str, scale: float = 1.0) -> np.ndarray:
        return np.fromiter((float(s.get(key) or 0.0) / scale for s in self.samples), float,
                           len(self.samples))

    def model_names(self) -> list[str]:
        names: dict[str, None] = {}
        for s in self.samples:
            for name in (s.get("models") or {}):
                names[name] = None
        return list(names)

    def model_series(self, name: str, key: str, scale: float = 1.0) -> np.ndarray:
        """A per-model figure; NaN where the model had no entry (gaps in the curve)."""
        def value(s: dict) -> float:
            m = (s.get("models") or {}).get(name)
            if m is None or m.get(key) is None:
                return float("nan")
            return float(m[key]) / scale
        return np.fromiter((value(s) for s in self.samples), float, len(self.samples))

    def event_x(self, event: dict) -> float:
        return float(event.get("t", 0.0)) - (self.t0 or 0.0)
