"""Replica health and session affinity in a real engine process, its targets real upstream
processes (tests/replica_upstream.py) that the tests kill, stop (SIGSTOP) and start again."""
from __future__ import annotations

import time

import pytest

from engine_harness import running_engine
from replica_upstream import ReplicaProcess

PASSIVE = {"eject_after": 2, "backoff_s": 1, "backoff_max_s": 8}
PROBED = {"probe": "auto", "interval_s": 0.3, "eject_after": 2, "backoff_s": 30}


@pytest.fixture(scope="module")
def replicas():
    procs = {name: ReplicaProcess(name).start() for name in "abcdef"}
    yield procs
    for proc in procs.values():
        proc.kill()


def _config(replicas) -> dict:
    health = {"a": PASSIVE, "b": PASSIVE, "c": PROBED, "d": PROBED}
    models = [{"name": name, "backend": "openai", "base_url": rep.base_url,
               **({"health": health[name]} if name in health else {})}
              for name, rep in replicas.items()]
    return {"models": models, "routes": [
        {"name": "pair", "match": {"tags": ["pair"]}, "targets": ["a", "b"], "affinity": False},
        {"name": "hang", "match": {"tags": ["hang"]}, "targets": ["c", "d"], "affinity": False},
        {"name": "solo", "match": {"tags": ["solo"]}, "target": "a", "fallback": ["b"]},
        {"name": "sessions", "targets": ["e", "f"], "strategy": "least_loaded"},
    ]}


@pytest.fixture(scope="module")
def engine(replicas, tmp_path_factory):
    with running_engine(_config(replicas), tmp_path_factory.mktemp("replicas")) as eng:
        yield eng


