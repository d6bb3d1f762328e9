"""The background "none" corpus shipped with the app, and what it calibrates.

1,600 glosses and usage examples from WordNet 3.0 (Princeton University, WordNet 3.0 licence;
semantic_background.txt keeps its notice; bench/data/make_background.py draws them evenly over
WordNet's 41 topic groups), with their all-MiniLM-L6-v2 vectors (semantic_background.npy, int8).
Text about everything, written by lexicographers, not for any route: a route's examples have
to stand out from it.

- `calibrated_threshold`: a rule without a threshold gets the score that only BACKGROUND_PASS of
  the corpus reaches against its own examples, so the threshold follows how alike the examples
  are (eight short ones leave on-topic requests at a cosine of 0.3-0.4; a fixed 0.5 turned most
  of them away).
- the learned head takes the corpus as part of its "none" class (semantic.LearnedHead).
- `false_positive_rate`: what share of the corpus a threshold lets through, for the Routes
  panel's suggestions.
Pure numpy; the vectors are read once per process, on first use.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEXTS = HERE / "semantic_background.txt"
VECTORS = HERE / "semantic_background.npy"
# The corpus is general English, easier to keep out than real traffic on a route's own broad
# subject: on the Debian route sets (bench/data/user_sets, the dev family) a threshold that
# BACKGROUND_PASS of the corpus passes let several times that share of their "none" requests
# through with eight examples a route (bench/results/semantic_user_sets/latest.json).
BACKGROUND_PASS = 0.01
# The corpus's weight in the head, as a share of one route's examples: enough to mark what is
# far from every route as "none", not so much that it outvotes a route's eight examples.
BACKGROUND_WEIGHT = 0.3


@lru_cache(maxsize=1)
def background_texts() -> tuple[str, ...]:
    lines = TEXTS.read_text(encoding="utf-8").splitlines()
    return tuple(line for line in lines if line and not line.startswith("#"))


@lru_cache(maxsize=1)
def background_vectors() -> np.ndarray:
    """(1600, 384) unit vectors, float32."""
    vectors = np.load(VECTORS).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def top_k_scores(vectors: np.ndarray, examples: np.ndarray, top_k: int) -> np.ndarray:
    """Each vector's score against the examples, as semantic.top_k_mean scores it."""
    sims = vectors @ examples.T
    k = min(max(top_k, 1), sims.shape[1])
    return np.sort(sims, axis=1)[:, -k:].mean(axis=1)


def background_scores(examples: np.ndarray, top_k: int = 1) -> np.ndarray:
    return top_k_scores(background_vectors(), examples, top_k)


def calibrated_threshold(examples: np.ndarray, top_k: int = 1, passing: float = BACKGROUND_PASS) -> float:
    """The score only `passing` of the background reaches against these example vectors."""
    return round(float(np.quantile(background_scores(examples, top_k), 1.0 - passing)), 4)


def false_positive_rate(threshold: float, scores: np.ndarray) -> float:
    return float((scores >= threshold).mean()) if len(scores) else 0.0
