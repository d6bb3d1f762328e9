"""The words and spellings of a text, as features for the semantic rules' learned head.

The learned head scores a prompt by two linear models whose logits it adds: one over the MiniLM
vector (what the text means), one over these features (the words it uses): TF-IDF weighted word
1-2-grams and character 3-5-grams, hashed into DIMS buckets. A small sentence encoder blurs
the words that name a route's domain ("jsonb", "tl;dr", "refund", "haiku") into the topic around
them, and misspells them into other words; character n-grams still match "sumarize" to
"summarize". On the bench's hand-written prompt sets the sum took top-1 higher and routed
fewer "none" prompts than the sentence encoder's head alone (bench/results/semantic_blind6/
latest.json against semantic_blind6_minilm_head_alone/latest.json, from bench/semantic_route.py).

Hashing keeps the vocabulary out of the config: features are a few numpy operations over the
text's code points (the character n-grams) and one crc32 per word, a small part of a decision
(bench/results/semantic/latest.json).
crc32 and the rolling hash are the same in every process, so a decision does not depend on
PYTHONHASHSEED.
"""
from __future__ import annotations

import re
import zlib

import numpy as np

BITS = 13
DIMS = 1 << BITS  # buckets: 8,192 x 8 classes of float32 weights per config
CHAR_NGRAMS = (3, 4, 5)
MAX_CHARS = 2000  # a pasted text's first 2,000 characters say what it is about; the rest costs time
_TOKEN = re.compile(r"[^\W_]+|[^\w\s]|_")  # a run of letters and digits, or one other character
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the high bits of h * golden
_SHIFT = np.uint64(64 - BITS)
_BASE = np.uint64(1_000_003)


def normalised(text: str) -> str:
    """Lower case, its tokens one space apart, padded: words, and each punctuation mark or symbol
    a token of its own ("tl;dr" is "tl ; dr", "f(x)" is "f ( x )": code and math read by their
    symbols too)."""
    return f" {' '.join(_TOKEN.findall(text[:MAX_CHARS].lower()))} "


def _buckets(hashes: np.ndarray) -> np.ndarray:
    return ((hashes * _GOLDEN) >> _SHIFT).astype(np.intp)


def grams(text: str) -> np.ndarray:
    """The bucket of every feature occurrence in `text` (repeats count): its character
    n-grams (across token boundaries, spaces included) and token unigrams and bigrams."""
    s = normalised(text)
    # surrogatepass: a JSON body may carry a lone surrogate, which is still a code point here
    codes = np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    parts = []
    for n in CHAR_NGRAMS:
        if len(codes) < n:
            break
        h = np.full(len(codes) - n + 1, np.uint64(n))  # the length salts the hash
        for k in range(n):
            h = h * _BASE + codes[k:len(codes) - n + 1 + k]
        parts.append(_buckets(h))
    words = s.split()
    if words:
        unigrams = [zlib.crc32(w.encode("utf-8", "surrogatepass")) for w in words]
        bigrams = [zlib.crc32(f"{a} {b}".encode("utf-8", "surrogatepass"), 1) for a, b in zip(words, words[1:])]
        parts.append(_buckets(np.array(unigrams + bigrams, dtype=np.uint64) + np.uint64(7)))
    return np.concatenate(parts) if parts else np.zeros(0, np.intp)


def _counts(text: str) -> np.ndarray:
    return np.bincount(grams(text), minlength=DIMS).astype(np.float32)


class LexicalFeatures:
    """TF-IDF over the hashed n-grams, its document frequencies from the texts a head is fitted
    on: rows with sublinear term frequency (1 + log tf) times idf, unit length."""

    def __init__(self, idf: np.ndarray):
        self.idf = idf

    @classmethod
    def fitted(cls, texts: list[str]) -> tuple[LexicalFeatures, np.ndarray]:
        """The features whose idf these texts give, and the texts' rows (counted once)."""
        counts = np.stack([_counts(t) for t in texts]) if texts else np.zeros((0, DIMS), np.float32)
        df = (counts > 0).sum(axis=0)
        features = cls((np.log((1 + len(texts)) / (1 + df)) + 1).astype(np.float32))
        return features, features._weigh(counts)

    def _weigh(self, counts: np.ndarray) -> np.ndarray:
        tf = np.zeros_like(counts)
        seen = counts > 0
        tf[seen] = 1 + np.log(counts[seen])
        rows = tf * self.idf
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1)

    def rows(self, texts: list[str]) -> np.ndarray:
        return self._weigh(np.stack([_counts(t) for t in texts]))

    def logits(self, texts: list[str], weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """rows(texts) @ weights.T + bias over each text's own buckets only (a few hundred of
        8,192): half the time of the dense rows on the route decision."""
        out = np.tile(bias, (len(texts), 1))
        for i, text in enumerate(texts):
            buckets, counts = np.unique(grams(text), return_counts=True)
            values = (1 + np.log(counts)).astype(np.float32) * self.idf[buckets]
            norm = np.linalg.norm(values)
            if norm > 0:
                out[i] += (values / norm) @ weights[:, buckets].T
        return out
