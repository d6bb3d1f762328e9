"""Experiment: the learned head (laya_desktop/routing/semantic_head.py) against nearest-example
scoring, on the same examples, in variants, on every prompt set.

    .venv/bin/python bench/semantic_head.py [--cache /tmp/semantic_head_vectors.npz]

Examples: those of bench/semantic_route.py's configs (the routes file, alone and with the
generated set's train split); each route's examples are a class, the negatives class "none".
The regularisation and the probability threshold of each variant are fitted by stratified
10-fold cross-validation on those examples only: L2 by the out-of-fold log loss, the threshold
by the out-of-fold accuracy (or the best accuracy whose out-of-fold false-positive rate on the
negatives stays <= 5 %). No prompt set is used for any choice. Variants: the head alone, with
class-balanced weights, and with the rule's cosine threshold also required (what `scoring:
learned` does). The decision over a prompt's vectors (its whole text and its lead-in) is the
router's: the most probable route on either, when it beats "none" there. Embeddings come from
the product's encoder and are cached in --cache, so a second run costs seconds.
Prints a table, writes bench/results/semantic_head/.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from publish import begin, write_to  # noqa: E402
from semantic_route import VARIANTS, examples_for, fit, head_data  # noqa: E402

from laya_desktop.routing.request import extract  # noqa: E402
from laya_desktop.routing.semantic import lead_in, semantic_text, shared_embeddings, top_k_mean  # noqa: E402
from laya_desktop.routing.semantic_head import choose, fit_head, out_of_fold  # noqa: E402

HERE = Path(__file__).resolve().parent
CHAT = "/v1/chat/completions"
L2_GRID = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3)
TOP_K = 5


class CachedVectors:
    """text -> unit vector, from an .npz written by an earlier run, else the product's encoder."""

    def __init__(self, path: Path):
        self.path, self.added, self._encoder = path, 0, None
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path, allow_pickle=False)
            self.vectors = dict(zip(data["texts"].tolist(), data["vectors"]))

    def __call__(self, text: str) -> np.ndarray:
        if text not in self.vectors:
            self._encoder = self._encoder or shared_embeddings()
            self.vectors[text] = self._encoder(text)
            self.added += 1
        return self.vectors[text]

    def many(self, texts: list[str]) -> np.ndarray:
        return np.stack([self(t) for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def save(self) -> None:
        if self.added:
            texts = list(self.vectors)
            np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))


def prompt_vectors(row: dict, embed: CachedVectors) -> np.ndarray:
    """What the router scores: the last user message, lowered, and its lead-in when it has one."""
    text = semantic_text(extract(CHAT, {"messages": row["messages"]}, None).user_text_lower)
    head = lead_in(text)
    return embed.many([text] if head is None else [text, head])


def head_decisions(head, prompts: list[np.ndarray], none: int, threshold: float) -> np.ndarray:
    out = []
    for vectors in prompts:
        c = choose(head.probabilities(vectors), none)
        out.append(c.chosen if c.chosen is not None and c.probabilities[c.chosen] >= threshold else none)
    return np.array(out)


def cosine_scores(prompts: list[np.ndarray], positives: list[np.ndarray]) -> np.ndarray:
    """(prompts, routes): each route's top-k mean cosine, the better of the prompt's vectors."""
    return np.array([[max(top_k_mean(row, TOP_K) for row in v @ p.T) for p in positives] for v in prompts])


def nearest_decisions(prompts, positives, negatives, fitted: list[dict]) -> np.ndarray:
    """Today's rule: the best route's score reaches its threshold and beats the negatives' by its margin."""
    scores = cosine_scores(prompts, positives)
    negative = np.array([max(top_k_mean(row, TOP_K) for row in v @ negatives.T) for v in prompts])
    best = scores.argmax(axis=1)
    ok = [scores[i, b] >= fitted[b]["threshold"] and scores[i, b] - negative[i] >= fitted[b].get("margin", 0.0)
          for i, b in enumerate(best)]
    return np.where(ok, best, len(positives))


def accuracy_fpr(got: np.ndarray, truth: np.ndarray, none: int) -> tuple[float, float]:
    neg = truth == none
    return float((got == truth).mean()), float((got[neg] != none).mean())


