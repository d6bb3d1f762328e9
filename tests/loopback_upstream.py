"""A minimal OpenAI-compatible upstream on loopback: every POST is a chat completion that says
which upstream answered, after an optional delay, and is counted (a remote target for tests)."""
from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatUpstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, name: str = "upstream", delay_s: float = 0.0):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.name, self.delay_s, self.hits = name, delay_s, 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: ChatUpstream

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.server.lock:
            self.server.hits += 1
        time.sleep(self.server.delay_s)
        body = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": self.server.name,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": f"from {self.server.name}"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def chat_upstreams(**delays: float):
    """{name: ChatUpstream} serving in threads, e.g. chat_upstreams(fast=0.02, slow=0.2)."""
    servers = {name: ChatUpstream(name, delay) for name, delay in delays.items()}
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield servers
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()
