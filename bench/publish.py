"""How every benchmark reports: a table for people, one JSON object for programs, a JSON file
that keeps its history.

A run's file is bench/results/NAME/<start>-<commit>[-dirty].json, stamped with what it ran on
(the commit and whether the tree had changes, when, the machine, the load average when the bench
started and when it ended, the command line); bench/results/NAME/latest.json is a copy of the
newest, the one the docs cite. A bench calls `started = begin()` first thing and passes `started`
on; one that does not gets the load average of the moment this module was imported.
LAYA_BENCH_RESULTS names another folder to keep the results in (the tests use it).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("LAYA_BENCH_RESULTS") or REPO / "bench" / "results").resolve()
LATEST = "latest"


@dataclass(frozen=True)
class Started:
    """What is known when a bench starts: its clock, its load average, its command line."""
    epoch: float
    load_average: list[float]
    argv: list[str] = field(default_factory=list)


def begin() -> Started:
    """Record the start of a run; call it before the bench loads the machine."""
    return Started(time.time(), _load_average(), [sys.executable, *sys.argv])


def publish(name: str, report: dict, table: str, as_json: bool,
            started: Started | None = None, files: dict[str, Path] | None = None) -> Path:
    """The table goes to stdout, or to stderr when stdout carries the JSON; the stamped report is
    kept under bench/results/NAME/ either way (see write). Returns the run's file."""
    print(table, file=sys.stderr if as_json else sys.stdout)
    path = write(name, report, started, files)
    if as_json:
        print(json.dumps(report))
    return path


def write(name: str, report: dict, started: Started | None = None,
          files: dict[str, Path] | None = None) -> Path:
    """Stamp REPORT (its `run` key) and write it as this run's file and as latest.json.
    FILES are the run's other outputs by suffix ({"png": path}): each is kept beside the JSON
    under the same stem (<stem>.png, latest.png). Returns the run's JSON file."""
    run = stamp(started)
    report["run"] = run
    folder = RESULTS / name
    folder.mkdir(parents=True, exist_ok=True)
    stem = _free_stem(folder, run)
    if files:
        run["files"] = [f"{stem}.{suffix}" for suffix in files]
    path = folder / f"{stem}.json"
    text = json.dumps(report, indent=2) + "\n"
    path.write_text(text)
    (folder / f"{LATEST}.json").write_text(text)
    for suffix, source in (files or {}).items():
        shutil.copyfile(source, folder / f"{stem}.{suffix}")
        shutil.copyfile(source, folder / f"{LATEST}.{suffix}")
    return path


def write_to(out: Path, report: dict, started: Started | None = None) -> Path:
    """For a bench whose --out names a file: bench/results/NAME.json is kept as the results
    NAME (see write); a path elsewhere gets the stamped report as it is."""
    out = Path(out).resolve()
    if out.parent == RESULTS and out.suffix == ".json":
        return write(out.stem, report, started)
    report["run"] = stamp(started)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return out


def stamp(started: Started | None = None) -> dict:
    """The header every results file carries."""
    started = started or _IMPORTED
    commit, dirty = _commit()
    return {
        "commit": commit,
        "dirty": dirty,
        "started": _iso(started.epoch),
        "finished": _iso(time.time()),
        "machine": machine(),
        "load_average": {"before": started.load_average, "after": _load_average()},
        "command": started.argv,
    }


def machine() -> dict:
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "ram_gb": _ram_gb(),
            "os": platform.platform(), "python": platform.python_version()}


def _free_stem(folder: Path, run: dict) -> str:
    when = run["started"].replace(":", "")
    base = f"{when}-{run['commit'][:7]}" + ("-dirty" if run["dirty"] else "")
    stem, n = base, 2
    while (folder / f"{stem}.json").exists():   # two runs in the same second; "_" sorts after "."
        stem, n = f"{base}_{n}", n + 1
    return stem


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:   # not offered on this platform (Windows)
        return []


def _commit() -> tuple[str, bool]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout
    try:
        return git("rev-parse", "HEAD").strip(), bool(git("status", "--porcelain").strip())
    except (OSError, subprocess.SubprocessError):   # not a checkout, or no git
        return "unknown", True


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, ValueError, OSError):
        return None


_IMPORTED = Started(time.time(), _load_average(), [sys.executable, *sys.argv])
