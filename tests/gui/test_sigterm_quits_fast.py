"""SIGTERM to `laya gui` quits in under 2 s and takes its engine and runners with it, even with a
stream in flight (which `laya serve`'s own SIGTERM drains for up to 5 s) or an engine that no
longer answers anything."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import psutil
import pytest

from conftest import engine_processes, free_port, group_processes, gui_config, write_config

QUIT_BOUND_S = 2.0


def launch(tmp_path, gguf):
    port = free_port()
    config = gui_config(gguf, port)
    config["models"][0]["n_ctx"] = 32768   # room for a reply that outlasts the test
    path = write_config(tmp_path, config)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    app = subprocess.Popen([sys.executable, "-m", "laya_desktop", "gui", "--config", str(path)],
                           env=env, stderr=subprocess.PIPE, text=True)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if http.get("/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        app.kill()
        pytest.fail("the app's engine never answered: " + app.communicate()[1])
    assert http.post("/admin/models/tiny/load").status_code == 200
    engine, = engine_processes(path)
    runners = [p for p in engine.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
    assert runners, "the model's runner process"
    return app, http, path, engine, runners


def stream_in_flight(http) -> threading.Event:
    """A chat stream that is generating when this returns; it runs on until the engine goes."""
    first_chunk = threading.Event()

    def read() -> None:
        body = {"model": "tiny", "stream": True, "max_tokens": 30000,
                "messages": [{"role": "user", "content": "a long story, please"}]}
        try:
            with http.stream("POST", "/v1/chat/completions", json=body) as answer:
                for line in answer.iter_lines():
                    if line.startswith("data:"):
                        first_chunk.set()
        except httpx.HTTPError:
            pass
    threading.Thread(target=read, daemon=True).start()
    assert first_chunk.wait(30), "the stream never started"
    return first_chunk


def quit_and_time(app) -> tuple[float, str]:
    started = time.monotonic()
    app.send_signal(signal.SIGTERM)
    _, err = app.communicate(timeout=30)
    return time.monotonic() - started, err


def assert_all_gone(path, engine, runners) -> None:
    assert engine_processes(path) == []
    for proc in runners:
        assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE, proc
    assert group_processes(engine.pid) == []


def test_sigterm_with_a_stream_in_flight_quits_fast_and_stops_everything(tmp_path, gui_tiny_gguf):
    app, http, path, engine, runners = launch(tmp_path, gui_tiny_gguf)
    try:
        stream_in_flight(http)
        took, err = quit_and_time(app)
    finally:
        if app.poll() is None:
            app.kill()
        http.close()
    assert app.returncode == 0, err
    assert took < QUIT_BOUND_S, f"SIGTERM to exit took {took:.2f} s"
    assert_all_gone(path, engine, runners)


def test_sigterm_with_a_frozen_engine_still_quits_fast(tmp_path, gui_tiny_gguf):
    """An engine that cannot run (SIGSTOPped: as stuck as a process gets) is killed at the bound."""
    app, http, path, engine, runners = launch(tmp_path, gui_tiny_gguf)
    try:
        os.kill(engine.pid, signal.SIGSTOP)
        took, err = quit_and_time(app)
    finally:
        if app.poll() is None:
            app.kill()
        http.close()
        try:
            os.killpg(engine.pid, signal.SIGKILL)   # only if the app left it behind
        except OSError:
            pass
    assert app.returncode == 0, err
    assert took < QUIT_BOUND_S, f"SIGTERM to exit took {took:.2f} s"
    assert_all_gone(path, engine, runners)
