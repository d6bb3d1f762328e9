"""Start-up: `laya serve` until /healthz answers, and `laya gui` until its window is mapped.

Each run starts a fresh process. The baseline, run side by side, is the bare interpreter
(`python -c pass`): what no change to Laya can make faster. The engine is polled every 5 ms; the
CPU time it has used by its first answer (user + system, all its threads) is read too, a figure
that a shared, busy machine moves far less than the wall-clock one. The window is looked for
under Xvfb with `xdotool search --onlyvisible` every 10 ms (the GUI part is skipped when Xvfb or
xdotool is missing). Both use docs/demo-models.yaml, with HOME and
the XDG folders in a temporary folder so nothing of the user's is read or written.

Byte code: an installed app starts from .pyc files (pip writes them; Python caches the rest on
the first run). So the children run with bytecode writing on, into a cache folder of their own
(PYTHONPYCACHEPREFIX, outside the source tree), and one unmeasured run of each kind fills it
first: a session with PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module each time.

With --baseline-tree DIR (another checkout, say `git worktree add DIR <commit>`), the same two
start-ups of the Laya in DIR are measured too, run for run beside this one's.

    python bench/startup.py [--runs 5] [--no-gui] [--baseline-tree DIR] [--json]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import free_port  # noqa: E402
from publish import begin, publish  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "docs" / "demo-models.yaml"
GOAL_SERVE_S, GOAL_WINDOW_S = 0.5, 1.0
TIMEOUT_S = 30.0
PYCACHE = Path(tempfile.gettempdir()) / "laya-bench-pycache"


def _env(home: Path, display: str | None = None) -> dict:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache"),
           "XDG_STATE_HOME": str(home / "state"), "XDG_RUNTIME_DIR": str(home / "run"),
           "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (home / "run").mkdir(mode=0o700, exist_ok=True)
    if display is not None:
        env["DISPLAY"] = display
        env.pop("QT_QPA_PLATFORM", None)
        env.pop("WAYLAND_DISPLAY", None)
    return env


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def bare_interpreter_s(home: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=_env(home))
    return time.perf_counter() - started


def serve_healthy_s(home: Path, tree: Path = ROOT) -> tuple[float, float]:
    """(wall-clock seconds until /healthz answers 200, CPU seconds the engine used by then)."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "laya_desktop", "serve", "--config", str(DEMO),
                             "--port", str(port)], env=_env(home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd=tree)
    try:
        with httpx.Client(timeout=1) as client:
            while time.perf_counter() - started < TIMEOUT_S:
                if proc.poll() is not None:
                    raise RuntimeError(f"laya serve exited with {proc.returncode}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        wall = time.perf_counter() - started
                        cpu = psutil.Process(proc.pid).cpu_times()
                        return wall, cpu.user + cpu.system
                time.sleep(0.005)
        raise RuntimeError(f"laya serve not healthy within {TIMEOUT_S} s")
    finally:
        _stop(proc)


@contextlib.contextmanager
def xvfb():
    display = f":{free_port() % 400 + 100}"
    server = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x900x24", "-nolisten", "tcp", "-noreset"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["xdotool", "getdisplaygeometry"], env={**os.environ, "DISPLAY": display},
                             capture_output=True).returncode != 0:
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("Xvfb did not start")
            time.sleep(0.05)
        yield display
    finally:
        server.terminate()
        server.wait()


def window_visible_s(home: Path, display: str, tree: Path = ROOT) -> float:
    env = _env(home, display)
    started = time.perf_counter()
    log = open(home / "gui.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "laya_desktop", "gui", "--config", str(DEMO)],
                            env=env, stdout=log, stderr=log, start_new_session=True, cwd=tree)
    try:
        while time.perf_counter() - started < TIMEOUT_S:
            if proc.poll() is not None:
                raise RuntimeError(f"laya gui exited with {proc.returncode}:\n"
                                   + (home / "gui.log").read_text(errors="replace")[-3000:])
            found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Laya Desktop"],
                                   env=env, capture_output=True)
            if found.returncode == 0 and found.stdout.strip():
                return time.perf_counter() - started
            time.sleep(0.01)
        raise RuntimeError(f"no window within {TIMEOUT_S} s")
    finally:
        _stop(proc)
        log.close()


def summary(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "runs": [round(v, 3) for v in values]}


def _measure(trees: dict[str, Path], runs: int, gui: bool) -> dict:
    bare: list[float] = []
    figures = {name: {"serve": [], "serve_cpu": [], "window": []} for name in trees}
    with tempfile.TemporaryDirectory() as folder, \
            (xvfb() if gui else contextlib.nullcontext()) as display:
        home = Path(folder)
        for tree in trees.values():   # fills the byte-code cache
            serve_healthy_s(home, tree)
            if gui:
                window_visible_s(home, display, tree)
        for _ in range(runs):   # interleaved, so a busy moment hits every kind
            bare.append(bare_interpreter_s(home))
            for name, tree in trees.items():
                wall, cpu = serve_healthy_s(home, tree)
                figures[name]["serve"].append(wall)
                figures[name]["serve_cpu"].append(cpu)
                if gui:
                    figures[name]["window"].append(window_visible_s(home, display, tree))
    return {"bare_interpreter": summary(bare),
            **{name: {"serve_healthy": summary(f["serve"]),
                      "serve_healthy_cpu": summary(f["serve_cpu"]),
                      "window_visible": summary(f["window"]) if f["window"] else None}
               for name, f in figures.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-gui", action="store_true")
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="another checkout to measure beside this one")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    begun = begin()
    gui = not args.no_gui and bool(shutil.which("Xvfb") and shutil.which("xdotool"))
    trees = {"this": ROOT}
    if args.baseline_tree is not None:
        trees["baseline"] = args.baseline_tree.resolve()
    figures = _measure(trees, args.runs, gui)
    report = {"runs": args.runs, "config": str(DEMO.relative_to(ROOT)), **figures,
              "baseline_tree": str(trees.get("baseline")) if "baseline" in trees else None,
              "goal_serve_s": GOAL_SERVE_S, "goal_window_s": GOAL_WINDOW_S,
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    row = lambda name, s: (f"  {name:<36} median {s['median_s']:.3f} s  min {s['min_s']:.3f}  "  # noqa: E731
                           f"max {s['max_s']:.3f}")
    lines = [f"{args.runs} runs each, {report['config']}; goals: serve {GOAL_SERVE_S} s, "
             f"window {GOAL_WINDOW_S} s",
             row("python -c pass", report["bare_interpreter"])]
    for name in trees:
        label = "" if name == "this" else ", baseline tree"
        lines.append(row(f"laya serve -> /healthz{label}", report[name]["serve_healthy"]))
        lines.append(row(f"  its CPU time by then{label}", report[name]["serve_healthy_cpu"]))
        if report[name]["window_visible"]:
            lines.append(row(f"laya gui -> window{label}", report[name]["window_visible"]))
    if "baseline" in trees:
        ratio = lambda key: (report["this"][key]["median_s"]  # noqa: E731
                             / max(report["baseline"][key]["median_s"], 1e-9))
        lines.append(f"  this tree / baseline tree (medians): serve {ratio('serve_healthy'):.2f}, "
                     f"its CPU {ratio('serve_healthy_cpu'):.2f}"
                     + (f", window {ratio('window_visible'):.2f}" if gui else ""))
    if not gui:
        lines.append("  laya gui -> window: skipped (no Xvfb/xdotool, or --no-gui)")
    lines.append(f"  load average at the end: {', '.join(f'{x:.2f}' for x in report['load_average'])}")
    publish("startup", report, "\n".join(lines), args.json, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
