"""Whether each remote model is up: the state machine that requests and probes feed.

Passive: `eject_after` failures in a row (unreachable, an upstream 5xx, an answer that broke off,
a probe that failed) eject the model for `backoff_s`, doubled at each ejection in a row up to
`backoff_max_s`. Once that has passed it is half-open: one request (the trial) may go to it; its
success brings the model back, its failure ejects it again for longer. A probe's success brings
an ejected model back at once. Requests skip an ejected model (`order`). When every candidate of
a request is down, the one ejected longest ago is tried alone, as its trial; when each of them
already has its trial in flight the order is empty and the engine answers 503 at once: a request
never waits on a replica known to be down.

Local models are not tracked here (their runners have their own crash handling): `settings_of`
answers None for them, and they are always usable. Pure policy with an injected clock.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from laya_desktop.config.schema import HealthConfig

UP, EJECTED, UNKNOWN = "up", "ejected", "unknown"
# request-log error codes that say the upstream is down, not that the request was bad
DOWN_CODES = ("remote_unreachable", "remote_error", "remote_broke_off")
ERROR_CHARS = 300


@dataclass
class ReplicaState:
    state: str = UNKNOWN
    failures: int = 0           # in a row
    ejections: int = 0          # in a row: the backoff doubles with each
    ejected_at: float = 0.0
    until: float = 0.0          # ejected until then; half-open after
    trial: object | None = None  # the request holding the half-open trial
    last_error: str | None = None


def is_down_error(code: str | None, status: int | None) -> bool:
    """An attempt's error that counts against the upstream: unreachable, or a 5xx (our 502)."""
    if code == "remote_unreachable" or code == "remote_broke_off":
        return True
    return code == "remote_error" and status is not None and status >= 500


class ReplicaHealth:
    def __init__(self, settings_of: Callable[[str], HealthConfig | None],
                 on_change: Callable[[str, str, dict], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.settings_of = settings_of
        self.on_change = on_change or (lambda _kind, _model, _extra: None)
        self.clock = clock
        self.states: dict[str, ReplicaState] = {}

    # -- the decision path (no I/O) ------------------------------------------------------
    def usable(self, model: str) -> bool:
        """May a request go to it now: not ejected, or half-open with its trial free."""
        state = self.states.get(model)
        if state is None or state.state != EJECTED:
            return True
        return state.trial is None and self.clock() >= state.until

    def order(self, candidates: list[str]) -> list[str]:
        """The candidates a request may try, in their order: the usable ones; none usable,
        the one ejected longest ago with its trial free, alone; else none."""
        up = [m for m in candidates if self.usable(m)]
        if up:
            return up
        free = [m for m in candidates if self.states[m].trial is None]
        if not free:
            return []
        return [min(free, key=lambda m: self.states[m].ejected_at)]

    def claim_trials(self, order: list[str], token: object) -> list[str]:
        """Mark `token`'s request as the trial of each ejected model in its order."""
        claimed = []
        for model in order:
            state = self.states.get(model)
            if state is not None and state.state == EJECTED and state.trial is None:
                state.trial = token
                claimed.append(model)
        return claimed

    def release(self, model: str, token: object) -> None:
        """The request held the trial but never reached the model: the next one may try."""
        state = self.states.get(model)
        if state is not None and state.trial is token:
            state.trial = None

    # -- outcomes ------------------------------------------------------------------------
    def succeeded(self, model: str, token: object = None) -> None:
        settings = self.settings_of(model)
        if settings is None:
            return
        state = self._state(model)
        was = state.state
        state.failures = state.ejections = 0
        state.trial = None   # back up: no trial needed, whoever held it
        state.state = UP
        if was == EJECTED:
            self.on_change("upstream_restored", model, {})

    def failed(self, model: str, error: str, token: object = None) -> None:
        settings = self.settings_of(model)
        if settings is None:
            return
        state = self._state(model)
        state.failures += 1
        state.last_error = error[:ERROR_CHARS]
        now = self.clock()
        if state.state == EJECTED:
            trial_failed = token is not None and state.trial is token
            if trial_failed:
                state.trial = None
            if trial_failed or (token is None and now >= state.until):
                self._eject(model, state, settings, now)   # again, for longer
            return
        if state.failures >= settings.eject_after:
            self._eject(model, state, settings, now)

    def _eject(self, model: str, state: ReplicaState, settings: HealthConfig, now: float) -> None:
        backoff = min(settings.backoff_max_s, settings.backoff_s * 2 ** state.ejections)
        first = state.state != EJECTED
        state.ejections += 1
        state.state, state.ejected_at, state.until = EJECTED, now, now + backoff
        if first:
            self.on_change("upstream_ejected", model, {"reason": state.last_error,
                                                       "backoff_s": round(backoff, 3),
                                                       "failures": state.failures})

    def _state(self, model: str) -> ReplicaState:
        state = self.states.get(model)
        if state is None:
            state = self.states[model] = ReplicaState()
        return state

    # -- what is shown -------------------------------------------------------------------
    def summary(self, model: str) -> dict:
        """GET /admin/models' fields of a remote model: health, last_error and, while ejected,
        the seconds until its next trial."""
        state = self.states.get(model)
        if state is None:
            return {"health": UNKNOWN, "last_error": None}
        out = {"health": state.state, "last_error": state.last_error,
               "failures_in_a_row": state.failures}
        if state.state == EJECTED:
            out["retry_in_s"] = round(max(0.0, state.until - self.clock()), 3)
        return out

    def forget_except(self, models: set[str]) -> None:
        """A config change removed models: their states go with them."""
        for name in [m for m in self.states if m not in models]:
            del self.states[name]
