"""The engine asks a runner for its stats only when the runner has not pushed them lately."""
from __future__ import annotations

from laya_desktop.engine.telemetry_service import needs_poll
from laya_desktop.runners.cadence import STATS_PUSH_S


def test_a_busy_runner_that_pushes_its_stats_is_not_asked():
    period = 0.25   # memory.sample_hz 4
    assert not needs_poll(stats_at=100.0, now=100.0 + STATS_PUSH_S + 0.05, period=period)


def test_an_idle_runner_or_one_never_heard_from_is_asked():
    assert needs_poll(stats_at=0.0, now=100.0, period=0.25)
    assert needs_poll(stats_at=100.0, now=100.5, period=0.25)   # fell idle: no pushes since


def test_slow_sampling_asks_only_once_its_own_period_has_passed():
    assert not needs_poll(stats_at=100.0, now=101.0, period=2.0)   # memory.sample_hz 0.5
    assert needs_poll(stats_at=100.0, now=103.0, period=2.0)
