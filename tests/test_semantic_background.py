"""The background "none" corpus and what it calibrates: the shipped data, the
auto threshold, the false-positive target of the suggestions (pure tables), and the head."""
from __future__ import annotations

import numpy as np
import pytest

from laya_desktop.routing.semantic_background import (BACKGROUND_PASS, TEXTS, VECTORS,
                                                     background_scores, background_texts,
                                                     background_vectors, calibrated_threshold)
from laya_desktop.routing.semantic_head import fit_min_probability
from laya_desktop.routing.semantic_threshold import lowest_within, suggest_for_target

SPORT = ["who won the football match last night", "how many players are on a basketball team",
         "rules of cricket for beginners", "best running shoes for a marathon",
         "how do I improve my tennis serve", "when is the next olympic games",
         "explain the offside rule", "training plan for a 10k race"]


def test_shipped_corpus_is_small_real_text_with_its_licence_and_matching_vectors():
    from laya_desktop.routing.semantic import shared_embeddings
    assert TEXTS.stat().st_size + VECTORS.stat().st_size < 1_000_000
    head = TEXTS.read_text(encoding="utf-8").splitlines()[:3]
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in head[0] and "licence" in head[1]
    texts, vectors = background_texts(), background_vectors()
    assert len(texts) == len(vectors) == 1600 and len(set(texts)) == len(texts)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    embed = shared_embeddings()  # the product's encoder; the vectors were made with numpy fp32
    sample = [0, 399, 800, 1599]
    cosines = [float(embed(texts[i]) @ vectors[i]) for i in sample]
    assert min(cosines) > 0.95, cosines


def test_auto_threshold_lets_one_percent_of_the_background_through():
    from laya_desktop.routing.semantic import shared_embeddings
    examples = shared_embeddings().many(SPORT)
    for top_k in (1, 3):
        t = calibrated_threshold(examples, top_k)
        passing = float((background_scores(examples, top_k) >= t).mean())
        assert BACKGROUND_PASS - 1 / 1600 <= passing <= BACKGROUND_PASS + 1 / 1600
        assert 0.2 < t < 0.6


