"""Regression tests from a review of the engine: unload / config change while requests wait,
clients that leave while queued."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from engine_harness import running_engine
from test_engine_api import LONG, tiny_config


def _model(c: httpx.Client, name: str = "tiny") -> dict:
    return {m["name"]: m for m in c.get("/admin/models").json()["models"]}[name]


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _hold_slot_and_queue_one(eng, c, pool):
    """A long stream holds the only slot; a second request waits in the queue behind it."""
    first = c.stream("POST", "/v1/chat/completions", json={**LONG, "stream": True})
    r = first.__enter__()
    lines = r.iter_lines()
    next(lines)
    queued = pool.submit(lambda: eng.client(timeout=60).post(
        "/v1/chat/completions", json={**LONG, "max_tokens": 2}))
    _wait(lambda: _model(c)["queued"] == 1, 5, "second request never queued")
    return first, lines, queued


def _owned_pids(c: httpx.Client) -> set[int]:
    return {m["pid"] for m in c.get("/admin/models").json()["models"] if m["pid"]}


def test_unload_while_a_request_waits_does_not_hang_or_leak(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf, n_ctx=32768, parallel=1)
    config["scheduler"] = {"max_queue": 4, "queue_timeout_ms": 30000}
    with running_engine(config, tmp_path) as eng, eng.client(timeout=20) as c, \
            ThreadPoolExecutor(1) as pool:
        for _ in range(3):
            first, lines, queued = _hold_slot_and_queue_one(eng, c, pool)
            try:
                r = c.post("/admin/models/tiny/unload")   # must not hang
                assert r.status_code == 200
                rest = list(lines)
                assert any("model_unloaded" in line for line in rest)
            finally:
                first.__exit__(None, None, None)
            assert queued.result(timeout=30).status_code in (200, 503)
            _wait(lambda: _model(c)["active"] == 0, 5, "slot never freed")
            time.sleep(0.3)
            model = _model(c)
            assert model["state"] in ("ready", "unloaded"), model
            # every runner process is one the engine knows about
            assert set(eng.runner_pids()) <= _owned_pids(c)
            assert len(eng.runner_pids()) <= 1
        r = c.post("/v1/chat/completions", json={**LONG, "max_tokens": 2})
        assert r.status_code == 200


def test_config_change_while_a_request_waits_leaves_no_orphan_runner(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf, n_ctx=32768, parallel=1)
    config["scheduler"] = {"max_queue": 4, "queue_timeout_ms": 30000}
    with running_engine(config, tmp_path) as eng, eng.client(timeout=20) as c, \
            ThreadPoolExecutor(1) as pool:
        first, lines, queued = _hold_slot_and_queue_one(eng, c, pool)
        try:
            new = c.get("/admin/config").json()
            new["models"][0]["n_ctx"] = 16384
            assert c.put("/admin/config", json=new).status_code == 200
            rest = list(lines)
            assert any("model_unloaded" in line for line in rest)
        finally:
            first.__exit__(None, None, None)
        assert queued.result(timeout=30).status_code in (200, 503)
        deadline = time.monotonic() + 10     # the replaced runner may still be exiting
        while not set(eng.runner_pids()) <= _owned_pids(c):
            assert time.monotonic() < deadline, "a runner the engine no longer tracks"
            time.sleep(0.1)
        r = c.post("/v1/chat/completions", json={**LONG, "max_tokens": 2})
        assert r.status_code == 200
        assert set(eng.runner_pids()) <= _owned_pids(c)
        assert len(eng.runner_pids()) == 1


def test_client_leaving_while_queued_frees_its_queue_place(tiny_gguf, tmp_path):
    config = tiny_config(tiny_gguf, n_ctx=32768, parallel=1)
    config["scheduler"] = {"max_queue": 1, "queue_timeout_ms": 30000}
    with running_engine(config, tmp_path) as eng, eng.client(timeout=20) as c, \
            ThreadPoolExecutor(1) as pool:
        with c.stream("POST", "/v1/chat/completions", json={**LONG, "stream": True}) as r:
            lines = r.iter_lines()
            next(lines)
            for stream in (False, True):
                try:
                    with eng.client(timeout=1.0) as impatient:
                        impatient.post("/v1/chat/completions",
                                       json={**LONG, "max_tokens": 2, "stream": stream})
                except httpx.ReadTimeout:
                    pass
                _wait(lambda: _model(c)["queued"] == 0, 3, "a gone client kept its queue place")
            queued = pool.submit(lambda: eng.client(timeout=60).post(
                "/v1/chat/completions", json={**LONG, "max_tokens": 2}))
            _wait(lambda: _model(c)["queued"] == 1, 5, "the next request was not queued")
        assert queued.result(timeout=30).status_code == 200
        statuses = [x["status"] for x in c.get("/admin/requests").json()["requests"]]
        assert statuses.count(499) >= 2



def test_runner_stdin_reader_splits_lines_across_chunks(tmp_path):
    """Commands reach the runner whole and in order, however the pipe cuts them (one line far
    longer than a 64 KiB read, several lines in one read, a last line without a newline)."""
    import json
    import subprocess
    import sys
    script = ("import queue, sys\n"
              "from laya_desktop.runners.runner_main import _read_stdin\n"
              "q = queue.Queue()\n"
              "_read_stdin(q)\n"
              "out = []\n"
              "while (item := q.get()) is not None:\n"
              "    out.append([len(item), item[:12].decode(), type(item).__name__])\n"
              "print(__import__('json').dumps(out))\n")
    big = b'{"op":"generate","prompt":"' + b"x" * (3 << 20) + b'"}'
    feed = big + b"\n\n" + b'{"op":"stats"}\n{"op":"cancel"}\n' + b'{"op":"shutdown"}'
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-c", script], input=feed, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    got = json.loads(r.stdout)
    assert got == [[len(big), big[:12].decode(), "bytes"], [14, '{"op":"stats', "bytes"],
                   [15, '{"op":"cance', "bytes"], [17, '{"op":"shutd', "bytes"]]
    assert time.monotonic() - started < 30
