"""The rule editor writes back what it read: a rule loaded and left alone comes back equal, fields
the form does not show (`sampling`, a semantic condition's settings) included, and an edit changes
that field alone. Every rule of the shipped and example configs, as the file and as the engine
holds it."""
from __future__ import annotations

import copy

import pytest
import yaml

from conftest import gui_config
from laya_desktop.config.store import config_to_dict, parse_config_text
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.panels.routes_panel import RoutesPanel
from laya_desktop.gui.panels.rule_editor import RuleEditor
from laya_desktop.gui.workers import WorkerPool
from test_model_dialog_roundtrip import shipped_configs


def rule_cases() -> list:
    cases = []
    for label, text in shipped_configs():
        parsed, errors = parse_config_text(text)
        assert errors == []
        for view, config in (("file", yaml.safe_load(text)), ("engine", config_to_dict(parsed))):
            cases += [pytest.param(rule, id=f"{label}:{view}:{rule['name']}") for rule in config["routes"]]
    return cases


@pytest.fixture(scope="module")
def editor(qapp):
    editor = RuleEditor()
    editor.set_models(["smollm2-135m", "gemma-270m"])
    yield editor
    editor.deleteLater()


@pytest.mark.parametrize("rule", rule_cases())
def test_a_rule_left_alone_comes_back_as_read(editor, rule):
    editor.load(copy.deepcopy(rule))
    for field in (editor.name, editor.fallback, editor.targets, *editor.lists.values()):
        field.editingFinished.emit()   # focus passing through every field changes nothing
    assert editor.rule() == rule


@pytest.mark.parametrize("rule", rule_cases())
def test_an_edit_changes_that_field_alone(editor, rule):
    editor.load(copy.deepcopy(rule))
    editor.lists["keywords"].setText("zebra, quagga")
    edited = editor.rule()
    expected = copy.deepcopy(rule)
    expected.setdefault("match", {})
    expected["match"] = {**(expected["match"] or {}), "keywords": ["zebra", "quagga"]}
    assert edited == expected


def test_sampling_and_semantic_settings_survive_an_edit_in_the_panel(qtbot, tmp_path):
    pool = WorkerPool()
    client = EngineClient("http://127.0.0.1:9")   # never called here
    doc = EngineState(client)
    panel = RoutesPanel(pool, doc)
    qtbot.addWidget(panel)
    config = gui_config(tmp_path / "tiny.gguf", 9)
    config["routes"][0]["sampling"] = {"temperature": 0}
    config["routes"][0]["match"]["semantic"] = {"examples": ["fix my code"], "threshold": 0.4,
                                                "top_k": 2, "margin": 0.05, "scoring": "nearest"}
    try:
        doc._set_applied(copy.deepcopy(config))
        panel.view.setCurrentIndex(panel.model.index(0))
        panel.editor.name.editingFinished.emit()
        assert not panel.dirty and panel.undo_stack.count() == 0
        panel.editor.fallback.setText("tiny")
        panel.editor.fallback.editingFinished.emit()
        assert panel.rules[0] == {**config["routes"][0], "fallback": ["tiny"]}
        assert panel.edited_config()["routes"][1:] == config["routes"][1:]
    finally:
        client.close()
        pool.shutdown(1000)


def test_a_semantic_threshold_change_keeps_the_condition_s_other_settings(editor):
    semantic = {"examples": ["fix my code"], "negatives": ["a poem"], "threshold": 0.4, "top_k": 2,
                "margin": 0.05, "scoring": "nearest", "min_probability": 0.7}
    rule = {"name": "r", "target": "gemma-270m", "match": {"tags": ["x"], "semantic": semantic},
            "sampling": {"temperature": 0.1}}
    editor.load(copy.deepcopy(rule))
    editor.semantic.set_threshold(0.55)
    assert editor.rule() == {**rule, "match": {"tags": ["x"], "semantic": {**semantic, "threshold": 0.55}}}
    editor.semantic.examples.setPlainText("")            # no examples: no semantic condition
    assert editor.rule() == {**rule, "match": {"tags": ["x"]}}
