"""The `semantic` match condition: config validation, the router with the real MiniLM, and a real
engine that embeds only when a request reaches a semantic rule."""
from __future__ import annotations

import pytest

from laya_desktop.config.validate import validate_config
from laya_desktop.routing.request import extract
from laya_desktop.routing.router import Router, explanation_json

CHAT = "/v1/chat/completions"
CODE_EXAMPLES = ["write a python function that parses a csv file", "fix the bug in my javascript code",
                 "why does my rust program panic with index out of bounds"]


def raw_config(target="a", models=None) -> dict:
    return {
        "models": models or [{"name": "a", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
        "routes": [
            {"name": "urgent", "target": target, "match": {"keywords": ["urgent"]}},
            {"name": "code", "target": target, "match": {"semantic": {
                "examples": CODE_EXAMPLES, "negatives": ["write a poem about the ocean"],
                "threshold": 0.35}}},
            {"name": "default", "target": target},
        ],
    }


def chat(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("semantic, path, message", [
    ({"examples": ["x"], "threshold": 1.5}, "routes[1].match.semantic.threshold",
     "must be between 0 and 1, got 1.5"),
    ({"examples": ["x"], "threshold": "high"}, "routes[1].match.semantic.threshold",
     "expected a number, got 'high'"),
    ({"threshold": 0.5}, "routes[1].match.semantic.examples", "required"),
    ({"examples": []}, "routes[1].match.semantic.examples", "must not be empty"),
    ({"examples": ["ok", ""]}, "routes[1].match.semantic.examples[1]", "expected a non-empty string"),
    ({"examples": ["ok"], "negatives": 3}, "routes[1].match.semantic.negatives",
     "expected a string or a list of strings"),
    ({"examples": ["ok"], "cutoff": 0.2}, "routes[1].match.semantic.cutoff", "unknown key 'cutoff'"),
    ({"examples": ["x"], "margin": -0.1}, "routes[1].match.semantic.margin",
     "must be between 0 and 1, got -0.1"),
    ({"examples": ["x"], "scoring": "fuzzy"}, "routes[1].match.semantic.scoring",
     "unknown scoring 'fuzzy' (valid: learned, nearest)"),
    ({"examples": ["x"], "min_probability": 2}, "routes[1].match.semantic.min_probability",
     "must be between 0 and 1, got 2"),
    ("ok", "routes[1].match.semantic", "expected a mapping"),
])
def test_semantic_config_errors_name_their_path(semantic, path, message):
    raw = raw_config()
    raw["routes"][1]["match"]["semantic"] = semantic
    config, errors = validate_config(raw)
    assert config is None
    assert [e.path for e in errors] == [path]
    assert message in errors[0].message


def test_semantic_config_parses_with_defaults():
    raw = raw_config()
    raw["routes"][1]["match"]["semantic"] = {"examples": "just one example"}
    config, errors = validate_config(raw)
    assert errors == []
    semantic = config.routes[1].match.semantic
    # threshold None: calibrated on the background corpus when the rule is built
    assert (semantic.examples, semantic.negatives, semantic.threshold) == (["just one example"], [], None)
    assert (semantic.scoring, semantic.min_probability) == ("learned", 0.5)
    assert not config.routes[1].match.is_empty()
    raw["routes"][1]["match"]["semantic"] = {"examples": ["x"], "threshold": "auto"}
    assert validate_config(raw)[0].routes[1].match.semantic.threshold is None


@pytest.fixture(scope="module")
def router() -> Router:
    config, errors = validate_config(raw_config())
    assert errors == []
    return Router(config)


def test_semantic_rule_routes_close_prompts_and_lets_others_through(router):
    assert router.decide_body(CHAT, chat("Please help me debug this Python script, it crashes"),
                              None).rule == "code"
    assert router.decide_body(CHAT, chat("What should I cook for dinner tonight?"), None).rule == "default"
    # near the route's examples in words, nearer to the negative: not code
    assert router.decide_body(CHAT, chat("write a short poem about the sea"), None).rule == "default"


def test_earlier_keyword_rule_decides_without_embedding(router):
    before = router.semantic.embedded
    assert router.decide_body(CHAT, chat("URGENT: the server is down"), None).rule == "urgent"
    assert router.semantic.embedded == before


def test_text_is_embedded_once_then_cached(router):
    body = chat("my rust program panics with an index out of bounds error")
    before = router.semantic.embedded
    first = router.decide_body(CHAT, body, None)
    second = router.decide_body(CHAT, body, None)
    assert first.rule == second.rule == "code"
    assert router.semantic.embedded == before + 1


def test_multi_turn_user_text_is_embedded_as_separate_lines(router):
    body = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                         {"role": "user", "content": "my javascript function returns undefined"}]}
    assert router.decide_body(CHAT, body, None).rule == "code"


def test_explanation_shows_score_and_nearest_example(router):
    body = chat("fix the bug in my javascript code please")
    out = explanation_json(router.explain(extract(CHAT, body, None)), 1.0)
    code = next(r for r in out["explanation"] if r["rule"] == "code")
    assert code["matched"] is True
    assert code["semantic"]["nearest_example"] == "fix the bug in my javascript code"
    assert code["semantic"]["score"] > 0.9
    assert code["semantic"]["threshold"] == 0.35
    assert "nearest example 'fix the bug in my javascript code'" in code["reasons"][0]


def test_config_without_semantic_rules_never_loads_the_model():
    config, _ = validate_config({"models": raw_config()["models"],
                                 "routes": [{"name": "default", "target": "a"}]})
    router = Router(config)
    assert router.semantic.mask == 0
    assert router.semantic._embeddings is None


def test_engine_routes_by_semantic_rule_and_keyword_requests_do_not_embed(tiny_gguf, tmp_path):
    from engine_harness import running_engine

    model = {"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf), "n_ctx": 256,
             "parallel": 1, "idle_ttl_s": 0}
    with running_engine(raw_config("tiny", [model]), tmp_path) as eng, eng.client() as c:
        def embedded() -> int:
            r = c.post("/admin/route/explain", json=chat("x"))
            assert r.status_code == 200
            return r.json()["semantic_texts_embedded"]

        at_start = embedded()  # the examples and negatives, embedded when the config applied
        assert at_start == len(CODE_EXAMPLES) + 1
        r = c.post("/v1/chat/completions", json={**chat("urgent: reply now"), "max_tokens": 2})
        assert r.status_code == 200 and r.headers["x-laya-route"] == "urgent"
        assert embedded() == at_start + 1  # only the explain call's own "x"
        r = c.post("/v1/chat/completions", json={
            **chat("my python function throws a KeyError, can you fix it?"), "max_tokens": 2})
        assert r.status_code == 200 and r.headers["x-laya-route"] == "code"
        assert embedded() == at_start + 2
        explained = c.post("/admin/route/explain", json=chat("fix the bug in my javascript code"))
        code = next(x for x in explained.json()["explanation"] if x["rule"] == "code")
        assert code["semantic"]["nearest_example"] == "fix the bug in my javascript code"
        assert explained.json()["rule"] == "code"
        stricter = raw_config("tiny", [model])
        stricter["routes"][1]["match"]["semantic"]["threshold"] = 0.99
        assert c.put("/admin/config", json=stricter).status_code == 200  # embeds off the loop
        r = c.post("/v1/chat/completions", json={
            **chat("my python function throws a KeyError, can you fix it?"), "max_tokens": 2})
        assert r.status_code == 200 and r.headers["x-laya-route"] == "default"


@pytest.mark.parametrize("scoring, why", [
    ("nearest", "another semantic rule's example is nearer"),
    ("learned", "but the classifier picks rule 'poetry'"),
])
def test_best_matching_semantic_rule_wins_whatever_the_order(scoring, why):
    raw = {"models": raw_config()["models"], "routes": [
        {"name": "broad", "target": "a", "match": {"semantic": {
            "examples": ["write a story about a ship"], "threshold": 0.0, "scoring": scoring}}},
        {"name": "poetry", "target": "a", "match": {"semantic": {
            "examples": ["write a poem about the ocean"], "threshold": 0.3, "scoring": scoring}}},
        {"name": "default", "target": "a"}]}
    config, _ = validate_config(raw)
    router = Router(config)
    assert router.decide_body(CHAT, chat("compose a poem about waves and the sea"), None).rule == "poetry"
    out = explanation_json(router.explain(extract(CHAT, chat("compose a poem about waves and the sea"),
                                                  None)), 1.0)
    broad = next(r for r in out["explanation"] if r["rule"] == "broad")
    assert broad["matched"] is False
    assert why in broad["reasons"][0]


def test_only_the_last_user_turn_is_embedded(router):
    body = {"messages": [{"role": "user", "content": "fix the bug in my javascript code"},
                         {"role": "assistant", "content": "done"},
                         {"role": "user", "content": "thanks! what should I cook for dinner?"}]}
    assert router.decide_body(CHAT, body, None).rule == "default"


@pytest.mark.parametrize("positives, negatives, mode, expect", [
    ([0.8, 0.7, 0.6], [0.2, 0.3], "leave_one_out", 0.6),
    ([0.8, 0.7, 0.6], [0.2, 0.3], "best_f1", 0.45),  # the middle of the clean gap
    ([0.8, 0.7, 0.5, 0.4], [0.45, 0.2], "precision", 0.475),  # the lowest at precision 1.0
    ([0.8, 0.7], [], "best_f1", 0.7),  # no negatives: every example let through
])
def test_threshold_suggestions(positives, negatives, mode, expect):
    from laya_desktop.routing.semantic_threshold import suggest

    got = suggest(positives, negatives, mode, precision=1.0)
    assert got.threshold == pytest.approx(expect, abs=0.002)
    assert got.recall == sum(p >= got.threshold for p in positives) / len(positives)


def test_leave_one_out_scores_never_match_an_example_to_itself():
    import numpy as np

    from laya_desktop.routing.semantic_threshold import leave_one_out_scores

    vectors = np.eye(3, dtype=np.float32)
    vectors[2] = vectors[1]
    assert leave_one_out_scores(vectors) == [0.0, 1.0, 1.0]


def test_lint_does_not_call_rules_after_a_semantic_rule_shadowed():
    from laya_desktop.routing.lint import lint

    config, _ = validate_config(raw_config())
    assert not [w for w in lint(config) if "can never match" in str(w)]


def test_the_model_loads_and_embeds_with_the_network_cut_off(monkeypatch):
    import socket

    from laya_desktop.routing.minilm import MiniLM
    from laya_desktop.routing.minilm_files import model_files

    def no_network(*args, **kwargs):
        raise AssertionError("the semantic model tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    files = model_files()
    assert files.weights.stat().st_size > 80_000_000 and files.tokenizer.is_file()
    encoder = MiniLM(files)
    a, b = encoder.encode("a man is eating food."), encoder.encode("a man is eating a piece of bread.")
    # the value sentence-transformers documents for this pair with all-MiniLM-L6-v2
    assert float(a @ b) == pytest.approx(0.7553, abs=0.002)


def test_text_to_embed_names_the_text_only_when_a_semantic_rule_is_reached(router):
    keyword = chat("urgent: disk full")
    assert router.text_to_embed(CHAT, keyword, None) is None
    fresh = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                          {"role": "user", "content": "My rust program panics when I index a vector"}]}
    before = router.semantic.embedded
    assert router.text_to_embed(CHAT, fresh, None) == "my rust program panics when i index a vector"
    assert router.semantic.embedded == before  # asking embedded nothing
    router.semantic.embed("my rust program panics when i index a vector")
    assert router.text_to_embed(CHAT, fresh, None) is None  # cached now: the decision is cheap
    assert router.decide_body(CHAT, fresh, None).rule == "code"


