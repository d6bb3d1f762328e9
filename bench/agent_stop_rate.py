"""How often the built-in SmolLM2 ends Claude Code's real turn by itself, per sampling setting.

Claude Code fails an answer that hits the length limit, so a turn only works when the model
stops. The script captures Claude Code's first request (a loopback server that records it and
answers 400), reads its 12k-token prompt once into an in-process llama.cpp runner, then samples
the answer `--trials` times per setting (the prompt's KV is reused), each up to `--cap` tokens.
Prints a table and writes bench/results/agent_stop_rate/. Reading the prompt takes minutes.

    .venv/bin/python bench/agent_stop_rate.py --trials 10
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from publish import begin, write

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / ".agents" / "node_modules" / ".bin" / "claude"
SETTINGS = {
    "llama-server default (temperature 0.8)": {},
    "DRY 0.8": {"dry_multiplier": 0.8},
    "shipped: temperature 0.2, top_p 0.9, repeat_penalty 1.1":
        {"temperature": 0.2, "top_p": 0.9, "repeat_penalty": 1.1},
    "greedy (temperature 0), top_p 0.9, repeat_penalty 1.1":
        {"temperature": 0, "top_p": 0.9, "repeat_penalty": 1.1},
}
PROMPT = "In one sentence, what is the sea?"
# Other first prompts a user gives an agent; only the end of the 12k-token turn changes, so
# each costs a short prompt read and greedy decoding is tried on more than one input.
QUESTIONS = [PROMPT, "What does this project do?", "Say hello.", "What is 2 + 2?",
             "Explain what a mutex is in one sentence.", "Which files are in this folder?",
             "Write a haiku about the rain.", "What is Python good for?",
             "How do I reverse a list in Python?", "Thanks, that is all for today.",
             "What time zone is UTC?", "Name three colours."]


def capture_claude_request() -> dict:
    bodies: list[bytes] = []

    class Capture(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))))
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"type":"error","error":{"type":"invalid_request_error","message":"captured"}}')

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "ANTHROPIC_API_KEY": "unused",
               "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_port}",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        subprocess.run([str(CLAUDE), "-p", PROMPT], cwd=home, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    server.shutdown()
    if not bodies:
        raise SystemExit("Claude Code sent no request (is it installed? `make test` installs it)")
    return json.loads(bodies[0])


def generate(backend, command: dict, req_id: str) -> tuple[str, int]:
    events = backend.submit({**command, "id": req_id})
    final = next((e for e in events if e["event"] in ("done", "error")), None)
    while final is None:
        for event in backend.step():
            if event["event"] in ("done", "error"):
                final = event
    if final["event"] == "error":
        raise SystemExit(f"the runner refused the turn: {final['message']}")
    return final["finish_reason"], final["usage"]["completion_tokens"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--cap", type=int, default=300, help="tokens before a trial counts as not stopping")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="how many first prompts")
    parser.add_argument("--only", default="", help="only the settings whose label holds this text")
    args = parser.parse_args()
    begun = begin()

    from laya_desktop.engine.apis.messages import MessagesApi
    from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend

    captured = json.dumps(capture_claude_request())
    backend = LlamaCppBackend({"name": "smollm2", "path": "builtin:smollm2-135m-instruct",
                               "n_ctx": 16384, "parallel": 1})
    rows = {label: {"params": params, "stopped": 0, "trials": 0, "tokens": []}
            for label, params in SETTINGS.items() if not args.only or args.only in label}
    n = 0
    for question in QUESTIONS[:args.questions]:
        body = json.loads(captured.replace(json.dumps(PROMPT)[1:-1], json.dumps(question)[1:-1]))
        command = MessagesApi().parse(body, {}).command
        for label, row in rows.items():
            greedy = row["params"].get("temperature") == 0
            for _ in range(1 if greedy else args.trials):   # greedy gives the same answer again
                n += 1
                sent = {**command, "params": {**command.get("params", {}), **row["params"],
                                              "max_tokens": args.cap}}
                reason, tokens = generate(backend, sent, f"t{n}")
                row["trials"] += 1
                row["stopped"] += reason == "stop"
                row["tokens"].append(tokens)
                print(f"{question[:30]:<32}{label:<58}{reason:<8}{tokens:>5}", flush=True)
    print()
    for label, row in rows.items():
        print(f"{label:<58} stopped {row['stopped']:>3} / {row['trials']}")
    write("agent_stop_rate", {"cap": args.cap, "questions": QUESTIONS[:args.questions],
                              "settings": rows}, begun)


if __name__ == "__main__":
    main()
