"""Target strategies, the what-if replay and the route distribution in a real engine process, its
targets two loopback OpenAI-compatible upstreams (one ten times slower) that count what they get."""
from __future__ import annotations

from collections import Counter

import pytest

from engine_harness import running_engine
from loopback_upstream import chat_upstreams

FAST_S, SLOW_S = 0.02, 0.2


@pytest.fixture(scope="module")
def upstreams():
    with chat_upstreams(fast=FAST_S, slow=SLOW_S) as servers:
        yield servers


def _config(upstreams, **server) -> dict:
    models = [{"name": name, "backend": "openai", "base_url": up.base_url}
              for name, up in upstreams.items()]
    models.append({"name": "dead", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"})
    return {"server": server, "models": models, "routes": [
        {"name": "balanced", "match": {"tags": ["balanced"]}, "targets": ["slow", "fast"],
         "strategy": "least_loaded"},
        {"name": "failover", "match": {"tags": ["failover"]}, "targets": ["dead", "fast"],
         "strategy": "first_available"},
        {"name": "spill", "match": {"tags": ["spill"]},
         "targets": [{"model": "slow", "max_active": 2}, "fast"], "strategy": "spillover"},
        {"name": "quick", "targets": ["slow", "fast"], "strategy": "min_latency"},
    ]}


@pytest.fixture(scope="module")
def engine(upstreams, tmp_path_factory):
    with running_engine(_config(upstreams), tmp_path_factory.mktemp("strategy")) as eng:
        yield eng


def _ask(client, tag: str | None = None, text: str = "hello"):
    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
    if tag:
        body["tags"] = [tag]
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    return r


def test_least_loaded_splits_sequential_requests_and_says_so(engine, upstreams):
    before = {n: u.hits for n, u in upstreams.items()}
    with engine.client() as c:
        seq = c.get("/admin/requests").json()["seq"]
        answers = [_ask(c, "balanced") for _ in range(40)]
        logged = c.get("/admin/requests", params={"since": seq}).json()["requests"]
    served = Counter(r.headers["x-laya-model"] for r in answers)
    assert 18 <= served["fast"] <= 22 and served["fast"] + served["slow"] == 40, served
    assert {r.headers["x-laya-strategy"] for r in answers} == {"least_loaded"}
    assert {r.headers["x-laya-route"] for r in answers} == {"balanced"}
    # the upstreams saw exactly what the headers say, and the answers came from them
    assert {n: u.hits - before[n] for n, u in upstreams.items()} == dict(served)
    assert all(r.json()["choices"][0]["message"]["content"] == "from " + r.headers["x-laya-model"]
               for r in answers)
    assert Counter(e["model"] for e in logged) == served
    assert {e["strategy"] for e in logged} == {"least_loaded"}


def test_min_latency_sends_most_requests_to_the_fast_upstream(engine):
    with engine.client() as c:
        served = Counter(_ask(c).headers["x-laya-model"] for _ in range(40))
        stats = c.get("/admin/stats").json()
    assert served["fast"] >= 34, served   # 85 %
    figures = stats["targets"]
    assert figures["slow"]["ttft_ms"] > 5 * figures["fast"]["ttft_ms"]
    assert all(f["in_flight"] == 0 for f in figures.values())


def test_a_target_that_cannot_serve_falls_to_the_next(engine):
    with engine.client() as c:
        r = _ask(c, "failover")
    assert r.headers["x-laya-model"] == "fast"
    assert r.headers["x-laya-fallback-from"] == "dead"


def test_spillover_fills_the_first_target_then_the_next(engine):
    from concurrent.futures import ThreadPoolExecutor
    with engine.client() as c, ThreadPoolExecutor(4) as pool:
        served = Counter(pool.map(lambda _: _ask(c, "spill").headers["x-laya-model"], range(4)))
    # four at once, the slow one takes two (its max_active) and the rest go on to the next
    assert served == {"slow": 2, "fast": 2}, served


def test_warm_prefers_the_loaded_local_model(tiny_gguf, tmp_path):
    models = [{"name": name, "backend": "llama_cpp", "path": str(tiny_gguf), "n_ctx": 256,
               "parallel": 1, "idle_ttl_s": 0} for name in ("cold", "hot")]
    config = {"models": models, "routes": [{"name": "default", "targets": ["cold", "hot"],
                                            "strategy": "warm"}]}
    body = {"model": "auto", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        assert c.post("/admin/models/hot/load").status_code == 200
        served = [c.post("/v1/chat/completions", json=body).headers["x-laya-model"]
                  for _ in range(3)]
        states = {m["name"]: m["state"] for m in c.get("/admin/models").json()["models"]}
        c.post("/admin/models/hot/unload")
        cold_start = c.post("/v1/chat/completions", json=body).headers["x-laya-model"]
    assert served == ["hot"] * 3   # listed second, but loaded: no cold load of "cold"
    assert states["cold"] not in ("ready", "busy", "loading")
    assert cold_start == "cold"    # none loaded: the first listed is loaded


def test_concurrent_requests_leave_no_counter_behind(engine):
    from concurrent.futures import ThreadPoolExecutor
    with engine.client() as c, ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: _ask(c, "balanced").status_code, range(32)))
        figures = c.get("/admin/stats").json()["targets"]
    assert codes == [200] * 32
    assert {n: f["in_flight"] for n, f in figures.items()} == {n: 0 for n in figures}


def test_stats_give_the_route_distribution(engine):
    with engine.client() as c:
        seq = c.get("/admin/requests").json()["seq"]
        for _ in range(3):
            _ask(c, "failover")
        window = c.get("/admin/stats", params={"window_s": 3600}).json()
        logged = c.get("/admin/requests").json()["requests"]
        bad = c.get("/admin/stats", params={"window_s": "soon"})
    assert seq >= 3
    rules = {r["name"]: r["requests"] for r in window["rules"]}
    models = {m["name"]: m["requests"] for m in window["models"]}
    assert rules == dict(Counter(e["rule"] for e in logged))
    assert models == dict(Counter(e["model"] for e in logged))
    assert window["requests"] == len(logged) and window["complete"]
    assert abs(sum(r["share"] for r in window["rules"]) - 1) < 1e-3
    assert window["rule_models"]["failover"] == {"fast": rules["failover"]}
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_window"


def test_replay_shows_what_an_edited_rule_list_would_move(engine):
    with engine.client() as c:
        config = c.get("/admin/config").json()
        kept = c.get("/admin/stats").json()["route_log"]["kept"]
        routes = [r for r in config["routes"] if r["name"] != "balanced"]
        answer = c.post("/admin/route/replay", json={"routes": routes}).json()
        same = c.post("/admin/route/replay", json={"routes": config["routes"], "limit": 5}).json()
    assert kept > 40 and answer["replayed"] == kept
    balanced = answer["rules"]["before"]["balanced"]
    assert balanced >= 40 and "balanced" not in answer["rules"]["after"]
    assert answer["changed"] == balanced
    assert answer["rules"]["after"]["quick"] == answer["rules"]["before"]["quick"] + balanced
    moved = answer["moved"][0]
    assert moved["before"]["rule"] == "balanced" and moved["after"]["rule"] == "quick"
    assert moved["tags"] == ["balanced"] and moved["preview"] == "hello"
    assert sum(answer["models"]["before"].values()) == kept
    assert same["replayed"] == 5 and same["changed"] == 0 and same["moved"] == []


@pytest.mark.parametrize("body, status, code, path", [
    ({"routes": [{"name": "x", "target": "nope"}]}, 400, "invalid_config", "routes[0].target"),
    ({"routes": [{"name": "x", "targets": ["fast"], "strategy": "soon"}]}, 400, "invalid_config",
     "routes[0].strategy"),
    ({}, 400, "invalid_replay", None),
    ({"routes": [], "config": {}}, 400, "invalid_replay", None),
    ({"routes": [{"name": "x", "target": "fast"}], "limit": 0}, 400, "invalid_limit", None),
])
def test_replay_refuses_bad_input_with_paths(engine, body, status, code, path):
    with engine.client() as c:
        r = c.post("/admin/route/replay", json=body)
    assert r.status_code == status and r.json()["error"]["code"] == code, r.text
    if path:
        assert path in [e["path"] for e in r.json()["error"]["errors"]]


def test_replay_with_the_log_off_says_so(upstreams, tmp_path):
    with running_engine(_config(upstreams, route_log_size=0), tmp_path) as eng, eng.client() as c:
        _ask(c)
        r = c.post("/admin/route/replay", json={"routes": [{"name": "x", "target": "fast"}]})
        stats = c.get("/admin/stats").json()
    assert r.status_code == 409 and r.json()["error"]["code"] == "route_log_off", r.text
    assert stats["route_log"] == {"size": 0, "kept": 0}
    assert stats["requests"] == 1   # the distribution comes from the request log, still on
