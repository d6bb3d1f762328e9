"""Faults against a real engine and real runners: the app killed, a runner that hangs, a kill
during a config save."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

from engine_harness import free_port, running_engine

# Stands in for the desktop app: starts the engine exactly as the GUI does (gui/engine_process.py),
# loads a model so that a runner exists, reports the pids, then waits to be killed.
APP = r"""
import json, sys, time
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_process import EngineProcess
config, port, log_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
proc = EngineProcess(config, "127.0.0.1", port, log_dir=log_dir)
proc.start()
client = EngineClient(f"http://127.0.0.1:{port}")
assert proc.wait_healthy(client, timeout=60), proc.log_tail()
import httpx
httpx.post(f"http://127.0.0.1:{port}/admin/models/tiny/load", timeout=60).raise_for_status()
models = httpx.get(f"http://127.0.0.1:{port}/admin/models", timeout=10).json()["models"]
print(json.dumps({"engine": proc.pid, "runners": [m["pid"] for m in models if m.get("pid")]}),
      flush=True)
time.sleep(600)
"""


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def tiny_config(gguf, **extra) -> dict:
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 256,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}], **extra}


@pytest.mark.timeout(120)
def test_engine_exits_when_the_app_is_killed(tiny_gguf, tmp_path):
    config = tmp_path / "models.yaml"
    config.write_text(yaml.safe_dump(tiny_config(tiny_gguf)))
    port = free_port()
    app = subprocess.Popen([sys.executable, "-c", APP, str(config), str(port), str(tmp_path / "logs")],
                           stdout=subprocess.PIPE, text=True)
    engine = runners = None
    try:
        line = app.stdout.readline()
        assert line, "the app did not start the engine"
        pids = json.loads(line)
        engine, runners = pids["engine"], pids["runners"]
        assert runners and not gone(engine) and not port_free(port)
        killed_at = time.monotonic()
        app.send_signal(signal.SIGKILL)
        app.wait(timeout=10)
        while not (gone(engine) and all(gone(p) for p in runners) and port_free(port)):
            assert time.monotonic() - killed_at < 2.0, \
                f"engine {engine} or runners {runners} outlived the app by 2 s"
            time.sleep(0.02)
        took = time.monotonic() - killed_at
        print(f"engine, runners and port gone {took:.2f} s after the app's SIGKILL")
        log = (tmp_path / "logs").glob("engine*.log")
        text = "".join(p.read_text(errors="replace") for p in log)
        assert "the app that started this engine is gone" in text
        assert "killing the runners" not in text  # the clean path did it, not the backstop
    finally:
        if app.poll() is None:
            app.kill()
        for pid in [engine, *(runners or [])]:
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)


# -- a runner that hangs (SIGSTOP) --------------------------------------------------------------

def hung_config(gguf) -> dict:
    # the bound on a silent runner is the scheduler's queue_timeout_ms
    return tiny_config(gguf, scheduler={"queue_timeout_ms": 2000})


def runner_pid(c) -> int:
    return next(m["pid"] for m in c.get("/admin/models").json()["models"] if m["name"] == "tiny")


def sigstop(pid: int) -> None:
    """Stop the runner and wait until the kernel shows it stopped (not at once on a busy machine)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while psutil.Process(pid).status() != psutil.STATUS_STOPPED:
        assert time.monotonic() < deadline, "SIGSTOP did not take"
        time.sleep(0.01)


def wait_gone(pid: int, within: float) -> float:
    started = time.monotonic()
    while not gone(pid):
        assert time.monotonic() - started < within, f"runner {pid} still there after {within} s"
        time.sleep(0.02)
    return time.monotonic() - started