def _ask(client, tag=None, messages=None, headers=None):
    body = {"model": "auto", "messages": messages or [{"role": "user", "content": "hello"}]}
    if tag:
        body["tags"] = [tag]
    r = client.post("/v1/chat/completions", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return r


def _health(client) -> dict:
    return {m["name"]: m for m in client.get("/admin/models").json()["models"]}


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("not within the time allowed")


def _since(client, kind: str, seq: int) -> list[dict]:
    return client.get(f"/admin/{kind}", params={"since": seq}).json()[kind]


def test_a_killed_replica_is_ejected_skipped_and_tried_again_once_back(engine, replicas):
    with engine.client() as c:
        assert _ask(c, "pair").headers["x-laya-model"] == "a"
        assert _health(c)["a"]["health"] == "up"
        seq = c.get("/admin/requests").json()["seq"]
        event_seq = c.get("/admin/events").json()["seq"]
        replicas["a"].kill()
        answers = [_ask(c, "pair") for _ in range(5)]
        solo = _ask(c, "solo")
        health = _health(c)["a"]
        metrics = c.get("/metrics").text
        logged = _since(c, "requests", seq)
        replicas["a"].start()
        time.sleep(PASSIVE["backoff_s"] + 0.2)
        back = _ask(c, "pair")
        restored = _health(c)["a"]
        events = _since(c, "events", event_seq)
    assert {r.headers["x-laya-model"] for r in answers} == {"b"}
    fell_back = [r.headers.get("x-laya-fallback-from") for r in answers]
    assert fell_back == ["a", "a", None, None, None]   # eject_after 2: then skipped, no waiting
    assert health["health"] == "ejected" and "unreachable" in health["last_error"]
    assert health["retry_in_s"] <= PASSIVE["backoff_s"]
    assert 'laya_upstream_up{model="a"} 0.0' in metrics
    assert 'laya_upstream_up{model="b"} 1.0' in metrics
    assert [e["why"]["candidates"] for e in logged[2:]] == [["b"]] * 4
    # a rule's own fallback answering for its skipped target still says so
    assert solo.headers["x-laya-model"] == "b" and solo.headers["x-laya-fallback-from"] == "a"
    assert logged[-1]["fallback_from"] == "a"
    assert back.headers["x-laya-model"] == "a"   # the half-open trial, answered
    assert restored["health"] == "up" and restored["failures_in_a_row"] == 0
    kinds = [(e["kind"], e.get("model")) for e in events]
    assert kinds.count(("upstream_ejected", "a")) == 1 and ("upstream_restored", "a") in kinds
    assert kinds.index(("upstream_ejected", "a")) < kinds.index(("upstream_restored", "a"))


def test_every_target_down_answers_at_once_and_says_why(engine, replicas):
    with engine.client() as c:
        for name in ("a", "b"):
            replicas[name].kill()
        try:
            codes = [c.post("/v1/chat/completions", json={
                "model": "auto", "tags": ["pair"],
                "messages": [{"role": "user", "content": "hi"}]}) for _ in range(6)]
            states = _health(c)
        finally:
            for name in ("a", "b"):
                replicas[name].start()
    assert all(r.status_code in (502, 503) for r in codes), [r.status_code for r in codes]
    assert states["a"]["health"] == states["b"]["health"] == "ejected"
    last = codes[-1]
    assert last.json()["error"]["code"] in ("remote_unreachable", "upstream_down"), last.text


def test_a_hung_replica_is_found_by_its_probe_and_skipped(engine, replicas):
    hung = replicas["c"]
    with engine.client(timeout=20) as c:
        _wait_for(lambda: _health(c)["c"]["health"] == "up")
        hung.pause()
        try:
            ejected = _wait_for(lambda: (h := _health(c)["c"])["health"] == "ejected" and h)
            started = time.monotonic()
            answer = _ask(c, "hang")
            elapsed = time.monotonic() - started
        finally:
            hung.resume()
        _wait_for(lambda: _health(c)["c"]["health"] == "up")
        again = _ask(c, "hang")
    assert "no answer within" in ejected["last_error"]
    assert answer.headers["x-laya-model"] == "d" and "x-laya-fallback-from" not in answer.headers
    assert elapsed < 2.0, elapsed   # never sent to the stopped one, so never waited on it
    assert again.headers["x-laya-model"] == "c"   # the probe brought it back, no trial needed


def test_a_conversation_stays_on_its_replica(engine):
    first = [{"role": "system", "content": "You plan."}, {"role": "user", "content": "plan a trip"}]
    with engine.client() as c:
        seq = c.get("/admin/requests").json()["seq"]
        keyed = [_ask(c, headers={"X-Laya-Session": "conv-1"}).headers["x-laya-model"]
                 for _ in range(6)]
        turn1 = _ask(c, messages=first).headers["x-laya-model"]
        fresh = [_ask(c, messages=first).headers["x-laya-model"] for _ in range(6)]
        later = first + [{"role": "assistant", "content": "from somewhere"},
                         {"role": "user", "content": "and back"}]
        turn2 = [_ask(c, messages=later).headers["x-laya-model"] for _ in range(4)]
        logged = _since(c, "requests", seq)
    assert len(set(keyed)) == 1    # least_loaded alone would alternate
    assert set(fresh) == {"e", "f"}  # the same first message sent afresh is a new conversation
    assert set(turn2) == {fresh[-1]}  # a later turn follows the last one that began it
    headed = logged[:6]
    assert len({e["session"] for e in headed}) == 1 and len(headed[0]["session"]) == 8
    assert {e["session_from"] for e in headed} == {"header"}
    assert [e["affinity"] for e in headed] == [False] + [True] * 5
    assert [e["affinity"] for e in logged[-4:]] == [True] * 4
    assert {e["session_from"] for e in logged[6:]} == {"prefix"}
    assert turn1 in ("e", "f")


def test_a_conversation_moves_when_its_replica_dies(engine, replicas):
    with engine.client() as c:
        home = _ask(c, headers={"X-Laya-Session": "conv-2"}).headers["x-laya-model"]
        other = "f" if home == "e" else "e"
        replicas[home].kill()
        try:
            moved = [_ask(c, headers={"X-Laya-Session": "conv-2"}) for _ in range(3)]
        finally:
            replicas[home].start()
        after = _ask(c, headers={"X-Laya-Session": "conv-2"}).headers["x-laya-model"]
    assert [r.headers["x-laya-model"] for r in moved] == [other] * 3
    assert moved[0].headers.get("x-laya-fallback-from") == home
    assert "x-laya-fallback-from" not in moved[1].headers   # its table entry moved with it
    assert after == other    # and it stays there now that it lives there