def test_top_k_scores_the_mean_of_the_nearest_examples():
    from laya_desktop.routing.semantic import top_k_mean

    import numpy as np
    sims = np.array([0.9, 0.1, 0.5, 0.7], dtype=np.float32)
    assert top_k_mean(sims, 1) == pytest.approx(0.9)
    assert top_k_mean(sims, 2) == pytest.approx(0.8)
    assert top_k_mean(sims, 10) == pytest.approx(0.55)
    raw = raw_config()
    raw["routes"][1]["match"]["semantic"]["top_k"] = 0
    assert [e.path for e in validate_config(raw)[1]] == ["routes[1].match.semantic.top_k"]
    raw["routes"][1]["match"]["semantic"]["top_k"] = 2
    config, errors = validate_config(raw)
    assert errors == [] and config.routes[1].match.semantic.top_k == 2
    out = explanation_json(Router(config).explain(extract(CHAT, chat("fix the bug in my javascript code"),
                                                          None)), 1.0)
    code = next(r for r in out["explanation"] if r["rule"] == "code")
    assert code["semantic"]["nearest_example"] == "fix the bug in my javascript code"
    assert 0.4 < code["semantic"]["score"] < 0.95  # the exact example averaged with the next one


def test_margin_keeps_out_prompts_nearly_as_close_to_the_negatives():
    from laya_desktop.routing.semantic import SemanticScore

    close_call = dict(score=0.60, nearest="e", negative_score=0.55, nearest_negative="n", threshold=0.3)
    assert SemanticScore(**close_call).holds  # margin 0: the negative only must not score higher
    tight = SemanticScore(**close_call, margin=0.1)
    assert not tight.holds and "nearer than 0.10 below it" in tight.reason()
    assert SemanticScore(**{**close_call, "negative_score": 0.45}, margin=0.1).holds
    raw = raw_config()
    raw["routes"][1]["match"]["semantic"].update(margin=0.5, scoring="nearest")  # margin: nearest only
    config, errors = validate_config(raw)
    assert errors == [] and config.routes[1].match.semantic.margin == 0.5
    router = Router(config)
    # the exact example: score 1.0, far above the negative; a poem prompt: not 0.5 above it
    assert router.decide_body(CHAT, chat("fix the bug in my javascript code"), None).rule == "code"
    poem = extract(CHAT, chat("write a poem about the rust compiler"), None)
    out = explanation_json(router.explain(poem), 1.0)
    code = next(r for r in out["explanation"] if r["rule"] == "code")
    assert code["semantic"]["margin"] == 0.5 and code["matched"] is False


