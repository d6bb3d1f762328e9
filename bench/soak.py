"""Soak: a real engine under mixed load for N minutes, with a memory squeeze every few minutes.

The script writes a config with two tiny GGUF models (llama.cpp runners) and a remote target served
by a strict loopback upstream (tests/strict_upstream.py: it refuses a wrong model name, a wrong
key or a leftover `tags` field, and answers 503 now and then so the fallback runs), starts the
engine, and drives it with a fixed number of clients sending chat and completions, streamed or
not, local and remote, with tools on the remote. Every `--squeeze-every` seconds it squeezes
memory through the admin API: PUT /admin/config with `reserved_system_gb` above the RAM
available, held for `--squeeze-hold` seconds, then the old config back; the guard unloads the
models (busy ones last, their requests ending in 503) and refuses loads until the limit is
restored.

It samples the engine process (RSS, open fds, threads) and its runners every second, keeps every
/admin/telemetry sample and event, and judges four goals:
  hung          no request without an answer within --hang-s
  clean         every failure a 429 or 503 with Retry-After (a stream that had already started
                ends in an error event whose code is a "try again" one: it has no header to carry)
  rss           the engine's own RSS grows less than 50 MB from the end of the warm-up to the end
                (its request log and telemetry ring fill in the first hour: bounded, but counted)
  leaks         open fds and threads, idle after the run, no more than when idle after the warm-up
                (plus a small allowance for idle pool threads) and no runner left over

    python bench/soak.py [--minutes 30] [--short] [--concurrency 8] [--json] [--out DIR]

Writes the run's JSON, its PNG (the Monitor panel's curves, rendered offscreen) and its engine.png
(the engine's RSS, fds and threads) into bench/results/soak/ (soak_short/ with --short), or
soak.json, soak.png and soak_engine.png (soak_short.* with --short) into the folder --out names.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from engine_harness import EngineProcess, free_port  # noqa: E402
from gguf_factory import write_tiny_gguf  # noqa: E402
from strict_upstream import StrictUpstream  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from publish import RESULTS, begin, write, write_to  # noqa: E402

GIB = 1 << 30
MB = 1_000_000
RSS_GOAL_MB = 50
FD_ALLOWANCE = 4
THREAD_ALLOWANCE = 4
UPSTREAM_POOL = 32   # remote.make_client's max_keepalive_connections
REMOTE_MODEL, REMOTE_KEY = "soak-upstream-model", "soak-secret-key"
RETRYABLE_CODES = {"runner_crashed", "model_unloaded", "kv_full", "queue_timeout", "load_refused",
                   "runner_unresponsive", "queue_full"}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
PROMPTS = ["Tell me about the sea.", "Write a line of a poem about trees.",
           "What is two plus two?", "Describe a small red house in a valley.",
           "List three colours.", "Why is the sky blue?"]
# (kind, weight): what a client sends; the remote ones carry the tag that routes them out.
MIX = [("chat", 4), ("chat_stream", 3), ("completion", 2), ("completion_stream", 2),
       ("remote_chat", 2), ("remote_stream", 2), ("remote_tools", 1)]


def soak_config(gguf_a: Path, gguf_b: Path, upstream_url: str) -> dict:
    local = {"backend": "llama_cpp", "n_ctx": 1024, "parallel": 2, "idle_ttl_s": 0}
    return {
        "models": [
            {"name": "alpha", "path": str(gguf_a), **local},
            {"name": "beta", "path": str(gguf_b), **local},
            {"name": "cloud", "backend": "openai", "base_url": upstream_url,
             "api_key_env": "LAYA_SOAK_REMOTE_KEY", "remote_model": REMOTE_MODEL},
        ],
        "routes": [
            {"name": "remote", "match": {"tags": ["cloud"]}, "target": "cloud",
             "fallback": ["alpha"]},
            {"name": "default", "target": "alpha", "fallback": ["beta"]},
        ],
        "scheduler": {"max_queue": 16, "queue_timeout_ms": 10000},
        "memory": {"sample_hz": 4},
    }


# --- the clients ---------------------------------------------------------------------------------
def request_for(kind: str, rng: random.Random) -> tuple[str, dict, bool]:
    """(path, body, streamed) for one request of this kind."""
    n = rng.randint(8, 48)
    prompt = rng.choice(PROMPTS)
    messages = [{"role": "user", "content": prompt}]
    local = rng.choice(["alpha", "beta", "auto"])
    if kind in ("chat", "chat_stream"):
        return "/v1/chat/completions", {"model": local, "messages": messages, "max_tokens": n,
                                        "stream": kind == "chat_stream"}, kind == "chat_stream"
    if kind in ("completion", "completion_stream"):
        return "/v1/completions", {"model": rng.choice(["alpha", "beta"]), "prompt": prompt,
                                   "max_tokens": n, "stream": kind == "completion_stream"}, \
            kind == "completion_stream"
    body = {"model": "auto", "messages": messages, "max_tokens": n, "tags": ["cloud"],
            "stream": kind == "remote_stream"}
    if kind == "remote_tools":
        body["tools"] = TOOLS
    return "/v1/chat/completions", body, kind == "remote_stream"


def _error_code(text: str) -> str | None:
    try:
        return (json.loads(text).get("error") or {}).get("code")
    except (ValueError, AttributeError):
        return None


def send(client: httpx.Client, kind: str, rng: random.Random, hang_s: float) -> dict:
    """One request; its outcome as a record (kind, status, outcome, code, seconds)."""
    path, body, streamed = request_for(kind, rng)
    started = time.monotonic()
    record = {"kind": kind, "status": None, "outcome": None, "code": None, "retry_after": None}
    try:
        if not streamed:
            r = client.post(path, json=body)
            record["status"] = r.status_code
            record["retry_after"] = r.headers.get("retry-after")
            if r.status_code == 200:
                record["outcome"] = "ok"
            else:
                record["code"] = _error_code(r.text)
        else:
            with client.stream("POST", path, json=body) as r:
                record["status"] = r.status_code
                record["retry_after"] = r.headers.get("retry-after")
                if r.status_code != 200:
                    record["code"] = _error_code(r.read().decode(errors="replace"))
                else:
                    done, error = False, None
                    for line in r.iter_lines():
                        if time.monotonic() - started > hang_s:
                            raise httpx.ReadTimeout("stream went past the hang limit")
                        if line == "data: [DONE]":
                            done = True
                        elif line.startswith('data: {"error"'):
                            error = _error_code(line[6:]) or "unknown"
                    if error:
                        record["outcome"], record["code"] = "stream_error", error
                    elif done:
                        record["outcome"] = "ok"
                    else:
                        record["outcome"] = "stream_cut"   # ended with neither [DONE] nor an error
    except httpx.TimeoutException:
        record["outcome"] = "hung"
    except httpx.HTTPError as exc:
        record["outcome"], record["code"] = "transport_error", type(exc).__name__
    if record["outcome"] is None:
        status = record["status"]
        if status in (429, 503):
            hinted = bool(record["retry_after"])
            record["outcome"] = "refused_with_hint" if hinted else "refused_without_hint"
        else:
            record["outcome"] = "bad_status"
    record["seconds"] = round(time.monotonic() - started, 3)
    return record


def client_loop(url: str, seed: int, stop: threading.Event, hang_s: float, out: list,
                lock: threading.Lock) -> None:
    rng = random.Random(seed)
    kinds, weights = zip(*MIX)
    with httpx.Client(base_url=url, timeout=httpx.Timeout(hang_s, connect=10)) as client:
        while not stop.is_set():
            kind = rng.choices(kinds, weights)[0]
            record = send(client, kind, rng, hang_s)
            record["t"] = time.time()
            with lock:
                out.append(record)
            if record["outcome"] in ("refused_with_hint", "refused_without_hint"):
                stop.wait(0.5)   # a client that honours a refusal backs off a little


# --- the squeeze ---------------------------------------------------------------------------------
def squeeze_loop(url: str, every_s: float, hold_s: float, stop: threading.Event,
                 windows: list) -> None:
    with httpx.Client(base_url=url, timeout=30) as c:
        while not stop.wait(every_s):
            original = c.get("/admin/config").json()
            squeezed = copy.deepcopy(original)
            memory = squeezed.setdefault("memory", {})
            memory["reserved_system_gb"] = round(psutil.virtual_memory().available / GIB + 2, 2)
            t0 = time.time()
            r = c.put("/admin/config", json=squeezed)
            window = {"start": t0, "status": r.status_code,
                      "reserved_system_gb": memory["reserved_system_gb"]}
            stop.wait(hold_s)
            restored = c.put("/admin/config", json=original)
            window["end"], window["restore_status"] = time.time(), restored.status_code
            windows.append(window)


# --- the samples ---------------------------------------------------------------------------------
def process_figures(proc: psutil.Process) -> dict:
    with proc.oneshot():
        figures = {"t": time.time(), "rss": proc.memory_info().rss, "fds": proc.num_fds(),
                   "threads": proc.num_threads()}
    runners = [c for c in proc.children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE]
    figures["runners"] = len(runners)
    figures["runners_rss"] = sum(_rss(c) for c in runners)
    return figures


def _rss(p: psutil.Process) -> int:
    try:
        return p.memory_info().rss
    except psutil.Error:
        return 0


def sample_loop(url: str, proc: psutil.Process, stop: threading.Event, figures: list,
                telemetry: list, events: list) -> None:
    seq = ev_seq = 0
    with httpx.Client(base_url=url, timeout=30) as c:
        while not stop.wait(1.0):
            try:
                figures.append(process_figures(proc))
                got = c.get(f"/admin/telemetry?since={seq}").json()
                telemetry.extend(got["samples"])
                seq = got["seq"]
                got = c.get(f"/admin/events?since={ev_seq}").json()
                events.extend(got["events"])
                ev_seq = got["seq"]
            except (httpx.HTTPError, psutil.Error) as exc:
                figures.append({"t": time.time(), "error": repr(exc)})


def idle_figures(proc: psutil.Process, engine_port: int, upstream_port: int,
                 settle_s: float = 3.0) -> dict:
    """The engine's figures once it has been idle a moment (in-flight work finished), its open fds
    told apart: sockets kept alive to the upstream (a pool, bounded), sockets from clients (none
    should be left once they closed) and the rest (runner pipes, listening socket, files)."""
    time.sleep(settle_s)
    figures = process_figures(proc)
    sockets = proc.net_connections(kind="inet")
    figures["upstream_sockets"] = sum(1 for s in sockets
                                      if s.raddr and s.raddr.port == upstream_port)
    figures["client_sockets"] = sum(1 for s in sockets if s.raddr and s.laddr.port == engine_port)
    figures["other_fds"] = figures["fds"] - figures["upstream_sockets"] - figures["client_sockets"]
    return figures


# --- the run -------------------------------------------------------------------------------------
def warm_up(url: str, hang_s: float) -> list[dict]:
    """Each kind of request once per model, so models load and pools fill before the baseline."""
    rng = random.Random(0)
    records = []
    with httpx.Client(base_url=url, timeout=httpx.Timeout(hang_s, connect=10)) as c:
        for _ in range(3):
            for kind, _w in MIX:
                records.append(send(c, kind, rng, hang_s))
    return records


def run(args) -> dict:
    duration = args.seconds
    with tempfile.TemporaryDirectory(prefix="laya-soak-") as tmp:
        folder = Path(tmp)
        gguf_a = write_tiny_gguf(folder / "alpha.gguf", seed=1)
        gguf_b = write_tiny_gguf(folder / "beta.gguf", seed=2, n_layer=3)
        upstream = StrictUpstream(REMOTE_MODEL, REMOTE_KEY, free_port(), fail_every=20).start()
        engine = EngineProcess(soak_config(gguf_a, gguf_b, upstream.url), folder,
                               env={"LAYA_SOAK_REMOTE_KEY": REMOTE_KEY}).start()
        try:
            proc = psutil.Process(engine.proc.pid)
            warm = warm_up(engine.url, args.hang_s)
            before = idle_figures(proc, engine.port, upstream.port)
            records, figures, telemetry, events, windows = [], [before], [], [], []
            stop, lock = threading.Event(), threading.Lock()
            threads = [threading.Thread(target=client_loop, daemon=True, args=(
                engine.url, 1000 + i, stop, args.hang_s, records, lock))
                for i in range(args.concurrency)]
            threads.append(threading.Thread(target=squeeze_loop, daemon=True, args=(
                engine.url, args.squeeze_every, args.squeeze_hold, stop, windows)))
            sampler = threading.Thread(target=sample_loop, daemon=True,
                                       args=(engine.url, proc, stop, figures, telemetry, events))
            started = time.time()
            for t in threads + [sampler]:
                t.start()
            stop.wait(duration)
            stop.set()
            stuck = 0
            for t in threads:
                t.join(timeout=args.hang_s + 15)
                stuck += t.is_alive()
            sampler.join(timeout=10)
            ended = time.time()
            after = idle_figures(proc, engine.port, upstream.port)
            figures.append(after)
            with httpx.Client(base_url=engine.url, timeout=30) as c:
                config = c.get("/admin/config").json()
                models = c.get("/admin/models").json()["models"]
                last = telemetry[-1]["seq"] if telemetry else 0
                telemetry.extend(c.get(f"/admin/telemetry?since={last}").json()["samples"])
                last = events[-1]["seq"] if events else 0
                events.extend(c.get(f"/admin/events?since={last}").json()["events"])
            runners_left = engine.runner_pids()
            loaded = sum(1 for m in models if m.get("pid"))
        finally:
            engine.stop()
            upstream.stop()
        engine_log = engine.log() if stuck else ""
    return judge(args, warm, records, figures, before, after, telemetry, events, windows, stuck,
                 started, ended, upstream, runners_left, loaded, config, engine_log)


def judge(args, warm, records, figures, before, after, telemetry, events, windows, stuck, started,
          ended, upstream, runners_left, loaded, config, engine_log) -> dict:
    by_outcome: dict[str, int] = {}
    by_status: dict[str, int] = {}
    by_code: dict[str, int] = {}
    for r in records:
        by_outcome[r["outcome"]] = by_outcome.get(r["outcome"], 0) + 1
        by_status[str(r["status"])] = by_status.get(str(r["status"]), 0) + 1
        if r["code"]:
            by_code[r["code"]] = by_code.get(r["code"], 0) + 1
    hung = by_outcome.get("hung", 0) + stuck
    unclean = [r for r in records if r["outcome"] in ("refused_without_hint", "bad_status",
                                                       "transport_error", "stream_cut")
               or (r["outcome"] == "stream_error" and r["code"] not in RETRYABLE_CODES)]
    live = [f for f in figures if "rss" in f]
    tail = live[-max(5, len(live) // 20):]
    rss_end = statistics.median(f["rss"] for f in tail)
    rss_growth = rss_end - before["rss"]
    # Growth over the second half alone: bounded buffers (request log, telemetry and event rings)
    # fill early in a run, a leak keeps growing.
    mid = live[len(live) // 2 - len(tail) // 2: len(live) // 2 + len(tail) // 2 + 1]
    rss_growth_second_half = rss_end - statistics.median(f["rss"] for f in mid)
    fd_growth = after["other_fds"] - before["other_fds"]
    thread_growth = after["threads"] - before["threads"]
    kinds = {k: sum(1 for r in records if r["kind"] == k) for k, _w in MIX}
    latencies = sorted(r["seconds"] for r in records if r["outcome"] == "ok")
    goals = {
        "no_hung_requests": hung == 0,
        "failures_clean_with_retry_hint": not unclean and upstream.counts["refused"] == 0,
        f"engine_rss_growth_under_{RSS_GOAL_MB}_mb": rss_growth < RSS_GOAL_MB * MB,
        "no_fd_or_thread_leak": fd_growth <= FD_ALLOWANCE and thread_growth <= THREAD_ALLOWANCE
        and after["client_sockets"] == 0 and after["upstream_sockets"] <= UPSTREAM_POOL
        and len(runners_left) <= loaded,
    }
    return {
        "bench": "soak", "short": args.short, "seconds": round(ended - started, 1),
        "concurrency": args.concurrency, "squeeze_every_s": args.squeeze_every,
        "squeeze_hold_s": args.squeeze_hold, "hang_s": args.hang_s,
        "machine": {"cpus": os.cpu_count(),
                    "ram_gib": round(psutil.virtual_memory().total / GIB, 1)},
        "requests": len(records), "warm_up_requests": len(warm),
        "warm_up_failures": [r for r in warm if r["outcome"] != "ok"],
        "by_kind": kinds, "by_outcome": by_outcome, "by_status": by_status, "by_code": by_code,
        "ok_latency_s": {"p50": _pct(latencies, 50), "p99": _pct(latencies, 99),
                         "max": latencies[-1] if latencies else None},
        "hung": hung, "unclean_failures": unclean[:50], "unclean_count": len(unclean),
        "upstream": {**upstream.counts, "refusals": upstream.refusals},
        "squeezes": windows,
        "emergency_unloads": sum(1 for e in events if e["kind"] == "emergency_unload"),
        "events_by_kind": _count(e["kind"] for e in events),
        "engine": {"rss_after_warm_up": before["rss"], "rss_end": rss_end,
                   "rss_growth": rss_growth, "rss_growth_second_half": rss_growth_second_half,
                   "rss_max": max(f["rss"] for f in live),
                   "fds_after_warm_up": before["fds"], "fds_end": after["fds"],
                   "fds_max": max(f["fds"] for f in live),
                   "other_fds_after_warm_up": before["other_fds"],
                   "other_fds_end": after["other_fds"],
                   "upstream_sockets_end": after["upstream_sockets"],
                   "client_sockets_end": after["client_sockets"],
                   "threads_after_warm_up": before["threads"], "threads_end": after["threads"],
                   "threads_max": max(f["threads"] for f in live),
                   "runners_left": len(runners_left), "models_loaded_at_end": loaded},
        "goals": goals, "passed": all(goals.values()),
        "figures": live, "telemetry": telemetry, "events": events, "config": config,
        "engine_log_tail": engine_log,
    }


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def _count(items) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def _pairs(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def table(report: dict) -> str:
    e = report["engine"]
    mib = 1 << 20
    lines = [f"Soak: {report['seconds']:.0f} s, {report['concurrency']} clients, "
             f"{report['requests']} requests, squeeze every {report['squeeze_every_s']:g} s "
             f"for {report['squeeze_hold_s']:g} s ({len(report['squeezes'])} squeezes, "
             f"{report['emergency_unloads']} emergency unloads)",
             "requests by status: " + _pairs(report["by_status"]),
             "outcomes: " + _pairs(report["by_outcome"]),
             "error codes: " + (_pairs(report["by_code"]) or "none"),
             f"upstream: served {report['upstream']['served']}, 503 on purpose "
             f"{report['upstream']['failed_on_purpose']}, refused (wrong model/key/tags) "
             f"{report['upstream']['refused']}",
             "",
             f"{'goal':<34} {'measured':<44} result"]
    rows = [
        ("no hung requests", f"{report['hung']} hung", "no_hung_requests"),
        ("failures clean, with retry hint", f"{report['unclean_count']} without",
         "failures_clean_with_retry_hint"),
        (f"engine RSS growth < {RSS_GOAL_MB} MB",
         f"{e['rss_growth'] / MB:+.1f} MB ({e['rss_after_warm_up'] / mib:.0f} -> "
         f"{e['rss_end'] / mib:.0f} MiB; 2nd half {e['rss_growth_second_half'] / MB:+.1f})",
         f"engine_rss_growth_under_{RSS_GOAL_MB}_mb"),
        ("no fd / thread leak",
         f"fds {e['other_fds_after_warm_up']}->{e['other_fds_end']} +{e['upstream_sockets_end']} "
         f"upstream +{e['client_sockets_end']} client (max {e['fds_max']}), threads "
         f"{e['threads_after_warm_up']}->{e['threads_end']}",
         "no_fd_or_thread_leak"),
    ]
    for goal, measured, key in rows:
        lines.append(f"{goal:<34} {measured:<44} {'PASS' if report['goals'][key] else 'FAIL'}")
    lat = report["ok_latency_s"]
    lines.append(f"answered requests: p50 {lat['p50']} s, p99 {lat['p99']} s, max {lat['max']} s")
    lines.append("SOAK " + ("PASS" if report["passed"] else "FAIL"))
    return "\n".join(lines)


# --- the pictures --------------------------------------------------------------------------------
def write_pngs(report: dict, out: Path, stem: str) -> list[str]:
    """The Monitor panel fed the run's telemetry and events, and the engine's own curves."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg
    import pyqtgraph.exporters  # noqa: F401 - registers ImageExporter
    from PySide6.QtWidgets import QApplication

    from laya_desktop.gui.panels.monitor_panel import MonitorPanel

    app = QApplication.instance() or QApplication(sys.argv[:1])
    written = []
    panel = MonitorPanel()
    panel.resize(1400, 1000)
    panel.add_samples(report["telemetry"])
    panel.add_events(report["events"])
    panel.set_config(report["config"])
    panel.show()
    app.processEvents()
    panel.set_window(max(60.0, report["seconds"] + 30))
    monitor_png = out / f"{stem}.png"
    if report["telemetry"] and panel.export_png(monitor_png):
        written.append(str(monitor_png))
    panel.stop()
    panel.close()

    figs = report["figures"]
    t0 = figs[0]["t"]
    x = [f["t"] - t0 for f in figs]
    layout = pg.GraphicsLayoutWidget()
    layout.setBackground("w")
    layout.resize(1200, 800)
    curves = [("engine RSS (MiB)", [f["rss"] / (1 << 20) for f in figs]),
              ("runners RSS (MiB)", [f["runners_rss"] / (1 << 20) for f in figs]),
              ("engine open fds", [f["fds"] for f in figs]),
              ("engine threads", [f["threads"] for f in figs])]
    for i, (title, y) in enumerate(curves):
        p = layout.addPlot(row=i, col=0, title=title)
        p.plot(x, y, pen=pg.mkPen("#1f77b4", width=1))
        for w in report["squeezes"]:
            region = pg.LinearRegionItem((w["start"] - t0, w["end"] - t0), movable=False,
                                         brush=pg.mkBrush(255, 80, 80, 40))
            p.addItem(region)
        p.setLabel("bottom", "seconds")
    layout.show()
    app.processEvents()
    engine_png = out / f"{stem}_engine.png"
    pg.exporters.ImageExporter(layout.scene()).export(str(engine_png))
    written.append(str(engine_png))
    layout.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--short", action="store_true",
                        help="50 s of load (about 65 s in all), for CI")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--squeeze-every", type=float, default=None,
                        help="seconds (default 180; 16 with --short)")
    parser.add_argument("--squeeze-hold", type=float, default=None,
                        help="seconds (default 15; 5 with --short)")
    parser.add_argument("--hang-s", type=float, default=60.0,
                        help="an answer later than this is hung")
    parser.add_argument("--out", type=Path, default=None,
                        help="a folder for the JSON and PNGs (default: the run's history in "
                             "bench/results/soak/, or soak_short/)")
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    begun = begin()
    args.seconds = 50.0 if args.short else args.minutes * 60
    args.squeeze_every = args.squeeze_every or (16.0 if args.short else 180.0)
    args.squeeze_hold = args.squeeze_hold or (5.0 if args.short else 15.0)
    report = run(args)
    stem = "soak_short" if args.short else "soak"
    to_history = args.out is None or args.out.resolve() == RESULTS
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) if to_history else args.out
        folder.mkdir(parents=True, exist_ok=True)
        pngs = [] if args.no_png else write_pngs(report, folder, stem)
        text = table(report)
        print(text, file=sys.stderr if args.json else sys.stdout)
        # The telemetry and events are in the Monitor's PNG; the JSON keeps the engine's own figures.
        kept = {k: v for k, v in report.items() if k not in ("telemetry", "events", "config")}
        if to_history:
            suffixes = {f"{stem}.png": "png", f"{stem}_engine.png": "engine.png"}
            write(stem, kept, begun, {suffixes[Path(png).name]: Path(png) for png in pngs})
        else:
            kept["pngs"] = pngs
            write_to(folder / f"{stem}.json", kept, begun)
    if args.json:
        print(json.dumps({k: v for k, v in kept.items() if k != "figures"}))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
