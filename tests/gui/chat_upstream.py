"""A loopback OpenAI-compatible upstream for the chat tests: it records each request body the
engine forwards and answers with the streamed reply a test queued (text, tool calls, a finish)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-up", "object": "chat.completion.chunk", "model": "up",
            "choices": choices, **extra}


def text_reply(text: str, finish: str = "stop", piece: int = 5) -> list[dict]:
    """`text` streamed `piece` characters at a time, then the finish and the usage."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": text[i:i + piece]}) for i in range(0, len(text), piece)]
    return chunks + [chunk({}, finish),
                     chunk(None, usage={"prompt_tokens": 5, "completion_tokens": len(chunks)})]


def tool_call_reply(name: str, arguments: str) -> list[dict]:
    half = len(arguments) // 2
    return [chunk({"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function",
                 "function": {"name": name, "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:half]}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
            chunk({}, "tool_calls")]


class ChatUpstream:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.pace_s = 0.0          # a pause between chunks, as a model streams
        self._replies: list[list[dict]] = []
        self._lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                with upstream._lock:
                    upstream.bodies.append(body)
                    reply = upstream._replies.pop(0) if upstream._replies else text_reply("ok")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                try:
                    for c in reply:
                        time.sleep(upstream.pace_s)
                        self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass     # the chat stopped the reply

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def queue(self, *replies: list[dict]) -> None:
        with self._lock:
            self._replies.extend(replies)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
