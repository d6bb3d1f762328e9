"""Session affinity on two real llama-server replicas behind one Laya rule: how much of each
turn's prompt a replica found in its cache, with affinity and without, and what a turn took.

Two llama-servers (bench/llama_server.py's build) serve the built-in Gemma 3 270M, each with
SLOTS slots and one thread; Laya's rule spreads over them with least_loaded, once with
`affinity: false` and once with affinity on (the session key is the conversation's prefix hash:
the clients send no key). Each mode starts from fresh replicas (empty caches). SESSIONS agent
sessions run at once, starting START_GAP_S apart. Each is a client that sends its turns one
after another, with a pause of THINK_S between an answer and the next turn (the agent running a
tool; the same pauses in both modes). The prompt is agent-sized: instructions and tool
definitions shared by every session, then the session's own project notes and task, growing by
the answer and a new request each turn; greedy, non-streamed.
The replica reports the cached part of each prompt (usage.prompt_tokens_details.cached_tokens,
as llama-server's timings.cache_n), which Laya relays.

    .venv/bin/python bench/replicas.py --cases affinity [--sessions 4] [--turns 5]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from engine_harness import EngineProcess, free_port  # noqa: E402
from llama_server import ensure_llama_server  # noqa: E402
from publish import begin, publish  # noqa: E402

from laya_desktop.loadtest.report import percentile  # noqa: E402

SLOTS = 2
N_CTX = 8192            # per slot
MAX_TOKENS = 16
THINK_S = (0.5, 3.0)    # between an answer and the next turn: the agent runs its tool
START_GAP_S = 1.0       # sessions begin one after another, not in the same instant
TOOLS = ("read_file", "write_file", "apply_patch", "list_dir", "grep", "run_shell", "run_tests",
         "git_diff", "git_log", "web_fetch", "ask_user", "update_plan")


def instructions() -> str:
    """What every session of the agent sends first: its rules and its tools (about 2,500 tokens
    of Gemma's)."""
    rules = [f"{i}. " + r for i, r in enumerate((
        "Read the relevant files before you change anything, and keep changes minimal.",
        "Run the project's tests after each change and report what failed.",
        "Never run destructive commands (rm -rf, git reset --hard) without asking the user.",
        "Prefer the project's existing helpers over new dependencies.",
        "Explain each change in one or two sentences; no long essays.",
        "When a command fails, read its error output before trying again.",
        "Keep secrets out of logs, commits and answers.",
        "Ask the user when the task is ambiguous instead of guessing.") * 2, 1)]
    tools = [{"type": "function", "function": {
        "name": name, "description": f"The {name.replace('_', ' ')} tool: use it to "
                                     f"{name.replace('_', ' ')} in the user's workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "A path relative to the workspace root."},
            "content": {"type": "string", "description": "Text to write or a pattern to find."},
            "timeout_s": {"type": "integer", "description": "Seconds before giving up."}},
            "required": ["path"]}}} for name in TOOLS]
    return ("You are a coding agent working in the user's repository.\n" + "\n".join(rules)
            + "\n\n# Tools\n" + json.dumps(tools, indent=1))


def first_message(session: int) -> str:
    notes = "\n".join(f"- module_{session}_{i}.py: part {i} of project {session}'s service layer, "
                      f"owned by team {session}; see docs/{session}/{i}.md" for i in range(12))
    return (f"# Project {session} notes (AGENTS.md)\n{notes}\n\n"
            f"Task: find why test_{session} fails in project {session} and fix it.")


def _servers(model: str, n: int, folder: Path) -> list[tuple[subprocess.Popen, str]]:
    binary = ensure_llama_server(log=lambda m: print(m, file=sys.stderr))
    out = []
    for i in range(n):
        port = free_port()
        log = open(folder / f"llama-server-{i}.log", "wb")
        proc = subprocess.Popen([str(binary), "-m", model, "-c", str(N_CTX * SLOTS), "-np", str(SLOTS),
                                 "-t", "1", "-tb", "1", "--host", "127.0.0.1", "--port", str(port),
                                 "--alias", "gemma", "--no-webui"], stdout=log, stderr=subprocess.STDOUT)
        out.append((proc, f"http://127.0.0.1:{port}"))
    for proc, url in out:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} not up within 120 s")
            time.sleep(0.3)
    return out


