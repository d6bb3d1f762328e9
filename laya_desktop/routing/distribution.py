"""Route distribution: requests per rule and per model over a recent window, from the request log.

So that a user sees it when nearly everything flows to one big model. `complete` is false when
the log's oldest entry is newer than the window's start (the log is bounded): the counts then
cover less than the window.
"""
from __future__ import annotations

from collections import Counter


def distribution(items: list[dict], now: float, window_s: float, log_full: bool) -> dict:
    start = now - window_s
    rules, models, pairs = Counter(), Counter(), Counter()
    for item in items:
        if (item.get("t") or 0) < start:
            continue
        rule = item.get("rule") or "(none)"
        model = item.get("model") or "(not served)"
        rules[rule] += 1
        models[model] += 1
        pairs[(rule, model)] += 1
    total = sum(rules.values())
    oldest = min((i.get("t") or now for i in items), default=now)
    by_rule: dict[str, dict[str, int]] = {}
    for (rule, model), n in pairs.most_common():
        by_rule.setdefault(rule, {})[model] = n
    return {"window_s": window_s, "requests": total,
            "complete": not (log_full and oldest > start),
            "rules": _shares(rules, total), "models": _shares(models, total),
            "rule_models": by_rule}


def _shares(counts: Counter, total: int) -> list[dict]:
    return [{"name": name, "requests": n, "share": round(n / total, 4) if total else 0.0}
            for name, n in counts.most_common()]