def test_a_rule_without_threshold_gets_the_calibrated_one_and_takes_a_short_on_topic_request():
    """Eight short examples leave on-topic requests at a cosine of 0.3-0.4, which the
    old default of 0.5 turned away."""
    from laya_desktop.config.validate import validate_config
    from laya_desktop.routing.router import Router

    def router(threshold):
        extra = {} if threshold is None else {"threshold": threshold}
        cooking = ["how long do I boil an egg", "recipe for banana bread", "what can I cook with rice",
                   "how do I make pancakes", "substitute for butter in baking", "vegetarian dinner ideas",
                   "how to sharpen a kitchen knife", "how long to roast a chicken"]
        raw = {"models": [{"name": "m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
               "routes": [{"name": "sport", "target": "m", "match": {"semantic": {"examples": SPORT, **extra}}},
                          {"name": "cooking", "target": "m", "match": {"semantic": {"examples": cooking, **extra}}},
                          {"name": "default", "target": "m"}]}
        config, errors = validate_config(raw)
        assert errors == []
        return Router(config)

    auto, fixed = router(None), router(0.5)
    prompt = "how long to cook pasta"
    body = {"messages": [{"role": "user", "content": prompt}]}
    scored = auto.semantic.score("cooking", prompt)
    assert scored.threshold == auto.semantic._by_name["cooking"].threshold < 0.5
    assert scored.threshold <= scored.score < 0.5  # between the two thresholds
    assert auto.decide_body("/v1/chat/completions", body, None).rule == "cooking"
    assert fixed.decide_body("/v1/chat/completions", body, None).rule == "default"
    assert auto.semantic.head.background == 1600 and fixed.semantic.head.background == 0
    off = {"messages": [{"role": "user", "content": "a rock formation that juts out from a cliff"}]}
    assert auto.decide_body("/v1/chat/completions", off, None).rule == "default"


@pytest.mark.parametrize("scores, target, expected", [
    ([0.9, 0.5, 0.4, 0.3], 0.25, 0.501),   # one of four may pass: just above the second
    ([0.9, 0.5, 0.4, 0.3], 0.0, 0.901),    # none may pass
    ([0.9, 0.5], 0.5, 0.501),
    ([0.2] * 10, 0.05, 0.201),             # ten scores cannot show 5 %: none may pass
    ([], 0.05, 0.0),                       # nothing to keep out
    ([0.3, 0.2], 1.0, 0.0),
])
def test_lowest_threshold_within_a_rate(scores, target, expected):
    assert lowest_within(scores, target) == pytest.approx(expected)


@pytest.mark.parametrize("positives, negatives, background, threshold, too_few", [
    # the background decides: 5 of 100 at 0.45 may pass, the sixth highest is 0.1
    ([0.6] * 8, [0.3] * 20, [0.1] * 95 + [0.45] * 5, 0.301, ()),
    # the negatives decide, and there are too few of them to see 5 %
    ([0.6] * 8, [0.5, 0.3], [0.1] * 100, 0.501, ("negatives",)),
    ([0.6, 0.7], [0.3] * 20, [0.1] * 100, 0.301, ("examples",)),
])
def test_target_suggestion_holds_the_rate_on_both_kinds_of_none(positives, negatives, background,
                                                                threshold, too_few):
    s = suggest_for_target(positives, negatives, background, 0.05)
    assert s.threshold == pytest.approx(threshold)
    assert s.too_few == too_few and s.negatives_needed == 20
    assert s.background_rate <= 0.05 and s.negatives_rate <= 0.05
    assert s.recall == 1.0
    assert suggest_for_target([], negatives, background) is None


def test_min_probability_never_buys_accuracy_with_false_positives():
    none = 1
    # routes' rows at 0.9, 0.8, 0.6; "none" rows whose route probability is 0.7, 0.55, 0.5, 0.45
    oof = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.7, 0.3], [0.55, 0.45], [0.5, 0.5], [0.45, 0.55]])
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    strict = fit_min_probability(oof, y, none, max_false_positive=0.0)
    assert strict > 0.7  # no "none" row may pass: above 0.7, whatever accuracy it costs
    loose = fit_min_probability(oof, y, none, max_false_positive=0.25)
    assert 0.55 < loose  # one of four may pass (0.7), the 0.55 one may not
    # unreachable (a "none" row at 0.95 passes every min_probability of the grid): the lowest
    # min_probability of the lowest rate there is (1 of 5, above 0.7)
    worst = np.vstack([oof, [[0.95, 0.05]]])
    assert fit_min_probability(worst, np.append(y, 1), none, max_false_positive=0.0) == 0.71


def test_probe_answers_the_calibrated_threshold_and_a_suggestion_within_the_target():
    from laya_desktop.config.validate import validate_semantic
    from laya_desktop.routing.semantic import shared_embeddings
    from laya_desktop.routing.semantic_probe import probe

    match, _ = validate_semantic({"examples": SPORT, "negatives": ["how do I knit a scarf"]})
    answer = probe(match, ["who won the cup final"], [], shared_embeddings(), false_positive=0.02)
    assert answer["threshold_auto"] and answer["false_positive"] == 0.02
    assert answer["prompts"][0]["threshold"] == answer["threshold"]
    s = answer["target_suggestion"]
    assert s["target"] == 0.02 and s["background_rate"] <= 0.02 and s["negatives_rate"] == 0.0
    assert s["too_few"] == ["negatives"] and s["negatives_needed"] == 50
    fixed, _ = validate_semantic({"examples": SPORT, "threshold": 0.42})
    assert probe(fixed, [], [], shared_embeddings())["threshold"] == 0.42
