"""What the Routes panel shows while the user edits a semantic rule: live scores for typed
prompts, the score distributions of the examples (leave-one-out), the negatives and recent
traffic, and threshold suggestions. Qt-free and engine-free: `embed` is any TextEmbeddings."""
from __future__ import annotations

from laya_desktop.config.schema import SemanticMatch
from laya_desktop.routing.semantic import SemanticRule, TextEmbeddings, semantic_text
from laya_desktop.routing.semantic_threshold import (MODES, leave_one_out_scores, nearest_scores,
                                                      suggest)


def probe(match: SemanticMatch, prompts: list[str], recent_texts: list[str], embed: TextEmbeddings,
          precision: float = 0.95) -> dict:
    rule = SemanticRule(match, embed)
    examples = embed.many(rule.examples)
    k = match.top_k
    positives = leave_one_out_scores(examples, k)
    negatives = nearest_scores(embed.many(rule.negatives), examples, k)
    recent = nearest_scores(embed.many([semantic_text(t.lower()) for t in recent_texts]), examples, k)
    suggestions = {}
    for mode in MODES:
        s = suggest(positives, negatives, mode, precision)
        suggestions[mode] = None if s is None else {
            "threshold": s.threshold, "precision": s.precision, "recall": s.recall, "f1": s.f1,
            "recent_share": (sum(r >= s.threshold for r in recent) / len(recent)) if recent else None}
    return {
        "prompts": [{"text": p, **rule.score(embed(semantic_text(p.lower()))).as_json()} for p in prompts],
        "scores": {"examples_leave_one_out": positives, "negatives": negatives, "recent": recent},
        "suggestions": suggestions, "precision": precision,
    }
