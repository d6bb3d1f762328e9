"""The `semantic` match condition: is the user text close enough to a rule's example prompts?

Score = the cosine similarity of the text to its nearest positive example (with `top_k` k > 1:
the mean over its k nearest, which a single look-alike example moves less). The condition holds
when the score reaches the rule's threshold (without one: the score only 1 % of the background
corpus reaches against the rule's examples, semantic_background.py) and, by the rule's `scoring`:
- learned (the default): a classifier fitted on every semantic rule's examples, their negatives
  its "none" class (semantic_head.py), picks this rule with at least `min_probability`; it reads
  the text's embedding and its words (lexical.py);
- nearest: the negatives' score (alike) stays `margin` or more below it (negatives carve out
  prompts that look like the route but are not), and no other semantic rule has an example
  nearer still.
Either way the best-matching route wins, whatever the rule order.
Example embeddings and the classifier are computed once per config apply; a request's text is
embedded at most once, only when the router reaches the first semantic rule whose other
conditions hold, and kept in a bounded LRU keyed by a hash of the text, so a client repeating a
prompt (retries, agents re-sending a chat) pays once.

The encoder (all-MiniLM-L6-v2 under onnxruntime from an int8 ONNX graph; under llama.cpp from an
F16 GGUF or under numpy with LAYA_SEMANTIC_ENCODER=llama or numpy) is loaded lazily and shared by
every config applied in the process: a config without semantic rules never loads the model code,
reads the weights or starts the tokenizer, nor imports numpy (a tenth of a second of the
engine's start-up).
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from laya_desktop.config.schema import SemanticMatch
from laya_desktop.routing.request import USER_TEXT_SEPARATOR

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("laya.semantic")

CACHE_SIZE = 4096  # embedded texts kept: 4096 x 384 floats = 6 MiB


class Encoder(Protocol):
    encoded: int
    runtime: str

    def encode(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True)
class SemanticScore:
    score: float  # cosine to the nearest positive example
    nearest: str  # that example
    negative_score: float | None  # cosine to the nearest negative example, if there are any
    nearest_negative: str | None
    threshold: float
    rival_score: float | None = None  # the best score of another semantic rule, when known
    margin: float = 0.0  # what the score must beat the negatives' score by
    scoring: str = "nearest"
    # scoring learned: the head's probability for this rule, the one it needs, and the rule the
    # head picks (None: "none"; the probability is unknown until the rules are scored together)
    probability: float | None = None
    min_probability: float = 0.5
    chosen: str | None = None
    rule: str | None = None

    @property
    def beaten(self) -> bool:
        return self.negative_score is not None and self.score - self.negative_score < self.margin

    @property
    def learned(self) -> bool:
        return self.scoring == "learned" and self.probability is not None

    @property
    def holds(self) -> bool:
        if self.score < self.threshold:
            return False
        if self.learned:
            return self.chosen == self.rule and self.probability >= self.min_probability
        outscored = self.rival_score is not None and self.rival_score > self.score
        return not self.beaten and not outscored

    def as_json(self) -> dict:
        out = {"score": round(self.score, 4), "nearest_example": self.nearest,
               "threshold": self.threshold, "holds": self.holds, "scoring": self.scoring,
               "negative_score": None if self.negative_score is None else round(self.negative_score, 4),
               "nearest_negative": self.nearest_negative, "margin": self.margin,
               "rival_score": None if self.rival_score is None else round(self.rival_score, 4)}
        if self.learned:
            out.update(probability=round(self.probability, 4), min_probability=self.min_probability,
                       chosen=self.chosen)
        return out

    def reason(self) -> str:
        text = f"semantic score {self.score:.3f} (nearest example {self.nearest!r})"
        if self.score < self.threshold:
            return f"{text} < threshold {self.threshold:.2f}"
        if self.learned:
            odds = f"probability {self.probability:.2f}"
            if self.holds:
                return f"{text} >= threshold {self.threshold:.2f}, {odds} >= {self.min_probability:.2f}"
            if self.chosen != self.rule:
                picked = "no route" if self.chosen is None else f"rule {self.chosen!r}"
                return f"{text}, but the classifier picks {picked} ({odds} for this one)"
            return f"{text}, but {odds} < {self.min_probability:.2f}"
        if self.holds:
            return f"{text} >= threshold {self.threshold:.2f}"
        if self.beaten:
            by = f" than {self.margin:.2f} below it" if self.margin else ""
            return (f"{text}, but negative {self.nearest_negative!r} is nearer{by} "
                    f"({self.negative_score:.3f})")
        return f"{text}, but another semantic rule's example is nearer ({self.rival_score:.3f})"


class TextEmbeddings:
    """text -> unit vector through a bounded LRU keyed by the text's hash."""

    def __init__(self, encoder: Encoder, size: int = CACHE_SIZE):
        self.encoder = encoder
        self._size = size
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def has(self, text: str) -> bool:
        with self._lock:
            return self._key(text) in self._cache

    def __call__(self, text: str) -> np.ndarray:
        key = self._key(text)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        vector = self.encoder.encode(text)
        with self._lock:
            self._cache[key] = vector
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector

    def many(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self(t) for t in texts])