CHAT = {"model": "tiny", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.timeout(120)
def test_hung_runner_times_out_requests_cleanly_and_is_replaced(tiny_gguf, tmp_path):
    with running_engine(hung_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/tiny/load").raise_for_status()
        pid = runner_pid(c)
        sigstop(pid)
        try:
            started = time.monotonic()
            r = c.post("/v1/chat/completions", json=CHAT, timeout=30)
            took = time.monotonic() - started
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "runner_unresponsive"
            assert r.headers["retry-after"]
            assert 2.0 <= took < 5.0, took   # the 2 s bound, plus one watch period and the reply
            wait_gone(pid, 5)                # killed, though stopped: its memory is back
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        kinds = [e["kind"] for e in c.get("/admin/events").json()["events"]]
        assert "runner_unresponsive" in kinds and "runner_crashed" not in kinds
        r = c.post("/v1/chat/completions", json=CHAT, timeout=60)  # a fresh runner serves
        assert r.status_code == 200, r.text
        assert runner_pid(c) != pid


@pytest.mark.timeout(120)
def test_hung_runner_mid_stream_ends_the_stream_with_an_error(tiny_gguf, tmp_path):
    with running_engine(hung_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/tiny/load").raise_for_status()
        pid = runner_pid(c)
        body = {**CHAT, "max_tokens": 100000, "stream": True}
        with c.stream("POST", "/v1/chat/completions", json=body, timeout=30) as r:
            lines = r.iter_lines()
            assert next(lines).startswith("data: {")
            sigstop(pid)
            started = time.monotonic()
            try:
                rest = list(lines)
            finally:
                if not gone(pid):
                    os.kill(pid, signal.SIGCONT)
            assert time.monotonic() - started < 6
        errors = [line for line in rest if line.startswith('data: {"error"')]
        assert errors and '"runner_unresponsive"' in errors[0], rest[-3:]
        wait_gone(pid, 5)


@pytest.mark.timeout(120)
def test_unload_frees_a_hung_runner_at_once(tiny_gguf, tmp_path):
    with running_engine(tiny_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/tiny/load").raise_for_status()
        pid = runner_pid(c)
        sigstop(pid)
        try:
            started = time.monotonic()
            r = c.post("/admin/models/tiny/unload", timeout=30)
            took = time.monotonic() - started
            assert r.status_code == 200, r.text
            wait_gone(pid, 3)
            assert took < 2.5, took  # no shutdown grace for a process that cannot read it
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        state = {m["name"]: m["state"] for m in c.get("/admin/models").json()["models"]}
        assert state["tiny"] == "unloaded"


# -- the engine killed during a config save; a save that cannot be written ----------------------

def config_variant(gguf, i: int) -> dict:
    config = tiny_config(gguf)
    # many models make the file (and the save) big enough to be caught half-way, were it not atomic
    config["models"] += [{"name": f"extra-{k}", "backend": "llama_cpp", "path": str(gguf),
                          "n_ctx": 256 + i, "parallel": 1} for k in range(60)]
    return config


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_models_yaml_survives_a_kill_during_a_save(tiny_gguf, tmp_path):
    import random
    import threading
    from laya_desktop.config.store import load_config
    from engine_harness import EngineProcess
    rng = random.Random(12)
    eng = EngineProcess(config_variant(tiny_gguf, 0), tmp_path).start()
    saved_mid_kill = 0
    try:
        started = time.monotonic()   # how long one save takes here, to aim the kills across it
        httpx.put(eng.url + "/admin/config", json=config_variant(tiny_gguf, 100),
                  timeout=30).raise_for_status()
        put_s = time.monotonic() - started
        old_n_ctx = {356}
        for i in range(1, 13):
            body = config_variant(tiny_gguf, i)
            before = eng.config_path.read_text()

            def put():
                try:
                    httpx.put(eng.url + "/admin/config", json=body, timeout=10)
                except httpx.HTTPError:
                    pass  # killed under us: the point of the test
            t = threading.Thread(target=put)
            t.start()
            time.sleep(rng.uniform(0.2 * put_s, 2.0 * put_s))
            eng.proc.kill()
            eng.proc.wait()
            t.join(timeout=15)
            text = eng.config_path.read_text()
            config = load_config(eng.config_path)          # parses and validates, every time
            n_ctx = {m.n_ctx for m in config.models if m.name.startswith("extra-")}
            assert n_ctx in (old_n_ctx, {256 + i}), n_ctx     # the old file or the new, whole
            old_n_ctx = n_ctx
            saved_mid_kill += text != before
            eng._log.close()
            eng.start()                                     # and the engine starts on it again
        print(f"12 kills within a save of {put_s * 1000:.0f} ms: the new file {saved_mid_kill} times, the old one "
              f"{12 - saved_mid_kill} times, never a broken one")
    finally:
        eng.stop()


def test_a_save_that_cannot_be_written_is_a_clear_error_and_changes_nothing(tiny_gguf, tmp_path):
    # Running as root, a read-only folder (chmod) does not stop a write, and mounting a full
    # filesystem needs privileges a test should not use; a file size limit on the engine makes
    # the save's write fail (EFBIG) the way a full disk does (ENOSPC), at the same place.
    with running_engine(tiny_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        before = eng.config_path.read_bytes()
        engine = psutil.Process(eng.proc.pid)
        limit = engine.rlimit(psutil.RLIMIT_FSIZE)
        engine.rlimit(psutil.RLIMIT_FSIZE, (64, limit[1]))
        try:
            body = {**tiny_config(tiny_gguf), "scheduler": {"max_queue": 7}}
            r = c.put("/admin/config", json=body)
        finally:
            engine.rlimit(psutil.RLIMIT_FSIZE, limit)
        assert r.status_code == 500, r.text
        error = r.json()["error"]
        assert error["code"] == "config_not_saved"
        assert str(eng.config_path) in error["message"] and "nothing was changed" in error["message"]
        assert eng.config_path.read_bytes() == before
        assert not list(tmp_path.glob(".models.yaml.*.tmp"))     # the temp file was removed
        assert c.get("/admin/config").json()["scheduler"]["max_queue"] != 7
        kinds = [e["kind"] for e in c.get("/admin/events").json()["events"]]
        assert "config_save_failed" in kinds
        assert c.put("/admin/config", json=body).status_code == 200   # and a later save works


SAVER = r"""
import sys, yaml
from laya_desktop.config.store import save_config_atomic
path, a, b = sys.argv[1], yaml.safe_load(open(sys.argv[2])), yaml.safe_load(open(sys.argv[3]))
print("go", flush=True)
while True:            # nothing but saves: a kill at any moment lands inside one
    save_config_atomic(a, path)
    save_config_atomic(b, path)
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_models_yaml_survives_kills_inside_the_atomic_save(tiny_gguf, tmp_path):
    import random
    from laya_desktop.config.store import load_config
    rng = random.Random(7)
    variants = []
    for i in (1, 2):
        p = tmp_path / f"variant-{i}.yaml"
        p.write_text(yaml.safe_dump(config_variant(tiny_gguf, i)))
        variants.append(str(p))
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(config_variant(tiny_gguf, 1)))
    seen = set()
    for _ in range(20):
        saver = subprocess.Popen([sys.executable, "-c", SAVER, str(path), *variants],
                                 stdout=subprocess.PIPE, text=True)
        assert saver.stdout.readline() == "go\n"
        time.sleep(rng.uniform(0.0, 1.0))  # kills land before, during and after a save of this file
        saver.kill()
        saver.wait()
        config = load_config(path)
        n_ctx = {m.n_ctx for m in config.models if m.name.startswith("extra-")}
        assert n_ctx in ({257}, {258}), n_ctx
        seen |= n_ctx
    assert seen == {257, 258}   # the kills fell on both sides of the renames


# -- fallbacks in a real engine ---------------------------------------------------------------------

def fallback_config(gguf, **scheduler) -> dict:
    models = [{"name": n, "backend": "llama_cpp", "path": str(gguf), "n_ctx": 32768, "parallel": 1,
               "idle_ttl_s": 0} for n in ("main", "spare")]
    return {"models": models,
            "routes": [{"name": "default", "target": "main", "fallback": ["spare"]}],
            "scheduler": {"max_queue": 4, "queue_timeout_ms": 2000, **scheduler}}


ROUTED = {"max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


def pid_of(c, name: str) -> int:
    return next(m["pid"] for m in c.get("/admin/models").json()["models"] if m["name"] == name)


@pytest.mark.timeout(120)
def test_fallback_after_a_runner_crash_before_the_first_token(tiny_gguf, tmp_path):
    with running_engine(fallback_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/main/load").raise_for_status()
        pid = pid_of(c, "main")
        sigstop(pid)                      # the request reaches the runner, which cannot answer ...
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(lambda: eng.client().post("/v1/chat/completions", json=ROUTED))
            deadline = time.monotonic() + 5
            while c.get("/admin/models").json()["models"][0]["active"] == 0:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)  # ... and dies before its first token
            r = answer.result(timeout=60)
        assert r.status_code == 200, r.text
        assert r.headers["x-laya-model"] == "spare"
        kinds = [(e["kind"], e.get("model")) for e in c.get("/admin/events").json()["events"]]
        assert ("runner_crashed", "main") in kinds and ("runner_unresponsive", "main") not in kinds


@pytest.mark.timeout(120)
def test_fallback_after_a_hung_runner(tiny_gguf, tmp_path):
    with running_engine(fallback_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        c.post("/admin/models/main/load").raise_for_status()
        pid = pid_of(c, "main")
        sigstop(pid)
        try:
            r = c.post("/v1/chat/completions", json=ROUTED)
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        assert r.status_code == 200, r.text
        assert r.headers["x-laya-model"] == "spare"


@pytest.mark.timeout(120)
def test_fallback_after_a_queue_timeout(tiny_gguf, tmp_path):
    with running_engine(fallback_config(tiny_gguf, queue_timeout_ms=300), tmp_path) as eng, \
            eng.client() as c:
        long = {"model": "main", "max_tokens": 30000, "stream": True,
                "messages": [{"role": "user", "content": "go"}]}
        with c.stream("POST", "/v1/chat/completions", json=long) as first:
            lines = first.iter_lines()
            next(lines)                   # main's one slot is taken
            r = eng.client().post("/v1/chat/completions", json=ROUTED)
        assert r.status_code == 200, r.text
        assert r.headers["x-laya-model"] == "spare"