def fit_threshold(oof: np.ndarray, y: np.ndarray, none: int, max_fpr: float | None) -> float:
    """The threshold with the best out-of-fold accuracy (within max_fpr on the negatives)."""
    grid = np.round(np.arange(0.05, 0.951, 0.01), 2)
    rows = [oof[i:i + 1] for i in range(len(y))]
    scored = []
    for t in grid:
        scored.append((t, *accuracy_fpr(head_decisions(_Fixed(), rows, none, t), y, none)))
    allowed = [s for s in scored if max_fpr is None or s[2] <= max_fpr] or scored
    best = max(s[1] for s in allowed)
    plateau = [s[0] for s in allowed if s[1] == best]
    return float(plateau[len(plateau) // 2])


class _Fixed:
    """A 'head' whose probabilities are given (out-of-fold rows)."""

    @staticmethod
    def probabilities(rows: np.ndarray) -> np.ndarray:
        return rows


def balanced(y: np.ndarray, classes: int) -> np.ndarray:
    return (len(y) / (classes * np.bincount(y, minlength=classes)))[y]


def log_loss(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, None)).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/semantic_head_vectors.npz"))
    parser.add_argument("--out", type=Path, default=HERE / "results" / "semantic_head.json")
    args = parser.parse_args()
    begun = begin()
    rows = [json.loads(line) for line in (HERE / "data" / "semantic_prompts.jsonl").open(encoding="utf-8")]
    written = yaml.safe_load((HERE / "data" / "semantic_routes.yaml").read_text(encoding="utf-8"))
    sets = {"test": [r for r in rows if r["split"] == "test"]}
    for name, file in (("dev", "semantic_dev.jsonl"), ("held-out", "semantic_heldout.jsonl")):
        sets[name] = [json.loads(x) for x in (HERE / "data" / file).open(encoding="utf-8")]
    train_rows = [r for r in rows if r["split"] == "train"]
    routes = list(dict.fromkeys(r["route"] for r in rows if r["route"] != "none"))
    none = len(routes)
    embed = CachedVectors(args.cache)
    prompts = {n: [prompt_vectors(r, embed) for r in rs] for n, rs in sets.items()}
    truth = {n: np.array([(routes + ["none"]).index(r["route"]) for r in rs]) for n, rs in sets.items()}

    report: dict[str, dict] = {}
    configs = {"routes file": VARIANTS[1], "routes file + train split": VARIANTS[4]}
    for label, variant in configs.items():
        examples, negatives = examples_for(variant, train_rows, routes, written)
        fitted = [fit(variant, examples, negatives, TOP_K, 0.97, embed)[r] for r in routes]
        positives = [embed.many(examples[r]) for r in routes]
        (x, _lexical), y, classes, _ = head_data(examples, negatives, embed)  # the MiniLM view alone
        cosine = {n: cosine_scores(prompts[n], positives) for n in sets}
        table = {"nearest (today)": {n: accuracy_fpr(nearest_decisions(prompts[n], positives,
                                                                       embed.many(negatives), fitted),
                                                     truth[n], none) for n in sets}}
        for weighted in (False, True):
            weights = balanced(y, classes) if weighted else None
            oofs = {l2: out_of_fold(x, y, classes, l2=l2, sample_weight=weights) for l2 in L2_GRID}
            l2 = min(L2_GRID, key=lambda v: log_loss(oofs[v], y))
            head = fit_head(x, y, classes, l2, sample_weight=weights)
            for max_fpr, how in ((None, "best CV accuracy"), (0.05, "best CV accuracy at CV FPR <= 5 %")):
                t = fit_threshold(oofs[l2], y, none, max_fpr)
                name = f"head{', balanced' if weighted else ''}, l2 {l2:g}, p >= {t:.2f} ({how})"
                got = {n: head_decisions(head, prompts[n], none, t) for n in sets}
                table[name] = {n: accuracy_fpr(got[n], truth[n], none) for n in sets}
                gated = {n: np.array([g if g == none or cosine[n][i, g] >= fitted[g]["threshold"] else none
                                      for i, g in enumerate(got[n])]) for n in sets}
                table[name + " + cosine >= threshold"] = {n: accuracy_fpr(gated[n], truth[n], none) for n in sets}
        report[label] = {"examples": int((y != none).sum()), "negatives": int((y == none).sum()), "table": table}
    embed.save()

    for label, part in report.items():
        print(f"\n{label}: {part['examples']} examples, {part['negatives']} negatives")
        print(f"{'scoring':<92}" + "".join(f"{n + ' top-1':>16}{'FPR':>7}" for n in sets))
        for name, row in part["table"].items():
            print(f"{name:<92}" + "".join(f"{a:>16.1%}{f:>7.1%}" for a, f in row.values()))
    out = write_to(args.out, {"configs": {
        label: {**part, "table": {k: {n: {"accuracy": a, "none_false_positive_rate": f} for n, (a, f) in v.items()}
                                  for k, v in part["table"].items()}} for label, part in report.items()}},
        begun)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
