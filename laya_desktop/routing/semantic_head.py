"""The learned head of `scoring: learned` semantic rules: a multinomial logistic regression over
the MiniLM vectors, one class per semantic rule (its examples) and a "none" class (every rule's
negatives), fitted when a config is applied. Pure numpy, no model, no Qt.

Why a head: cosine to the nearest examples ranks a prompt by the example it happens to resemble
most; a linear classifier weighs every direction the examples of one route share against the
others' and the negatives'. bench/semantic_head.py compares the variants on every prompt set,
bench/semantic_route.py the product's scorings side by side. L2: 10-fold cross-validation on the
bench's examples (log loss) chose 1e-5, the smallest tried; 1e-4 is used, ten times stronger,
since a user's config has far fewer examples and negatives than the bench's and a weak penalty
makes the head sure of itself far from all of them (with the cosine threshold also required,
at min_probability 0.5 1e-4 scored 0-2 points of top-1 below 1e-5 on the bench's prompt sets, with no
more false positives).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

L2 = 1e-4  # on the mean log loss; the bias is not shrunk
ITERATIONS = 400  # Nesterov steps: on the bench's examples the objective is within 1e-4 of its optimum


@dataclass(frozen=True)
class Head:
    weights: np.ndarray  # (classes, dims)
    bias: np.ndarray  # (classes,)

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """(rows, classes) class probabilities of each row of `vectors` (unit vectors)."""
        return softmax(np.atleast_2d(vectors) @ self.weights.T + self.bias)


@dataclass(frozen=True)
class Choice:
    chosen: int | None  # the class the head picks, None for "none"
    probabilities: np.ndarray  # (classes,): each class's best probability over the text's vectors


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def fit_head(x: np.ndarray, y: np.ndarray, classes: int, l2: float = L2,
             iterations: int = ITERATIONS, sample_weight: np.ndarray | None = None) -> Head:
    """L2-regularised multinomial logistic regression by Nesterov-accelerated gradient descent
    from zero (deterministic). The loss is smooth and strongly convex; the step is 1 / its
    curvature bound, from the data's largest eigenvalue. y: class index per row of x."""
    # float32: under a busy CPU, multi-threaded float64 products of this size ran 10x slower
    n, d = x.shape
    w = (np.full(n, 1.0 / n) if sample_weight is None else sample_weight / sample_weight.sum()).astype(np.float32)
    onehot = np.eye(classes, dtype=np.float32)[y]
    xb = np.hstack([x.astype(np.float32), np.ones((n, 1), np.float32)])
    step = np.float32(1.0 / (0.5 * float(np.linalg.eigvalsh((xb * w[:, None]).T @ xb).max()) + l2))
    shrink = np.full((d + 1, 1), l2, np.float32)
    shrink[-1] = 0.0
    theta = np.zeros((d + 1, classes), np.float32)
    ahead, t = theta, 1.0
    for _ in range(iterations):
        grad = xb.T @ ((softmax(xb @ ahead) - onehot) * w[:, None]) + shrink * ahead
        new = ahead - step * grad
        t_next = (1 + (1 + 4 * t * t) ** 0.5) / 2
        ahead = new + (t - 1) / t_next * (new - theta)
        theta, t = new, t_next
    return Head(theta[:-1].T.copy(), theta[-1].copy())


def choose(probabilities: np.ndarray, none: int | None) -> Choice:
    """probabilities: (vectors, classes) for one text (its whole text, its lead-in). The route
    class most probable on any of the text's vectors, when it also beats "none" on that vector;
    else None. A text scores as the better of its vectors, as it does by cosine."""
    routes = probabilities.copy()
    if none is not None:
        routes[:, none] = -1.0
    v, c = divmod(int(routes.argmax()), routes.shape[1])
    best = probabilities.max(axis=0)
    if none is not None and probabilities[v, none] >= probabilities[v, c]:
        return Choice(None, best)
    return Choice(c, best)


def stratified_folds(y: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """A fold number per row, each class spread evenly over the folds."""
    rng = np.random.default_rng(seed)
    out = np.empty(len(y), int)
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        out[rows] = np.arange(len(rows)) % k
    return out


def out_of_fold(x: np.ndarray, y: np.ndarray, classes: int, k: int = 10, l2: float = L2,
                sample_weight: np.ndarray | None = None) -> np.ndarray:
    """(rows, classes): each row's probabilities from a head fitted without its fold, what a
    threshold on the probability is chosen from (k-fold cross-validation on the examples)."""
    fold = stratified_folds(y, k)
    probs = np.zeros((len(y), classes))
    for f in range(k):
        train = fold != f
        if not train.any() or train.all():
            continue
        weights = None if sample_weight is None else sample_weight[train]
        probs[~train] = fit_head(x[train], y[train], classes, l2, sample_weight=weights).probabilities(x[~train])
    return probs


def fit_min_probability(probabilities: np.ndarray, y: np.ndarray, none: int | None) -> float:
    """The `min_probability` with the best accuracy on out-of-fold probabilities (a "none" row is
    right when no route takes it); the middle of a plateau of equal accuracy."""
    picked = [choose(row[None, :], none) for row in probabilities]
    grid = np.round(np.arange(0.05, 0.951, 0.01), 2)
    right = []
    for t in grid:
        got = [c.chosen if c.chosen is not None and c.probabilities[c.chosen] >= t else none for c in picked]
        right.append(sum(g == want for g, want in zip(got, y)))
    plateau = grid[np.flatnonzero(np.array(right) == max(right))]
    return float(plateau[len(plateau) // 2])
