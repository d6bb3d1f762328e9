"""bench/README.md lists every bench, and bench/publish.py keeps each run's results with its
history: a stamped file per run and latest.json, the copy the docs cite."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
RUN_NAME = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{6}Z)?-([0-9a-f]{7}|unknown)(-dirty)?(_\d+)?")


def _publish():
    sys.path.insert(0, str(BENCH))
    try:
        import publish
    finally:
        sys.path.remove(str(BENCH))
    return publish


def test_the_readme_lists_every_script_in_bench():
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`bench/(\w+)\.py`", readme))
    scripts = {p.stem for p in BENCH.glob("*.py")}
    assert scripts - listed == set(), "bench/README.md lacks these scripts"
    assert listed - scripts == set(), "bench/README.md lists scripts that are gone"


def test_every_results_folder_has_latest_and_runs_named_by_date_and_commit():
    folders = [p for p in RESULTS.iterdir() if p.is_dir()]
    assert folders, "bench/results/ holds no results"
    loose = [p.name for p in RESULTS.iterdir() if p.is_file()]
    assert loose == [], "results files outside a results folder (bench/results/NAME/)"
    for folder in folders:
        runs = sorted(p for p in folder.glob("*.json") if p.name != "latest.json")
        assert runs, f"{folder.name}/ has no run of its own, only latest.json"
        for run in runs:
            assert RUN_NAME.fullmatch(run.stem), run
        latest = folder / "latest.json"
        assert latest.read_bytes() == runs[-1].read_bytes(), f"{latest} is not its newest run"
        json.loads(latest.read_text())


def _run_bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LAYA_BENCH_RESULTS": str(tmp_path)}
    return subprocess.run([sys.executable, str(BENCH / "strategy_overhead.py"), *args],
                          capture_output=True, text=True, timeout=120, env=env, check=True)


def test_a_real_bench_keeps_each_run_stamped_and_latest_is_the_newest(tmp_path):
    _run_bench(tmp_path, "--targets", "2", "--requests", "200")
    _run_bench(tmp_path, "--targets", "2", "--requests", "300")
    folder = tmp_path / "strategy_overhead"
    runs = sorted(p for p in folder.glob("*.json") if p.name != "latest.json")
    assert len(runs) == 2, [p.name for p in folder.iterdir()]
    first, second = (json.loads(p.read_text()) for p in runs)
    assert (first["requests"], second["requests"]) == (200, 300)
    assert (folder / "latest.json").read_bytes() == runs[1].read_bytes()

    run = second["run"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert run["commit"] == head and isinstance(run["dirty"], bool)
    assert runs[1].name.startswith(run["started"][:10]) and head[:7] in runs[1].name
    assert run["started"] <= run["finished"]
    assert run["machine"]["cores"] == os.cpu_count() and run["machine"]["ram_gb"] > 0
    assert run["machine"]["cpu"] and run["machine"]["os"]
    assert len(run["load_average"]["before"]) == len(run["load_average"]["after"]) == 3
    assert run["command"][1:] == [str(BENCH / "strategy_overhead.py"), "--targets", "2",
                                  "--requests", "300"]


def test_the_load_before_is_the_one_taken_when_the_bench_began(tmp_path, monkeypatch):
    publish = _publish()
    monkeypatch.setattr(publish, "RESULTS", tmp_path)
    started = publish.Started(1.0e9, [7.5, 6.5, 5.5], ["bench/x.py", "--fast"])
    path = publish.write("x", {"figure": 1}, started)
    run = json.loads(path.read_text())["run"]
    assert run["load_average"]["before"] == [7.5, 6.5, 5.5]
    assert run["started"] == "2001-09-09T01:46:40Z" and run["command"] == ["bench/x.py", "--fast"]
    assert path.name.startswith("2001-09-09T014640Z-")
    # a bench that never called begin() gets the load of the moment publish was imported
    fallback = json.loads(publish.write("y", {}).read_text())["run"]
    assert fallback["load_average"]["before"] == publish._IMPORTED.load_average


def test_runs_in_the_same_second_keep_both_and_files_travel_with_their_run(tmp_path, monkeypatch):
    publish = _publish()
    monkeypatch.setattr(publish, "RESULTS", tmp_path)
    png = tmp_path / "curves.png"
    png.write_bytes(b"\x89PNG one")
    started = publish.begin()
    a = publish.write("soak", {"n": 1}, started, {"png": png})
    png.write_bytes(b"\x89PNG two")
    b = publish.write("soak", {"n": 2}, started, {"png": png})
    assert a != b and json.loads(a.read_text())["n"] == 1
    assert b.with_suffix(".png").read_bytes() == b"\x89PNG two"
    assert a.with_suffix(".png").read_bytes() == b"\x89PNG one"
    assert (tmp_path / "soak" / "latest.png").read_bytes() == b"\x89PNG two"
    assert json.loads(b.read_text())["run"]["files"] == [b.with_suffix(".png").name]


def test_an_out_path_in_results_joins_that_results_history_and_elsewhere_stays_a_file(
        tmp_path, monkeypatch):
    publish = _publish()
    store = tmp_path / "results"
    monkeypatch.setattr(publish, "RESULTS", store)
    kept = publish.write_to(store / "semantic_blind7.json", {"score": 0.9})
    assert kept.parent == store / "semantic_blind7"
    assert json.loads((kept.parent / "latest.json").read_text())["score"] == 0.9
    elsewhere = publish.write_to(tmp_path / "mine" / "scores.json", {"score": 0.8})
    assert elsewhere == tmp_path / "mine" / "scores.json"
    assert json.loads(elsewhere.read_text())["run"]["commit"]


@pytest.mark.parametrize("name", ["throughput", "soak", "semantic"])
def test_the_files_the_docs_cite_are_where_the_benches_write(name):
    assert (RESULTS / name / "latest.json").is_file()