class SemanticRule:
    """One rule's examples, embedded once."""

    def __init__(self, match: SemanticMatch, embed: TextEmbeddings):
        self.match = match
        self.examples = list(match.examples)
        self.negatives = list(match.negatives)
        self._positive = embed.many(self.examples)
        self._negative = embed.many(self.negatives)
        self.threshold = match.threshold
        if self.threshold is None:
            from laya_desktop.routing.semantic_background import calibrated_threshold
            self.threshold = calibrated_threshold(self._positive, match.top_k)

    @property
    def auto(self) -> bool:
        """The threshold is calibrated on the background corpus, not set by the user."""
        return self.match.threshold is None

    def nearest_score(self, vectors: np.ndarray) -> float:
        """The best score over the text's vectors (the whole text, its lead-in)."""
        return self._best(self._positive, vectors)[0]

    def score(self, vectors: np.ndarray) -> SemanticScore:
        score, i = self._best(self._positive, vectors)
        neg_score = nearest_negative = None
        if len(self.negatives):
            neg_score, j = self._best(self._negative, vectors)
            nearest_negative = self.negatives[j]
        return SemanticScore(score, self.examples[i], neg_score, nearest_negative,
                             self.threshold, margin=self.match.margin,
                             scoring=self.match.scoring, min_probability=self.match.min_probability)

    def _best(self, examples: np.ndarray, vectors: np.ndarray) -> tuple[float, int]:
        """(score, index of the nearest example) for the text vector that scores best: one
        product for all of them."""
        k = self.match.top_k
        return max((top_k_mean(sims, k), int(sims.argmax())) for sims in _rows(vectors) @ examples.T)


def _rows(vectors: np.ndarray) -> np.ndarray:
    return vectors if vectors.ndim == 2 else vectors[None, :]


def top_k_mean(sims: np.ndarray, k: int) -> float:
    """The mean of the k largest similarities (all of them when there are fewer)."""
    if k <= 1 or len(sims) <= 1:
        return float(sims.max())
    if k >= len(sims):
        return float(sims.mean())
    import numpy as np
    return float(np.partition(sims, len(sims) - k)[-k:].mean())


def semantic_text(user_text_lower: str) -> str:
    """What is embedded: the last user message that has text. In a chat the latest turn says what
    is asked now; earlier small talk or another topic only blurs the embedding (on the labelled
    set, multi-turn chats scored better by their last turn than embedded whole), and a long chat
    costs no more than its last message."""
    for part in reversed(user_text_lower.split(USER_TEXT_SEPARATOR)):
        if part.strip():
            return part
    return ""


LEAD_IN_END = re.compile(r'[:"\n\u201c]')


