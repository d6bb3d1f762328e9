"""What the Routes panel shows while the user edits a semantic rule: live scores for typed
prompts, the score distributions of the examples (leave-one-out), the negatives and recent
traffic, and threshold suggestions. Qt-free and engine-free: `embed` is any TextEmbeddings.

With `scoring: learned` the prompts are scored as the router would, by the head fitted on this
rule and `others` (the config's other semantic rules, by name), and the answer suggests a
`min_probability` fitted by 10-fold cross-validation on all their examples.

Every suggestion holds the false-positive target the user sets (`false_positive`, 5 % unless
changed): `target_suggestion` is the lowest threshold that lets at most that share of the
negatives and of the background corpus through, and says what is too few to promise it; the
`min_probability` suggestion is the most accurate one whose out-of-fold "none" rows stay within
it."""
from __future__ import annotations

from collections import OrderedDict

from laya_desktop.config.schema import RouteConfig, RouteMatch, SemanticMatch
from laya_desktop.routing.semantic import SemanticRule, SemanticRules, TextEmbeddings, semantic_text
from laya_desktop.routing.semantic_threshold import (FALSE_POSITIVE_TARGET, MODES, Suggestion,
                                                      leave_one_out_margins, leave_one_out_scores,
                                                      measure, negative_margins, nearest_scores,
                                                      suggest, suggest_for_target)


def _as_json(s: Suggestion | None) -> dict | None:
    return None if s is None else {"threshold": s.threshold, "precision": s.precision,
                                   "recall": s.recall, "f1": s.f1}


def _margin_suggestion(margins: tuple[list[float], list[float]], mode: str, precision: float) -> dict | None:
    """The `margin` over the negatives' score, chosen like a threshold (its "threshold" is the
    margin), never below 0: a margin of 0 already keeps out what the negatives outscore."""
    if not all(margins):
        return None
    s = suggest(*margins, mode, precision)
    return _as_json(s if s.threshold >= 0 else measure(0.0, *margins))


EDITED = "(this rule)"
_fitted: OrderedDict[tuple, float | None] = OrderedDict()  # the last few configs' suggestions


def _learned_min_probability(rules: SemanticRules, matches: list[SemanticMatch],
                             false_positive: float) -> float | None:
    """The min_probability with the best cross-validated accuracy over the head's examples, among
    those within the false-positive target: ten fits, so kept per set of examples, negatives and
    target (typing a prompt changes none of them)."""
    from laya_desktop.routing.semantic_head import fit_min_probability, out_of_fold

    head = rules.head
    if head is None or head.classes < 2:
        return None
    key = (false_positive, *((tuple(m.examples), tuple(m.negatives)) for m in matches))
    if key not in _fitted:
        _fitted[key] = fit_min_probability(out_of_fold(head.views, head.y, head.classes), head.y, head.none,
                                           max_false_positive=false_positive)
        if len(_fitted) > 8:
            _fitted.popitem(last=False)
    return _fitted[key]


MISSES_SHOWN = 5
OVERLAP = 0.8  # an example this close to another rule's example: the two rules compete for it


def near_misses(rules: SemanticRules, recent_texts: list[str]) -> list[dict]:
    """The recent requests the rule did not take, closest first: each with its nearest example
    and why it missed (under the threshold, the head's probability, another rule's pick)."""
    missed = []
    for text in dict.fromkeys(recent_texts):
        scored = rules.score(EDITED, text.lower())
        if not scored.holds:
            missed.append((scored.score, text, scored))
    missed.sort(key=lambda m: -m[0])
    return [{"text": text, "score": round(s.score, 4), "nearest_example": s.nearest,
             "chosen": s.chosen, "reason": s.reason()} for _, text, s in missed[:MISSES_SHOWN]]


def overlaps(match: SemanticMatch, others: dict[str, SemanticMatch], embed: TextEmbeddings) -> list[dict]:
    """Pairs of this rule's examples and another rule's that are nearly the same request."""
    mine = embed.many(match.examples)
    found = []
    for name, other in others.items():
        sims = mine @ embed.many(other.examples).T
        for i, j in zip(*(sims >= OVERLAP).nonzero()):
            found.append({"rule": name, "example": match.examples[i], "other_example": other.examples[j],
                          "similarity": round(float(sims[i, j]), 4)})
    return sorted(found, key=lambda o: -o["similarity"])[:MISSES_SHOWN]


def _target_json(s) -> dict | None:
    return None if s is None else {
        "threshold": s.threshold, "target": s.target, "negatives_rate": s.negatives_rate,
        "background_rate": s.background_rate, "recall": s.recall, "too_few": list(s.too_few),
        "negatives_needed": s.negatives_needed}


def probe(match: SemanticMatch, prompts: list[str], recent_texts: list[str], embed: TextEmbeddings,
          precision: float = 0.95, others: dict[str, SemanticMatch] | None = None,
          false_positive: float = FALSE_POSITIVE_TARGET) -> dict:
    from laya_desktop.routing.semantic_background import background_scores

    others = {n: m for n, m in (others or {}).items() if n != EDITED}
    rules = SemanticRules([RouteConfig(n, "-", match=RouteMatch(semantic=m))
                           for n, m in {EDITED: match, **others}.items()], embed)
    rule = SemanticRule(match, embed)
    examples = embed.many(rule.examples)
    k = match.top_k
    positives = leave_one_out_scores(examples, k)
    negative_vectors = embed.many(rule.negatives)
    negatives = nearest_scores(negative_vectors, examples, k)
    margins = (leave_one_out_margins(examples, negative_vectors, k),
               negative_margins(negative_vectors, examples, k))
    recent = nearest_scores(embed.many([semantic_text(t.lower()) for t in recent_texts]), examples, k)
    suggestions = {}
    for mode in MODES:
        s = suggest(positives, negatives, mode, precision)
        suggestions[mode] = None if s is None else {
            **_as_json(s),
            "recent_share": (sum(r >= s.threshold for r in recent) / len(recent)) if recent else None}
    margin_suggestions = {mode: _margin_suggestion(margins, mode, precision) for mode in MODES}
    target = suggest_for_target(positives, negatives, background_scores(examples, k), false_positive)
    learned = match.scoring == "learned"
    return {
        "prompts": [{"text": p, **rules.score(EDITED, p.lower()).as_json()} for p in prompts],
        "scores": {"examples_leave_one_out": positives, "negatives": negatives, "recent": recent},
        "suggestions": suggestions, "margin_suggestions": margin_suggestions, "precision": precision,
        "threshold": rule.threshold, "threshold_auto": rule.auto, "false_positive": false_positive,
        "near_misses": near_misses(rules, recent_texts), "overlaps": overlaps(match, others, embed),
        "target_suggestion": _target_json(target),
        "scoring": match.scoring, "rules_in_head": len(others) + 1 if learned else None,
        "min_probability_suggestion": _learned_min_probability(rules, [match, *others.values()], false_positive)
        if learned else None,
    }
