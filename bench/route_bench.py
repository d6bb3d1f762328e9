"""Routing decision latency at several rule counts: a table on stdout, JSON in
bench/results/route_bench-SCANNER/.

    .venv/bin/python bench/route_bench.py [--rules 100 1000] [--requests 20000] [--scanner S]

Same workload and timing as `laya bench route` (laya_desktop/routing/bench.py). Goals: p50 <= 20 us
and p99 <= 60 us at 100 rules, p50 <= 50 us at 1,000 rules.
"""
from __future__ import annotations

import argparse
import sys

from publish import begin, write

from laya_desktop.routing.bench import bench_route, format_table
from laya_desktop.routing.router import SCANNERS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scanner", choices=SCANNERS, default=None)
    args = parser.parse_args()
    begun = begin()
    results = [bench_route(n, args.requests, args.seed, args.scanner) for n in args.rules]
    print(format_table(results))
    out = write(f"route_bench-{results[0]['_scanner']}",
                {"results": [{k.lstrip("_"): v for k, v in r.items()} for r in results]}, begun)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
