"""models.yaml `targets` / `strategy`: validation with paths, the round trip, the lint."""
from __future__ import annotations

import pytest

from laya_desktop.config.store import config_to_dict, dump_config_text, parse_config_text
from laya_desktop.config.validate import validate_config
from laya_desktop.routing.lint import lint

MODELS = [{"name": n, "backend": "openai", "base_url": "http://127.0.0.1:9/v1"} for n in "abc"]


def errors_of(*routes, **server) -> list[str]:
    raw = {"models": MODELS, "routes": list(routes)}
    if server:
        raw["server"] = server
    return [str(e) for e in validate_config(raw)[1]]


def test_targets_with_weights_load_and_round_trip():
    raw = {"models": MODELS, "routes": [{"name": "r", "targets": ["a", {"model": "b", "weight": 3}],
                                         "strategy": "weighted", "fallback": ["c"]}]}
    config, errors = validate_config(raw)
    assert errors == []
    rule = config.routes[0]
    assert rule.target == "a" and [t.model for t in rule.pool()] == ["a", "b"]
    assert rule.pool()[1].weight == 3
    again, errors = parse_config_text(dump_config_text(config))
    assert errors == [] and again == config
    assert config_to_dict(config)["routes"][0]["targets"] == ["a", {"model": "b", "weight": 3}]


def test_target_and_targets_together_put_target_first():
    config, errors = validate_config({"models": MODELS, "routes": [
        {"name": "r", "target": "c", "targets": ["a", "b"], "strategy": "least_loaded"}]})
    assert errors == [] and [t.model for t in config.routes[0].pool()] == ["c", "a", "b"]


def test_a_plain_rule_is_written_as_before():
    config, _ = validate_config({"models": MODELS, "routes": [{"name": "r", "target": "a"}]})
    assert config_to_dict(config)["routes"][0] == {"name": "r", "target": "a", "enabled": True,
                                                   "match": {}, "fallback": []}


@pytest.mark.parametrize("route, expected", [
    ({"name": "r", "targets": ["a"], "strategy": "fastest"},
     "routes[0].strategy: unknown strategy 'fastest' (valid: first_available, warm, least_loaded, "
     "min_latency, weighted, spillover)"),
    ({"name": "r", "targets": ["a", "zz"]}, "routes[0].targets[1]: no model named 'zz'"),
    ({"name": "r", "targets": ["a", {"model": "b", "weight": 2}], "strategy": "least_loaded"},
     "routes[0].targets[1].weight: 'weight' applies to strategy 'weighted' only (this rule's "
     "strategy: least_loaded)"),
    ({"name": "r", "targets": [{"model": "a", "max_active": 2}, "b"]},
     "routes[0].targets[0].max_active: 'max_active' applies to strategy 'spillover' only (this "
     "rule's strategy: first_available)"),
    ({"name": "r", "targets": [{"model": "a", "max_active": 0}, "b"], "strategy": "spillover"},
     "routes[0].targets[0].max_active: must be at least 1, got 0"),
    ({"name": "r", "targets": [{"model": "a", "weight": -1}], "strategy": "weighted"},
     "routes[0].targets[0].weight: must be greater than 0 and at most 1000000.0, got -1"),
    ({"name": "r", "targets": [{"model": "a", "colour": 1}]},
     "routes[0].targets[0].colour: unknown key 'colour' (valid: model, weight, max_active)"),
    ({"name": "r", "targets": [{"weight": 1}], "strategy": "weighted"},
     "routes[0].targets[0].model: required"),
    ({"name": "r", "targets": []},
     "routes[0].targets: expected a non-empty list of model names or {model, weight}, got []"),
    ({"name": "r", "target": "a", "targets": ["b", "a"]},
     "routes[0].targets[1]: model 'a' is already a target of this rule"),
    ({"name": "r"}, "routes[0].target: required (or 'targets', a list of models)"),
])
def test_each_error_names_its_path(route, expected):
    assert errors_of(route) == [expected]


def test_route_log_size_is_checked():
    assert errors_of({"name": "r", "target": "a"}, route_log_size=-1) == [
        "server.route_log_size: must be between 0 and 100000, got -1"]
    assert errors_of({"name": "r", "target": "a"}, route_log_size=0) == []


def _lint(*routes):
    config, errors = validate_config({"models": MODELS, "routes": list(routes)})
    assert errors == []
    return [(w.path, w.message) for w in lint(config)]


def test_lint_strategy_with_one_target():
    assert ("routes[0].strategy", "strategy 'least_loaded' has one target to choose from: add "
            "models to 'targets'") in _lint({"name": "r", "target": "a", "strategy": "least_loaded"})