def test_margin_suggestions_score_each_side_leave_one_out():
    import numpy as np

    from laya_desktop.routing.semantic_threshold import leave_one_out_margins, negative_margins, suggest

    examples = np.array([[1, 0, 0], [0.8, 0.6, 0]], dtype=np.float32)
    negatives = np.array([[0, 0, 1], [0, 0.6, 0.8]], dtype=np.float32)
    # example 0: 0.8 to the other example, 0.0 to the negatives; example 1: 0.8 and 0.36
    assert leave_one_out_margins(examples, negatives) == pytest.approx([0.8, 0.44])
    # negative 0: 0.0 to the examples, 0.8 to the other negative; negative 1: 0.36 and 0.8
    assert negative_margins(negatives, examples) == pytest.approx([-0.8, -0.44])
    assert suggest(leave_one_out_margins(examples, negatives), negative_margins(negatives, examples),
                   "precision", 1.0).threshold == pytest.approx(0.0)  # clamped: margins are >= 0


def test_probe_suggests_a_margin_over_the_negatives():
    from laya_desktop.config.validate import validate_semantic
    from laya_desktop.routing.semantic import shared_embeddings
    from laya_desktop.routing.semantic_probe import probe

    bugs = ["fix the bug in my python code", "fix the bug in my javascript code",
            "please fix this bug in my rust code"]
    match, problems = validate_semantic({"examples": bugs, "negatives": [
        "write a poem about the ocean", "what should I cook tonight?", "tell me a joke"]})
    assert problems == []
    answer = probe(match, ["fix my python code"], [], shared_embeddings(), precision=1.0)
    margins = answer["margin_suggestions"]
    assert set(margins) == {"leave_one_out", "best_f1", "precision"}
    for suggestion in margins.values():
        assert 0.0 <= suggestion["threshold"] <= 1.0
    # the three are closer to each other than to the negatives by 0.23 or more
    assert margins["leave_one_out"]["recall"] == 1.0 and margins["leave_one_out"]["threshold"] > 0.2
    assert margins["precision"]["precision"] == 1.0  # no negative passes it
    # examples no closer to each other than to the negatives: no margin lets them through
    spread, _ = validate_semantic({"examples": CODE_EXAMPLES, "negatives": match.negatives})
    loo = probe(spread, [], [], shared_embeddings())["margin_suggestions"]["leave_one_out"]
    assert loo["threshold"] == 0.0 and loo["recall"] == 0.0
    one_negative, _ = validate_semantic({"examples": CODE_EXAMPLES, "negatives": ["a poem"]})
    assert set(probe(one_negative, [], [], shared_embeddings())["margin_suggestions"].values()) == {None}


