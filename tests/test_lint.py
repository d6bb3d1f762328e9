"""Routing lint: shadowed rules, unknown models, duplicate names, missing catch-all."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from property_budget import examples, property_test

from laya_desktop.config.schema import Config, ModelConfig, RouteConfig, RouteMatch, SemanticMatch
from laya_desktop.routing.lint import LintWarning, implies, lint
from laya_desktop.routing.request import extract
from laya_desktop.routing.router import check_rule


def rule(name, target="small", enabled=True, fallback=(), **match) -> RouteConfig:
    return RouteConfig(name=name, target=target, enabled=enabled, match=RouteMatch(**match),
                       fallback=list(fallback))


def config(*routes: RouteConfig) -> Config:
    return Config(models=[ModelConfig(name=m, backend="openai", base_url="http://x/v1")
                          for m in ("small", "big")], routes=list(routes))


def shadowing(cfg: Config) -> list[tuple[str, str, str]]:
    return [(w.path, w.rule, w.shadowed_by) for w in lint(cfg) if w.shadowed_by]


def test_catch_all_before_specific_rule_names_both():
    cfg = config(rule("default"), rule("long", min_prompt_chars=8000), rule("code", tags=["code"]))
    warnings = [w for w in lint(cfg) if w.shadowed_by]
    assert [str(w) for w in warnings] == [
        "routes[1]: rule 'long' can never match: rule 'default' (routes[0]) matches everything "
        "it would",
        "routes[2]: rule 'code' can never match: rule 'default' (routes[0]) matches everything "
        "it would",
    ]
    assert warnings[1] == LintWarning("routes[2]", warnings[1].message, "code", "default")


def test_clean_config_has_no_warnings():
    cfg = config(rule("code", "big", tags=["code"]), rule("long", min_prompt_chars=8000),
                 rule("default", fallback=["big"]))
    assert lint(cfg) == []


SUBSUMPTION = [
    # (earlier match, later match, later can never fire)
    ({"tags": ["code", "dev"]}, {"tags": ["code"]}, True),
    ({"tags": ["code"]}, {"tags": ["code", "dev"]}, False),
    ({"tags": ["code"]}, {"tags": ["code"], "keywords": ["x"]}, True),
    ({"tags": ["code"]}, {"keywords": ["x"]}, False),
    ({"keywords": ["SQL"]}, {"keywords": ["mysql", "postgresql"]}, True),
    ({"keywords": ["sql"]}, {"keywords": ["mysql", "oracle"]}, False),
    ({"min_prompt_chars": 100}, {"min_prompt_chars": 500}, True),
    ({"min_prompt_chars": 500}, {"min_prompt_chars": 100}, False),
    ({"min_prompt_chars": 0}, {}, True),
    ({"max_prompt_chars": 500}, {"max_prompt_chars": 100}, True),
    ({"max_prompt_chars": 100}, {"max_prompt_chars": 500}, False),
    ({"max_prompt_chars": 100}, {}, False),
    ({"model": ["gpt-4o", "gpt-4"]}, {"model": ["gpt-4"]}, True),
    ({"model": ["gpt-4"]}, {"model": ["gpt-4", "o1"]}, False),
    ({"path": ["/v1/completions"]}, {"path": ["/v1/completions"], "tags": ["a"]}, True),
    ({"keywords": [""]}, {"tags": ["a"]}, True),
    ({}, {"tags": ["a"], "keywords": ["b"], "min_prompt_chars": 3}, True),
]


@pytest.mark.parametrize("earlier,later,shadowed", SUBSUMPTION)
def test_subsumption(earlier, later, shadowed):
    cfg = config(rule("first", **earlier), rule("second", **later), rule("default"))
    expected = [("routes[1]", "second", "first")] if shadowed else []
    assert [s for s in shadowing(cfg) if s[1] == "second"] == expected
    assert implies(RouteMatch(**later), RouteMatch(**earlier)) is shadowed


def test_disabled_rules_do_not_shadow_and_are_only_info():
    cfg = config(rule("off", enabled=False), rule("code", tags=["code"]), rule("default"),
                 rule("late", enabled=False, tags=["x"]))
    warnings = lint(cfg)
    assert [(w.path, w.level) for w in warnings] == [("routes[3]", "info")]
    assert "disabled rule 'late'" in warnings[0].message


def test_reports_the_first_shadowing_rule():
    cfg = config(rule("a", tags=["x", "y"]), rule("b", tags=["x"]), rule("c", tags=["x"]),
                 rule("default"))
    assert shadowing(cfg) == [("routes[1]", "b", "a"), ("routes[2]", "c", "a")]


def test_unknown_models_duplicates_and_missing_catch_all():
    cfg = config(rule("code", "nope", fallback=["big", "gone"], tags=["code"]),
                 rule("code", "big", keywords=["x"]))
    assert [str(w) for w in lint(cfg)] == [
        "routes[0].target: no model named 'nope'",
        "routes[0].fallback[1]: no model named 'gone'",
        "routes[1].name: duplicate rule name 'code' (also routes[0])",
        "routes: no catch-all rule (an enabled rule without conditions): requests that match "
        "no rule get 404 model_not_found unless they name a model",
    ]


def test_model_condition_naming_a_registered_model():
    cfg = config(rule("alias", "big", model=["gpt-4o", "small"]), rule("default"))
    assert [str(w) for w in lint(cfg)] == [
        "routes[0].match.model: 'small' is a registered model: requests naming it go to it "
        "directly, never through the rules"]


def test_semantic_setting_the_scoring_never_reads():
    learned = SemanticMatch(examples=["fix my code"], margin=0.05)
    nearest = SemanticMatch(examples=["fix my code"], scoring="nearest", min_probability=0.7)
    both_used = SemanticMatch(examples=["fix my code"], scoring="nearest", margin=0.05)
    cfg = config(rule("a", semantic=learned), rule("b", semantic=nearest),
                 rule("c", semantic=both_used), rule("default"))
    assert [str(w) for w in lint(cfg)] == [
        "routes[0].match.semantic.margin: margin 0.05 does nothing with scoring 'learned': it "
        "applies to scoring nearest only",
        "routes[1].match.semantic.min_probability: min_probability 0.7 does nothing with scoring "
        "'nearest': it applies to scoring learned only"]


def test_disabled_catch_all_does_not_count():
    warnings = lint(config(rule("code", tags=["code"]), rule("default", enabled=False)))
    assert any(w.path == "routes" for w in warnings)


def sometimes(strategy):
    """Mostly absent, so that pairs of rules overlap often."""
    return st.one_of(st.just([]), st.just([]), strategy)


matches = st.builds(
    RouteMatch,
    tags=sometimes(st.lists(st.sampled_from("xy"), min_size=1, max_size=2, unique=True)),
    keywords=sometimes(st.lists(st.text(alphabet="abA", min_size=1, max_size=3), min_size=1,
                                max_size=2)),
    min_prompt_chars=st.none() | st.none() | st.integers(0, 8),
    max_prompt_chars=st.none() | st.none() | st.integers(0, 8),
    model=sometimes(st.lists(st.sampled_from(["m1", "m2"]), min_size=1, max_size=2, unique=True)),
    path=sometimes(st.lists(st.sampled_from(["/a", "/b"]), min_size=1, max_size=2, unique=True)),
)


@property_test
@settings(max_examples=examples(1000), deadline=None)
@given(later=matches, earlier=matches, data=st.data())
def test_implies_is_sound(later, earlier, data):
    """Whenever lint says `earlier` covers `later`, every request `later` matches, `earlier` does.

    The request is built to satisfy `later`, so that each of its conditions is exercised."""
    if not implies(later, earlier):
        return

    def one_of(values, default):
        return data.draw(st.sampled_from(values or default))

    keyword = one_of(later.keywords, [""])
    low = max(later.min_prompt_chars or 0, len(keyword))
    high = later.max_prompt_chars if later.max_prompt_chars is not None else low + 8
    assume(low <= high)
    text = keyword + data.draw(st.text(alphabet="abAB", min_size=low - len(keyword),
                                       max_size=high - len(keyword)))
    body = {"model": one_of(later.model, ["m1", "m2", "m3"]),
            "tags": [one_of(later.tags, ["x", "y", "w"])],
            "messages": [{"role": "user", "content": text}]}
    req = extract(one_of(later.path, ["/a", "/b"]), body, None)
    assert check_rule(RouteConfig("l", "t", match=later), req).matched
    assert check_rule(RouteConfig("e", "t", match=earlier), req).matched
