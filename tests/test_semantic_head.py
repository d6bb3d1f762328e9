"""The learned head of `scoring: learned` semantic rules: the classifier on fixed vectors (pure
policy), its decision and explanation, and a router over the real MiniLM."""
from __future__ import annotations


import numpy as np
import pytest

from laya_desktop.config.validate import validate_config
from laya_desktop.routing.request import extract
from laya_desktop.routing.router import Router, explanation_json
from laya_desktop.routing.semantic import SemanticScore
from laya_desktop.routing.semantic_head import (choose, fit_head, fit_min_probability, out_of_fold,
                                                stratified_folds)

CHAT = "/v1/chat/completions"


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def clusters(per_class: int, classes: int, spread: float = 0.3, seed: int = 1):
    """Unit vectors around `classes` random centres in 384 dimensions, `per_class` each."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.normal(size=(classes, 384)))
    x = unit(np.repeat(centres, per_class, axis=0) + spread * rng.normal(size=(classes * per_class, 384)) / 384 ** 0.5 * 4)
    return centres, x, np.repeat(np.arange(classes), per_class)


def test_head_separates_clusters_and_is_deterministic():
    centres, x, y = clusters(20, 3)
    head = fit_head(x, y, 3)
    probs = head.probabilities(centres)
    assert list(probs.argmax(axis=1)) == [0, 1, 2]
    assert probs.max(axis=1).min() > 0.8
    again = fit_head(x, y, 3)
    assert np.array_equal(head.weights, again.weights) and np.array_equal(head.bias, again.bias)


def test_choose_takes_the_most_probable_route_over_the_texts_vectors_unless_none_wins():
    none = 2
    # vector 0 leans to route 0, vector 1 (the lead-in) is surer of route 1: route 1
    picked = choose(np.array([[0.5, 0.2, 0.3], [0.1, 0.8, 0.1]]), none)
    assert picked.chosen == 1 and list(picked.probabilities) == [0.5, 0.8, 0.3]
    # the best route probability loses to "none" on its own vector: no route
    assert choose(np.array([[0.3, 0.1, 0.6]]), none).chosen is None
    # no "none" class (no negatives anywhere): the most probable route
    assert choose(np.array([[0.4, 0.6]]), None).chosen == 1


def test_one_class_gives_probability_one():
    _, x, y = clusters(5, 1)
    head = fit_head(x, y, 1)
    assert np.allclose(head.probabilities(x), 1.0)


def test_out_of_fold_probabilities_never_come_from_a_head_that_saw_the_row():
    _, x, y = clusters(10, 2)
    y = y.copy()
    y[0] = 2  # a class of one row: only the head that saw it knows it
    in_sample = fit_head(x, y, 3).probabilities(x[:1])[0, 2]
    held_out = out_of_fold(x, y, 3, k=5)[0, 2]
    assert in_sample > 0.3 and held_out < 0.1
    folds = stratified_folds(np.repeat([0, 1], 10), 5)
    assert all(np.bincount(folds[:10], minlength=5) == 2) and all(np.bincount(folds[10:], minlength=5) == 2)


def test_min_probability_is_fitted_for_the_best_accuracy():
    none = 1
    # three route rows at 0.9, 0.8, 0.6 and two "none" rows whose route probability is 0.7, 0.65:
    # any threshold in (0.7, 0.8] keeps the two surest route rows and drops both "none" rows
    oof = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.7, 0.3], [0.65, 0.35]])
    y = np.array([0, 0, 0, 1, 1])
    assert 0.7 < fit_min_probability(oof, y, none) <= 0.8


@pytest.mark.parametrize("probability, chosen, holds, reason", [
    (0.9, "code", True, "probability 0.90 >= 0.50"),
    (0.4, "code", False, "probability 0.40 < 0.50"),
    (0.3, "poetry", False, "the classifier picks rule 'poetry' (probability 0.30 for this one)"),
    (0.2, None, False, "the classifier picks no route"),
])
def test_learned_score_holds_when_the_head_picks_the_rule_surely_enough(probability, chosen, holds, reason):
    s = SemanticScore(0.6, "e", None, None, 0.4, scoring="learned", probability=probability,
                      min_probability=0.5, chosen=chosen, rule="code")
    assert s.holds is holds and reason in s.reason()
    assert s.as_json()["probability"] == probability and s.as_json()["chosen"] == chosen
    # below the cosine threshold nothing else counts
    low = SemanticScore(0.3, "e", None, None, 0.4, scoring="learned", probability=0.99, chosen="code", rule="code")
    assert not low.holds and "< threshold 0.40" in low.reason()


ROUTES = {
    "code": ["write a python function that parses a csv file", "fix the bug in my javascript code",
             "why does my rust program panic with index out of bounds", "add unit tests to this class"],
    "poetry": ["write a poem about the ocean", "compose a haiku about autumn leaves",
               "a sonnet for my wife's birthday", "write song lyrics about leaving home"],
    "cooking": ["what can I cook with rice and eggs", "a recipe for vegan lasagna",
                "how long do I roast a chicken", "how do I make bread rise better"],
}
NEGATIVES = ["what is the weather like today", "tell me about the history of rome",
             "who won the football match yesterday", "how are you doing"]


def learned_router(scoring: str = "learned", threshold: float = 0.2) -> Router:
    rules = [{"name": name, "target": "a", "match": {"semantic": {
        "examples": examples, "negatives": NEGATIVES, "threshold": threshold, "scoring": scoring}}}
        for name, examples in ROUTES.items()]
    config, errors = validate_config({
        "models": [{"name": "a", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
        "routes": rules + [{"name": "default", "target": "a"}]})
    assert errors == []
    return Router(config)


def chat(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def test_learned_rules_route_through_the_real_encoder_and_explain_their_probability():
    router = learned_router()
    head = router.semantic.head
    assert head is not None and (head.classes, head.negatives) == (4, 4)
    cases = {"my python script crashes with a KeyError, please debug it": "code",
             "write me a short poem about the moon": "poetry",
             "how do I bake chocolate chip cookies": "cooking",
             "what is the capital of australia": "default"}
    assert {text: router.decide_body(CHAT, chat(text), None).rule for text in cases} == cases
    # threshold 0: every rule's score passes it, so the head alone decides between them
    out = explanation_json(learned_router(threshold=0.0).explain(
        extract(CHAT, chat("write me a short poem about the moon"), None)), 1.0)
    poetry = next(r for r in out["explanation"] if r["rule"] == "poetry")
    code = next(r for r in out["explanation"] if r["rule"] == "code")
    assert poetry["matched"] and poetry["semantic"]["scoring"] == "learned"
    assert poetry["semantic"]["probability"] >= 0.5 and poetry["semantic"]["chosen"] == "poetry"
    assert not code["matched"] and "the classifier picks rule 'poetry'" in code["reasons"][0]
    # nearest scoring on the same rules: no head, no probability
    nearest = learned_router("nearest")
    assert nearest.semantic.head is None
    out = explanation_json(nearest.explain(extract(CHAT, chat("write me a short poem about the moon"), None)), 1.0)
    assert all("probability" not in r["semantic"] for r in out["explanation"] if r.get("semantic"))


def test_probe_scores_against_the_other_rules_and_fits_min_probability_once(monkeypatch):
    from laya_desktop.config.validate import validate_semantic
    from laya_desktop.routing import semantic_head
    from laya_desktop.routing.semantic import shared_embeddings
    from laya_desktop.routing.semantic_probe import probe

    code, _ = validate_semantic({"examples": ROUTES["code"], "negatives": NEGATIVES})
    others = {n: validate_semantic({"examples": ROUTES[n]})[0] for n in ("poetry", "cooking")}
    fits = []
    real = semantic_head.out_of_fold

    def counted(*args, **kwargs):
        fits.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(semantic_head, "out_of_fold", counted)
    first = probe(code, ["write me a short poem about the moon"], [], shared_embeddings(), others=others)
    again = probe(code, ["how do I bake bread"], [], shared_embeddings(), others=others)
    assert first["rules_in_head"] == 3 and first["prompts"][0]["chosen"] == "poetry"
    assert not first["prompts"][0]["holds"]
    assert 0.05 <= first["min_probability_suggestion"] <= 0.95
    assert again["min_probability_suggestion"] == first["min_probability_suggestion"]
    assert len(fits) == 1  # the examples did not change: the cross-validation ran once


def test_with_more_features_than_rows_the_dual_steps_give_the_primal_head():
    from laya_desktop.routing.semantic_head import _fit_dual, _fit_primal
    rng = np.random.default_rng(3)
    x = unit(rng.normal(size=(40, 300))).astype(np.float32)
    y = np.arange(40) % 4
    onehot, w = np.eye(4, dtype=np.float32)[y], np.full(40, 1 / 40, np.float32)
    primal, dual = _fit_primal(x, onehot, w, 1e-4, 400), _fit_dual(x, onehot, w, 1e-4, 400)
    assert np.abs(primal.weights - dual.weights).max() < 1e-3 * np.abs(primal.weights).max()
    assert np.allclose(primal.bias, dual.bias, atol=1e-4)
    assert fit_head(x, y, 4).weights.shape == (4, 300)   # d > n: the dual path


def test_heads_over_two_views_add_their_logits():
    from laya_desktop.routing.semantic_head import fit_heads, softmax
    centres, x, y = clusters(10, 3)
    _, other, _ = clusters(10, 3, seed=7)
    heads = fit_heads((x, other), y, 3)
    a, b = heads.parts
    expect = softmax(x @ a.weights.T + a.bias + other @ b.weights.T + b.bias)
    assert np.allclose(heads.probabilities((x, other)), expect)
    assert out_of_fold((x, other), y, 3, k=5).shape == (30, 3)


def test_the_lexical_view_routes_what_the_words_give_away():
    """Misspelled, the words that name a route are other words to the encoder; their letters
    still match. The head's probabilities are its two views' logits added."""
    router = learned_router()
    head = router.semantic.head
    assert [v.shape[0] for v in head.views] == [len(head.y)] * 2
    text = "compse a hiaku abuot autum leafs"
    assert router.decide_body(CHAT, chat(text), None).rule == "poetry"
    embedded = router.semantic.embed(text)
    choice = head.choice(embedded)
    vectors_alone = head.heads.parts[0].probabilities(embedded.vectors).max(axis=0)
    assert choice.probabilities[1] > vectors_alone[1]   # the letters made "poetry" surer
    assert head.choice(embedded) is choice   # judged once a decision, however many rules ask
