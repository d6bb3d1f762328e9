"""Semantic rules as a user writes them, scored on text labelled by others
(bench/data/user_routes.yaml, bench/data/user_sets/*.jsonl; bench/data/make_user_sets.py
makes the prompts).

Config per set: one semantic rule per route with its first N examples (8, then 20) and the set's
few negatives, EVERY OTHER SETTING AT ITS DEFAULT, then a catch-all `none`. Top-1: on-topic
prompts that went to their route; none routed: "none" prompts that some semantic rule took
(hard: those from sections near a route). The held-out family (`held_out: true`) is scored only
with --held-out.

    .venv/bin/python bench/semantic_user_sets.py [--held-out] [--out bench/results/NAME.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from publish import Started, begin, write_to  # noqa: E402

from laya_desktop.config.validate import validate_config  # noqa: E402
from laya_desktop.routing.router import Router  # noqa: E402

ROUTES = HERE / "data" / "user_routes.yaml"
SETS = HERE / "data" / "user_sets"
CHAT = "/v1/chat/completions"
SIZES = (8, 20)


def load_sets(held_out: bool) -> dict[str, dict]:
    sets = yaml.safe_load(ROUTES.read_text())["sets"]
    return {n: s for n, s in sets.items() if held_out or not s.get("held_out")}


PREVIOUS = {"threshold": 0.5}  # the defaults before the calibrated threshold, for comparison


def config(spec: dict, size: int, settings: dict | None = None) -> dict:
    rules = [{"name": name, "target": "m", "match": {"semantic": {
        "examples": route["examples"][:size], "negatives": spec.get("negatives", []), **(settings or {})}}}
        for name, route in spec["routes"].items()]
    return {"models": [{"name": "m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}],
            "routes": rules + [{"name": "none", "target": "m"}]}


def router_for(raw: dict) -> Router:
    cfg, errors = validate_config(raw)
    if errors:
        raise SystemExit("\n".join(map(str, errors)))
    return Router(cfg)


def score(rows: list[dict], got: list[str], routes: list[str]) -> dict:
    on = [(r, g) for r, g in zip(rows, got) if r["label"] != "none"]
    none = [(r, g) for r, g in zip(rows, got) if r["label"] == "none"]
    hard = [(r, g) for r, g in none if r["hard"]]
    labels = routes + ["none"]
    matrix = {want: {g: 0 for g in labels} for want in labels}
    for r, g in zip(rows, got):
        matrix[r["label"]][g] += 1
    return {"top1": sum(g == r["label"] for r, g in on) / len(on),
            "none_routed": sum(g != "none" for _, g in none) / len(none),
            "hard_none_routed": sum(g != "none" for _, g in hard) / len(hard) if hard else None,
            "on_topic": len(on), "none": len(none), "hard": len(hard),
            "confusion": matrix}


def run_set(name: str, spec: dict, size: int, settings: dict | None = None) -> dict:
    rows = [json.loads(line) for line in open(SETS / f"{name}.jsonl")]
    router = router_for(config(spec, size, settings))
    got, ms = [], []
    router.semantic.embeddings._cache.clear()  # every decision embeds its text: a cache miss
    for row in rows:
        body = {"messages": [{"role": "user", "content": row["text"]}]}
        started = time.perf_counter()
        got.append(router.decide_body(CHAT, body, None).rule)
        ms.append((time.perf_counter() - started) * 1000)
    ms.sort()
    return {**score(rows, got, list(spec["routes"])),
            "decision_ms": {"p50": round(ms[len(ms) // 2], 3), "p95": round(ms[int(len(ms) * 0.95)], 3)}}


def print_result(name: str, size: int, result: dict, label: str = "defaults") -> None:
    hard = result["hard_none_routed"]
    print(f"{name:10} {label:18} {size:>2} examples  top-1 {result['top1']:6.1%}  none routed {result['none_routed']:6.1%}"
          f"  (hard {hard:6.1%})  decision p50 {result['decision_ms']['p50']:.1f} ms"
          f" p95 {result['decision_ms']['p95']:.1f} ms", file=sys.stderr)


def print_confusion(result: dict) -> None:
    labels = list(result["confusion"])
    width = max(len(label) for label in labels) + 1
    print(" " * width + "".join(f"{label[:8]:>9}" for label in labels), file=sys.stderr)
    for want in labels:
        print(f"{want:{width}}" + "".join(f"{result['confusion'][want][g]:>9}" for g in labels), file=sys.stderr)


def evaluate(held_out: bool, confusion: bool = True) -> dict:
    """Per set and number of examples: the defaults (with their confusion matrix), then the
    previous defaults (threshold 0.5) beside them."""
    out = {}
    for name, spec in load_sets(held_out).items():
        for size in SIZES:
            meta = {"set": name, "examples": size, "family": spec["family"], "held_out": bool(spec.get("held_out"))}
            result = run_set(name, spec, size)
            out[f"{name}/{size}"] = {**meta, "settings": "defaults", **result}
            print_result(name, size, result)
            if confusion:
                print_confusion(result)
            before = run_set(name, spec, size, PREVIOUS)
            out[f"{name}/{size}/previous"] = {**meta, "settings": PREVIOUS, **before}
            print_result(name, size, before, "threshold 0.5")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-out", action="store_true", help="score the held-out family too")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "semantic_user_sets.json")
    parser.add_argument("--quiet", action="store_true", help="no confusion matrices")
    args = parser.parse_args()
    begun = begin()
    results = evaluate(args.held_out, not args.quiet)
    write(args.out, results, begun)
    return 0


def write(path: Path, results: dict, started: Started | None = None) -> Path:
    """bench/results/NAME.json goes to the results NAME's history (bench/publish.py)."""
    out = write_to(path, {"sets": results}, started)
    print(f"wrote {out}", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(main())
