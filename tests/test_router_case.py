"""The keyword scan ignores case as `str.lower()` does, whichever way the router gets there: an
ASCII prompt scanned as it is by the caseless hyperscan database, any other prompt lowered first
(and ahocorasick-rs always lowered)."""
from __future__ import annotations

import pytest

from laya_desktop.routing.request import extract
from laya_desktop.routing.router import Router
from test_routing import CHAT, SCANNERS, chat, config, reference, rule

CASES = [
    # (keyword, prompt, matches)
    ("error", "Why this ERROR in my code?", True),
    ("traceback", "TraceBack (most recent call last)", True),
    ("café", "un CAFÉ, s'il vous plaît", True),       # non-ASCII: lowered first
    ("é", "E and e only", False),                     # no ASCII letter stands for é
    ("k", "\u212a", True),                            # KELVIN SIGN lowers to ASCII k
    ("i\u0307", "\u0130stanbul", True),               # İ lowers to two code points
    ("sql", "S\x00QL", False),                        # NUL joins messages: no match across
    ("a-b", "A-B", True),                             # non-letters compared as they are
    ("[x]", "[X]", True),
]


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("keyword, prompt, matches", CASES)
def test_case_folding_is_str_lower(scanner, keyword, prompt, matches):
    cfg = config(rule("kw", target="big", keywords=[keyword]), rule("default"))
    body = chat(prompt)
    router = Router(cfg, scanner=scanner)
    decision = router.decide_body(CHAT, body, None)
    assert decision == reference(cfg, extract(CHAT, body, None))
    assert decision.rule == ("kw" if matches else "default")


@pytest.mark.parametrize("scanner", SCANNERS)
def test_messages_are_scanned_apart(scanner):
    cfg = config(rule("kw", target="big", keywords=["ab"]), rule("default"))
    router = Router(cfg, scanner=scanner)
    assert router.decide_body(CHAT, chat("xA", "Bx"), None).rule == "default"
    assert router.decide_body(CHAT, chat("xA", "ABx"), None).rule == "kw"
