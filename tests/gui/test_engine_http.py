"""The GUI's HTTP to a real engine on QtNetwork: a streamed chat aborted from the GUI thread frees
its slot in the engine, the API key travels on every request, a silent engine is cut off by the
transfer timeout, and no request is started from another thread."""
from __future__ import annotations

import dataclasses
import importlib.util
import threading
import time

import httpx
import pytest

from engine_harness import running_engine
from laya_desktop.admin_api import calls
from laya_desktop.gui.engine_client import EngineClient, EngineError
from laya_desktop.gui.workers import WorkerPool

KEY = "sekrit-key"


@pytest.fixture(scope="module")
def engine(gui_tiny_gguf, tmp_path_factory):
    config = {"server": {"host": "127.0.0.1", "api_key": KEY},
              "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gui_tiny_gguf),
                          "n_ctx": 8192, "parallel": 1}],
              "routes": [{"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path_factory.mktemp("engine-http")) as eng:
        with httpx.Client(base_url=eng.url, timeout=60,
                          headers={"Authorization": f"Bearer {KEY}"}) as http:
            http.post("/admin/models/tiny/load").raise_for_status()
            yield eng, http


def active(http) -> int:
    rows = {m["name"]: m for m in http.get("/admin/models").json()["models"]}
    return rows["tiny"].get("active", 0)


def story(max_tokens: int) -> dict:
    return {"model": "tiny", "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": "Tell me a very long story"}]}


def test_a_chat_aborted_from_the_gui_thread_frees_its_slot(engine, qtbot):
    eng, http = engine
    assert importlib.util.find_spec("laya_desktop.gui.abortable_http") is None  # no socket hooks
    client = EngineClient(eng.url, KEY)
    threads = threading.active_count()
    seq = http.get("/admin/requests").json()["seq"]
    stream = client.chat(story(8000))              # tens of seconds if nothing stops it
    items, ended = [], []
    stream.item.connect(items.append)
    stream.ended.connect(ended.append)
    qtbot.waitUntil(lambda: len(items) >= 3, timeout=30000)   # read as it comes, not at the end
    assert not stream.over and active(http) == 1
    assert threading.active_count() == threads     # no worker thread reads the stream
    started = time.monotonic()
    stream.cancel()                                # on the GUI thread: QNetworkReply.abort()
    assert time.monotonic() - started < 0.5
    assert stream.over and stream.cancelled and stream.stats.stopped
    qtbot.waitUntil(lambda: active(http) == 0, timeout=5000)  # the engine cancelled the sequence
    qtbot.wait(100)
    assert ended == []                             # a cancel is the caller's own end: no signal
    logged = http.get(f"/admin/requests?since={seq}").json()["requests"]
    assert [r["status"] for r in logged] == [499]

    again = client.chat(story(8))                  # the one slot serves the next chat at once
    with qtbot.waitSignal(again.ended, timeout=30000) as blocker:
        pass
    assert blocker.args == [None] and again.stats.finish_reason == "length"
    assert again.stats.route == "direct" and again.stats.model == "tiny"   # the response headers
    assert again.stats.ttft_ms is not None and not again.stats.stopped
    client.close()


def test_abort_ends_a_stream_and_the_calls_of_the_client(engine, qtbot):
    """What the window does when it closes or restarts the engine: one `abort()` for everything."""
    eng, http = engine
    client = EngineClient(eng.url, KEY)
    stream = client.chat(story(8000))
    ended = []
    stream.ended.connect(ended.append)
    with qtbot.waitSignal(stream.item, timeout=30000):
        pass
    client.abort()
    qtbot.waitUntil(lambda: ended == [None], timeout=2000)
    assert stream.stats.stopped
    failed = []
    client.send(calls.models(), errored=failed.append)   # after abort: fails at once
    qtbot.waitUntil(lambda: len(failed) == 1, timeout=2000)
    assert isinstance(failed[0], EngineError) and failed[0].kind == "aborted"
    qtbot.waitUntil(lambda: active(http) == 0, timeout=5000)
    client.close()


def test_the_api_key_goes_with_every_request(engine, qtbot):
    eng, _http = engine
    results = []
    for key in (KEY, None):
        client = EngineClient(eng.url, key)
        answers = []
        client.send(calls.models(), returned=answers.append, errored=answers.append)
        qtbot.waitUntil(lambda: len(answers) == 1, timeout=10000)
        stream = client.chat(story(4))
        with qtbot.waitSignal(stream.ended, timeout=30000) as blocker:
            pass
        results += [answers[0], blocker.args[0]]
        client.close()
    with_key, chat_with_key, without_key, chat_without_key = results
    assert [m["name"] for m in with_key] == ["tiny"] and chat_with_key is None
    assert isinstance(without_key, EngineError) and without_key.status == 401
    assert isinstance(chat_without_key, EngineError) and chat_without_key.status == 401


def test_a_silent_engine_is_cut_off_by_the_transfer_timeout(stalled_server, qtbot):
    client = EngineClient(stalled_server, KEY)
    outcome, ends = [], []
    started = time.monotonic()
    client.send(dataclasses.replace(calls.config(), timeout_s=0.5), returned=outcome.append,
                errored=outcome.append, finished=lambda: ends.append(time.monotonic()))
    qtbot.waitUntil(lambda: len(ends) == 1, timeout=3000)
    assert 0.4 < ends[0] - started < 2.0
    assert len(outcome) == 1
    assert isinstance(outcome[0], EngineError) and outcome[0].kind == "timeout"
    client.close()


def test_a_request_from_a_worker_thread_is_refused(qtbot):
    """QtNetwork's objects belong to the GUI thread; no worker may start (or wait on) one."""
    client = EngineClient("http://127.0.0.1:9")
    pool = WorkerPool()
    outcome = []
    pool.submit(client.send, calls.models(), returned=outcome.append, errored=outcome.append)
    qtbot.waitUntil(lambda: len(outcome) == 1, timeout=3000)
    assert isinstance(outcome[0], RuntimeError) and "GUI thread" in str(outcome[0])
    assert pool.shutdown(1000)
    client.close()