def _stop(procs) -> None:
    for proc, _url in procs:
        proc.terminate()
    for proc, _url in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _session(client: httpx.AsyncClient, url: str, session: int, turns: int, system: str) -> list[dict]:
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": first_message(session)}]
    out = []
    think = random.Random(session)
    await asyncio.sleep(session * START_GAP_S)
    for turn in range(turns):
        if turn:
            await asyncio.sleep(think.uniform(*THINK_S))
        started = time.perf_counter()
        r = await client.post(url + "/v1/chat/completions", json={
            "model": "auto", "messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0})
        took = (time.perf_counter() - started) * 1000
        if r.status_code != 200:
            out.append({"session": session, "turn": turn, "status": r.status_code,
                        "error": r.text[:300], "latency_ms": round(took, 1)})
            break
        data = r.json()
        usage = data.get("usage") or {}
        out.append({"session": session, "turn": turn, "status": 200, "latency_ms": round(took, 1),
                    "replica": r.headers.get("x-laya-model"),
                    "prompt_tokens": usage.get("prompt_tokens"),
                    "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens")})
        answer = data["choices"][0]["message"].get("content") or ""
        messages += [{"role": "assistant", "content": answer},
                     {"role": "user", "content": f"Step {turn + 2}: go on with the task for project "
                                                 f"{session}; say what you would run next."}]
    return out


async def _drive(url: str, sessions: int, turns: int) -> list[dict]:
    system = instructions()
    async with httpx.AsyncClient(timeout=900) as client:
        runs = await asyncio.gather(*(_session(client, url, s, turns, system) for s in range(sessions)))
    return [t for run in runs for t in run]


def run_mode(model: str, affinity: bool, sessions: int, turns: int, folder: Path) -> dict:
    folder.mkdir()
    servers = _servers(model, 2, folder)
    try:
        names = [f"replica-{i}" for i in range(len(servers))]
        models = [{"name": n, "backend": "openai", "base_url": url + "/v1", "remote_model": "gemma",
                   "slots": SLOTS} for n, (_p, url) in zip(names, servers)]
        config = {"models": models, "memory": {"guard": False},
                  "routes": [{"name": "agents", "targets": names, "strategy": "least_loaded",
                              "affinity": affinity}]}
        engine = EngineProcess(config, folder).start()
        try:
            started = time.perf_counter()
            rows = asyncio.run(_drive(engine.url, sessions, turns))
            wall = time.perf_counter() - started
        finally:
            engine.stop()
    finally:
        _stop(servers)
    return {"affinity": affinity, "wall_s": round(wall, 1), "turns": rows, **summarize(rows)}


def summarize(rows: list[dict]) -> dict:
    """Over the turns after each session's first: the cached share of their prompt tokens, the
    share of turns that found the whole conversation so far in the cache, and the turn latency."""
    later = [r for r in rows if r["turn"] > 0 and r["status"] == 200 and r.get("prompt_tokens")]
    previous = {(r["session"], r["turn"]): r for r in rows if r["status"] == 200}
    whole = 0
    for r in later:
        before = previous.get((r["session"], r["turn"] - 1))
        # the last turn's prompt, all of it, came back from the cache (its answer is new)
        if before and (r["cached_tokens"] or 0) >= before["prompt_tokens"] - 1:
            whole += 1
    prompt = sum(r["prompt_tokens"] for r in later)
    cached = sum(r["cached_tokens"] or 0 for r in later)
    lat = [r["latency_ms"] for r in later]
    first = [r["latency_ms"] for r in rows if r["turn"] == 0 and r["status"] == 200]
    moved = sum(1 for r in later
                if previous.get((r["session"], r["turn"] - 1), {}).get("replica") != r["replica"])
    return {"later_turns": len(later), "errors": sum(1 for r in rows if r["status"] != 200),
            "cached_share_pct": round(100 * cached / prompt, 1) if prompt else None,
            "whole_history_cached_pct": round(100 * whole / len(later), 1) if later else None,
            "recomputed_tokens_mean": round((prompt - cached) / len(later), 1) if later else None,
            "moved_replica_pct": round(100 * moved / len(later), 1) if later else None,
            "turn_latency_mean_ms": round(statistics.fmean(lat), 1) if lat else None,
            "turn_latency_p95_ms": round(percentile(lat, 95), 1) if lat else None,
            "first_turn_latency_mean_ms": round(statistics.fmean(first), 1) if first else None}


def table(modes: list[dict]) -> str:
    head = (f"{'affinity':<9} {'turns':>5} {'cached %':>9} {'whole hist %':>12} {'recomputed':>10} "
            f"{'moved %':>8} {'turn mean ms':>12} {'turn p95 ms':>11} {'1st turn ms':>11} {'errors':>6}")
    lines = [head, "-" * len(head)]
    for m in modes:
        lines.append(f"{'on' if m['affinity'] else 'off':<9} {m['later_turns']:>5} "
                     f"{m['cached_share_pct']:>9} {m['whole_history_cached_pct']:>12} "
                     f"{m['recomputed_tokens_mean']:>10} {m['moved_replica_pct']:>8} "
                     f"{m['turn_latency_mean_ms']:>12} {m['turn_latency_p95_ms']:>11} "
                     f"{m['first_turn_latency_mean_ms']:>11} {m['errors']:>6}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    started = begin()
    from laya_desktop.runners.builtin import resolve_model_path
    model = str(resolve_model_path("builtin:gemma-3-270m"))
    with tempfile.TemporaryDirectory() as tmp:
        modes = [run_mode(model, affinity, args.sessions, args.turns, Path(tmp) / str(affinity))
                 for affinity in (False, True)]
    report = {"model": "builtin:gemma-3-270m", "replicas": 2, "slots_per_replica": SLOTS,
              "n_ctx_per_slot": N_CTX, "threads_per_replica": 1, "sessions": args.sessions,
              "turns": args.turns, "max_tokens": MAX_TOKENS, "strategy": "least_loaded",
              "think_s": list(THINK_S), "start_gap_s": START_GAP_S,
              "instructions_chars": len(instructions()), "modes": modes}
    publish("replicas_affinity", report, table(modes), args.json, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
