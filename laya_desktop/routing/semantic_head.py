"""The learned head of `scoring: learned` semantic rules: multinomial logistic regressions over
the MiniLM vectors and over the texts' lexical features (lexical.py), their logits added, one
class per semantic rule (its examples) and a "none" class (every rule's negatives), fitted when
a config is applied. Pure numpy, no model, no Qt.

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
class Heads:
    """Heads over views of the same rows (the MiniLM vectors, the lexical features), each fitted
    alone, their logits added: the product of their probabilities, normalised. Each view is a
    whole model of its own, so neither's scale or width decides how much the other counts."""
    parts: tuple[Head, ...]

    def probabilities(self, views: tuple[np.ndarray, ...]) -> np.ndarray:
        """(rows, classes); views: one (rows, dims) matrix per part, the same rows in each."""
        logits = sum(np.atleast_2d(v) @ h.weights.T + h.bias for h, v in zip(self.parts, views))
        return softmax(logits)


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
    curvature bound, from the data's largest eigenvalue. y: class index per row of x.

    The weights stay a combination of the rows (W = x.T @ A: each gradient is one), so with more
    features than rows (the lexical features: 8,192 against a few hundred examples) the same
    steps run on A and the rows' Gram matrix, n x n instead of d x d, and give the same head."""
    # float32: under a busy CPU, multi-threaded float64 products of this size ran many times slower
    n, d = x.shape
    w = (np.full(n, 1.0 / n) if sample_weight is None else sample_weight / sample_weight.sum()).astype(np.float32)
    onehot = np.eye(classes, dtype=np.float32)[y]
    x = x.astype(np.float32)
    if d > n:
        return _fit_dual(x, onehot, w, l2, iterations)
    return _fit_primal(x, onehot, w, l2, iterations)


def _fit_primal(x: np.ndarray, onehot: np.ndarray, w: np.ndarray, l2: float, iterations: int) -> Head:
    n, d = x.shape
    classes = onehot.shape[1]
    xb = np.hstack([x, np.ones((n, 1), np.float32)])
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


def fit_heads(views: tuple[np.ndarray, ...], y: np.ndarray, classes: int, l2: float = L2,
              sample_weight: np.ndarray | None = None) -> Heads:
    """A head per view, each fitted alone: on the bench's seen prompt sets the sum of the
    separately fitted heads beat one head over the concatenated views by 0.3-3.3 points of top-1."""
    return Heads(tuple(fit_head(v, y, classes, l2, sample_weight=sample_weight) for v in views))


def _fit_dual(x: np.ndarray, onehot: np.ndarray, w: np.ndarray, l2: float, iterations: int) -> Head:
    """_fit_primal's steps with the weights as x.T @ a: the gradient x.T @ r + l2 * W is
    x.T @ (r + l2 * a), the logits x @ W = gram @ a. The bias is the last row of `theta`, as in
    the primal, so the curvature bound is that of [x, 1]: gram + 1."""
    n, classes = onehot.shape
    gram = x @ x.T
    root = np.sqrt(w)[:, None]
    step = np.float32(1.0 / (0.5 * float(np.linalg.eigvalsh(root * (gram + 1) * root.T).max()) + l2))
    a, bias = np.zeros((n, classes), np.float32), np.zeros(classes, np.float32)
    ahead_a, ahead_bias, t = a, bias, 1.0
    for _ in range(iterations):
        residual = (softmax(gram @ ahead_a + ahead_bias) - onehot) * w[:, None]
        new_a = ahead_a - step * (residual + l2 * ahead_a)
        new_bias = ahead_bias - step * residual.sum(axis=0)
        t_next = (1 + (1 + 4 * t * t) ** 0.5) / 2
        momentum = (t - 1) / t_next
        ahead_a = new_a + momentum * (new_a - a)
        ahead_bias = new_bias + momentum * (new_bias - bias)
        a, bias, t = new_a, new_bias, t_next
    return Head((x.T @ a).T.copy(), bias.copy())


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


def out_of_fold(views: np.ndarray | tuple[np.ndarray, ...], y: np.ndarray, classes: int, k: int = 10,
                l2: float = L2, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """(rows, classes): each row's probabilities from heads fitted without its fold, what a
    threshold on the probability is chosen from (k-fold cross-validation on the examples).
    views: one matrix, or one per head (as fit_heads)."""
    views = (views,) if isinstance(views, np.ndarray) else tuple(views)
    fold = stratified_folds(y, k)
    probs = np.zeros((len(y), classes))
    for f in range(k):
        train = fold != f
        if not train.any() or train.all():
            continue
        weights = None if sample_weight is None else sample_weight[train]
        heads = fit_heads(tuple(v[train] for v in views), y[train], classes, l2, sample_weight=weights)
        probs[~train] = heads.probabilities(tuple(v[~train] for v in views))
    return probs


def fit_min_probability(probabilities: np.ndarray, y: np.ndarray, none: int | None,
                        max_false_positive: float | None = None) -> float:
    """The `min_probability` with the best accuracy on out-of-fold probabilities (a "none" row is
    right when no route takes it); the middle of a plateau of equal accuracy. With
    `max_false_positive`: only among those that let at most that share of the "none" rows
    through (the lowest that does when none does): accuracy never buys false positives."""
    picked = [choose(row[None, :], none) for row in probabilities]
    grid = np.round(np.arange(0.05, 0.951, 0.01), 2)
    right, passed = [], []
    is_none = np.asarray(y) == none
    for t in grid:
        got = np.array([c.chosen if c.chosen is not None and c.probabilities[c.chosen] >= t else none
                        for c in picked])
        right.append(int((got == y).sum()))
        passed.append(float((got[is_none] != none).mean()) if is_none.any() else 0.0)
    right, passed = np.array(right), np.array(passed)
    if max_false_positive is not None:
        within = passed <= max_false_positive + 1e-9
        if not within.any():
            return float(grid[int(np.argmin(passed))])
        right = np.where(within, right, -1)
    plateau = grid[np.flatnonzero(right == right.max())]
    return float(plateau[len(plateau) // 2])
