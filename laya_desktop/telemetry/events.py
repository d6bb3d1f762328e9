"""The engine's event log and request log, each a SeqRing of plain dicts.

Events mark the plots in the GUI: loads, unloads, refusals, crashes. Record an event once its
effect is real (docs/ARCHITECTURE.md, "Events and logs"): `model_unloaded` / `emergency_unload`
after the runner has exited, `runner_crashed` before the requests it hit are answered.
"""
from __future__ import annotations

import json
import logging
import time
from enum import StrEnum
from typing import Callable

from laya_desktop.telemetry.ring import DEFAULT_CAPACITY, SeqRing


class EventKind(StrEnum):
    """Every kind of event the engine records; the values are the `kind` on the wire. The
    Monitor has a name and a colour for each (tests/test_event_kinds.py holds both sides to it)."""
    MODEL_LOADING = "model_loading"
    MODEL_LOADED = "model_loaded"
    MODEL_UNLOADED = "model_unloaded"
    IDLE_UNLOAD = "idle_unload"
    EMERGENCY_UNLOAD = "emergency_unload"
    LOAD_REFUSED = "load_refused"
    LOAD_FAILED = "load_failed"
    RUNNER_CRASHED = "runner_crashed"
    RUNNER_UNRESPONSIVE = "runner_unresponsive"   # killed for not answering
    CONFIG_APPLIED = "config_applied"
    CONFIG_REJECTED = "config_rejected"
    CONFIG_SAVE_FAILED = "config_save_failed"
    UPSTREAM_EJECTED = "upstream_ejected"     # a remote model failed in a row: skipped a while
    UPSTREAM_RESTORED = "upstream_restored"   # it answered again (a trial request or a probe)


REQUEST_FIELDS = (
    "t", "rule", "model", "fallback_from", "status", "prompt_tokens", "completion_tokens",
    "cached_tokens", "cached_from", "ttft_ms", "duration_ms", "path",
)

log = logging.getLogger(__name__)
request_logger = logging.getLogger("laya.requests")

Listener = Callable[[dict], None]


class _Log:
    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self.ring = SeqRing(capacity)
        self._listeners: list[Listener] = []

    @property
    def last_seq(self) -> int:
        return self.ring.last_seq

    def since(self, seq: int = 0) -> tuple[int, list[dict]]:
        """(highest seq issued, items with seq > `seq` oldest first) — the admin API's shape."""
        return self.ring.snapshot(seq)

    def add_listener(self, fn: Listener) -> None:
        self._listeners.append(fn)

    def remove_listener(self, fn: Listener) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def _publish(self, item: dict) -> int:
        seq = self.ring.append(item)
        for fn in list(self._listeners):
            try:
                fn(item)
            except Exception:  # a broken listener must not break the engine's bookkeeping
                log.exception("event listener failed")
        return seq


class EventLog(_Log):
    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        super().__init__(capacity)
        self.totals: dict[str, int] = {}  # running count per kind, for laya_events_total

    def record(self, kind: EventKind | str, model: str | None = None, reason: str | None = None,
               freed_bytes: int | None = None, **extra) -> dict:
        """Add one event: {"seq", "t", "kind", "model", "reason", "freed_bytes", **extra}.

        `kind` is stored as a plain str (an EventKind's value); None values of the optional
        fields are left out so the JSON stays small.
        """
        kind = str(kind)
        item = {"t": time.time(), "kind": kind}
        for key, value in (("model", model), ("reason", reason), ("freed_bytes", freed_bytes)):
            if value is not None:
                item[key] = value
        item.update({k: v for k, v in extra.items() if v is not None})
        self.totals[kind] = self.totals.get(kind, 0) + 1
        self._publish(item)
        return item


class RequestLog(_Log):
    def __init__(self, capacity: int = DEFAULT_CAPACITY, logger: logging.Logger | None = None):
        super().__init__(capacity)
        self.logger = logger or request_logger

    def record(self, **fields) -> dict:
        """Add one finished request and write it as one JSON line to the "laya.requests" logger.

        Every field of REQUEST_FIELDS is present (None when unknown); extra fields are kept.
        """
        item = {name: fields.pop(name, None) for name in REQUEST_FIELDS}
        if item["t"] is None:
            item["t"] = time.time()
        item.update(fields)
        self._publish(item)
        if self.logger.isEnabledFor(logging.INFO):
            self.logger.info(json.dumps(item, separators=(",", ":"), default=str))
        return item
