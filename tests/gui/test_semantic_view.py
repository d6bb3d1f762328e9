"""The Routes panel's semantic rule setup against a real engine: the examples editor, the live
score of a typed prompt with its nearest example, the histograms and the threshold suggestion."""
from __future__ import annotations

import httpx
import pytest

from engine_harness import running_engine
from loopback_upstream import chat_upstreams
from panel_harness import routes_panel

EXAMPLES = ["write a python function that parses a csv file", "fix the bug in my javascript code",
            "why does my rust program panic"]
NEGATIVES = ["write a poem about the ocean", "what should I cook tonight?"]
POEMS = ["write a sonnet about the moon", "compose a haiku about autumn", "song lyrics about leaving home"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with chat_upstreams(upstream=0.0) as servers:
        url = servers["upstream"].base_url
        config = {"models": [{"name": "big", "backend": "openai", "base_url": url}],
                  "routes": [{"name": "code", "target": "big", "match": {"semantic": {
                      "examples": EXAMPLES, "negatives": NEGATIVES, "threshold": 0.4,
                      "margin": 0.05}}},
                             {"name": "poetry", "target": "big", "match": {"semantic": {
                                 "examples": POEMS, "threshold": 0.3}}},
                             {"name": "default", "target": "big"}]}
        with running_engine(config, tmp_path_factory.mktemp("semantic")) as eng:
            with httpx.Client(base_url=eng.url) as c:
                for text in ["hello there", "my go code does not compile", "tell me a joke"]:
                    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
                    assert c.post("/v1/chat/completions", json=body).status_code == 200
            yield eng


@pytest.fixture
def panel(qtbot, engine):
    with routes_panel(qtbot, engine.url) as panel:
        panel.view.setCurrentIndex(panel.model.index(0))
        yield panel


def test_examples_editor_round_trips_and_edits_the_rule(panel, qtbot):
    fields = panel.editor.semantic
    assert fields.examples.toPlainText().splitlines() == EXAMPLES
    assert fields.negatives.toPlainText().splitlines() == NEGATIVES
    assert fields.threshold.value() == pytest.approx(0.4)
    with qtbot.waitSignal(panel.editor.edited, timeout=3000) as edited:
        fields.examples.appendPlainText("how do I sort a list in go?")
    assert edited.args[0]["match"]["semantic"]["examples"] == [*EXAMPLES, "how do I sort a list in go?"]
    assert edited.args[0]["match"]["semantic"]["margin"] == 0.05  # not edited here: kept as written
    assert panel.rules[0]["match"]["semantic"]["examples"][-1] == "how do I sort a list in go?"
    assert panel.dirty
    with qtbot.waitSignal(panel.editor.edited, timeout=3000) as edited:
        fields.examples.clear()
    assert "semantic" not in edited.args[0]["match"]  # no examples: no semantic condition
    fields.examples.setPlainText("\n".join(EXAMPLES))
    fields.top_k.setValue(3)
    with qtbot.waitSignal(panel.editor.edited, timeout=3000) as edited:
        fields.top_k.editingFinished.emit()
    assert edited.args[0]["match"]["semantic"]["top_k"] == 3
    assert "scoring" not in edited.args[0]["match"]["semantic"]  # learned, the default
    fields.scoring.setCurrentIndex(fields.scoring.findData("nearest"))
    with qtbot.waitSignal(panel.editor.edited, timeout=3000) as edited:
        fields.scoring.activated.emit(fields.scoring.currentIndex())
    assert edited.args[0]["match"]["semantic"]["scoring"] == "nearest"


def test_live_score_shows_the_learned_probability_against_the_other_rules(panel, qtbot):
    view = panel.semantic_view
    assert [o["name"] for o in view._others] == ["poetry"]
    with qtbot.waitSignal(view.answered, timeout=30000) as answered:
        view.prompt.setText("compose a haiku about spring rain")
    prompt = answered.args[0]["prompts"][0]
    assert prompt["scoring"] == "learned" and prompt["probability"] < 0.5
    assert prompt["chosen"] == "poetry" and prompt["holds"] is False  # the other rule takes it
    assert f"probability {prompt['probability']:.2f}" in view.score.text()
    assert "the classifier picks poetry" in view.score.text()
    assert answered.args[0]["rules_in_head"] == 2
    assert 0.05 <= answered.args[0]["min_probability_suggestion"] <= 0.95
    assert "minimum probability" in view.suggestion.text()
    with qtbot.waitSignal(panel.editor.edited, timeout=3000):
        view.use_probability_btn.click()
    expected = round(answered.args[0]["min_probability_suggestion"], 2)
    assert panel.rules[0]["match"]["semantic"].get("min_probability", 0.5) == pytest.approx(expected)
    assert panel.editor.semantic.min_probability.value() == pytest.approx(expected)


def test_live_score_shows_the_nearest_example_without_blocking(panel, qtbot):
    view = panel.semantic_view
    with qtbot.waitSignal(view.answered, timeout=30000) as answered:
        view.prompt.setText("Please fix the bug in my javascript code")
        assert view.answer is None or not view.answer["prompts"]  # asked in a worker
    answer = answered.args[0]
    assert isinstance(answer, dict)
    prompt = answer["prompts"][0]
    assert prompt["nearest_example"] == "fix the bug in my javascript code"
    assert prompt["score"] > 0.9 and prompt["holds"] is True
    assert "fix the bug in my javascript code" in view.score.text()
    scores = answer["scores"]
    assert len(scores["examples_leave_one_out"]) == len(EXAMPLES)
    assert len(scores["negatives"]) == len(NEGATIVES)
    assert len(scores["recent"]) == 3  # the three requests the engine logged
    _x, counts = view.curves["examples_leave_one_out"].getData()
    assert sum(counts) == len(EXAMPLES)


def test_threshold_suggestion_is_applied_to_the_rule(panel, qtbot):
    view = panel.semantic_view
    with qtbot.waitSignal(view.answered, timeout=30000):
        view.refresh()
    for mode in ("leave_one_out", "best_f1", "precision"):
        view.mode.setCurrentIndex(view.mode.findData(mode))
        view._show_suggestion()
        suggestion = view.suggested()
        assert suggestion is not None and 0 <= suggestion["threshold"] <= 1
        assert view.use_btn.isEnabled()
    view.mode.setCurrentIndex(view.mode.findData("leave_one_out"))
    expected = view.suggested()["threshold"]
    assert expected == pytest.approx(min(view.answer["scores"]["examples_leave_one_out"]), abs=0.01)
    with qtbot.waitSignal(panel.editor.edited, timeout=3000):
        view.use_btn.click()
    assert panel.rules[0]["match"]["semantic"]["threshold"] == pytest.approx(expected)
    assert panel.editor.semantic.threshold.value() == pytest.approx(expected)
    assert panel.undo_stack.canUndo()


def test_semantic_probe_refuses_a_bad_condition_with_its_path(engine):
    with httpx.Client(base_url=engine.url) as c:
        r = c.post("/admin/route/semantic", json={"semantic": {"examples": [], "threshold": 2}})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_config"
    assert {e["path"] for e in error["errors"]} == {"semantic.threshold", "semantic.examples"}


def test_semantic_probe_names_a_bad_other_rule_by_its_path(engine):
    with httpx.Client(base_url=engine.url) as c:
        r = c.post("/admin/route/semantic", json={"semantic": {"examples": EXAMPLES}, "others": [
            {"name": "poetry", "semantic": {"examples": POEMS, "min_probability": 3}}]})
        assert r.status_code == 400
        assert [e["path"] for e in r.json()["error"]["errors"]] == ["others[0].semantic.min_probability"]
        r = c.post("/admin/route/semantic", json={"semantic": {"examples": EXAMPLES}, "others": "poetry"})
        assert r.status_code == 400 and "'others' must be a list" in r.json()["error"]["message"]


def test_auto_threshold_round_trips_and_the_suggestion_holds_the_false_positive_target(panel, qtbot):
    """A rule without a threshold stays without one when edited here; the view draws
    the calibrated threshold, and its default suggestion names the false-positive target and
    what is too few to promise it."""
    fields, view = panel.editor.semantic, panel.semantic_view
    fields.load({"examples": EXAMPLES, "negatives": NEGATIVES})
    assert fields.threshold.text() == fields.threshold.specialValueText()
    assert "threshold" not in fields.value()
    fields.load({"examples": EXAMPLES, "threshold": 0.42})
    assert fields.value()["threshold"] == 0.42
    view.false_positive.setValue(10)
    view.set_condition({"examples": EXAMPLES, "negatives": NEGATIVES})
    with qtbot.waitSignal(view.answered, timeout=30000) as answered:
        view.refresh()
    answer = answered.args[0]
    assert answer["threshold_auto"] and answer["false_positive"] == 0.1
    assert view.line.value() == pytest.approx(answer["threshold"])
    assert view.mode.currentData() == "target"
    suggestion = answer["target_suggestion"]
    assert suggestion["background_rate"] <= 0.1 and suggestion["too_few"] == ["examples", "negatives"]
    assert "within 10%" in view.suggestion.text() and "too few negatives" in view.suggestion.text()


def test_semantic_tab_explains_the_recent_requests_the_rule_missed(panel, qtbot):
    view = panel.semantic_view
    view.set_condition({"examples": EXAMPLES, "negatives": NEGATIVES, "threshold": 0.4},
                       [{"name": "poetry", "semantic": {"examples": [*POEMS, "fix the bug in my javascript code!"]}}])
    with qtbot.waitSignal(view.answered, timeout=30000) as answered:
        view.refresh()
    answer = answered.args[0]
    texts = [m["text"] for m in answer["near_misses"]]
    assert "hello there" in texts and "tell me a joke" in texts  # logged by the engine, not code
    assert all(m["nearest_example"] in EXAMPLES and m["reason"] for m in answer["near_misses"])
    assert answer["overlaps"][0]["rule"] == "poetry"
    assert answer["overlaps"][0]["other_example"] == "fix the bug in my javascript code!"
    assert "did not take" in view.misses.text() and "overlaps rule poetry" in view.misses.text()
