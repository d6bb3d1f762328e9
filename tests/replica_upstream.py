"""A replica for the health tests: an OpenAI-compatible server in its own process, so that a test
can kill it, stop it (SIGSTOP: it still accepts connections but never answers) and start it again
on the same port. Chat completions (whole or streamed) say which replica answered; GET /health
and GET /v1/models answer as llama-server's do.

Run: python tests/replica_upstream.py NAME PORT [DELAY_S]
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    name = "replica"
    delay_s = 0.0

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, b'{"status":"ok"}')
        elif self.path == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [
                {"id": self.name, "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error":{"message":"not found"}}')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        time.sleep(self.delay_s)
        text = f"from {self.name}"
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        if not body.get("stream"):
            self._send(200, json.dumps({
                "id": "x", "object": "chat.completion", "created": 0, "model": self.name,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": usage}).encode())
            return
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": usage}]
        events = b"".join(b"data: " + json.dumps({"id": "x", "object": "chat.completion.chunk",
                                                   "created": 0, "model": self.name, **c}).encode()
                          + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        self._send(200, events, "text/event-stream")

    def log_message(self, *args):
        pass


def serve(name: str, port: int, delay_s: float) -> None:
    _Handler.name, _Handler.delay_s = name, delay_s
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ReplicaProcess:
    """One replica process on a fixed port: start, kill, stop (SIGSTOP), resume, start again."""

    def __init__(self, name: str, delay_s: float = 0.0):
        self.name, self.delay_s, self.port = name, delay_s, free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 15.0) -> "ReplicaProcess":
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), self.name,
                                      str(self.port), str(self.delay_s)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"replica {self.name} not listening within {timeout} s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)   # a stopped process must wake to die
            self.proc.kill()
            self.proc.wait()

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)
