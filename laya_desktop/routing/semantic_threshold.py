"""Threshold suggestions for a semantic rule, from scores alone (pure: no model, no Qt).

The positives are the rule's own examples scored leave-one-out (each against the others, so an
example does not find itself at 1.0); the negatives are its negative prompts and, when the caller
has them, prompts known to belong elsewhere. The same choice fits a `margin` from the examples'
and the negatives' margins (their score minus their score against the negatives, leave-one-out).
Three ways to choose:
- `leave_one_out`: the highest threshold that still lets every held-out example through;
- `best_f1`: the threshold with the best F1 between positives and negatives;
- `precision`: the lowest threshold whose precision reaches the one the user picks (most recall).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from laya_desktop.routing.semantic import top_k_mean

MODES = ("leave_one_out", "best_f1", "precision")


@dataclass(frozen=True)
class Suggestion:
    threshold: float
    precision: float | None  # None without negatives: nothing to be precise against
    recall: float
    f1: float | None


def leave_one_out_scores(example_vectors: np.ndarray, top_k: int = 1) -> list[float]:
    """Each example's score against the other examples (unit vectors, one per row)."""
    if len(example_vectors) < 2:
        return []
    sims = example_vectors @ example_vectors.T
    return [top_k_mean(np.delete(row, i), top_k) for i, row in enumerate(sims)]


def nearest_scores(vectors: np.ndarray, example_vectors: np.ndarray, top_k: int = 1) -> list[float]:
    """Each vector's score against the examples."""
    if len(vectors) == 0 or len(example_vectors) == 0:
        return []
    return [top_k_mean(row, top_k) for row in vectors @ example_vectors.T]


def leave_one_out_margins(example_vectors: np.ndarray, negative_vectors: np.ndarray,
                          top_k: int = 1) -> list[float]:
    """Each example's score against the other examples minus its score against the negatives:
    what a `margin` has to let through."""
    if len(negative_vectors) == 0:
        return []
    against = nearest_scores(example_vectors, negative_vectors, top_k)
    return [s - n for s, n in zip(leave_one_out_scores(example_vectors, top_k), against)]


def negative_margins(negative_vectors: np.ndarray, example_vectors: np.ndarray,
                     top_k: int = 1) -> list[float]:
    """Each negative's score against the examples minus its score against the other negatives
    (leave-one-out): what a `margin` has to keep out."""
    if len(negative_vectors) < 2:
        return []
    own = leave_one_out_scores(negative_vectors, top_k)
    return [s - n for s, n in zip(nearest_scores(negative_vectors, example_vectors, top_k), own)]


def measure(threshold: float, positives: list[float], negatives: list[float]) -> Suggestion:
    tp = sum(p >= threshold for p in positives)
    fp = sum(n >= threshold for n in negatives)
    recall = tp / len(positives) if positives else 0.0
    if not negatives:
        return Suggestion(threshold, None, recall, None)
    precision = tp / (tp + fp) if tp + fp else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Suggestion(threshold, precision, recall, f1)


def _candidates(positives: list[float], negatives: list[float]) -> list[float]:
    # midpoints between neighbouring scores: a threshold sitting on a score is fragile
    values = sorted(set(round(v, 4) for v in positives + negatives))
    mids = [(a + b) / 2 for a, b in zip(values, values[1:])]
    return [round(min(max(t, 0.0), 1.0), 3) for t in values[:1] + mids + values[-1:]]


def suggest(positives: list[float], negatives: list[float], mode: str = "best_f1",
            precision: float = 0.95) -> Suggestion | None:
    """None when there is nothing to go on (fewer than two examples for leave-one-out)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (valid: {', '.join(MODES)})")
    if not positives:
        return None
    if mode == "leave_one_out" or not negatives:
        return measure(float(np.floor(min(positives) * 100) / 100), positives, negatives)
    scored = [measure(t, positives, negatives) for t in _candidates(positives, negatives)]
    if mode == "best_f1":
        # a plateau of equal F1: its middle, as far from the positives as from the negatives
        best = max(s.f1 for s in scored)
        plateau = [s.threshold for s in scored if s.f1 == best]
        return measure(round((min(plateau) + max(plateau)) / 2, 3), positives, negatives)
    reaching = [s for s in scored if s.precision >= precision and s.recall > 0]
    if not reaching:
        return max(scored, key=lambda s: (s.precision, s.recall))
    return min(reaching, key=lambda s: s.threshold)


FALSE_POSITIVE_TARGET = 0.05  # the Routes panel's default: at most 5 % of look-alikes let through
MIN_EXAMPLES = 8  # fewer, and a leave-one-out recall says little about the requests to come


@dataclass(frozen=True)
class TargetSuggestion:
    """The lowest threshold whose estimated false-positive rate stays within `target`."""
    threshold: float
    target: float
    negatives_rate: float | None  # share of the negatives that pass it (None: no negatives)
    background_rate: float  # share of the background corpus that passes it
    recall: float  # share of the examples (left out one at a time) that pass it
    too_few: tuple[str, ...]  # "examples", "negatives": what is too few to promise the target
    negatives_needed: int = 0  # how many negatives can show a rate as low as the target


def lowest_within(scores: list[float] | np.ndarray, target: float) -> float:
    """The lowest threshold that at most `target` of `scores` reach (0 with no scores)."""
    ordered = np.sort(np.asarray(scores, dtype=float))[::-1]
    allowed = int(np.floor(target * len(ordered) + 1e-9))
    if allowed >= len(ordered):
        return 0.0
    return float(np.ceil(ordered[allowed] * 1000 + 1e-6) / 1000)  # just above the first one kept out


def suggest_for_target(positives: list[float], negatives: list[float], background: list[float] | np.ndarray,
                       target: float = FALSE_POSITIVE_TARGET) -> TargetSuggestion | None:
    """Estimated from both kinds of "none": the rule's negatives (few, and close to the route) and
    the background corpus (many, about everything); the threshold keeps each within the target.
    The estimate can be promised only when there are enough negatives to see a rate that low
    (at least 1 / target of them) and enough examples to trust the recall."""
    if not positives:
        return None
    threshold = max(lowest_within(negatives, target), lowest_within(background, target))
    needed = int(np.ceil(1 / target - 1e-9))
    too_few = tuple(name for name, short in (("examples", len(positives) < MIN_EXAMPLES),
                                              ("negatives", len(negatives) < needed)) if short)
    rate = (lambda xs: float(np.mean(np.asarray(xs) >= threshold)) if len(xs) else None)
    return TargetSuggestion(round(threshold, 3), target, rate(negatives), rate(background) or 0.0,
                            rate(positives), too_few, needed)
