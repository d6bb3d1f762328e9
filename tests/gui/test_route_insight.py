"""The Routes panel's "What if…" and "Distribution" against a real engine whose targets are two
loopback OpenAI-compatible upstreams; the rule editor keeps a rule's targets and strategy."""
from __future__ import annotations

import httpx
import pytest

from engine_harness import running_engine
from laya_desktop.gui.panels.rule_editor import RuleEditor, parse_targets, targets_text
from loopback_upstream import chat_upstreams
from panel_harness import routes_panel


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with chat_upstreams(upstream=0.0) as servers:
        url = servers["upstream"].base_url
        config = {"models": [{"name": "big", "backend": "openai", "base_url": url},
                             {"name": "small", "backend": "openai", "base_url": url}],
                  "routes": [{"name": "code", "match": {"keywords": ["python"]}, "target": "small"},
                             {"name": "default", "target": "big"}]}
        with running_engine(config, tmp_path_factory.mktemp("insight")) as eng:
            with httpx.Client(base_url=eng.url) as c:
                for text in ["write python"] * 2 + ["hello there"] * 10:
                    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
                    assert c.post("/v1/chat/completions", json=body).status_code == 200
            yield eng


@pytest.fixture
def panel(qtbot, engine):
    with routes_panel(qtbot, engine.url) as panel:
        yield panel


def _cells(table) -> list[list[str]]:
    return [[table.item(r, c).text() for c in range(table.columnCount())]
            for r in range(table.rowCount())]


def test_what_if_replays_the_edited_rules_in_a_worker(panel, qtbot):
    panel.view.setCurrentIndex(panel.model.index(0))
    panel.toggle_rule()   # disable "code": its python requests would go to "default"
    assert panel.dirty
    with qtbot.waitSignal(panel.replayed, timeout=20000) as answer:
        panel.what_if()
        # the call returned before the engine answered: the GUI thread did not wait for it
        assert panel.what_if_view.summary.text() == "replaying recent requests…"
        assert not panel.what_if_btn.isEnabled()
    assert isinstance(answer.args[0], dict) and answer.args[0]["changed"] == 2
    assert panel.tabs.currentWidget() is panel.what_if_view
    assert panel.what_if_view.summary.text().startswith("2 of ")
    counts = {row[0]: row[1:] for row in _cells(panel.what_if_view.counts)}
    assert counts["rule: code"] == ["2", "0", "-2"]
    assert counts["model: small"] == ["2", "0", "-2"]
    assert counts["model: big"][2] == "+2"
    assert _cells(panel.what_if_view.moved) == [["write python", "code → small",
                                                 "default → big"]] * 2
    assert panel.what_if_btn.isEnabled() and panel.dirty   # nothing was applied


def test_what_if_shows_a_refused_rule_list(panel, qtbot):
    panel.rules.reset([{"name": "x", "target": "nope", "enabled": True, "match": {},
                        "fallback": []}])
    with qtbot.waitSignal(panel.replayed, timeout=20000) as answer:
        panel.what_if()
    assert not isinstance(answer.args[0], dict)
    text = panel.what_if_view.summary.text()
    assert "routes[0].target: no model named 'nope'" in text and panel.what_if_view.counts.rowCount() == 0


def test_distribution_shows_rules_models_and_a_dominant_model(panel, qtbot):
    view = panel.distribution
    view.refresh()
    qtbot.waitUntil(lambda: view.rules.rowCount() > 0, timeout=20000)
    rules = {row[0]: row[1] for row in _cells(view.rules)}
    models = {row[0]: row[1] for row in _cells(view.models)}
    assert int(rules["default"]) >= 10 and int(rules["code"]) >= 2
    assert int(models["big"]) >= 10
    share = int(models["big"]) / (int(models["big"]) + int(models["small"]))
    dominant = "went to model big" in view.summary.text()
    assert dominant == (share >= 0.8)


def test_distribution_refreshes_only_while_shown(panel, qtbot):
    view = panel.distribution
    assert not view.timer.isActive()
    panel.show()
    panel.tabs.setCurrentWidget(view)
    qtbot.waitUntil(view.timer.isActive, timeout=5000)
    panel.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: not view.timer.isActive(), timeout=5000)


def test_rule_editor_keeps_targets_and_strategy(qtbot):
    editor = RuleEditor()
    qtbot.addWidget(editor)
    rule = {"name": "r", "target": "a", "enabled": True, "match": {}, "fallback": ["c"],
            "targets": ["a", {"model": "b", "weight": 3}], "strategy": "weighted"}
    editor.load(rule)
    assert editor.targets.text() == "a, b=3" and editor.strategy.currentText() == "weighted"
    assert editor.rule() == rule
    editor.strategy.setCurrentText("spillover")
    assert editor.rule()["targets"] == ["a", {"model": "b", "max_active": 3}]
    editor.load({"name": "plain", "target": "a"})
    assert "targets" not in editor.rule() and "strategy" not in editor.rule()


def test_targets_text_round_trip():
    assert parse_targets("a, b=2.5", "weighted") == ["a", {"model": "b", "weight": 2.5}]
    assert parse_targets("a=x", "least_loaded") == [{"model": "a", "weight": "x"}]
    assert targets_text([{"model": "a", "max_active": 4}, "b"]) == "a=4, b"


def test_rules_list_shows_a_rules_targets_and_strategy(qtbot):
    from laya_desktop.gui.rules_list import RulesList
    from laya_desktop.gui.rules_model import RulesModel
    rules = RulesList()
    rules.reset([{"name": "shared", "target": "a", "targets": ["a", {"model": "b", "weight": 2}],
                  "strategy": "weighted", "match": {}}, {"name": "one", "target": "a"}])
    model = RulesModel(rules)
    assert model.data(model.index(0)).startswith("1. shared  →  a | b  weighted")
    assert model.data(model.index(1)).startswith("2. one  →  a   [")
