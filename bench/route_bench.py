"""Routing decision latency at several rule counts: a table on stdout, JSON in bench/results/.

    .venv/bin/python bench/route_bench.py [--rules 100 1000] [--requests 20000] [--scanner S]

Same workload and timing as `laya bench route` (laya_desktop/routing/bench.py). Goals: p50 <= 20 us
and p99 <= 60 us at 100 rules, p50 <= 50 us at 1,000 rules.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from laya_desktop.routing.bench import bench_route, format_table
from laya_desktop.routing.router import SCANNERS

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scanner", choices=SCANNERS, default=None)
    args = parser.parse_args()
    results = [bench_route(n, args.requests, args.seed, args.scanner) for n in args.rules]
    print(format_table(results))
    out = RESULTS / f"route_bench-{results[0]['_scanner']}.json"
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0], "machine": platform.machine(),
        "system": platform.system(),
        "results": [{k.lstrip("_"): v for k, v in r.items()} for r in results],
    }, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
