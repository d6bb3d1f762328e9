"""Laya's keyword scanner (routing/_keyscan.c) finds what ahocorasick-rs finds, each keyword once."""
from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from property_budget import examples, property_test
from test_routing import CHAT, COMPLETIONS, config, reference, rule, rules

from laya_desktop.config.schema import SemanticMatch
from laya_desktop.routing import router as router_module
from laya_desktop.routing.request import extract
from laya_desktop.routing.router import Router, _AhoCorasickScanner, make_scanner

if router_module._NativeScanner is None:
    # CI builds it (gcc and Python's headers are there); elsewhere the router falls back
    if os.environ.get("CI"):
        raise RuntimeError("laya_desktop.routing._keyscan was not built")
    pytest.skip("laya_desktop.routing._keyscan is not built here", allow_module_level=True)

KeywordScanner = router_module._NativeScanner


def found(scanner, data: bytes) -> list[int]:
    hits = scanner.scan(data)
    assert len(hits) == len(set(hits)), "a keyword reported twice"
    return sorted(hits)


def expected(patterns: list[bytes], data: bytes) -> list[int]:
    return sorted(set(_AhoCorasickScanner(patterns).scan(data.lower())))


# a small alphabet, so that keywords overlap, nest and repeat in the texts
LETTERS = st.sampled_from(list(b"abAB-\xc3\xa9 "))
KEYWORDS = st.lists(st.binary(min_size=1, max_size=7).map(bytes.lower).filter(lambda b: b"\0" not in b)
                    | st.lists(LETTERS, min_size=1, max_size=6).map(lambda c: bytes(c).lower()),
                    min_size=1, max_size=40, unique=True)
TEXTS = st.binary(max_size=200) | st.lists(LETTERS, max_size=200).map(bytes)


@settings(max_examples=400, deadline=None)
@given(KEYWORDS, TEXTS)
def test_finds_what_ahocorasick_finds_in_a_lowered_text(patterns, text):
    """ASCII letters in the text match their lower case, all other bytes only themselves."""
    scanner = KeywordScanner(patterns)
    ascii_lowered = bytes(b + 32 if 65 <= b <= 90 else b for b in text)
    assert found(scanner, text) == expected(patterns, ascii_lowered)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcABC-é ", min_size=1, max_size=5), min_size=1, max_size=20),
       st.lists(st.text(alphabet="abcABC-xyz ", max_size=60), max_size=4))
def test_scan_parts_reads_each_message_apart(words, parts):
    patterns = sorted({w.lower().encode() for w in words})
    scanner = KeywordScanner(patterns)
    want = sorted({k for p in parts for k in expected(patterns, p.lower().encode())})
    assert sorted(scanner.scan_parts(parts)) == want


def test_scan_parts_hands_back_a_text_that_is_not_ascii():
    scanner = KeywordScanner([b"caf\xc3\xa9", b"bar"])
    assert scanner.scan_parts(["bar", "un CAFÉ"]) is None  # the caller lowers and encodes it
    assert sorted(scanner.scan("bar un café".encode())) == [0, 1]
    assert scanner.scan_parts(["BAR", 42, None]) == [1]  # what is not text holds no keyword


def test_keywords_shorter_than_the_anchor_and_texts_shorter_than_a_keyword():
    scanner = KeywordScanner([b"a", b"abcdefgh", b"xy"])
    assert found(scanner, b"") == []
    assert found(scanner, b"A") == [0]
    assert found(scanner, b"abcdefg") == [0]
    assert found(scanner, b"zzABCDEFGH xY") == [0, 1, 2]


def test_many_keywords_and_a_long_text():
    """Past what the scanner keeps on the stack: 8,192 keywords' flags, a 16 KiB text."""
    patterns = [f"kw{i:05d}".encode() for i in range(10_000)]
    scanner = KeywordScanner(patterns)
    text = b" ".join(b"filler words " * 700 + p.upper() for p in (patterns[9_999], patterns[3]))
    assert len(text) > 16_384
    assert found(scanner, text) == [3, 9_999]
    assert scanner.footprint()["filter_bytes"] >= 10_000 * 64 // 8


