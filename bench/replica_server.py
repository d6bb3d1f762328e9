"""A stand-in replica for the strategy benches: an OpenAI chat completions server on loopback,
in its own process, whose answer takes a controlled time, and that can serve one request at a
time (the others wait in its queue, as a llama-server with one slot or a busy GPU box does).

Each request's time is drawn from [low, high] seconds (seeded, so two runs see the same draws);
the first token comes after FIRST_TOKEN_PART of it, the rest are spread evenly over the remainder.
Streamed or not. The replica keeps, per request, when it arrived, when its turn began and when its
answer ended (GET /stats), so a bench can tell the replica's own time (queue included) from what a
gateway in front of it added. A request is named by a "[req N]" tag in its last message;
"[req N K]" also gives the key K its time is drawn by.

    with replica_processes({"fast": Replica(0.2, 0.2), "slow": Replica(0.5, 0.5)}) as urls: ...
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import random
import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FIRST_TOKEN_PART = 0.1   # a short prompt read, then a steady stream of tokens
TOKENS = 8
_TAG = re.compile(r"\[req (\d+)(?: (\d+))?\]")


@dataclass(frozen=True)
class Replica:
    low_s: float
    high_s: float
    one_at_a_time: bool = False
    seed: int = 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, name: str, spec: Replica):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.name, self.spec = name, spec
        self.turn = threading.Lock()            # held while serving, when one at a time
        self.books = threading.Lock()
        self.rng = random.Random(spec.seed)
        self.records: list[dict] = []
        self.epoch = time.time()

    def draw(self, key: int | None) -> float:
        """A request's time: from its draw key when it has one (the same request takes the same
        time on any replica and in every run, so two strategies meet the same work), else the
        replica's own sequence."""
        if key is not None:
            return random.Random(key).uniform(self.spec.low_s, self.spec.high_s)
        with self.books:
            return self.rng.uniform(self.spec.low_s, self.spec.high_s)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self):
        if self.path.startswith("/stats"):
            with self.server.books:
                self._json(200, {"name": self.server.name, "records": list(self.server.records)})
        elif self.path.startswith("/v1/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.name, "object": "model"}]})
        else:
            self._json(200, {"status": "ok"})

    def do_POST(self):
        arrived = time.time()
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        messages = body.get("messages") or [{}]
        found = _TAG.search(str(messages[-1].get("content") or ""))
        tokens = max(1, min(int(body.get("max_tokens") or TOKENS), 64))
        took = self.server.draw(int(found.group(2)) if found and found.group(2) else None)
        turn = self.server.turn if self.server.spec.one_at_a_time else contextlib.nullcontext()
        with turn:
            began = time.time()
            if body.get("stream"):
                self._stream(took, tokens, bool((body.get("stream_options") or {}).get("include_usage")))
            else:
                time.sleep(took)
                self._json(200, _completion(self.server.name, tokens))
            ended = time.time()
        with self.server.books:
            self.server.records.append({"req": int(found.group(1)) if found else None,
                                        "arrived": arrived, "began": began, "ended": ended})

    def _stream(self, took: float, tokens: int, usage: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        first = took * FIRST_TOKEN_PART
        gap = (took - first) / max(tokens - 1, 1)
        time.sleep(first)
        for i in range(tokens):
            if i:
                time.sleep(gap)
            self._chunk({"id": "r", "object": "chat.completion.chunk", "created": 0,
                         "model": self.server.name, "choices": [
                             {"index": 0, "delta": {"content": "tok "},
                              "finish_reason": "stop" if i == tokens - 1 else None}]})
        if usage:
            self._chunk({"id": "r", "object": "chat.completion.chunk", "created": 0,
                         "model": self.server.name, "choices": [],
                         "usage": {"prompt_tokens": 10, "completion_tokens": tokens,
                                   "total_tokens": 10 + tokens}})
        self._write(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, payload: dict) -> None:
        self._write(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _write(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _completion(name: str, tokens: int) -> dict:
    return {"id": "r", "object": "chat.completion", "created": 0, "model": name,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "tok " * tokens}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}}


def _serve(name: str, spec: Replica, port_out) -> None:
    server = _Server(name, spec)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    port_out.send(server.server_port)
    server.serve_forever()


@contextlib.contextmanager
def replica_processes(specs: dict[str, Replica]):
    """{name: base URL ending /v1} for replicas serving in their own processes meanwhile."""
    procs, urls = [], {}
    try:
        for name, spec in specs.items():
            receive, send = multiprocessing.Pipe(duplex=False)
            proc = multiprocessing.Process(target=_serve, args=(name, spec, send), daemon=True)
            proc.start()
            procs.append(proc)
            urls[name] = f"http://127.0.0.1:{receive.recv()}/v1"
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.join(5)
