"""A fixed-size ring of dict items numbered by a monotonically increasing `seq`.

Telemetry samples, events and the request log all live in one of these. `seq` starts at 1 and
never repeats, so a client that polls `?since=S` gets every item it has not seen yet (or, after
falling more than `capacity` items behind, the oldest ones still kept). Item `seq` lives in slot
`(seq - 1) % capacity`, so `since()` is index arithmetic over the k items returned, not a scan.
"""
from __future__ import annotations

import threading

# One hour at 4 Hz, the default sample rate, plus headroom.
DEFAULT_CAPACITY = 16384


class SeqRing:
    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._slots: list[dict | None] = [None] * capacity
        self._last_seq = 0
        self._lock = threading.Lock()

    @property
    def last_seq(self) -> int:
        """The highest seq issued so far; 0 before any."""
        return self._last_seq

    def __len__(self) -> int:
        return min(self._last_seq, self.capacity)

    def append(self, item: dict) -> int:
        """Number `item` (sets item["seq"]), store it and return its seq."""
        with self._lock:
            seq = self._last_seq + 1
            item["seq"] = seq
            self._slots[(seq - 1) % self.capacity] = item
            self._last_seq = seq
            return seq

    def since(self, seq: int = 0) -> list[dict]:
        """Items with seq > `seq` still in the ring, oldest first."""
        return self.snapshot(seq)[1]

    def snapshot(self, seq: int = 0) -> tuple[int, list[dict]]:
        """(last_seq, items with seq > `seq`), taken atomically so the two agree."""
        with self._lock:
            last = self._last_seq
            first = max(int(seq) + 1, last - self.capacity + 1, 1)
            if first > last:
                return last, []
            cap = self.capacity
            start = (first - 1) % cap
            end = start + (last - first + 1)
            if end <= cap:
                return last, self._slots[start:end]
            return last, self._slots[start:] + self._slots[:end - cap]

    def latest(self) -> dict | None:
        with self._lock:
            if self._last_seq == 0:
                return None
            return self._slots[(self._last_seq - 1) % self.capacity]
