"""routing/why.py: what the request log keeps of why a request went where, on a real Router."""
from __future__ import annotations

from laya_desktop.config.schema import Config, ModelConfig, RouteConfig, RouteMatch
from laya_desktop.routing.router import Router
from laya_desktop.routing.why import MAX_PASSED_OVER, MAX_REASON_CHARS, tried_before, why_routed

CHAT = "/v1/chat/completions"


def rule(name, target="small", fallback=(), enabled=True, **match) -> RouteConfig:
    return RouteConfig(name=name, target=target, enabled=enabled, match=RouteMatch(**match),
                       fallback=list(fallback))


def router(*routes: RouteConfig) -> Router:
    return Router(Config(models=[ModelConfig(name=m, backend="openai", base_url="http://x/v1")
                                 for m in ("small", "big")], routes=list(routes)))


def why(r: Router, body: dict, tags: str | None = None) -> dict:
    return why_routed(r, CHAT, body, tags, r.decide_body(CHAT, body, tags))


def test_matched_conditions_and_rules_passed_over():
    r = router(rule("sql", keywords=["select"]), rule("off", enabled=False),
               rule("long", target="big", fallback=["small"], min_prompt_chars=10, tags=["doc"]))
    got = why(r, {"messages": [{"role": "user", "content": "summarise this page"}]}, "doc")
    assert got == {
        "matched": ["tag of [doc] in request tags [doc]", "prompt has 19 chars >= min 10"],
        "passed_over": [{"rule": "sql", "reasons": ["keywords [select] not found in user text"]}],
        "candidates": ["big", "small"]}


def test_direct_and_no_rule():
    r = router(rule("code", tags=["code"]))
    assert why(r, {"model": "big", "messages": []})["matched"] == [
        "model 'big' is registered: served directly, rules not consulted"]
    none = why(r, {"messages": [{"role": "user", "content": "hi"}]})
    assert none == {"matched": [], "candidates": [],
                    "passed_over": [{"rule": "code", "reasons": ["no tag of [code] in request tags []"]}]}


def test_bounded_however_many_rules_and_tags():
    tags = [f"tag-{i:03d}" for i in range(100)]
    r = router(*[rule(f"r{i}", tags=tags) for i in range(30)], rule("default"))
    got = why(r, {"messages": [{"role": "user", "content": "x"}]})
    assert got["matched"] == ["no conditions (catch-all)"]
    assert len(got["passed_over"]) == MAX_PASSED_OVER and got["passed_over_more"] == 30 - MAX_PASSED_OVER
    reason = got["passed_over"][0]["reasons"][0]
    assert len(reason) == MAX_REASON_CHARS and reason.endswith("…")


def test_tried_before_from_the_error_shape():
    assert tried_before([{"model": "big", "code": "load_refused", "message": "no room"}]) == [
        {"model": "big", "code": "load_refused"}]
    assert tried_before(None) == []