@pytest.mark.parametrize("text, head", [
    ('summarize this email: "the meeting moved to friday at ten, bring the slides"',
     "summarize this email"),
    ("translate from swedish\njag älskar att läsa böcker på vintern", "translate from swedish"),
    ("tl;dr: the shop closes early on monday", "tl;dr"),         # one word before the colon
    (": the shop closes early on monday", None),                  # nothing before it
    ("what does this mean: hola", None),                          # too little after it
    ("write a haiku about rain", None),                           # no lead-in at all
])
def test_lead_in_is_the_request_before_the_text_it_is_about(text, head):
    from laya_desktop.routing.semantic import lead_in
    assert lead_in(text) == head


def test_a_pasted_text_is_scored_by_its_lead_in_too():
    """Embedded whole, "summarize this: <a text about football>" scores as football; its lead-in
    says the task."""
    raw = raw_config()
    raw["routes"][1] = {"name": "summarize", "target": "a", "match": {"semantic": {
        "examples": ["summarize this article for me", "give me a short summary of the text below",
                     "condense these notes into three bullet points"],
        "negatives": ["who won the football world cup in 2014"], "threshold": 0.4}}}
    config, errors = validate_config(raw)
    assert errors == []
    router = Router(config)
    prompt = ("Summarize this match report for me: \"The home side scored twice in the last ten "
              "minutes, the keeper saved a penalty, and the league title race is open again\"")
    from laya_desktop.routing.semantic import lead_in, semantic_text
    text = semantic_text(extract(CHAT, chat(prompt), None).user_text_lower)
    whole = router.semantic.embeddings(text)
    head = router.semantic.embeddings(lead_in(text))
    rule = router.semantic._by_name["summarize"]
    assert rule.score(whole).score < 0.4 <= rule.score(head).score  # the whole text alone misses
    decision = router.decide_body(CHAT, chat(prompt), None)
    assert decision.rule == "summarize"
    scored = router.semantic.score("summarize", extract(CHAT, chat(prompt), None).user_text_lower)
    assert scored.holds and scored.nearest in raw["routes"][1]["match"]["semantic"]["examples"]
    one_word = "Summarize: " + prompt.split(": ", 1)[1]  # a one-word lead-in says the task too
    assert rule.score(router.semantic.embeddings(semantic_text(one_word.lower()))).score < 0.4
    assert router.decide_body(CHAT, chat(one_word), None).rule == "summarize"


