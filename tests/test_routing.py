"""Routing: extraction, the compiled router against a naive reference, explanations."""
from __future__ import annotations

import importlib.util
import math
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from property_budget import examples, property_test

from laya_desktop.config.schema import Config, ModelConfig, RouteConfig, RouteMatch
from laya_desktop.routing.request import RouteRequest, extract
from laya_desktop.routing import router as router_module
from laya_desktop.routing.router import DENSE_HITS, Decision, Router, make_scanner

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
MODELS = ("small", "big", "cloud")
# keyscan is built at install where there is a C compiler, hyperscan is an optional extra (`make
# install` has it); ahocorasick-rs is always there
SCANNERS = ([*(["keyscan"] if router_module._NativeScanner else []),
             *(["hyperscan"] if importlib.util.find_spec("hyperscan") else []), "ahocorasick"])


def rule(name, target="small", enabled=True, fallback=(), **match) -> RouteConfig:
    return RouteConfig(name=name, target=target, enabled=enabled, match=RouteMatch(**match),
                       fallback=list(fallback))


def config(*routes: RouteConfig) -> Config:
    return Config(models=[ModelConfig(name=m, backend="openai", base_url="http://x/v1")
                          for m in MODELS], routes=list(routes))


def chat(*user: str, model=None, tags=None, system=None) -> dict:
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages += [{"role": "user", "content": u} for u in user]
    body: dict = {"messages": messages}
    if model is not None:
        body["model"] = model
    if tags is not None:
        body["tags"] = tags
    return body


def reference(cfg: Config, req: RouteRequest) -> Decision | None:
    """The semantics in docs/ARCHITECTURE.md ("What the rules see"), the obvious slow way."""
    if req.model in {m.name for m in cfg.models}:
        return Decision(None, req.model, (), True)
    for r in cfg.routes:
        m = r.match
        if not r.enabled:
            continue
        if m.tags and not set(m.tags) & set(req.tags):
            continue
        if m.keywords and not any(k.lower() in part.lower()
                                  for k in m.keywords for part in req.user_text_lower.split("\0")):
            continue
        if m.min_prompt_chars is not None and req.prompt_chars < m.min_prompt_chars:
            continue
        if m.max_prompt_chars is not None and req.prompt_chars > m.max_prompt_chars:
            continue
        if m.model and req.model not in m.model:
            continue
        if m.path and req.path not in m.path:
            continue
        return Decision(r.name, r.target, tuple(r.fallback), False)
    return None


# --- extraction ------------------------------------------------------------------------------

