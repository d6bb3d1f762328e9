"""The lexical features of the learned head: what they read in a text, and that they are the
same in every process."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from laya_desktop.routing.lexical import DIMS, MAX_CHARS, LexicalFeatures, grams, normalised

TEXTS = ["summarize this email for me", "write a sql query that joins orders and customers",
         "translate good morning into german", "tl;dr of the thread below", "what is f(x) = x^2 at 3"]


def test_tokens_are_words_and_single_symbols():
    assert normalised("TL;DR: the Thread") == " tl ; dr : the thread "
    assert normalised("f(x)=x^2") == " f ( x ) = x ^ 2 "
    assert normalised("snake_case héllo") == " snake _ case héllo "


def test_features_are_the_same_in_another_process_whatever_its_hash_seed():
    code = ("import json, sys; from laya_desktop.routing.lexical import grams; "
            "print(json.dumps([grams(t).tolist() for t in json.loads(sys.argv[1])]))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(TEXTS)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True).stdout
    assert json.loads(out) == [grams(t).tolist() for t in TEXTS]


def test_a_misspelled_word_keeps_most_of_its_features():
    lexical, _ = LexicalFeatures.fitted(TEXTS)
    right, typo, other = lexical.rows(["summarize this email", "sumarize this emial", "plan a trip to rome"])
    assert right @ typo > 0.5 > 0.1 > right @ other


def test_rows_are_unit_length_and_an_empty_text_is_zero():
    lexical, training_rows = LexicalFeatures.fitted(TEXTS)
    rows = lexical.rows(TEXTS + ["", "   "])
    assert rows.shape == (len(TEXTS) + 2, DIMS)
    assert np.allclose(np.linalg.norm(rows[:len(TEXTS)], axis=1), 1.0)
    assert not rows[len(TEXTS):].any() and np.isfinite(rows).all()
    assert np.allclose(training_rows, lexical.rows(TEXTS))


def test_only_the_first_max_chars_are_read():
    text = "x" * (MAX_CHARS - 3) + " the rest of a very long pasted text"
    assert np.array_equal(grams(text), grams(text[:MAX_CHARS]))


def test_words_rare_in_the_examples_weigh_more():
    lexical, _ = LexicalFeatures.fitted(["the query", "the poem", "the recipe"])
    the, query = (int(np.bincount(grams(w), minlength=DIMS).argmax()) for w in ("the", "query"))
    assert lexical.idf[query] > lexical.idf[the]


def test_any_text_has_features_lone_surrogates_emoji_and_other_scripts_included():
    for text in ["\ud800 half a pair", "😀 emoji 😀", "日本語のテキスト", "x" * 10_000]:
        assert len(grams(text)) > 0
    assert len(grams("")) == len(grams("   ")) == 0


def test_logits_over_a_texts_own_buckets_are_the_dense_rows_product():
    lexical, _ = LexicalFeatures.fitted(TEXTS)
    rng = np.random.default_rng(0)
    weights, bias = rng.normal(size=(3, DIMS)).astype(np.float32), np.array([0.1, -0.2, 0.3], np.float32)
    texts = ["sumarize this emial", "", "write a query"]
    dense = lexical.rows(texts) @ weights.T + bias
    assert np.allclose(lexical.logits(texts, weights, bias), dense, atol=1e-4)
