"""`laya route "prompt"`: which rule and model would serve a prompt, and why."""
from __future__ import annotations

import argparse
import json
import sys
import time

from laya_desktop.config.store import ConfigInvalid, find_config_path, load_config
from laya_desktop.routing.request import extract
from laya_desktop.routing.router import Explanation, Router, explanation_json


def _body(args: argparse.Namespace) -> dict:
    body: dict = {"messages": [{"role": "user", "content": args.prompt}]}
    if args.model is not None:
        body["model"] = args.model
    if args.tags:
        body["tags"] = list(args.tags)
    return body


def _time_us(router: Router, path: str, body: dict) -> tuple[float, float]:
    """(first decision, best of 5 after it): the first also embeds the text for a semantic rule."""
    start = time.perf_counter_ns()
    router.decide_body(path, body, None)  # warm: first calls allocate scratch space
    first = time.perf_counter_ns() - start
    best = None
    for _ in range(5):
        start = time.perf_counter_ns()
        router.decide_body(path, body, None)
        took = time.perf_counter_ns() - start
        best = took if best is None else min(best, took)
    return round(first / 1000, 1), round(best / 1000, 1)


def _print_text(explanation: Explanation, decision_us: float, first_us: float) -> None:
    d = explanation.decision
    if d is not None:
        print(f"rule:      {d.rule if d.rule is not None else '(none: model named directly)'}")
        print(f"target:    {d.target}")
        if d.pool is not None:
            print(f"targets:   {', '.join(d.pool.models)} (strategy {d.pool.strategy}: the "
                  "engine picks by live load and latency)")
        print(f"fallbacks: {', '.join(d.fallbacks) or '(none)'}")
    for check in explanation.rules:
        if check.semantic is not None:
            s = check.semantic
            odds = (f", probability {s.probability:.2f} (needs {s.min_probability:.2f})"
                    if s.learned else "")
            print(f"semantic:  {check.rule}: score {s.score:.3f} (threshold {s.threshold:.2f}){odds}, "
                  f"nearest example {s.nearest!r}")
    print(f"decided in {decision_us} us")
    if first_us > 10 * decision_us + 1000:  # the first decision embedded the text
        print(f"first decision, embedding the text: {first_us / 1000:.1f} ms")
    if explanation.note:
        print(explanation.note)
    if not explanation.rules:
        return
    print("why:")
    winner = d.rule if d else None
    for i, check in enumerate(explanation.rules):
        if check.rule == winner and check.matched:
            print(f"  {check.rule}: matched ({'; '.join(check.reasons)})")
            later = len(explanation.rules) - i - 1
            if later:
                print(f"  ({later} later rule{'s' if later > 1 else ''} not consulted)")
            return
        print(f"  {check.rule}: no match ({'; '.join(check.reasons)})")


def run_route(args: argparse.Namespace) -> int:
    path = find_config_path(args.config)
    try:
        config = load_config(path)
    except ConfigInvalid as exc:
        if args.json:
            print(json.dumps({"error": f"{path}: invalid config", "errors": [
                {"path": e.path, "message": e.message} for e in exc.errors]}))
        for error in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        return 1
    router = Router(config)
    body = _body(args)
    first_us, decision_us = _time_us(router, args.path, body)
    explanation = router.explain(extract(args.path, body, None))
    if args.json:
        print(json.dumps({**explanation_json(explanation, decision_us), "first_decision_us": first_us}))
    else:
        _print_text(explanation, decision_us, first_us)
    if explanation.decision is None:
        asked = f"model {args.model!r} is not registered" if args.model else "no model named"
        print(f"laya route: no rule matches and {asked}: the engine would answer 404 "
              "model_not_found", file=sys.stderr)
        return 1
    return 0
