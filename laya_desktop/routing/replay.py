"""What-if replay: the logged routing inputs decided by the running rules and by candidate ones.

Both sides are decided now, by the same code that routes live requests, so the difference is the
rules' alone (not a load, a fallback or a strategy's pick at the time). A rule with several
targets counts under its first target in the per-model figures; each moved request also lists
the targets of both sides. A request moves when its rule or its candidate models change.
"""
from __future__ import annotations

from collections import Counter

from laya_desktop.routing.route_log import as_request
from laya_desktop.routing.router import Decision, Router

NO_RULE = "(no rule: 404)"
DIRECT = "direct"
PREVIEW_CHARS = 120


def _side(decision: Decision | None) -> dict:
    if decision is None:
        return {"rule": NO_RULE, "model": None, "targets": [], "fallbacks": []}
    targets = list(decision.pool.models) if decision.pool else [decision.target]
    return {"rule": DIRECT if decision.direct else decision.rule, "model": decision.target,
            "targets": targets, "fallbacks": list(decision.fallbacks)}


def replay(entries: list[dict], before: Router, after: Router, max_moved: int = 200) -> dict:
    rules = {"before": Counter(), "after": Counter()}
    models = {"before": Counter(), "after": Counter()}
    moved, changed, cut = [], 0, 0
    for entry in entries:
        req = as_request(entry)
        old, new = _side(before.decide(req)), _side(after.decide(req))
        for when, side in (("before", old), ("after", new)):
            rules[when][side["rule"]] += 1
            models[when][side["model"] or NO_RULE] += 1
        cut += bool(entry.get("truncated"))
        if (old["rule"], old["targets"], old["fallbacks"]) == \
                (new["rule"], new["targets"], new["fallbacks"]):
            continue
        changed += 1
        if len(moved) < max_moved:
            moved.append({"seq": entry["seq"], "t": entry["t"], "path": entry["path"],
                          "model_asked": entry["model"], "tags": entry["tags"],
                          "prompt_chars": entry["prompt_chars"],
                          "preview": _preview(entry["user_text"]), "before": old, "after": new})
    return {"replayed": len(entries), "changed": changed,
            "rules": {k: dict(v.most_common()) for k, v in rules.items()},
            "models": {k: dict(v.most_common()) for k, v in models.items()},
            "moved": moved, "moved_more": max(0, changed - len(moved)), "truncated_text": cut}


def _preview(text: str) -> str:
    flat = " ".join(text.replace("\x00", " ").split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS - 1] + "…"