EXTRACT_CASES = [
    ("plain chat", CHAT, chat("Hello", system="Be brief"), None,
     RouteRequest(CHAT, None, (), "hello", 13)),
    ("user parts joined, other roles only counted", CHAT,
     {"messages": [{"role": "user", "content": "A"}, {"role": "assistant", "content": "bb"},
                   {"role": "tool", "content": "ccc"}, {"role": "user", "content": "D"}]}, None,
     RouteRequest(CHAT, None, (), "a\0d", 7)),
    ("content array: only text parts", CHAT,
     {"model": "auto", "messages": [{"role": "user", "content": [
         {"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "x"}},
         {"type": "text", "text": "HERE"}]}]}, None,
     RouteRequest(CHAT, "auto", (), "look\0here", 8)),
    ("completions prompt string", COMPLETIONS, {"prompt": "Once upon", "model": "m"}, None,
     RouteRequest(COMPLETIONS, "m", (), "once upon", 9)),
    ("completions prompt list", COMPLETIONS, {"prompt": ["ab", "CD", 3]}, None,
     RouteRequest(COMPLETIONS, None, (), "ab\0cd", 4)),
    ("unicode counts code points", CHAT, chat("héllo 🙂", system="日本"), None,
     RouteRequest(CHAT, None, (), "héllo 🙂", 9)),
    ("body list tags and header merged", CHAT, chat("x", tags=[" code ", "", "fast"]),
     "fast, gpu ,,", RouteRequest(CHAT, None, ("code", "fast", "gpu"), "x", 1)),
    ("body comma string tags", CHAT, chat("x", tags="a, b"), None,
     RouteRequest(CHAT, None, ("a", "b"), "x", 1)),
    ("junk never raises", CHAT,
     {"model": 7, "tags": 5, "messages": ["junk", None, {"role": "user", "content": None},
                                          {"role": "user", "content": [None, {"text": 3}]},
                                          {"role": "user"}, {"content": "no role"}]}, None,
     RouteRequest(CHAT, None, (), "", 7)),
    ("messages not a list", CHAT, {"messages": "hi"}, None, RouteRequest(CHAT, None, (), "", 0)),
    ("body not a dict", CHAT, ["nope"], "t", RouteRequest(CHAT, None, ("t",), "", 0)),
]


@pytest.mark.parametrize("name,path,body,header,expected", EXTRACT_CASES,
                         ids=[c[0] for c in EXTRACT_CASES])
def test_extract(name, path, body, header, expected):
    assert extract(path, body, header) == expected


# --- decisions -------------------------------------------------------------------------------

RULES = config(
    rule("off", "cloud", enabled=False),  # a disabled catch-all must not swallow anything
    rule("code", "big", tags=["code", "dev"]),
    rule("sql", "big", keywords=["SELECT ", "join"], max_prompt_chars=2000),
    rule("alias", "cloud", model=["gpt-4o", "gpt-4o-mini"]),
    rule("legacy", "small", path=[COMPLETIONS]),
    rule("long", "cloud", fallback=["big"], min_prompt_chars=50),
    rule("both", "big", tags=["fast"], keywords=["urgent"]),
    rule("default", "small", fallback=["cloud"]),
)

DECIDE_CASES = [
    ("catch-all", CHAT, chat("hello"), None, "default"),
    ("tag from body", CHAT, chat("hello", tags=["dev"]), None, "code"),
    ("tag from header", CHAT, chat("hello"), "x, code", "code"),
    ("keyword ignores case", CHAT, chat("please select * from t"), None, "sql"),
    ("keyword inside a word", CHAT, chat("a LEFTJOIN b"), None, "sql"),
    ("keyword plus max: too long", CHAT, chat("join " + "x" * 2000), None, "long"),
    ("keyword not in system text", CHAT, chat("hi", system="join"), None, "default"),
    ("keyword not across messages", CHAT, chat("jo", "in"), None, "default"),
    ("alias routed by model", CHAT, chat("hi", model="gpt-4o-mini"), None, "alias"),
    ("auto routed", CHAT, chat("hi", model="auto"), None, "default"),
    ("path", COMPLETIONS, {"prompt": "hi"}, None, "legacy"),
    ("min chars counts all roles", CHAT, chat("hi", system="s" * 48), None, "long"),
    ("min chars inclusive", CHAT, chat("x" * 50), None, "long"),
    ("one under min", CHAT, chat("x" * 49), None, "default"),
    ("AND: tag without keyword", CHAT, chat("hello", tags=["fast"]), None, "default"),
    ("AND: both hold", CHAT, chat("URGENT!", tags=["fast"]), None, "both"),
    ("first match wins", CHAT, chat("select 1", tags=["code"]), None, "code"),
]


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("name,path,body,header,expected", DECIDE_CASES,
                         ids=[c[0] for c in DECIDE_CASES])
def test_decide_cases(scanner, name, path, body, header, expected):
    router = Router(RULES, scanner=scanner)
    decision = router.decide_body(path, body, header)
    assert decision is not None and decision.rule == expected
    assert router.decide(extract(path, body, header)) == decision
    assert decision == reference(RULES, extract(path, body, header))


def test_decision_carries_target_and_fallbacks():
    router = Router(RULES)
    assert router.decide_body(CHAT, chat("x" * 60), None) == Decision("long", "cloud", ("big",),
                                                                        False)


def test_registered_model_goes_direct_without_rules():
    router = Router(config(rule("everything", "big")))
    assert router.decide_body(CHAT, chat("hi", model="cloud"), None) == Decision(
        None, "cloud", (), True)
    # the engine may know better (a model registered since) and say so
    assert router.decide_body(CHAT, chat("hi", model="new"), None, registered=True).direct
    assert router.decide_body(CHAT, chat("hi", model="cloud"), None,
                              registered=False).rule == "everything"


def test_no_match_is_none():
    router = Router(config(rule("code", tags=["code"]), rule("off", enabled=False)))
    assert router.decide_body(CHAT, chat("hi", model="unknown"), None) is None
    assert router.decide(extract(CHAT, chat("hi"), None)) is None


def test_rules_without_keywords_never_scan():
    router = Router(config(rule("code", tags=["code"]), rule("default")))
    assert router.tier_count == 0
    assert router.decide_body(CHAT, chat("anything"), None).rule == "default"


def test_empty_keyword_matches_everything():
    router = Router(config(rule("empty", keywords=[""]), rule("default")))
    assert router.decide_body(CHAT, chat(""), None).rule == "empty"


def test_overlapping_and_nested_keywords():
    cfg = config(rule("ab", keywords=["abc"]), rule("bcd", keywords=["bcd"]),
                 rule("b", keywords=["b"]), rule("default"))
    for scanner in SCANNERS:
        router = Router(cfg, scanner=scanner, first_tier_keywords=None)
        # "abc" and "bcd" overlap in "abcd": the first rule ends the search...
        assert router.decide_body(CHAT, chat("xabcdx"), None).rule == "ab"
        # ...and "bcd" is still found when it is the answer
        assert router.decide_body(CHAT, chat("xbcdx"), None).rule == "bcd"
        assert router.decide_body(CHAT, chat("b"), None).rule == "b"


def test_thread_safe_scanning():
    cfg = config(*[rule(f"r{i}", keywords=[f"w{i}x"]) for i in range(200)], rule("default"))
    router = Router(cfg)
    errors = []

    def work(i):
        try:
            for _ in range(300):
                assert router.decide_body(CHAT, chat(f"zz w{i}x"), None).rule == f"r{i}"
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i * 37,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_texts_dense_in_keywords_are_read_tier_by_tier():
    # 300 one-keyword rules: two tiers; a text holding 40 of the keywords is dense, prose is not
    cfg = config(*[rule(f"r{i}", keywords=[f"kw{i:03d}x"]) for i in range(300)], rule("default"))
    dense = chat(" ".join(f"kw{i:03d}x" for i in range(299, 259, -1)))
    sparse = chat("an ordinary question about kw150x")
    for scanner in SCANNERS:
        router = Router(cfg, scanner=scanner)
        assert router.tier_count == 2
        picks = []
        # keyscan decides a chat in one C call, which keeps its own running mean
        holder = router._chat_scanner if scanner == "keyscan" else router
        for body in [sparse] * 3 + [dense] * 3 + [sparse] * 40:
            picks.append(router.decide_body(CHAT, body, None).rule)
            mean = holder.hits_mean if scanner == "keyscan" else holder._hits_mean
            picks.append(mean >= DENSE_HITS)  # read tier by tier next time
        assert picks[:6] == ["r150", False] * 3
        assert picks[6:12] == ["r260", True] * 3  # from the first dense text on
        assert picks[-2:] == ["r150", False]  # back once texts are sparse again


def test_keyword_with_nul_avoids_hyperscan():
    # python-hyperscan would cut the pattern at the NUL and match "a" alone
    assert make_scanner([b"a\0b"]).name == "ahocorasick-rs"
    assert make_scanner([b"a\0b"]).scan(b"xa") == []


def test_without_keyscan_the_router_uses_hyperscan(monkeypatch):
    monkeypatch.setattr(router_module, "_NativeScanner", None)  # the extension was not built
    if importlib.util.find_spec("hyperscan"):
        assert make_scanner([b"join"]).name == "hyperscan"
    assert Router(RULES).decide_body(CHAT, chat("a LEFTJOIN b"), None).rule == "sql"
    with pytest.raises(ImportError, match="not built"):
        make_scanner([b"code"], "keyscan")


def test_without_hyperscan_the_router_uses_ahocorasick(monkeypatch):
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # what a platform without its wheel sees
    monkeypatch.setattr(router_module, "_NativeScanner", None)
    assert make_scanner([b"join"]).name == "ahocorasick-rs"
    router = Router(RULES)
    assert router.decide_body(CHAT, chat("a LEFTJOIN b"), None).rule == "sql"
    assert router.decide_body(CHAT, chat("URGENT!", tags=["fast"]), None).rule == "both"
    with pytest.raises(ImportError):
        make_scanner([b"code"], "hyperscan")


def test_unknown_scanner_is_an_error():
    with pytest.raises(ValueError):
        Router(config(rule("k", keywords=["a"])), scanner="grep")


# --- explanations ----------------------------------------------------------------------------

def test_explain_reasons():
    router = Router(RULES)
    req = extract(CHAT, chat("x" * 120, model="gpt-5"), None)
    explanation = router.explain(req)
    assert explanation.decision.rule == "long"
    reasons = {c.rule: c.reasons for c in explanation.rules}
    assert reasons["off"] == ("disabled",)
    assert reasons["code"] == ("no tag of [code, dev] in request tags []",)
    assert reasons["sql"] == ("keywords [SELECT , join] not found in user text",)
    assert reasons["alias"] == ("model 'gpt-5' not in [gpt-4o, gpt-4o-mini]",)
    assert reasons["legacy"] == (f"path '{CHAT}' not in [{COMPLETIONS}]",)
    assert reasons["long"] == ("prompt has 120 chars >= min 50",)
    short = router.explain(extract(CHAT, chat("join " * 500), None))
    assert {c.rule: c.reasons for c in short.rules}["sql"] == ("prompt has 2500 chars > max 2000",)
    assert {c.rule: c.matched for c in short.rules}["default"]


def test_explain_direct_and_no_match():
    router = Router(config(rule("code", tags=["code"])))
    direct = router.explain(extract(CHAT, chat("hi", model="big"), None))
    assert direct.decision.direct and direct.rules == () and "registered" in direct.note
    missing = router.explain(extract(CHAT, chat("hi"), None))
    assert missing.decision is None and "404" in missing.note
    assert missing.rules[0].reasons == ("no tag of [code] in request tags []",)


# --- property: the compiled router equals the reference --------------------------------------

ALPHABET = "abAB\u0130é "  # \u0130 lowercases to two code points
keyword = st.text(alphabet="abAB\u0130é", max_size=3)
bound = st.none() | st.integers(0, 14)


def sometimes(strategy):
    """Mostly absent, so that rules hold often enough to race each other."""
    return st.one_of(st.just([]), st.just([]), strategy)


matches = st.builds(
    RouteMatch,
    tags=sometimes(st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2)),
    keywords=st.lists(keyword, max_size=3),
    min_prompt_chars=st.none() | bound, max_prompt_chars=st.none() | bound,
    model=sometimes(st.lists(st.sampled_from(["gpt-4o", "auto", "small"]), min_size=1,
                             max_size=2)),
    path=sometimes(st.lists(st.sampled_from([CHAT, COMPLETIONS]), min_size=1, max_size=1)),
)
rules = st.lists(st.builds(RouteConfig, name=st.sampled_from(["r1", "r2", "r3", "r4"]),
                           target=st.sampled_from(MODELS), enabled=st.booleans() | st.just(True),
                           match=matches, fallback=st.lists(st.sampled_from(MODELS), max_size=2)),
                 max_size=10)
