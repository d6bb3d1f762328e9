"""The route input log, the what-if replay and the route distribution as pure functions."""
from __future__ import annotations

from laya_desktop.config.validate import validate_config
from laya_desktop.routing.distribution import distribution
from laya_desktop.routing.replay import NO_RULE, replay
from laya_desktop.routing.route_log import MAX_TEXT_CHARS, RouteInputLog
from laya_desktop.routing.router import Router

CHAT = "/v1/chat/completions"
MODELS = [{"name": n, "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}
          for n in ("small", "big", "cloud")]


def router(*routes) -> Router:
    config, errors = validate_config({"models": MODELS, "routes": list(routes)})
    assert errors == []
    return Router(config)


def body(text: str, **extra) -> dict:
    return {"messages": [{"role": "user", "content": text}], **extra}


def test_the_log_keeps_the_newest_and_can_be_off_or_resized():
    log = RouteInputLog(3)
    for i in range(5):
        log.record(CHAT, body(f"q{i}", model="auto", tags=["t"]), "h")
    assert [e["user_text"] for e in log.recent()] == ["q2", "q3", "q4"]
    assert log.recent(1)[0] | {"t": 0} == {"seq": 5, "t": 0, "path": CHAT, "model": "auto",
                                          "tags": ["t", "h"], "user_text": "q4", "prompt_chars": 2}
    log.resize(2)
    assert [e["user_text"] for e in log.recent()] == ["q3", "q4"]
    off = RouteInputLog(0)
    off.record(CHAT, body("x"), None)
    assert len(off) == 0 and off.recent() == []


def test_a_long_text_is_cut_and_says_so_but_keeps_its_length():
    log = RouteInputLog(1)
    log.record(CHAT, body("a" * (MAX_TEXT_CHARS + 10)), None)
    entry = log.recent()[0]
    assert len(entry["user_text"]) == MAX_TEXT_CHARS and entry["truncated"]
    assert entry["prompt_chars"] == MAX_TEXT_CHARS + 10


def test_replay_counts_and_lists_the_moved_requests():
    log = RouteInputLog(10)
    for text in ("write python code", "hello", "more python", "hi"):
        log.record(CHAT, body(text), None)
    log.record(CHAT, body("direct", model="cloud"), None)
    before = router({"name": "code", "match": {"keywords": ["python"]}, "target": "big"},
                    {"name": "default", "target": "small"})
    after = router({"name": "code", "match": {"keywords": ["python"]}, "target": "cloud"},
                   {"name": "chat", "match": {"keywords": ["hello"]}, "target": "small"})
    result = replay(log.recent(), before, after)
    assert result["replayed"] == 5 and result["changed"] == 4
    assert result["rules"] == {"before": {"code": 2, "default": 2, "direct": 1},
                               "after": {"code": 2, "chat": 1, NO_RULE: 1, "direct": 1}}
    assert result["models"]["before"] == {"big": 2, "small": 2, "cloud": 1}
    assert result["models"]["after"] == {"cloud": 3, "small": 1, NO_RULE: 1}
    moved = {m["preview"]: (m["before"]["rule"], m["after"]["rule"], m["after"]["model"])
             for m in result["moved"]}
    assert moved == {"write python code": ("code", "code", "cloud"),
                     "more python": ("code", "code", "cloud"),
                     "hello": ("default", "chat", "small"), "hi": ("default", NO_RULE, None)}


def test_replay_sees_a_changed_target_pool_and_caps_the_list():
    log = RouteInputLog(10)
    for _ in range(4):
        log.record(CHAT, body("x"), None)
    before = router({"name": "default", "target": "small"})
    after = router({"name": "default", "targets": ["small", "big"], "strategy": "least_loaded"})
    result = replay(log.recent(), before, after, max_moved=1)
    assert result["changed"] == 4 and len(result["moved"]) == 1 and result["moved_more"] == 3
    assert result["moved"][0]["after"]["targets"] == ["small", "big"]
    assert result["models"]["after"] == {"small": 4}   # a pool counts under its first target


def test_distribution_over_a_window():
    now = 1000.0
    items = [{"t": 100.0, "rule": "old", "model": "big"},
             *({"t": 990.0, "rule": "default", "model": "big"} for _ in range(3)),
             {"t": 995.0, "rule": "code", "model": "small"},
             {"t": 996.0, "rule": None, "model": None}]
    d = distribution(items, now, 60, log_full=False)
    assert d["requests"] == 5 and d["complete"]
    assert d["rules"][0] == {"name": "default", "requests": 3, "share": 0.6}
    assert {m["name"]: m["requests"] for m in d["models"]} == {"big": 3, "small": 1,
                                                              "(not served)": 1}
    assert d["rule_models"] == {"default": {"big": 3}, "code": {"small": 1},
                                "(none)": {"(not served)": 1}}
    assert not distribution(items[1:], now, 3600, log_full=True)["complete"]
    assert distribution([], now, 60, log_full=False)["requests"] == 0