@pytest.mark.parametrize("bad, error", [([b""], ValueError), ([b"a\0b"], ValueError),
                                        (["text"], TypeError), ([b"ok", 3], TypeError)])
def test_bad_keywords_are_refused(bad, error):
    with pytest.raises(error):
        KeywordScanner(bad)


def test_the_router_prefers_it_and_keeps_nul_keywords_for_ahocorasick():
    assert make_scanner([b"join"]).name == "keyscan"
    assert make_scanner([b"a\0b"]).name == "ahocorasick-rs"


# --- Router.decide_body in one call (route_chat) ----------------------------------------------

content = (st.text(alphabet="abAB -", max_size=20)           # ASCII: read in one call
           | st.text(alphabet="abé", max_size=5)              # not ASCII: the Python path
           | st.none() | st.integers(0, 3)                    # no text
           | st.lists(st.fixed_dictionaries({"type": st.just("text"),
                                             "text": st.text(alphabet="ab", max_size=4)}),
                      max_size=2))                          # parts: the Python path
message = (st.fixed_dictionaries({"role": st.sampled_from(["user", "user", "system", "assistant"])},
                                 optional={"content": content})
           | st.just("not a message"))
bodies = st.fixed_dictionaries(
    {"messages": st.lists(message, max_size=3) | st.none()},
    optional={"model": st.sampled_from(["gpt-4o", "auto", "small", "other"]),
              "tags": st.lists(st.sampled_from(["x", "y", "z", "w"]), max_size=2)})


@property_test
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(routes=rules, body=bodies, path=st.sampled_from([CHAT, COMPLETIONS]),
       header=st.none() | st.sampled_from(["x", "y,w"]))
def test_one_call_decision_equals_reference(routes, body, path, header):
    cfg = config(*routes)
    expected = reference(cfg, extract(path, body, header))
    # one tier, or a tier per keyword read all at once or tier by tier
    for router in (Router(cfg, scanner="keyscan"),
                   Router(cfg, scanner="keyscan", first_tier_keywords=1, dense_hits=math.inf),
                   Router(cfg, scanner="keyscan", first_tier_keywords=1, dense_hits=0)):
        for _ in range(2):  # the second time from the prefilters it kept
            assert router.decide_body(path, body, header) == expected


def test_a_chat_is_decided_in_one_call_and_its_prefilter_kept_per_key():
    cfg = config(rule("long", min_prompt_chars=100), rule("alpha", keywords=["alpha", "gamma"]),
                 rule("beta", keywords=["beta"]), rule("default"))
    router = Router(cfg, scanner="keyscan")
    assert router._chat_scanner is not None
    body = {"messages": [{"role": "system", "content": "x" * 40},
                         {"role": "user", "content": "tell me about BETA then alpha"}]}
    assert router.decide_body(CHAT, body, None).rule == "alpha"
    assert router.decide_body(CHAT, {"messages": [{"role": "user", "content": "beta"}]},
                              None).rule == "beta"
    assert router.decide_body(CHAT, {"messages": [{"role": "user", "content": "no keyword"}]},
                              None).rule == "default"
    # a long prompt reaches the size rule first: the text is not scanned at all
    long = {"messages": [{"role": "user", "content": "alpha " + "y" * 200}]}
    assert router.decide_body(CHAT, long, None).rule == "long"
    assert len(router._prefilters) == 2  # one per (path, model, tags, size range) seen


def test_semantic_rules_keep_the_python_path():
    cfg = config(rule("kw", keywords=["alpha"]),
                 rule("sem", semantic=SemanticMatch(examples=["write code"], threshold=0.99)),
                 rule("default"))
    assert Router(cfg, scanner="keyscan")._chat_scanner is None