def lead_in(text: str) -> str | None:
    """The request before the text it is about ("summarize this email: <email>", "tl;dr: <thread>"):
    the words before the first colon, quote or line break, when at least one word comes before it
    and three after. Embedded whole, such a prompt scores as its pasted text's topic; the lead-in
    says the task (about a quarter of bench/data/semantic_dev.jsonl's prompts have one, and
    scoring it too took top-1 there higher, false positives unchanged). A one-word lead-in
    ("summarize:", "tl;dr:") counts too: on the bench's four prompt sets it cost no prompt and
    won held-out's "Summarize: '<text>'" ones. Not when what follows asks a question of its
    own (asks_itself): then the prompt is that question under a label."""
    end = LEAD_IN_END.search(text)
    if end is None:
        return None
    head, rest = text[:end.start()].strip(), text[end.end():]
    if not head or len(rest.split()) < 3 or (end.group() != '"' and asks_itself(rest)):
        return None
    return head


QUOTES = "\"'\u201c\u2018`"
ASKING = re.compile(r"(how|what|why|when|where|which|who|whose|is|are|can|could|should|would|"
                    r"will|do|does|did|please|help)\b")


def asks_itself(rest: str) -> bool:
    """The text after a colon or a line break is the request itself, not a text pasted for it:
    it asks ("...?", "how do i...") and is not quoted. Then the words before it label the
    question ("python question: how do i get a year's calendar as a string?") and, scored
    alone, "python question" took any rule with an example mentioning python, whatever the
    question asked."""
    rest = rest.strip()
    if not rest or rest[0] in QUOTES:
        return False
    return rest.endswith("?") or ASKING.match(rest.lower()) is not None


@dataclass
class EmbeddedText:
    """What a text is scored by: the vectors of the text and of its lead-in when it has one (a
    rule scores the better of the two, and so do its negatives), those texts for the learned
    head's lexical features, and the head's choice once made (one per decision, however many
    semantic rules are judged)."""
    vectors: np.ndarray  # (texts, 384)
    texts: list[str]
    choice: tuple | None = None  # (the LearnedHead, its Choice)


def text_vectors(embeddings: TextEmbeddings, text: str) -> EmbeddedText:
    head = lead_in(text)
    texts = [text] if head is None else [text, head]
    return EmbeddedText(embeddings.many(texts), texts)


class NeedsEmbedding(Exception):
    def __init__(self, text: str):
        super().__init__("the decision needs this text embedded")
        self.text = text


class SemanticRules:
    """The semantic conditions of a router's enabled rules, by rule index (bit)."""

    def __init__(self, rules, embeddings: TextEmbeddings | None = None):
        self.mask = 0
        self._dry_run = threading.local()
        self._by_index: dict[int, SemanticRule] = {}
        self._by_name: dict[str, SemanticRule] = {}
        self._names: dict[int, str] = {}
        self._embeddings = embeddings
        for index, rule in enumerate(rules):
            if rule.match.semantic is None:
                continue
            self.mask |= 1 << index
            scored = SemanticRule(rule.match.semantic, self.embeddings)
            self._by_index[index] = self._by_name[rule.name] = scored
            self._names[index] = rule.name
        self.head: LearnedHead | None = None
        if any(r.match.scoring == "learned" for r in self._by_index.values()):
            self.head = LearnedHead(self._by_index, self._names, self.embeddings)

    @property
    def embeddings(self) -> TextEmbeddings:
        if self._embeddings is None:
            self._embeddings = shared_embeddings()
        return self._embeddings

    @property
    def embedded(self) -> int:
        """Texts run through the model in this process so far (cache misses)."""
        return self.embeddings.encoder.encoded if self._embeddings is not None else 0

    def embed(self, user_text_lower: str) -> EmbeddedText:
        text = semantic_text(user_text_lower)
        if getattr(self._dry_run, "on", False):
            head = lead_in(text)
            if not self.embeddings.has(text) or (head is not None and not self.embeddings.has(head)):
                raise NeedsEmbedding(text)
        return text_vectors(self.embeddings, text)

    def text_to_embed(self, decide) -> str | None:
        """Runs `decide()` without embedding anything: the text the decision would have to embed
        first (not cached yet), or None. Lets the engine embed it off its event loop."""
        if not self.mask:
            return None
        self._dry_run.on = True
        try:
            decide()
        except NeedsEmbedding as needed:
            return needed.text
        finally:
            self._dry_run.on = False
        return None

    def holds(self, index: int, text: EmbeddedText) -> bool:
        """The rule's own test and, by its scoring, the head picking it or no other semantic
        rule's examples nearer: the examples of one route are the negatives of the others, so
        rule order does not decide between them."""
        return self._scored(index, text).holds

    def _scored(self, index: int, text: EmbeddedText) -> SemanticScore:
        rule = self._by_index[index]
        own = rule.score(text.vectors)
        if rule.match.scoring == "learned" and self.head is not None:
            return self.head.judge(own, index, text)
        return dataclasses.replace(own, rival_score=self.best_other(index, text.vectors))

    def best_other(self, index: int, vector: np.ndarray) -> float:
        return max((r.nearest_score(vector) for i, r in self._by_index.items() if i != index),
                   default=-1.0)

    def score(self, rule_name: str, user_text_lower: str) -> SemanticScore | None:
        """For explanations: the named rule's score, or None when it has no semantic condition."""
        scored = self._by_name.get(rule_name)
        if scored is None:
            return None
        text = self.embed(user_text_lower)
        index = next(i for i, r in self._by_index.items() if r is scored)
        return self._scored(index, text)