@pytest.mark.parametrize("text, head", [
    ("python question: how do i get a year's calendar as a multi-line string?", None),
    ("quick question\nwhat is a monad in haskell", None),          # the rest asks by its first word
    ('summarize: "is it worth it? the reviews say it is not"', "summarize"),  # quoted: pasted text
    ("tl;dr: the shop closes early on monday and opens late on tuesday", "tl;dr"),
])
def test_a_label_before_a_question_is_no_lead_in(text, head):
    from laya_desktop.routing.semantic import lead_in
    assert lead_in(text) == head


def test_python_question_label_does_not_pull_a_calendar_question_to_a_numeric_rule():
    """A "Python question: <anything>" prompt went to a rule with an example mentioning python,
    because the two words before the colon were scored alone (0.558 against "what's the square
    root of 2 in python"); without them the prompt goes to the catch-all."""
    from laya_desktop.routing.semantic import semantic_text
    numeric = ["what's the square root of 2 in python", "compute 17 factorial",
               "what is 15 percent of 80", "convert 3.5 miles to kilometres"]
    raw = raw_config()
    raw["routes"][1] = {"name": "numeric", "target": "a", "match": {"semantic": {
        "examples": numeric, "negatives": ["write a poem about the ocean"], "threshold": 0.5}}}
    config, errors = validate_config(raw)
    assert errors == []
    router = Router(config)
    prompt = "Python question: how do I get a year's calendar as a multi-line string?"
    rule = router.semantic._by_name["numeric"]
    label = router.semantic.embeddings("python question")
    assert rule.score(label).score >= 0.5  # the label alone reaches the rule: what went wrong
    assert router.decide_body(CHAT, chat(prompt), None).rule == "default"
    without = prompt.split(": ", 1)[1]
    assert router.decide_body(CHAT, chat(without), None).rule == "default"
    assert len(router.semantic.embed(extract(CHAT, chat(prompt), None).user_text_lower).texts) == 1
    assert semantic_text(prompt.lower()) == prompt.lower()
