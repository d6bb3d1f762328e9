"""The health state machine as pure policy, on a fake clock: ejection after failures in a row,
the backoff that grows, the half-open trial, probes, and the order a request may try."""
from __future__ import annotations

import pytest

from laya_desktop.config.schema import HealthConfig
from laya_desktop.engine.replica_health import ReplicaHealth, is_down_error


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def setup():
    clock, events = Clock(), []
    settings = HealthConfig(eject_after=2, backoff_s=5, backoff_max_s=12)
    health = ReplicaHealth(lambda m: None if m == "local" else settings,
                           on_change=lambda kind, model, extra: events.append((kind, model, extra)),
                           clock=clock)
    return health, clock, events


def test_failures_in_a_row_eject_and_a_success_in_between_resets(setup):
    health, clock, events = setup
    assert health.summary("a") == {"health": "unknown", "last_error": None}
    health.failed("a", "refused")
    health.succeeded("a")
    health.failed("a", "refused")
    assert health.usable("a") and health.summary("a")["health"] == "up"
    health.failed("a", "connection refused")
    assert not health.usable("a")
    summary = health.summary("a")
    assert summary["health"] == "ejected" and summary["last_error"] == "connection refused"
    assert summary["retry_in_s"] == 5
    assert [e[:2] for e in events] == [("upstream_ejected", "a")]
    assert events[0][2]["backoff_s"] == 5 and events[0][2]["reason"] == "connection refused"


def test_half_open_lets_one_trial_through_and_its_failure_doubles_the_backoff(setup):
    health, clock, events = setup
    for _ in range(2):
        health.failed("a", "down")
    clock.now += 5
    assert health.usable("a")
    trial = object()
    assert health.claim_trials(["b", "a"], trial) == ["a"]
    assert not health.usable("a")            # the trial is out: nobody else meanwhile
    health.failed("a", "still down", token=trial)
    assert health.summary("a")["retry_in_s"] == 10
    clock.now += 10
    trial = object()
    health.claim_trials(["a"], trial)
    health.failed("a", "still down", token=trial)
    assert health.summary("a")["retry_in_s"] == 12   # backoff_max_s
    assert [e[0] for e in events] == ["upstream_ejected"]   # one event per ejection spell


def test_a_trial_that_succeeds_restores_and_resets_the_backoff(setup):
    health, clock, events = setup
    for _ in range(2):
        health.failed("a", "down")
    clock.now += 5
    trial = object()
    health.claim_trials(["a"], trial)
    health.succeeded("a", token=trial)
    assert health.summary("a")["health"] == "up" and health.usable("a")
    assert [e[0] for e in events] == ["upstream_ejected", "upstream_restored"]
    for _ in range(2):
        health.failed("a", "down")
    assert health.summary("a")["retry_in_s"] == 5    # a fresh spell starts from backoff_s


def test_an_unused_trial_is_released_for_the_next_request(setup):
    health, clock, _ = setup
    for _ in range(2):
        health.failed("a", "down")
    clock.now += 5
    trial = object()
    health.claim_trials(["b", "a"], trial)
    health.release("a", trial)            # "b" answered: "a" was never asked
    assert health.usable("a")


def test_a_probe_brings_an_ejected_model_back_at_once(setup):
    health, clock, events = setup
    for _ in range(2):
        health.failed("a", "down")
    health.succeeded("a")                  # a probe: no token
    assert health.usable("a") and events[-1][0] == "upstream_restored"


def test_the_order_skips_the_down_and_when_all_are_down_tries_the_longest_ejected(setup):
    health, clock, _ = setup
    for model in ("a", "b"):
        for _ in range(2):
            health.failed(model, "down")
        clock.now += 1
    assert health.order(["a", "local", "b"]) == ["local"]   # local models are not judged here
    assert health.order(["b", "a"]) == ["a"]                # ejected first: tried first
    token = object()
    health.claim_trials(["a"], token)
    assert health.order(["b", "a"]) == ["b"]
    health.claim_trials(["b"], object())
    assert health.order(["b", "a"]) == []                   # both being tried: answer at once


def test_local_models_are_not_tracked(setup):
    health, _, events = setup
    for _ in range(5):
        health.failed("local", "crash")
    assert health.usable("local") and events == []


@pytest.mark.parametrize("code, status, down", [
    ("remote_unreachable", 502, True), ("remote_error", 502, True), ("remote_error", 429, False),
    ("remote_error", 400, False), ("queue_full", 429, False), ("remote_broke_off", None, True)])
def test_which_errors_count_against_an_upstream(code, status, down):
    assert is_down_error(code, status) is down