bodies = st.fixed_dictionaries(
    {"messages": st.lists(st.fixed_dictionaries({
        "role": st.sampled_from(["user", "user", "system", "assistant"]),
        "content": st.text(alphabet=ALPHABET, max_size=20)}), max_size=3)},
    optional={"model": st.sampled_from(["gpt-4o", "auto", "small", "other"]),
              "tags": st.lists(st.sampled_from(["x", "y", "z", "w"]), max_size=2)})


def routers(cfg: Config):
    for scanner in SCANNERS:
        for first_tier in (1, 2, 64, None):
            yield Router(cfg, scanner=scanner, first_tier_keywords=first_tier)
        # all keywords read at once (as for sparse texts) or always tier by tier
        for dense_hits in (math.inf, 0):
            yield Router(cfg, scanner=scanner, first_tier_keywords=1, dense_hits=dense_hits)


@property_test
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyword_lists=st.lists(st.lists(st.text(alphabet="abA", min_size=1, max_size=4),
                                       min_size=1, max_size=3), min_size=1, max_size=8),
       text=st.text(alphabet="abAB", max_size=16))
def test_keyword_scan_equals_reference(keyword_lists, text):
    """Keywords inside and overlapping each other, split over tiers: all must be found."""
    cfg = config(*[rule(f"k{i}", keywords=kws) for i, kws in enumerate(keyword_lists)])
    req = extract(CHAT, chat(text), None)
    expected = reference(cfg, req)
    for router in routers(cfg):
        assert router.decide(req) == expected


