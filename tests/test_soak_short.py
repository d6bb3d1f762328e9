"""bench/soak.py --short: a minute of mixed load on a real engine with two memory squeezes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # make test-slow: minutes of load against a real engine

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(240)
def test_short_soak_meets_its_goals(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--short", "--json",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=220,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert run.stdout.strip(), run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    table = run.stderr
    # the load was real: every kind of request ran, the squeezes unloaded models and the
    # upstream's deliberate 503s went to the fallback
    assert report["requests"] > 200, table
    assert all(n > 0 for n in report["by_kind"].values()), report["by_kind"]
    assert len(report["squeezes"]) >= 2 and report["emergency_unloads"] >= 1, table
    assert report["by_outcome"].get("refused_with_hint", 0) > 0, table
    assert report["upstream"]["failed_on_purpose"] > 0 and report["upstream"]["refused"] == 0, \
        report["upstream"]
    assert not report["warm_up_failures"], report["warm_up_failures"]
    # the goals, each on its own so a failure says which
    assert report["hung"] == 0, table
    assert report["unclean_count"] == 0, report["unclean_failures"][:5]
    assert report["goals"]["engine_rss_growth_under_50_mb"], table
    assert report["goals"]["no_fd_or_thread_leak"], table
    assert report["passed"] and run.returncode == 0, table
    saved = json.loads((tmp_path / "soak_short.json").read_text())
    assert saved["requests"] == report["requests"] and len(saved["figures"]) > 30
    for png in ("soak_short.png", "soak_short_engine.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / png).stat().st_size > 20_000, png   # curves drawn, not a blank image
    assert "SOAK PASS" in table and "PASS" in table.splitlines()[-1]
