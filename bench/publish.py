"""How every benchmark reports: a table for people, one JSON object for programs, a JSON file."""
from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def publish(name: str, report: dict, table: str, as_json: bool) -> Path:
    """The table goes to stdout, or to stderr when stdout carries the JSON; bench/results/NAME.json
    is written either way."""
    print(table, file=sys.stderr if as_json else sys.stdout)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    if as_json:
        print(json.dumps(report))
    return path