class _FittedHeads:
    """The last few fitted heads by what they were fitted on: the Routes panel scores every typed
    prompt with a head over the same rules, and a config applied again has the same rules; with
    the background corpus a fit costs seconds."""

    def __init__(self, size: int = 8):
        self._size = size
        self._items: OrderedDict[tuple, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple):
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: tuple, value: tuple) -> None:
        with self._lock:
            self._items[key] = value
            if len(self._items) > self._size:
                self._items.popitem(last=False)


_HEADS = _FittedHeads()


def _head_key(rules: dict[int, SemanticRule], order: list[int]) -> tuple:
    return tuple((tuple(rules[i].examples), tuple(rules[i].negatives), rules[i].auto, rules[i].match.scoring)
                 for i in order)


def _background(rules: dict[int, SemanticRule]) -> np.ndarray:
    """The background corpus's vectors for the head's "none" class, when a learned rule leaves
    its threshold to it (rules with thresholds of their own keep the head they were tuned with)."""
    import numpy as np
    if not any(r.auto and r.match.scoring == "learned" for r in rules.values()):
        return np.zeros((0, 384), np.float32)
    from laya_desktop.routing.semantic_background import background_vectors
    return background_vectors()


class LearnedHead:
    """The classifier over a router's semantic rules: a class per rule (its examples), and
    "none" for every rule's negatives that are no rule's example. Two linear models over the
    same rows, their logits added: one over the MiniLM vectors, one over the texts' lexical
    features (lexical.py). Fitted once per config apply (`head_fit_s` in
    bench/results/semantic/latest.json); a text costs two small products then, and its features."""

    def __init__(self, rules: dict[int, SemanticRule], names: dict[int, str], embed: TextEmbeddings):
        import numpy as np
        self._indices = list(rules)
        self._class_of = {index: c for c, index in enumerate(self._indices)}
        self._names = names
        examples = {t for r in rules.values() for t in r.examples}
        negatives = list(dict.fromkeys(t for r in rules.values() for t in r.negatives if t not in examples))
        background = _background(rules)
        self.none = len(self._indices) if negatives or len(background) else None
        blocks = [rules[i]._positive for i in self._indices] + ([embed.many(negatives)] if negatives else [])
        self._texts = [t.lower() for i in self._indices for t in rules[i].examples] + [t.lower() for t in negatives]
        self.classes = len(self._indices) + (self.none is not None)
        self.examples, self.negatives, self.background = len(examples), len(negatives), len(background)
        self._vectors, self.y = np.vstack(blocks), np.concatenate([np.full(len(b), c) for c, b in enumerate(blocks)])
        self.lexical = self.heads = None
        key = (id(embed), *_head_key(rules, self._indices))  # another encoder: other vectors
        hit = _HEADS.get(key)
        if hit is not None:
            self.lexical, self.heads = hit
        else:
            self.lexical, self.heads = self._fit(background)
            _HEADS.put(key, (self.lexical, self.heads))

    def _fit(self, background: np.ndarray):
        """Both views fitted on the examples and negatives; the background corpus joins their
        "none" class with BACKGROUND_WEIGHT of a route's examples in all (a longer fit for its
        lexical rows; kept out of the cross-validation rows, `views`)."""
        import numpy as np
        from laya_desktop.routing.lexical import LexicalFeatures
        from laya_desktop.routing.semantic_head import fit_heads

        if not len(background):
            lexical, rows = LexicalFeatures.fitted(self._texts)
            return lexical, fit_heads((self._vectors, rows), self.y, self.classes)
        from laya_desktop.routing.semantic_background import BACKGROUND_WEIGHT, background_texts
        texts = self._texts + [t.lower() for t in background_texts()]
        lexical, rows = LexicalFeatures.fitted(texts)
        weights = np.ones(len(texts), np.float32)
        weights[len(self.y):] = BACKGROUND_WEIGHT * (self.y < self.none).sum() / len(self._indices) / len(background)
        y = np.concatenate([self.y, np.full(len(background), self.none)])
        return lexical, fit_heads((np.vstack([self._vectors, background]), rows), y, self.classes,
                                  sample_weight=weights)

    @property
    def views(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows of each view, for cross-validation. The lexical rows (32 KiB a text) are
        made again on demand rather than kept by every router the engine builds."""
        return self._vectors, self.lexical.rows(self._texts)

    def choice(self, text: EmbeddedText):
        from laya_desktop.routing.semantic_head import choose, softmax

        if text.choice is None or text.choice[0] is not self:
            meaning, words = self.heads.parts
            logits = _rows(text.vectors) @ meaning.weights.T + meaning.bias
            logits += self.lexical.logits(text.texts, words.weights, words.bias)
            text.choice = (self, choose(softmax(logits), self.none))
        return text.choice[1]

    def judge(self, own: SemanticScore, index: int, text: EmbeddedText) -> SemanticScore:
        choice = self.choice(text)
        chosen = None if choice.chosen is None else self._names[self._indices[choice.chosen]]
        return dataclasses.replace(own, probability=float(choice.probabilities[self._class_of[index]]),
                                   chosen=chosen, rule=self._names[index])


_shared: list[TextEmbeddings] = []
_shared_lock = threading.Lock()
ENCODERS = ("onnx", "llama", "numpy")
ENCODER_ENV = "LAYA_SEMANTIC_ENCODER"  # "llama" or "numpy" to run those instead of onnxruntime


def make_encoder(name: str | None = None) -> Encoder:
    """all-MiniLM-L6-v2 under onnxruntime (int8 graph: the fastest at routing's text lengths),
    llama.cpp (F16 GGUF) or numpy; each the next one's fallback when it cannot load."""
    from laya_desktop.routing.minilm import MiniLM
    from laya_desktop.routing.minilm_files import model_files

    name = name or os.environ.get(ENCODER_ENV) or "onnx"
    if name not in ENCODERS:
        raise ValueError(f"{ENCODER_ENV}={name!r}: valid are {', '.join(ENCODERS)}")
    files = model_files()
    if name == "onnx":
        try:
            from laya_desktop.routing.minilm_onnx import MiniLMOnnx
            return MiniLMOnnx(files.onnx, files.tokenizer)
        except (ImportError, OSError, RuntimeError) as exc:
            log.warning("semantic routing: onnxruntime encoder unavailable (%s); using llama.cpp", exc)
            name = "llama"
    if name == "llama":
        from laya_desktop.routing.minilm_llama import MiniLMLlama
        try:
            return MiniLMLlama(files.gguf, files.tokenizer)
        except (ImportError, OSError, RuntimeError) as exc:
            log.warning("semantic routing: llama.cpp encoder unavailable (%s); using numpy", exc)
    return MiniLM(files)


def shared_embeddings() -> TextEmbeddings:
    """The process's one encoder and text cache, made on first use: configs applied one after the
    other reuse the model and the embeddings of examples they have in common."""
    with _shared_lock:
        if not _shared:
            _shared.append(TextEmbeddings(make_encoder()))  # the model mapped, not read
        return _shared[0]
