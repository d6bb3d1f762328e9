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
