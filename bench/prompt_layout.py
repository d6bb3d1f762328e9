"""How much of its prompt an agent's new session shares with its last one, as Laya lays it out.

The real clients (Claude Code and Codex CLI from .agents/, started by `laya launch`) each send
their first turn twice, from two different project folders of one user, to a local capture
server that keeps the request body and answers 400. Each body then goes through Laya's own API
parser and the built-in model's chat template (SmolLM2's GGUF template, what the shipped `agents`
rule serves) in two layouts of the tools that Laya writes into the prompt itself:

- tools_first (Laya's layout): the tools section, then the client's system text;
- system_first (the layout before): the system text, then the tools section.

Counted in SmolLM2's tokens: the prompt, and the prefix the second session shares with the first
(what a prompt cache can restore instead of reading). The baseline is system_first, run side by
side on the same two captured requests. Takes about a minute (the clients start four times).

    .venv/bin/python bench/prompt_layout.py [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from publish import begin, publish  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
AGENTS_BIN = REPO / ".agents" / "node_modules" / ".bin"
QUESTION = "In one sentence, what is the sea?"
# name: (client, laya launch options, the client's arguments)
CLIENTS = {
    "claude": ("claude", [], ["-p", QUESTION]),
    "claude --no-auto-memory": ("claude", ["--no-auto-memory"], ["-p", QUESTION]),
    "codex": ("codex", [], ["exec", "--skip-git-repo-check", QUESTION]),
}
PATHS = {"claude": "/v1/messages", "codex": "/v1/responses"}


class Capture(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: list[tuple[str, dict]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(200, {"status": "ok"})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0]
        try:
            self.server.bodies.append((path, json.loads(raw)))
        except ValueError:
            pass
        if path.endswith("/messages"):
            self._answer(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                          "message": "captured"}})
        else:
            self._answer(400, {"error": {"message": "captured", "type": "invalid_request_error"}})


def capture_first_turn(name: str, capture: Capture, home: Path, project: Path) -> dict:
    client, options, client_args = CLIENTS[name]
    project.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(home), "PATH": f"{AGENTS_BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CODEX_HOME", None)
    before = len(capture.bodies)
    subprocess.run([sys.executable, "-m", "laya_desktop", "launch", client, "--url", capture.url,
                    *options, "--", *client_args], cwd=project, env=env, stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, timeout=180)
    turns = [body for path, body in capture.bodies[before:] if path.endswith(PATHS[client])
             and (body.get("tools") or [])]
    if not turns:
        raise SystemExit(f"{client} sent no turn with tools to the capture server")
    return turns[0]


def chat_of(client: str, body: dict) -> tuple[list[dict], list[dict] | None]:
    from starlette.datastructures import Headers
    from laya_desktop.engine.apis.messages import MESSAGES
    from laya_desktop.engine.apis.responses import RESPONSES
    api = MESSAGES if client == "claude" else RESPONSES
    call = api.parse(body, Headers({}))
    return call.chat["messages"], call.chat.get("tools")


def render(messages, tools, tools_first: bool, fmt) -> str:
    from laya_desktop.runners.chat_templates import normalize_messages
    from laya_desktop.runners.tool_prompt import inline_tools, tools_system_prompt
    messages = normalize_messages(messages)
    if tools_first:
        return fmt.render(messages, tools).text
    # the layout before: the system text, then the tools section
    laid = inline_tools(messages, None, fmt.tool_role)
    section = tools_system_prompt(tools)
    if laid and laid[0]["role"] == "system" and laid[0]["content"]:
        laid[0] = {"role": "system", "content": f"{laid[0]['content']}\n\n{section}"}
    else:
        laid.insert(0, {"role": "system", "content": section})
    return fmt.formatter(laid).text


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def smollm2():
    from llama_cpp import Llama, llama_cpp as L
    from laya_desktop.runners.builtin import resolve_model_path
    from laya_desktop.runners.chat_templates import select_format
    model = Llama(str(resolve_model_path("builtin:smollm2-135m-instruct")), vocab_only=True, verbose=False)
    template = L.llama_model_chat_template(model.model, None)
    template = template.decode() if template else None
    fmt = select_format(None, template, "llama", "", "")
    return model, fmt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = begin()
    model, fmt = smollm2()
    capture = Capture()
    rows, report = [], {"model": "builtin:smollm2-135m-instruct", "chat_format": fmt.name,
                        "clients": {}}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for name in CLIENTS:
            client = CLIENTS[name][0]
            first = capture_first_turn(name, capture, home, Path(tmp) / "work" / "alpha-project")
            second = capture_first_turn(name, capture, home, Path(tmp) / "other" / "beta-project")
            entry = {}
            for layout, tools_first in (("system_first", False), ("tools_first", True)):
                tokens = [model.tokenize(render(*chat_of(client, body), tools_first, fmt).encode(),
                                         add_bos=False, special=True) for body in (first, second)]
                entry[layout] = {"prompt_tokens": len(tokens[1]),
                                 "shared_prefix_tokens": shared_prefix(*tokens)}
                rows.append((name, layout, len(tokens[1]), entry[layout]["shared_prefix_tokens"]))
            report["clients"][name] = entry
    capture.shutdown()
    width = max(len(r[0]) + len(r[1]) for r in rows) + 3
    lines = [f"{'client / layout':<{width}} {'prompt':>8} {'shared':>8} {'share':>7}"]
    for name, layout, total, shared in rows:
        lines.append(f"{name + ' / ' + layout:<{width}} {total:>8} {shared:>8} {shared / total:>7.1%}")
    publish("prompt_layout", report, "\n".join(lines), args.json, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
