"""A load test's report on disk: the summary and every request as JSON, the requests as CSV."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from laya_desktop.loadtest.report import LoadTestReport, RequestResult

CSV_FIELDS = ("index", "started_s", "status", "latency_ms", "ttft_ms", "itl_ms", "completion_tokens",
              "route", "model", "fallback_from", "prompt_chars", "error")


def report_dict(report: LoadTestReport, sweep: dict | None = None) -> dict:
    out = {"summary": report.summary(), "requests": [r.to_dict() for r in report.results]}
    if sweep is not None:
        out["sweep"] = sweep
    return out


def write_json(report: LoadTestReport, path: str | Path, sweep: dict | None = None) -> None:
    Path(path).write_text(json.dumps(report_dict(report, sweep), indent=1), encoding="utf-8")


def write_csv(results: list[RequestResult], path: str | Path) -> int:
    """One row a request; returns the number of rows written."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(CSV_FIELDS)
        for r in results:
            row = r.to_dict()
            out.writerow(["" if row.get(k) is None else row[k] for k in CSV_FIELDS])
    return len(results)