def test_lint_spillover_target_without_a_limit():
    found = _lint({"name": "r", "targets": ["a", {"model": "b", "max_active": 2}, "c"],
                   "strategy": "spillover"})
    assert [p for p, _ in found if "max_active" in _] == ["routes[0].targets[0]"]


def test_lint_fallback_that_is_a_target():
    found = _lint({"name": "r", "targets": ["a", "b"], "strategy": "least_loaded",
                   "fallback": ["b", "c"]})
    assert ("routes[0].fallback[0]", "'b' is already a target of this rule: as a fallback it "
            "adds nothing") in found


def test_lint_is_quiet_about_a_good_strategy_rule():
    assert _lint({"name": "r", "targets": ["a", "b"], "strategy": "least_loaded",
                  "fallback": ["c"]}) == []


def test_laya_route_names_the_targets_and_strategy(tmp_path):
    import json
    import subprocess
    import sys

    import yaml
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": MODELS, "routes": [
        {"name": "default", "targets": ["a", "b"], "strategy": "least_loaded"}]}))
    run = [sys.executable, "-m", "laya_desktop", "route", "--config", str(path)]
    text = subprocess.run([*run, "hello"], capture_output=True, text=True, timeout=60)
    out = json.loads(subprocess.run([*run, "--json", "hello"], capture_output=True, text=True,
                                    timeout=60).stdout)
    assert "targets:   a, b (strategy least_loaded" in text.stdout, text.stderr
    assert (out["targets"], out["strategy"]) == (["a", "b"], "least_loaded")


def test_replica_keys_load_and_round_trip():
    models = [{**MODELS[0], "slots": 1, "health": {"probe": "/health", "interval_s": 2,
                                                   "eject_after": 2}}, *MODELS[1:]]
    raw = {"models": models, "routes": [{"name": "r", "targets": ["a", "b"],
                                         "strategy": "min_latency", "affinity_ttl_s": 60}]}
    config, errors = validate_config(raw)
    assert errors == []
    a, rule = config.models[0], config.routes[0]
    assert a.slots == 1 and a.health.probe == "/health" and a.health.backoff_s == 5
    assert rule.affinity is None and rule.affinity_on and rule.affinity_ttl_s == 60
    again, errors = parse_config_text(dump_config_text(config))
    assert errors == [] and again == config
    assert config_to_dict(config)["routes"][0]["affinity_ttl_s"] == 60


@pytest.mark.parametrize("change, expected", [
    ({"models": [{"name": "l", "backend": "llama_cpp", "path": "x.gguf", "slots": 2}]},
     "models[3].slots: 'slots' does not apply to backend 'llama_cpp' (applies to: openai, anthropic)"),
    ({"health": {"probe": "ping"}},
     "models[0].health.probe: unknown probe 'ping' (valid: none, auto, or a path such as /health)"),
    ({"health": {"every": 3}}, "models[0].health.every: unknown key 'every' (valid: probe, "
                               "interval_s, eject_after, backoff_s, backoff_max_s)"),
    ({"health": {"backoff_s": 10, "backoff_max_s": 5}},
     "models[0].health.backoff_max_s: less than backoff_s (5 < 10)"),
    ({"health": {"eject_after": 0}}, "models[0].health.eject_after: must be between 1 and 1000, got 0"),
    ({"route": {"name": "r", "target": "a", "affinity": True}},
     "routes[0].affinity: 'affinity' applies to a rule with several targets only"),
    ({"route": {"name": "r", "targets": ["a", "b"], "affinity": "yes"}},
     "routes[0].affinity: expected true or false, got 'yes'"),
    ({"route": {"name": "r", "targets": ["a", "b"], "affinity_ttl_s": 0}},
     "routes[0].affinity_ttl_s: must be between 1 and 604800, got 0"),
])
def test_replica_keys_are_refused_with_their_paths(change, expected):
    models = [dict(m) for m in MODELS] + change.get("models", [])
    if "health" in change:
        models[0]["health"] = change["health"]
    route = change.get("route", {"name": "r", "targets": ["a", "b"]})
    errors = [str(e) for e in validate_config({"models": models, "routes": [route]})[1]]
    assert errors == [expected], errors


def test_affinity_false_turns_it_off_and_one_target_has_none():
    config, errors = validate_config({"models": MODELS, "routes": [
        {"name": "off", "targets": ["a", "b"], "affinity": False},
        {"name": "one", "target": "a"}]})
    assert errors == [] and [r.affinity_on for r in config.routes] == [False, False]
