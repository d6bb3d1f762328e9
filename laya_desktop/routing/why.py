"""Why a request went where it went, kept small enough to store with every request-log entry.

The router decides with bitmasks and keeps no reasons; this replays the reference semantics
(`check_rule`) for the chosen rule and the rules before it, after the decision, so that the
decision itself (X-Laya-Route-Us) stays as fast as it was.
"""
from __future__ import annotations

from laya_desktop.routing.request import extract
from laya_desktop.routing.router import Decision, Router, check_rule

MAX_PASSED_OVER = 8     # rules before the winner listed with why they did not match
MAX_REASON_CHARS = 160  # a reason names tags or keywords; a long list is cut
# A rule before the winner that holds on every condition check_rule judged without a scorer: its
# semantic condition is what made it lose.
UNSCORED_FAILED = ("its semantic condition lost (not similar enough, or another semantic route "
                   "was nearer)")


def _short(reasons) -> list[str]:
    return [r if len(r) <= MAX_REASON_CHARS else r[:MAX_REASON_CHARS - 1] + "…" for r in reasons]


def why_routed(router: Router, path: str, body: dict, header_tags: str | None,
               decision: Decision | None) -> dict:
    """{"matched": [conditions that held], "passed_over": [{"rule", "reasons"}],
    "passed_over_more": n (only when some were left out), "candidates": [target, *fallbacks]}."""
    if decision is not None and decision.direct:
        return {"matched": [f"model {decision.target!r} is registered: served directly, rules not "
                            "consulted"], "passed_over": [], "candidates": [decision.target]}
    req = extract(path, body, header_tags)
    passed_over: list[dict] = []
    more = 0
    matched: list[str] = []
    for rule in router.rules:
        if decision is not None and rule.name == decision.rule:
            matched = _short(check_rule(rule, req).reasons)
            break
        if len(passed_over) == MAX_PASSED_OVER:
            more += 1  # counted, not judged: a long rule list costs nothing per request here
            continue
        check = check_rule(rule, req)  # no semantic scorer: embedding the text again costs ms
        if not check.matched:
            passed_over.append({"rule": rule.name, "reasons": _short(check.reasons)})
        else:  # it holds on every condition judged here, so an unscored one (semantic) failed
            passed_over.append({"rule": rule.name, "reasons": [UNSCORED_FAILED]})
    why = {"matched": matched, "passed_over": passed_over,
           "candidates": [decision.target, *decision.fallbacks] if decision else []}
    if more:
        why["passed_over_more"] = more
    return why


def tried_before(attempts) -> list[dict]:
    """The candidates that could not serve, in order: [{"model", "code"}] (dispatch's Attempts, or
    the "attempts" list of the error that ended the request)."""
    out = []
    for a in attempts or ():
        if isinstance(a, dict):
            out.append({"model": a.get("model"), "code": a.get("code")})
        else:
            out.append({"model": a.model, "code": a.error.code})
    return out
