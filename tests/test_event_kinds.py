"""Every event kind the engine records anywhere in laya_desktop/ is an EventKind, and EventKind
keeps the wire as it was: plain strings in the event dicts and their JSON."""
from __future__ import annotations

import ast
import json
from pathlib import Path

from laya_desktop.telemetry.events import EventKind, EventLog

PACKAGE = Path(__file__).resolve().parents[1] / "laya_desktop"
# Receivers of `.record(kind, ...)` that are event logs or pass to one (the scheduler's effects).
EVENT_RECEIVERS = ("events", "effects")


def _receiver(call: ast.Call) -> str:
    target = call.func.value if isinstance(call.func, ast.Attribute) else None
    while isinstance(target, ast.Attribute):
        if target.attr in EVENT_RECEIVERS:
            return target.attr
        target = target.value
    return getattr(target, "id", "")


def recorded_kinds() -> list[tuple[str, ast.expr]]:
    """(where, the kind's expression) for every event recorded, and every `kind=` handed to an
    unload that records it."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
            if node.func.attr == "record" and _receiver(node) in EVENT_RECEIVERS and node.args:
                found.append((where, node.args[0]))
            found += [(where, kw.value) for kw in node.keywords if kw.arg == "kind"
                      and node.func.attr == "unload"]
    return found


def test_every_recorded_kind_is_an_event_kind():
    seen, wrong = set(), []
    for where, expr in recorded_kinds():
        if isinstance(expr, ast.Constant):
            (seen.add(expr.value) if expr.value in set(EventKind) else wrong.append((where, expr.value)))
        elif isinstance(expr, ast.Attribute) and getattr(expr.value, "id", "") == "EventKind":
            (seen.add(EventKind[expr.attr]) if expr.attr in EventKind.__members__
             else wrong.append((where, expr.attr)))
        elif not isinstance(expr, ast.Name):   # a name is a kind passed on (runner_effects)
            wrong.append((where, ast.dump(expr)))
    assert wrong == []
    # The scan sees the engine's records: a rename that hid them from it would pass vacuously.
    assert {EventKind.RUNNER_UNRESPONSIVE, EventKind.CONFIG_SAVE_FAILED, EventKind.IDLE_UNLOAD,
            EventKind.EMERGENCY_UNLOAD, EventKind.MODEL_LOADED} <= seen


def test_an_event_kind_is_a_plain_string_on_the_wire():
    log = EventLog()
    item = log.record(EventKind.RUNNER_UNRESPONSIVE, model="tiny", reason="no answer in 30 s")
    assert type(item["kind"]) is str and item["kind"] == "runner_unresponsive"
    assert json.loads(json.dumps(log.since(0)[1]))[0]["kind"] == "runner_unresponsive"
    assert log.totals == {"runner_unresponsive": 1}
    assert log.record("a_kind_from_a_newer_engine")["kind"] == "a_kind_from_a_newer_engine"