@property_test
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(routes=rules, body=bodies, path=st.sampled_from([CHAT, COMPLETIONS]),
       header=st.none() | st.sampled_from(["x", "y,w", " z , "]))
def test_router_equals_reference(routes, body, path, header):
    cfg = config(*routes)
    req = extract(path, body, header)
    expected = reference(cfg, req)
    for router in routers(cfg):
        assert router.decide(req) == expected
        assert router.decide_body(path, body, header) == expected
    explanation = Router(cfg).explain(req)
    assert explanation.decision == expected
    if expected is not None and not expected.direct:
        first = next(c for c in explanation.rules if c.matched)
        assert first.rule == expected.rule


def test_rule_whose_keywords_all_lie_in_an_earlier_tier_still_wins():
    # Found by the property above: rule 'late' has only tier-1 keywords but comes after a rule
    # whose keyword lies in tier 2, so tier 1 alone never "resolved" it.
    cfg = config(
        RouteConfig(name="chat-only", target="small", match=RouteMatch(keywords=["a"], path=[CHAT])),
        RouteConfig(name="never", target="small", match=RouteMatch(keywords=["aa"], max_prompt_chars=0)),
        RouteConfig(name="late", target="small", match=RouteMatch(keywords=["a"])),
    )
    req = extract(COMPLETIONS, {"prompt": "A"}, None)
    assert reference(cfg, req).rule == "late"
    for router in routers(cfg):
        assert router.decide(req).rule == "late"
