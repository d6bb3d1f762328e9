"""Prefix reuse on a real agent's second turn: Codex CLI against the shipped models.yaml.

`codex exec` runs a first turn (its ~9k tokens of instructions and tools, routed by the `agents`
rule to the built-in SmolLM2), then `codex exec resume --last` sends the follow-up. Codex stores
nothing upstream (`store: false`), so the second request repeats the whole first turn plus the
answer; the runner should read only what is new. Prints each turn's prompt tokens, the tokens it
found already in the KV cache, and its time to first token; writes bench/results/agent_second_turn/.
Takes several minutes on 2 cores (the first turn's prompt is read once).

    .venv/bin/python bench/agent_second_turn.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from agent_clients import codex_env  # noqa: E402
from engine_harness import running_engine  # noqa: E402
from publish import begin, publish  # noqa: E402

CODEX = ROOT / ".agents" / "node_modules" / ".bin" / "codex"
FIRST = "In one sentence, what is the sea?"
SECOND = "And in one word?"


def main() -> int:
    begun = begin()
    if not CODEX.exists():
        raise SystemExit(f"{CODEX} is missing: `make test` installs it from npm")
    config = yaml.safe_load((ROOT / "models.yaml").read_text())
    with tempfile.TemporaryDirectory() as tmp, running_engine(config, Path(tmp)) as engine:
        home = Path(tmp) / "home"
        home.mkdir()
        env = codex_env(home, engine.url + "/v1", "gpt-5-codex")
        turns = []
        for args in (["exec", "--skip-git-repo-check", FIRST],
                     ["exec", "resume", "--last", "--skip-git-repo-check", SECOND]):
            started = time.monotonic()
            done = subprocess.run([str(CODEX), *args], cwd=home, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"codex {' '.join(args[:2])} failed: {done.stderr[-2000:]}")
            turns.append({"client_s": round(time.monotonic() - started, 1),
                          "reply": done.stdout.strip()[-200:]})
        log = [r for r in httpx.get(engine.url + "/admin/requests", timeout=10).json()["requests"]
               if r["path"] == "/v1/responses"]
    rows = [{k: r.get(k) for k in ("rule", "model", "status", "prompt_tokens", "cached_tokens",
                                   "completion_tokens", "ttft_ms", "duration_ms")} for r in log]
    report = {"client": "Codex CLI (npm @openai/codex)", "prompts": [FIRST, SECOND],
              "turns": turns, "requests": rows}
    lines = [f"{'request':<8}{'prompt tokens':>15}{'from KV cache':>15}{'new':>8}{'TTFT':>12}"]
    for i, r in enumerate(rows, 1):
        cached = r["cached_tokens"] or 0
        lines.append(f"{i:<8}{r['prompt_tokens'] or 0:>15}{cached:>15}"
                     f"{(r['prompt_tokens'] or 0) - cached:>8}{(r['ttft_ms'] or 0) / 1000:>11.1f}s")
    publish("agent_second_turn", report, "\n".join(lines), False, started=begun)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
